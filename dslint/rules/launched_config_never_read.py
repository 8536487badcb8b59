"""DSL424: a DeepSpeed config option given to a script that never reads its command line."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_SILENT_SCRIPT = """\
from transformers import Trainer, TrainingArguments

args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
Trainer(model=build_model(), args=args).train()
"""


class LaunchedConfigNeverRead(LaunchRule):
    code = "DSL424"
    slug = "launched-config-never-read"
    kind = "unread_config"
    message = "the DeepSpeed config option is given to a script that never reads its command line"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags the DeepSpeed config option of a launch command (`--deepspeed ds.json`, `--deepspeed_config`) when
            the script it runs, a file of the project, never reads its command line: neither it nor a project module
            it imports (at any depth) mentions `sys.argv` or builds an argument parser (`argparse`,
            `HfArgumentParser`, `fire`, `click`, `typer`, `hydra`...), and it calls no function of another package
            without arguments (`main()`, `cli.run()`: an entry point that may parse the command line itself; not one
            of a package that never reads it, such as `torch.no_grad()`) and hands its run to none (a call whose
            result the module's own code drops, `run_training(precision="bf16")` under `__main__`). A script that
            names the config's file in a string of its own (`TrainingArguments(deepspeed="ds_zero2.json")`) reads
            it all the same: left alone.
        """,
        why="""
            The launcher puts the options on the script's command line (`deepspeed` adds `--local_rank` too);
            a script that builds its settings in code (`TrainingArguments(...)` with no `deepspeed=`) never
            looks at them. The run starts, trains without the DeepSpeed config the launcher names (no ZeRO, no
            offload, the precision of the code), and nothing reports it.
        """,
        example="""
            deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json
        """,
        use_instead="""
            # train.py: TrainingArguments(..., deepspeed="ds_zero2.json"), or parse the command line
            # (HfArgumentParser(TrainingArguments).parse_args_into_dataclasses())
            deepspeed --num_gpus 4 train.py
        """,
    )
    valid = (
        Valid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            files=(
                (
                    "train.py",
                    "from transformers import HfArgumentParser, TrainingArguments\n"
                    "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n",
                ),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
        Valid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            files=(
                ("train.py", "from settings import args\nrun(args)\n"),
                ("settings.py", "import argparse\nargs = argparse.ArgumentParser().parse_args()\n"),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
        Valid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            files=(("train.py", "from some_package.cli import main\nmain()\n"), ("ds_zero2.json", "{}\n")),
        ),
        # the run handed to an installed package's function, its result dropped: it may parse the command line
        Valid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            files=(
                (
                    "train.py",
                    "from vendor_kit.runner import run_training\n\n"
                    'if __name__ == "__main__":\n    run_training(precision="bf16")\n',
                ),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
        # the script names the same file itself: the option is not read, but the config is
        Valid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            files=(
                (
                    "train.py",
                    _SILENT_SCRIPT.replace('output_dir="out",', 'output_dir="out", deepspeed="ds_zero2.json",'),
                ),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
    )
    invalid = (
        Invalid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            lines=(1,),
            files=(("train.py", _SILENT_SCRIPT), ("ds_zero2.json", "{}\n")),
        ),
        # a parser imported and never built reads nothing; nor does a commented-out mention of the file
        Invalid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            lines=(1,),
            files=(
                (
                    "train.py",
                    "from transformers import HfArgumentParser\n# deepspeed='ds_zero2.json'\n" + _SILENT_SCRIPT,
                ),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
        # an installed package's function whose result the script keeps builds something: no entry point
        Invalid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            lines=(1,),
            files=(
                (
                    "train.py",
                    'from vendor_kit.models import make_net\nnet = make_net(size="small")\n' + _SILENT_SCRIPT,
                ),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
        # calls without arguments of packages that never read the command line are no entry points
        Invalid(
            "deepspeed --num_gpus 4 train.py --deepspeed ds_zero2.json\n",
            lines=(1,),
            files=(
                ("train.py", "import torch\n" + _SILENT_SCRIPT + "with torch.no_grad():\n    evaluate()\n"),
                ("ds_zero2.json", "{}\n"),
            ),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return (
            f"{issue.detail} never reads its command line (no sys.argv, no argument parser in it or the project "
            "modules it imports): the run goes on without this DeepSpeed config, and nothing says so"
        )

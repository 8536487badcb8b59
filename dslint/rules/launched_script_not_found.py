"""DSL444: a DeepSpeed launch starts a Python script that is not in the project."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))


# a script that parses its command line strictly (`--lr`, `--deepspeed`, `--local_rank`)
_MOVED = (
    "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float)\n"
    "parser.add_argument('--deepspeed')\nparser.add_argument('--local_rank', type=int)\nargs = parser.parse_args()\n"
)


class LaunchedScriptNotFound(LaunchRule):
    code = "DSL444"
    slug = "launched-script-not-found"
    kind = "missing_script"
    message = "the script this DeepSpeed launch starts is not in the project; every rank stops at once"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags the script of a DeepSpeed launch (`deepspeed`, `accelerate launch`, or `torchrun` or `python` with
            a DeepSpeed option: a plain `torchrun` is a DDP launch) in a shell script, a Makefile or a Slurm file
            when no file of that name is anywhere in the project: not where the launch runs it from (its folder, the
            repository root, after its `cd`), nor in any other folder. A launch is left alone when a file of that
            name exists elsewhere (a path question, not a missing file), when another Python file names the script
            (it may write it), when the launcher writes the file or fetches code first (`git clone`, `wget`,
            `curl`...), when the path is absolute, under `~`, or built at run time, when the command runs a module
            (`-m`), and when only part of a repository is checked. A path that names a project file only when letter
            case is ignored (`SFT/train.py` for `sft/train.py`) is flagged: Linux, where the ranks run, tells them
            apart, and the message names the file meant. So is a path whose folder is nowhere in the project
            (`src/train.py`, no `src/`) when the project has exactly one file of that name and its strict parser
            takes every option of the launch: the script moved and the launcher did not follow (the message names
            it, and the launch's other checks read that script). A guide's command (Markdown, reST, a notebook) is
            left alone: it is often a pattern for the reader's own script.
        """,
        why="""
            Each rank the launcher starts runs `python -u <script> ...` (`deepspeed/launcher/launch.py`, and the
            same for `torchrun` and `accelerate launch`); with no such file, Python stops at once ("can't open
            file"), on every node, and the launch never trains. Most often the script was renamed
            (`train_deepspeed.py` -> `train.py`) and the launchers were not updated.
        """,
        example="""
            # the project's script is train.py
            deepspeed --num_gpus 8 train_deepspeed.py --deepspeed_config ds.json
        """,
        use_instead="""
            deepspeed --num_gpus 8 train.py --deepspeed_config ds.json
        """,
    )
    valid = (
        Valid("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n", files=_PROJECT),
        # a file of that name in another folder: the launch may be run from there
        Valid("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n", files=(("src/train.py", ""),)),
        # the launcher fetches code before the launch
        Valid(
            "git clone https://example.com/other/project.git\ncd project\n"
            "deepspeed --num_gpus 2 pretrain.py --deepspeed_config ds.json\n",
            files=_PROJECT,
        ),
        # another file of the project names the script (it writes or starts it)
        Valid(
            "deepspeed --num_gpus 2 generated_train.py --deepspeed_config ds.json\n",
            files=(*_PROJECT, ("make.py", "open('generated_train.py', 'w').write(TEMPLATE)\n")),
        ),
        Valid("deepspeed --num_gpus 2 $WORK/train_ds.py --deepspeed_config ds.json\n", files=_PROJECT),
        Valid("deepspeed --num_gpus 2 /opt/code/train_ds.py --deepspeed_config ds.json\n", files=_PROJECT),
        Valid("deepspeed --num_gpus 2 --module pkg.train_ds --deepspeed_config ds.json\n", files=_PROJECT),
        # the script's folder is not in the project either: a checkout of another project
        Valid("deepspeed --num_gpus 2 transformers/examples/run_ds.py --deepspeed ds.json\n", files=_PROJECT),
        # ... whose `train.py` is not this project's one, which takes no `--epochs`
        Valid("deepspeed --num_gpus 2 src/train.py --epochs 3 --deepspeed ds.json\n", files=(("train.py", _MOVED),)),
        Valid("deepspeed --num_gpus 2 your_train_script.py --deepspeed ds.json\n", files=_PROJECT),
        # Megatron's entry script, recognised by its name or by its options
        Valid("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24\n", files=_PROJECT),
        Valid("deepspeed pretrain_zeropp.py --tensor-model-parallel-size 2\n", files=_PROJECT),
        # a plain python run of a tool that takes no DeepSpeed option
        Valid("python tools/convert.py --out ckpt\n", files=_PROJECT),
        # a torchrun with no DeepSpeed option: plain DDP, whatever the missing script was
        Valid("torchrun --nproc_per_node 4 main_ddp.py --batch_size 8\n", files=_PROJECT),
    )
    invalid = (
        Invalid("deepspeed --num_gpus 2 train_deepspeed.py --deepspeed_config ds.json\n", lines=(1,), files=_PROJECT),
        Invalid(
            "CMD=train\ntorchrun --nproc_per_node 4 \\\n    scripts/pretrain_ds.py \\\n    --deepspeed ds.json\n",
            lines=(3,),
            files=(*_PROJECT, ("scripts/pretrain.py", "import deepspeed\n")),
        ),
        # a folder that is nowhere, while the project's one `train.py` takes every option: the script moved
        Invalid(
            "deepspeed --num_gpus 2 src/train.py --lr 1e-5 --deepspeed ds.json\n",
            lines=(1,),
            files=(("train.py", _MOVED), ("ds.json", "{}\n")),
        ),
        # a folder named but for letter case: no such file on Linux, though `train.py` exists
        Invalid(
            "deepspeed --num_gpus 2 SFT/train.py --deepspeed_config ds.json\n",
            lines=(1,),
            files=(("sft/train.py", "import deepspeed\n"), ("ds.json", "{}\n")),
        ),
        Invalid(
            "accelerate launch --num_processes 2 finetune.py --lr 1e-5\n",
            lines=(1,),
            files=(("train.py", "import deepspeed\n"),),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        if issue.cause == "moved":
            moved = issue.elsewhere[0]
            return f"{issue.detail}: no such file (the project's {moved} takes its options); every rank stops"
        if issue.elsewhere:
            return f"{issue.detail}: no such file on Linux (the project has {issue.elsewhere[0]}); every rank stops"
        return f"{issue.detail}: no such file in the project, and nothing in it writes one; every rank stops at once"

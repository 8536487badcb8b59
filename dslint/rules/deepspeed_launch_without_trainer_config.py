"""DSL442: the `deepspeed` launcher starting a Hugging Face Trainer script that no DeepSpeed config reaches."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PARSING = (
    "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
    "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
    "trainer = Trainer(model=model, args=args)\n"
    "trainer.train()\n"
)
# the Hugging Face examples' idiom: an arguments file when it is the one argument, else the command line
_EXAMPLE = (
    "import os, sys\nfrom transformers import HfArgumentParser, Trainer, TrainingArguments\n"
    "parser = HfArgumentParser(TrainingArguments)\n"
    'if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):\n'
    "    (args,) = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))\n"
    "else:\n    (args,) = parser.parse_args_into_dataclasses()\n"
    "Trainer(model=model, args=args).train()\n"
)
# a TRL script whose options module declares --deepspeed_config; the config it builds names none
_OPTIONS = (
    "options.py",
    "import argparse\ndef get_parser():\n    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--deepspeed_config', type=str, default=None)\n    return parser\n",
)
_TRL = (
    "from trl import GRPOConfig, GRPOTrainer\nfrom options import get_parser\nargs = get_parser().parse_args()\n"
    "GRPOTrainer(model=model, args=GRPOConfig(output_dir='out')).train()\n"
)
_BUILT = (
    "from transformers import Trainer, TrainingArguments\n"
    'args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)\n'
    "trainer = Trainer(model=model, args=args)\n"
    "trainer.train()\n"
)


class DeepspeedLaunchWithoutTrainerConfig(LaunchRule):
    code = "DSL442"
    slug = "deepspeed-launch-without-trainer-config"
    kind = "configless_trainer"
    message = "deepspeed starts a Trainer script with no DeepSpeed config: it trains as plain DDP; pass --deepspeed"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags a `deepspeed` launch command (in a shell script, a Makefile recipe, a README's or a guide's code
            block, a comment of the script telling how to run it) whose script trains (a `.train(...)` call; an
            evaluation script is left alone) with a Hugging Face (or TRL) Trainer that no DeepSpeed config reaches: its
            TrainingArguments are built in the script without `deepspeed=`, or read by `parse_json_file` from a
            JSON file the project holds by a written path with no `deepspeed` key, or parsed from the command line
            (`HfArgumentParser`) while the launch passes no `--deepspeed` (and leaves no option open: `"$@"`, a
            document's `...`). A script that hands DeepSpeed a config any other way (a call into `deepspeed`,
            `HfDeepSpeedConfig`, accelerate's `DeepSpeedPlugin`, arguments read from another file, a `deepspeed`
            attribute it assigns) is left alone; but not for an arguments file read only when
            `sys.argv[1].endswith(".json")` (the Hugging Face examples' idiom) under a launch that puts
            `--local_rank=N` first on the command line (no `--no_local_rank`): that arm never runs. A launch that
            gives a config option the script never reads (DSL424's finding at the option) is flagged too.
        """,
        why="""
            The `deepspeed` launcher only starts the processes: it sets RANK, LOCAL_RANK and WORLD_SIZE and
            appends `--local_rank=N`, which TrainingArguments accept. transformers enables DeepSpeed only for a
            config given as `TrainingArguments(deepspeed=...)` or `--deepspeed` (`__post_init__` builds the
            DeepSpeed plugin from it). Without one the Trainer trains as plain DDP: every rank holds the whole
            model, its gradients and optimizer states, without the ZeRO stage, offload or precision the project's
            DeepSpeed configs ask for, and nothing says so.
        """,
        example="""
            deepspeed --num_gpus 4 train.py --output_dir out --per_device_train_batch_size 4
        """,
        use_instead="""
            deepspeed --num_gpus 4 train.py --output_dir out --per_device_train_batch_size 4 \\
                --deepspeed ds_zero2.json
        """,
    )
    valid = (
        # the same script handing args.deepspeed to its config: read
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed $DS_CONFIG\n",
            files=(
                (
                    "train.py",
                    "import argparse\nfrom trl import SFTTrainer, SFTConfig\n"
                    "parser = argparse.ArgumentParser()\nparser.add_argument('--deepspeed')\n"
                    "args = parser.parse_args()\nconfig = SFTConfig(output_dir='out')\n"
                    "config.deepspeed = args.deepspeed\nSFTTrainer(model=model, args=config).train()\n",
                ),
            ),
        ),
        Valid(
            "deepspeed --num_gpus 4 train.py --output_dir out --deepspeed ds.json\n",
            files=(("train.py", _PARSING), ("ds.json", "{}\n")),
        ),
        Valid(
            "deepspeed --num_gpus 4 train.py\n",
            files=(("train.py", _BUILT.replace('output_dir="out",', 'output_dir="out", deepspeed="ds.json",')),),
        ),
        Valid(
            "deepspeed --num_gpus 4 train.py\n",
            files=(("train.py", "import deepspeed\n" + _BUILT + "engine = deepspeed.init_inference(model)\n"),),
        ),
        Valid("torchrun --nproc_per_node 4 train.py --output_dir out\n", files=(("train.py", _PARSING),)),
        # ... read somewhere (here only printed: whether it reaches DeepSpeed is not followed)
        Valid(
            "deepspeed --num_gpus 4 train.py --deepspeed_config ds.json\n",
            files=(("train.py", _TRL + "print(args.deepspeed_config)\n"), _OPTIONS, ("ds.json", "{}\n")),
        ),
        # a document's command whose other options are left to the reader: --deepspeed may be among them
        Valid("deepspeed --num_gpus 2 train.py ...\n", files=(("train.py", _EXAMPLE),)),
        # without --local_rank first, the one argument may be an arguments file naming a config
        Valid("deepspeed --no_local_rank --num_gpus 2 train.py args.json\n", files=(("train.py", _EXAMPLE),)),
        Valid(
            "deepspeed --num_gpus 4 train.py\n",
            files=(("train.py", _BUILT.replace("from transformers import", "from mytrainers import")),),
        ),
    )
    invalid = (
        Invalid(
            "deepspeed --num_gpus 4 train.py --output_dir out --per_device_train_batch_size 4\n",
            lines=(1,),
            files=(("train.py", _PARSING),),
        ),
        Invalid("deepspeed --num_gpus 2 train.py\n", lines=(1,), files=(("train.py", _BUILT),)),
        # the runner puts --local_rank=N first: the arguments-file arm of the examples' idiom never runs
        Invalid("deepspeed --num_gpus 2 train.py --output_dir out\n", lines=(1,), files=(("train.py", _EXAMPLE),)),
        # the script's own argparse takes --deepspeed and never reads it; the arguments class is a TRL config's
        # project subclass, built without deepspeed=
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed $DS_CONFIG\n",
            lines=(1,),
            files=(
                (
                    "train.py",
                    "import argparse\nfrom trl import SFTTrainer, SFTConfig\n"
                    "class MyConfig(SFTConfig):\n    pass\n"
                    "parser = argparse.ArgumentParser()\nparser.add_argument('--deepspeed')\n"
                    "args = parser.parse_args()\nSFTTrainer(model=model, args=MyConfig(output_dir='out')).train()\n",
                ),
            ),
        ),
        # the script's parser takes --deepspeed_config and nothing reads its value
        Invalid(
            "deepspeed --num_gpus 4 train.py --deepspeed_config ds.json\n",
            lines=(1,),
            files=(("train.py", _TRL), _OPTIONS, ("ds.json", "{}\n")),
        ),
        # a config given that the script never reads (DSL424 at the option): the Trainer still gets none
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed ds.json\n",
            lines=(1,),
            files=(("train.py", "import platform\nplatform.system()\n" + _BUILT), ("ds.json", "{}\n")),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        if "unread" in issue.options:  # the config option given is never read (DSL424 at the option)
            return f"deepspeed starts {issue.detail}, whose Trainer is built without the config given: plain DDP"
        unused = next((o.partition(":")[2] for o in issue.options if o.startswith("unused:")), None)
        if unused is not None:  # the script's own parser takes the option and nothing reads its value
            return (
                f"deepspeed starts {issue.detail}, whose parser takes {unused} and uses it nowhere: its Trainer "
                "gets no DeepSpeed config, plain DDP"
            )
        return f"deepspeed starts {issue.detail}, whose Trainer gets no DeepSpeed config: it runs plain DDP"

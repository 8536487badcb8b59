"""DSL468: `--deepspeed_config` given to a script whose `deepspeed.initialize` also gets a config in code."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_SCRIPT = """\
import argparse
import deepspeed

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--local_rank", type=int, default=-1)
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
settings = {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters(), config=settings)
"""
_CONFIG = ("ds_config.json", '{"train_micro_batch_size_per_gpu": 4}\n')


class ConfigGivenTwice(LaunchRule):
    code = "DSL468"
    slug = "config-given-twice"
    kind = "config_given_twice"
    message = "--deepspeed_config given to a script whose initialize also gets config=: DeepSpeed stops at start-up"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags the `--deepspeed_config` (or `--deepscale_config`) option of a DeepSpeed launch command (in a
            shell script, a Makefile recipe, a README's or a guide's code block) when every
            `deepspeed.initialize(...)` call of the launched script passes both `args=` (the parsed command line,
            which then carries the option's value) and a config of its own (`config=`/`config_params=`, not
            `None`). Only where all is known: the script's own argparse parser is known whole and parses strictly
            and declares the option (`deepspeed.add_config_arguments`, or `--deepspeed_config` itself), the script
            never sets `deepspeed_config` itself (`args.deepspeed_config = None` before the call; reading the file
            it names does not change it), and the
            `initialize` calls are in the script, none under an `if` or a `try`. The finding is at the option,
            with the first `initialize` call as related location; the missing-file finding (DSL423) is not made
            for that option, since the file is never opened.
        """,
        why="""
            `deepspeed.initialize` (DeepSpeed 0.19.8, `deepspeed/__init__.py`) checks that only one config is
            passed: with `args.deepspeed_config` set it asserts `config is None`, "Not sure how to proceed, we were
            given deepspeed configs in the deepspeed arguments and deepspeed.initialize() function call". Every
            rank stops there, after the model was built, and the config file the launch names is never read (a
            config edited there changes nothing even once the launch works).
        """,
        example="""
            deepspeed --num_gpus 4 train.py --deepspeed_config ds_config.json
            # train.py: deepspeed.initialize(args=args, model=model, config=settings)
        """,
        use_instead="""
            deepspeed --num_gpus 4 train.py
            # or keep the option and drop config= (or pass args=None)
        """,
    )
    valid = (
        # the config comes only from the command line, or only from the code
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            files=(("train.py", _SCRIPT.replace(", config=settings)", ")")), _CONFIG),
        ),
        Valid("deepspeed --num_gpus 2 train.py --epochs 3\n", files=(("train.py", _SCRIPT), _CONFIG)),
        # the script clears the option's value itself, or calls initialize only on one path
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            files=(
                ("train.py", _SCRIPT.replace("settings = {", "args.deepspeed_config = None\nsettings = {")),
                _CONFIG,
            ),
        ),
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            files=(
                ("train.py", _SCRIPT.replace("engine, _, _, _ =", "if args.epochs:\n    engine, _, _, _ =")),
                _CONFIG,
            ),
        ),
    )
    invalid = (
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            lines=(1,),
            files=(("train.py", _SCRIPT), _CONFIG),
        ),
        # the script reads the file the option names itself: the parsed arguments still carry the option
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            lines=(1,),
            files=(
                (
                    "train.py",
                    _SCRIPT.replace(
                        "settings = {", "import json\nsettings = json.load(open(args.deepspeed_config))\nignored = {"
                    ),
                ),
                _CONFIG,
            ),
        ),
        # a config file the project lacks: the assertion comes first, and only it is reported
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config missing.json --epochs 3\n",
            lines=(1,),
            files=(("train.py", _SCRIPT),),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return (
            f"--deepspeed_config given to {issue.detail}, whose initialize also gets config=: DeepSpeed stops "
            "every rank at start-up ('Not sure how to proceed'), and this file is never read"
        )

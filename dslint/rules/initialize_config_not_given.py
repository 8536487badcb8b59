"""DSL456: no DeepSpeed config for a script whose `deepspeed.initialize` needs one from the command line."""

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
engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
"""
_CONFIG = ("ds_config.json", '{"train_micro_batch_size_per_gpu": 4}\n')


class InitializeConfigNotGiven(LaunchRule):
    code = "DSL456"
    slug = "initialize-config-not-given"
    kind = "configless_initialize"
    message = "no --deepspeed_config here, and the script's initialize gets no config=: DeepSpeed stops at start-up"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a DeepSpeed launch command (the `deepspeed` runner, or a command with a DeepSpeed option; in a
            shell script, a Makefile recipe, a README's or a guide's code block) that gives no
            `--deepspeed_config` (nor `--deepscale_config`) to a script of the project whose every
            `deepspeed.initialize(...)` call gets no `config=`/`config_params=`, so that DeepSpeed looks for the
            config in `args.deepspeed_config`. Only where all is known: the script's own argparse parser is
            known whole and parses strictly (as for DSL434), gives `deepspeed_config` no default
            (`deepspeed.add_config_arguments` gives None), the script never names `deepspeed_config` itself
            (`args.deepspeed_config = path`), the `initialize` calls are in the script, none under an `if` or a
            `try`, and every word of the command is known (no `"$@"`). The finding is at the command, with the
            first `initialize` call as related location.
        """,
        why="""
            `deepspeed.initialize` (DeepSpeed 0.19.8, `deepspeed/__init__.py`) takes the config from `config=`
            (or `config_params=`), else from `args.deepspeed_config`, and then asserts "DeepSpeed requires
            --deepspeed_config to specify configuration file". The `deepspeed` launcher passes the script's own
            options and `--local_rank` only: with neither, every rank stops there, after the model was built.
        """,
        example="""
            deepspeed --num_gpus 4 train.py --epochs 3
        """,
        use_instead="""
            deepspeed --num_gpus 4 train.py --epochs 3 --deepspeed_config ds_config.json
        """,
    )
    valid = (
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n",
            files=(("train.py", _SCRIPT), _CONFIG),
        ),
        # the config given in code, or the call under a test of the command line
        Valid(
            "deepspeed --num_gpus 2 train.py --epochs 3\n",
            files=(
                ("train.py", _SCRIPT.replace("model.parameters())", 'model.parameters(), config="ds_config.json")')),
                _CONFIG,
            ),
        ),
        Valid(
            "deepspeed --num_gpus 2 train.py\n",
            files=(
                ("train.py", _SCRIPT.replace("engine, _, _, _ =", "if args.epochs:\n    engine, _, _, _ =")),
                _CONFIG,
            ),
        ),
        Valid('deepspeed --num_gpus 2 train.py "$@"\n', files=(("train.py", _SCRIPT), _CONFIG)),  # more words to come
    )
    invalid = (
        Invalid("deepspeed --num_gpus 2 train.py --epochs 3\n", lines=(1,), files=(("train.py", _SCRIPT), _CONFIG)),
        # the script's own `--deepspeed PATH` goes to `args.deepspeed`: initialize never sees it
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed ds_config.json\n",
            lines=(1,),
            files=(
                (
                    "train.py",
                    _SCRIPT.replace(
                        "parser = deepspeed.add_config_arguments(parser)",
                        'parser.add_argument("--deepspeed", type=str, default=None)',
                    ),
                ),
                _CONFIG,
            ),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return (
            f"no --deepspeed_config for {issue.detail}, whose initialize gets no config=: "
            "DeepSpeed stops every rank at start-up"
        )

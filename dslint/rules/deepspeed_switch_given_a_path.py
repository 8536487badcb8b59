"""DSL443: `--deepspeed ds.json` to a script whose `--deepspeed` is only the switch `add_config_arguments` adds."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule import Invalid, RuleDocs, Valid
from dslint.project.launch_issues import LaunchIssue

_SWITCH = """\
import argparse
import deepspeed

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--epochs", type=int, default=1)
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
"""
# the script declares a path option of its own named --deepspeed (an HF-style script): no switch
_OWN = _SWITCH.replace("parser = deepspeed.add_config_arguments(parser)\n", 'parser.add_argument("--deepspeed")\n')
# a positional argument takes the path
_POSITIONAL = _SWITCH.replace('"--epochs", type=int, default=1', '"data"')
_KNOWN = _SWITCH.replace("parser.parse_args()", "parser.parse_known_args()[0]")


def _project(script: str) -> tuple[tuple[str, str], ...]:
    return (("train.py", script), ("ds.json", '{"train_micro_batch_size_per_gpu": 1}\n'))


class DeepspeedSwitchGivenAPath(LaunchRule):
    code = "DSL443"
    slug = "deepspeed-switch-given-a-path"
    kind = "deepspeed_switch_value"
    message = "--deepspeed is a switch in this script; the path after it stops the parser: use --deepspeed_config"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `--deepspeed PATH` (or `--deepspeed=PATH`) in a launch command (a shell script, a Makefile
            recipe, a README's code block, a notebook's `!` line) whose script, a file of the project, gets its
            `--deepspeed` option from `deepspeed.add_config_arguments(parser)` and from nothing else, takes no
            positional argument, and parses its command line strictly (`parser.parse_args()`). The finding is at
            the option, with the script's `parse_args` call as its related location. Left alone: a script that
            declares `--deepspeed` itself (a Hugging Face style script, where it takes the config path), one
            with a positional argument (it would take the path), `parse_known_args`, and every script whose
            parsing is not fully known (as for DSL434).
        """,
        why="""
            `deepspeed.add_config_arguments` (`deepspeed/__init__.py`, 0.19.8) adds `--deepspeed` with
            `action="store_true"`, and the config path as `--deepspeed_config`. After `--deepspeed ds.json` the
            path is left over: argparse stops with "error: unrecognized arguments: ds.json" (exit status 2) on
            every rank, before any training, and `--deepspeed=ds.json` stops with "ignored explicit argument".
            The form comes from the Hugging Face Trainer's scripts, where `--deepspeed` takes the path.
        """,
        example="""
            deepspeed --num_gpus 2 train.py --deepspeed ds_config.json
            # train.py: parser = deepspeed.add_config_arguments(parser); args = parser.parse_args()
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py --deepspeed --deepspeed_config ds_config.json
        """,
    )
    valid = (
        Valid("deepspeed --num_gpus 2 train.py --deepspeed --deepspeed_config ds.json\n", files=_project(_SWITCH)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_project(_OWN)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_project(_POSITIONAL)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_project(_KNOWN)),
    )
    invalid = (
        Invalid(
            "deepspeed --num_gpus 2 train.py --deepspeed ds.json --epochs 2\n", lines=(1,), files=_project(_SWITCH)
        ),
        Invalid(
            "# single GPU\npython train.py \\\n    --epochs 3 \\\n    --deepspeed=ds.json\n",
            lines=(4,),
            files=_project(_SWITCH),
        ),
    )

    def message_for(self, issue: LaunchIssue) -> str:
        return (
            f"--deepspeed is a switch here (add_config_arguments): {issue.detail} is an unrecognized argument;"
            " use --deepspeed_config"
        )

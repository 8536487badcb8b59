"""DSL443: `--deepspeed ds.json` to a script whose `--deepspeed` is only the switch `add_config_arguments` adds."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue
from dslint.rules.local_rank_refused import ACCEPTS_LOCAL_RANK, files_of

# a strict parser whose --deepspeed comes from add_config_arguments only (DSL434's script that accepts --local_rank)
_SWITCH = ACCEPTS_LOCAL_RANK
# the script declares a path option of its own named --deepspeed (an HF-style script): no switch
_OWN = _SWITCH.replace("parser = deepspeed.add_config_arguments(parser)\n", 'parser.add_argument("--deepspeed")\n')
# a positional argument takes the path
_POSITIONAL = _SWITCH.replace(
    "    return parser.parse_args()", '    parser.add_argument("data")\n    return parser.parse_args()'
)
_KNOWN = _SWITCH.replace("parser.parse_args()", "parser.parse_known_args()[0]")


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
        Valid("deepspeed --num_gpus 2 train.py --deepspeed --deepspeed_config ds.json\n", files=files_of(_SWITCH)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=files_of(_OWN)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=files_of(_POSITIONAL)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=files_of(_KNOWN)),
    )
    invalid = (
        Invalid("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", lines=(1,), files=files_of(_SWITCH)),
        Invalid(
            "# single GPU\npython train.py \\\n    --local_rank 0 \\\n    --deepspeed=ds.json\n",
            lines=(4,),
            files=files_of(_SWITCH),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return (
            f"--deepspeed is a switch here (add_config_arguments): {issue.detail} is an unrecognized argument;"
            " use --deepspeed_config"
        )

"""DSL434: a script started by the `deepspeed` launcher whose own parser refuses the `--local_rank` it appends."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_STRICT = """\
import argparse
import deepspeed

def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()

args = parse()
"""
# a parser a project module builds with --local_rank, for a script to parse
_IMPORTED_PARSER = (
    "import argparse\ndef build():\n    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--local_rank', type=int)\n    return parser\n"
)
# a strict parser that declares --local_rank (DSL443 builds its scripts from it)
ACCEPTS_LOCAL_RANK = _STRICT.replace('"--epochs", type=int, default=1)', '"--local_rank", type=int, default=-1)')
_KNOWN = _STRICT.replace("parser.parse_args()", "parser.parse_known_args()[0]")
_DASHED = _STRICT.replace('"--epochs", type=int, default=1)', '"--local-rank", type=int, default=-1)')
# two parsers: the entry function parses its own strict one (no --local_rank) before the DeepSpeed one is built
_TWO_PARSERS = """\
import argparse
import deepspeed

def deepspeed_arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    ds_args = deepspeed_arguments()

if __name__ == "__main__":
    main()
"""
_FOREIGN = _STRICT.replace("parser = deepspeed.add_config_arguments(parser)", "add_model_options(parser)")


# a Hydra app: its parser takes `key=value` overrides and its own options, nothing else
_HYDRA = """\
import hydra

@hydra.main(config_path="configs", config_name="train", version_base=None)
def main(cfg):
    print(cfg.lr)

if __name__ == "__main__":
    main()
"""


def files_of(script: str) -> tuple[tuple[str, str], ...]:
    """A case's project: `script` as train.py, and the config its launches name."""
    return (("train.py", script), ("ds.json", '{"train_micro_batch_size_per_gpu": 1}\n'))


class LocalRankRefused(LaunchRule):
    code = "DSL434"
    slug = "local-rank-refused"
    kind = "local_rank_refused"
    message = "deepspeed appends --local_rank=N, which this script's parser refuses: every rank stops at start-up"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a `deepspeed` launch command (in a shell script, a Makefile recipe, a README's or a guide's code
            block) whose script, a file of the project, builds its own `argparse.ArgumentParser`, parses the command
            line strictly (`parser.parse_args()`) and has no option that `--local_rank` names (exactly, or as an
            abbreviation argparse accepts). The finding is at the launch command, with the script's `parse_args`
            call as its related location (where the fix goes). Of several parsers, the one the `if __name__ ==
            "__main__":` block's first call builds and parses before it calls any other function of the module is
            judged (argparse stops the run there). Left alone: a command with `--no_local_rank`, another multi-node
            backend (`--launcher openmpi`...), a command under `srun`/`mpirun`, and every script whose parsing is
            not fully known: `parse_known_args`, `sys.argv` edited, handed to a function, or read in a script that
            writes `--local_rank` itself (counting it, `len(sys.argv)`, or looking at it, `" ".join(sys.argv)`, is
            fine), a parser built elsewhere, handed to another function (other than
            `deepspeed.add_config_arguments`, which adds only the config options) or returned, options named by
            variables, parent parsers, subcommands, other prefix characters. A script whose command line Hydra
            parses (a `@hydra.main` function it calls: Hydra takes `key=value` overrides and its own options only)
            is flagged the same way, unless it names `--local_rank` or may edit `sys.argv` first.
        """,
        why="""
            The runner starts each rank through `deepspeed/launcher/launch.py`, which runs
            `python -u train.py --local_rank=N <the script's arguments>` unless `--no_local_rank` is given
            (DeepSpeed 0.19.8; `deepspeed.add_config_arguments` does not add `--local_rank`). argparse stops on
            the unknown option with "error: unrecognized arguments: --local_rank=0" (exit status 2), on every
            rank, before any training. Add `parser.add_argument("--local_rank", type=int, default=-1)` (the
            launcher also sets `LOCAL_RANK` in the environment), or launch with `--no_local_rank`. An option
            spelt `--local-rank` does not match: argparse tells dashes from underscores.
        """,
        example="""
            deepspeed --num_gpus 2 train.py --deepspeed_config ds.json
            # train.py: parser = argparse.ArgumentParser(); ...; args = parser.parse_args()
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py --deepspeed_config ds.json
            # train.py: parser.add_argument("--local_rank", type=int, default=-1)
        """,
    )
    valid = (
        # a Hydra app that drops the launcher's option from the command line first
        Valid(
            "deepspeed --num_gpus 2 train.py --config-name small\n",
            files=files_of(
                _HYDRA.replace(
                    'if __name__ == "__main__":\n',
                    'if __name__ == "__main__":\n    import sys\n'
                    '    sys.argv = [a for a in sys.argv if not a.startswith("--local_rank")]\n',
                )
            ),
        ),
        # the DeepSpeed parser is built and parsed first: which parse stops the run is not known
        Valid(
            "deepspeed train.py --deepspeed_config ds.json\n",
            files=files_of(
                _TWO_PARSERS.replace(
                    "    args = parser.parse_args()\n    ds_args = deepspeed_arguments()",
                    "    ds_args = deepspeed_arguments()\n    args = parser.parse_args()",
                )
            ),
        ),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n", files=files_of(ACCEPTS_LOCAL_RANK)),
        # the strict parser sits in a function nothing calls; the run parses an imported one, of the same name
        Valid(
            "deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n",
            files=(
                *files_of(
                    _STRICT.replace(
                        "args = parse()", "from common import build\nparser = build()\nargs = parser.parse_args()"
                    )
                ),
                (
                    "common.py",
                    _IMPORTED_PARSER,
                ),
            ),
        ),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n", files=files_of(_KNOWN)),
        Valid("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n", files=files_of(_FOREIGN)),
        Valid("deepspeed --no_local_rank --num_gpus 2 train.py --deepspeed_config ds.json\n", files=files_of(_STRICT)),
        Valid("deepspeed --launcher openmpi train.py --deepspeed_config ds.json\n", files=files_of(_STRICT)),
        Valid("torchrun --nproc_per_node 2 train.py --deepspeed_config ds.json\n", files=files_of(_STRICT)),
        Valid(
            "deepspeed train.py --deepspeed_config ds.json\n",
            files=files_of(_STRICT.replace("args = parse()", "import sys\nsys.argv = sys.argv[:1]\nargs = parse()")),
        ),
        # the script looks for the launcher's option itself before it parses: it may handle it
        Valid(
            "deepspeed train.py --deepspeed_config ds.json\n",
            files=files_of(
                _STRICT.replace(
                    "args = parse()",
                    "import sys\nif '--local_rank' in ' '.join(sys.argv):\n    raise SystemExit\nargs = parse()",
                )
            ),
        ),
    )
    invalid = (
        Invalid("deepspeed train.py --deepspeed_config ds.json\n", lines=(1,), files=files_of(_TWO_PARSERS)),
        Invalid("deepspeed --num_gpus 2 train.py --config-name small\n", lines=(1,), files=files_of(_HYDRA)),
        Invalid(
            "deepspeed train.py --deepspeed_config ds.json\n",
            lines=(1,),
            files=files_of(
                _STRICT.replace(
                    "    return parser.parse_args()",
                    "    import sys\n    if len(sys.argv) == 1:\n        return parser.parse_args(args=[])\n"
                    "    return parser.parse_args()",
                )
            ),
        ),
        Invalid("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n", lines=(1,), files=files_of(_STRICT)),
        # a look at the command line that edits nothing (a warning printed from it) leaves the parse as it is
        Invalid(
            "deepspeed train.py --deepspeed_config ds.json\n",
            lines=(1,),
            files=files_of(
                _STRICT.replace(
                    "args = parse()",
                    "import sys\nif 'accelerate' not in ' '.join(sys.argv):\n    print('hint')\nargs = parse()",
                )
            ),
        ),
        Invalid("deepspeed train.py --deepspeed_config ds.json\n", lines=(1,), files=files_of(_DASHED)),
        Invalid(
            "export CUDA_VISIBLE_DEVICES=0,1\n\ndeepspeed \\\n  train.py \\\n  --deepspeed_config ds.json\n",
            lines=(3,),
            files=files_of(_STRICT),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return (
            f"deepspeed appends --local_rank=N to {issue.detail}'s arguments, and its parser has no such option:"
            " every rank stops at start-up; add --local_rank to the parser or launch with --no_local_rank"
        )

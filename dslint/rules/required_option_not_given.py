"""DSL453: a DeepSpeed launch does not give an option that the script's own strict parser requires."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_STRICT = """\
import argparse
import deepspeed
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--data", required=True)
device = parser.add_mutually_exclusive_group(required=True)
device.add_argument("--cuda", action="store_true")
device.add_argument("--rocm", action="store_true")
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
"""
_KNOWN = _STRICT.replace("parser.parse_args()", "parser.parse_known_args()[0]")


def _files(script: str) -> tuple[tuple[str, str], ...]:
    return (("train.py", script), ("ds.json", '{"train_micro_batch_size_per_gpu": 1}\n'))


class RequiredOptionNotGiven(LaunchRule):
    code = "DSL453"
    slug = "required-option-not-given"
    kind = "missing_required"
    message = "the launched script's parser requires an option this command does not give: every rank stops"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a DeepSpeed launch command (the `deepspeed` runner, or any launcher given a DeepSpeed option or
            config; in a shell script, a Makefile recipe, a README's or a guide's code block) that does not give
            an option the launched script's own `argparse` parser declares `required=True`, or any option of a
            mutually exclusive group made `required=True`, when the script parses strictly and its parser is
            known whole (as for DSL434 and DSL450), and every word of the command is known: a word built at run
            time that may hold options (`"$@"`, `$EXTRA_ARGS`), or a document's placeholder for more (`...`,
            `[options]`), leaves it alone; the value of the option before it (`--output_dir $OUT`) does not. An option
            given by its short spelling (`-c cfg.yaml` for `add_argument("--config", "-c", ...)`) is given. A required
            `--local_rank` is given by the `deepspeed` runner (unless `--no_local_rank`) and by
            `torch.distributed.launch`, which append it to every rank's command line. The
            finding is at the command, with the `add_argument` (or the group) as related location. A command cut
            short by a broken continuation is DSL422's or DSL438's.
        """,
        why="""
            argparse checks required options after reading the command line and stops with "error: the
            following arguments are required: --data" (exit status 2); under a launcher every rank runs the same
            command, so every rank stops at start-up. Most often the README's command predates a new required
            option, or a launcher was written for another entry point.
        """,
        example="""
            deepspeed --num_gpus 2 train.py --cuda --deepspeed_config ds.json
            # train.py: parser.add_argument("--data", required=True)
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py --cuda --data corpus.jsonl --deepspeed_config ds.json
        """,
    )
    valid = (
        Valid("deepspeed train.py --data d.jsonl --rocm --deepspeed_config ds.json\n", files=_files(_STRICT)),
        # abbreviations argparse accepts
        Valid("deepspeed train.py --dat d.jsonl --cud --deepspeed_config ds.json\n", files=_files(_STRICT)),
        # the rest of the command is built at run time: it may give them
        Valid('deepspeed train.py --deepspeed_config ds.json "$@"\n', files=_files(_STRICT)),
        Valid("deepspeed train.py --deepspeed_config ds.json ...\n", files=_files(_STRICT)),
        Valid(
            "deepspeed train.py --deepspeed_config ds.json \\\n   ...(append your options here)\n",
            files=_files(_STRICT),
        ),
        Valid("deepspeed train.py --cuda --deepspeed_config ds.json\n", files=_files(_KNOWN)),
        # no DeepSpeed in the command line: a tool of the project
        Valid("python train.py --cuda\n", files=_files(_STRICT)),
        # the short spelling of the required option
        Valid(
            "deepspeed train.py -d d.jsonl --rocm --deepspeed_config ds.json\n",
            files=_files(_STRICT.replace('add_argument("--data"', 'add_argument("--data", "-d"')),
        ),
        # a required --local_rank: the runner appends it to every rank's command line
        Valid(
            "deepspeed train.py --data d.jsonl --rocm --deepspeed_config ds.json\n",
            files=_files(_STRICT.replace("default=-1)", "required=True)")),
        ),
    )
    invalid = (
        # ... but not where the runner is told not to
        Invalid(
            "deepspeed --no_local_rank train.py --data d.jsonl --rocm --deepspeed_config ds.json\n",
            lines=(1,),
            files=_files(_STRICT.replace("default=-1)", "required=True)")),
        ),
        Invalid(
            "deepspeed --num_gpus 2 train.py --cuda --deepspeed_config ds.json\n", lines=(1,), files=_files(_STRICT)
        ),
        # the value of an option built at run time is still that option's value
        Invalid(
            "OUT=$1\ndeepspeed train.py --data d.jsonl --output_dir $OUT --deepspeed_config ds.json\n",
            lines=(2,),
            files=_files(
                _STRICT.replace(
                    'parser.add_argument("--data"', 'parser.add_argument("--output_dir")\nparser.add_argument("--data"'
                )
            ),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        missing = ", ".join(issue.options[:2]) + (" and more" if len(issue.options) > 2 else "")
        return f"{issue.detail}'s parser requires {missing}, which this command does not give: every rank stops"

"""DSL450: a DeepSpeed launch gives its script an option that the script's own strict parser does not have."""

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
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--use-vllm", action=argparse.BooleanOptionalAction)
parser.add_argument("--learning-rate", type=float, default=1e-4)
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()
"""
_KNOWN = _STRICT.replace("parser.parse_args()", "parser.parse_known_args()[0]")
_HF_BESIDE = """\
import argparse
from transformers import HfArgumentParser, TrainingArguments
def old_parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    return parser.parse_args()
def main():
    return HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
main()
"""
_FOREIGN = _STRICT.replace("parser = deepspeed.add_config_arguments(parser)", "add_model_options(parser)")
_NO_ABBREVIATIONS = _STRICT.replace("ArgumentParser()", "ArgumentParser(allow_abbrev=False)")
_DS_FILE = 'parser.add_argument("--ds_file", "--deepspeed_file")\n'
_PLAIN = 'import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--epochs")\nparser.parse_args()\n'


def _files(script: str) -> tuple[tuple[str, str], ...]:
    return (("train.py", script), ("ds.json", '{"train_micro_batch_size_per_gpu": 1}\n'))


class OptionUnknownToScript(LaunchRule):
    code = "DSL450"
    slug = "option-unknown-to-script"
    kind = "unknown_option"
    message = "the script's parser has no such option: argparse stops every rank at start-up"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags an option of a DeepSpeed launch command (the `deepspeed` runner, or any launcher given a
            DeepSpeed option or config; in a shell script, a Makefile recipe, a README's or a guide's code
            block) that the launched script, a file of the project, has no option for, when the script builds
            its own `argparse.ArgumentParser` and parses strictly (`parser.parse_args()`): no `add_argument` names
            it, exactly or, unless `allow_abbrev=False`, as the start of a longer option, and it is none of the
            options `deepspeed.add_config_arguments` adds; also a flag given without a value that abbreviates
            the one option of that start, which needs a value (`--deepspeed` for a declared
            `--deepspeed_config`: "expected one argument"). Names are compared as argparse stores them (dashes as
            underscores), so `--learning-rate` against a declared `--learning_rate` is not reported. The finding
            names the script's `parse_args` call. Left alone, as for DSL434: every script whose parsing is not
            fully known (`parse_known_args`, `sys.argv` edited or handed on, a parser handed to a function other
            than `add_config_arguments`, built elsewhere or returned, options named by variables, parent
            parsers, subcommands), `--local_rank` (DSL434), and options that come from a shell variable's value.
        """,
        why="""
            argparse's `parse_args` stops with "error: unrecognized arguments: --max_gpus 4" (exit status 2) on
            an option no `add_argument` declares (or first with "the following arguments are required" when a
            required option is missing too). Under a launcher every rank runs the same command line, so
            every rank stops at start-up, after the job has been scheduled and the nodes allocated. Most often
            the option was renamed in the script (or belongs to the launcher: `--num_gpus` written after the
            script) and the launch command was not updated.
        """,
        example="""
            deepspeed --num_gpus 2 train.py --max_epochs 3 --deepspeed_config ds.json
            # train.py declares --epochs, not --max_epochs, and calls parser.parse_args()
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py --epochs 3 --deepspeed_config ds.json
        """,
    )
    valid = (
        # the same job spec giving only options the parser takes
        Valid(
            "jobs:\n  - name: sweep-{lr}\n    command:\n"
            "      - deepspeed --num_gpus 2 train.py --epochs={epochs} --deepspeed_config ds.json\n",
            path="job.yaml",
            files=_files(_STRICT),
        ),
        # `--deepspeed` is add_config_arguments' own switch: an exact name, no abbreviation
        Valid("deepspeed train.py --deepspeed --deepspeed_config ds.json\n", files=_files(_STRICT)),
        Valid("deepspeed --num_gpus 2 train.py --epochs 3 --deepspeed_config ds.json\n", files=_files(_STRICT)),
        # a prefix of a declared option, which argparse takes as its abbreviation; dashes as underscores
        Valid("deepspeed train.py --epo 3 --learning_rate 1e-5 --deepspeed\n", files=_files(_STRICT)),
        Valid("deepspeed train.py --no-use-vllm --deepspeed_config ds.json\n", files=_files(_STRICT)),
        Valid("deepspeed train.py --max_epochs 3 --deepspeed_config ds.json\n", files=_files(_KNOWN)),
        # an HfArgumentParser of dataclass fields beside the argparse one (kept in a function nothing calls)
        Valid("deepspeed train.py --max_epochs 3 --deepspeed_config ds.json\n", files=_files(_HF_BESIDE)),
        Valid("deepspeed train.py --max_epochs 3 --deepspeed_config ds.json\n", files=_files(_FOREIGN)),
        # a plain run with no DeepSpeed in its command line (a tool of a DeepSpeed project)
        Valid("torchrun --nproc_per_node 2 eval.py --max_epochs 3\n", files=(("eval.py", _PLAIN),)),
        Valid("python train.py --max_epochs 3\n", files=_files(_STRICT)),
    )
    invalid = (
        # a job spec's command list (Azure ML / amlt): the grid's placeholders are values not known here
        Invalid(
            "jobs:\n  - name: sweep-{lr}\n    command:\n"
            "      - deepspeed --num_gpus 2 train.py --epochs={epochs} --max_epochs 3 --deepspeed_config ds.json\n",
            lines=(4,),
            path="job.yaml",
            files=_files(_STRICT),
        ),
        Invalid(
            "deepspeed --num_gpus 2 train.py --max_epochs 3 --deepspeed_config ds.json\n",
            lines=(1,),
            files=_files(_STRICT),
        ),
        Invalid(
            "deepspeed --num_gpus 2 train.py \\\n    --epochs 3 \\\n    --num_gpus 2 \\\n"
            "    --deepspeed_config ds.json\n",
            lines=(3,),
            files=_files(_STRICT),
        ),
        Invalid("deepspeed train.py --epo 3 --deepspeed_config ds.json\n", lines=(1,), files=_files(_NO_ABBREVIATIONS)),
        # a bare flag that abbreviates the one option that needs a value: "expected one argument"
        Invalid(
            "deepspeed train.py \\\n    --deepspeed \\\n    --ds_file ds.json\n",
            lines=(2,),
            files=_files(_STRICT.replace("parser = deepspeed.add_config_arguments(parser)\n", _DS_FILE)),
        ),
        Invalid("torchrun --nproc_per_node 2 train.py --max_epochs 3 --deepspeed\n", lines=(1,), files=_files(_STRICT)),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        option = issue.options[0] if issue.options else "this option"
        if len(issue.options) == 2:  # a bare abbreviation of an option that needs a value
            taken = issue.options[1]
            return f"{issue.detail}'s parser takes {option} as {taken}, which needs a value: argparse stops every rank"
        return f"{issue.detail}'s parser has no {option} option: argparse stops every rank at start-up"

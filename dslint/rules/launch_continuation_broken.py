"""DSL438: a launch command that bash ends before the option lines written for it."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule, lost_options_text
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\n"), ("ds_config.json", "{}\n"))


class LaunchContinuationBroken(LaunchRule):
    code = "DSL438"
    slug = "launch-continuation-broken"
    kind = "unjoined"
    message = "the command ends on this line, so the option lines after it never reach the script"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags the last line of a launch command (`deepspeed`, `torchrun`, `accelerate launch`, `python`)
            in a shell script, a notebook's `%%bash` cell or a README's code block, when option lines follow
            it that the command was meant to take: the line's backslash has a space or a tab after it (the
            launcher's own line too, `deepspeed \\  # note`: bash then runs the launcher without its script,
            read from the lines after), or the line has no backslash and the next line starts with `--option`
            (in a command written with backslashes: a document that writes each option on a line of its own
            without any shows a command to type on one line). A plain `python tool.py` or `torchrun` whose
            script never names
            DeepSpeed, with no DeepSpeed option, is left alone, and so is a document's listing that notes each
            option after its backslash (`--lr 1e-5 \\ # the peak rate`): it explains a command, not one to paste.
        """,
        why="""
            A backslash continues a line only as its last character. Followed by a space it escapes that
            space, which becomes an argument of its own (`' '`), and the newline ends the command; without a
            backslash the newline ends it too. The launcher runs the script with the options written up to
            that line only (the DeepSpeed config often among the lost ones), and bash then runs each following
            option line as a command of its own, which fails (`--deepspeed: command not found`) after the
            training has already started without them. Checked with bash.
        """,
        example="""
            deepspeed --num_gpus 2 train.py \\
                --model_name_or_path base-model
                --deepspeed ds_config.json
        """,
        use_instead="""
            deepspeed --num_gpus 2 train.py \\
                --model_name_or_path base-model \\
                --deepspeed ds_config.json
        """,
    )
    valid = (
        # a README listing that explains each option after its backslash: not a command to paste
        Valid(
            "# Options\n\n```\ndeepspeed --num_gpus 2 train.py \\\n"
            "    --model_name_or_path base-model \\ # the model to tune\n"
            "    --deepspeed ds_config.json \\ # ZeRO-2\n```\n",
            path="README.md",
            files=_PROJECT,
        ),
        Valid(
            """\
            deepspeed --num_gpus 2 train.py \\
                --model_name_or_path base-model \\
                --deepspeed ds_config.json
            echo done
            """,
            files=_PROJECT,
        ),
        Valid(
            """\
            deepspeed --num_gpus 2 train.py --deepspeed ds_config.json

            --help lists the options
            """,
            files=_PROJECT,
        ),
        Valid(
            """\
            deepspeed --num_gpus 2 train.py --deepspeed ds_config.json
            python -m other --flag
            """,
            files=_PROJECT,
        ),
        Valid(
            """\
            python tools/convert.py \\
                --input ckpt/
                --output out/
            """,
            files=(("tools/convert.py", "import argparse\nimport torch\n"),),
        ),
    )
    invalid = (
        # one note after a backslash in a README's command meant to be pasted: the lines after it are lost
        Invalid(
            "```bash\ndeepspeed --num_gpus 2 train.py \\\n    --model_name_or_path base-model \\ # the base\n"
            "    --deepspeed ds_config.json \\\n    --epochs 1\n```\n",
            lines=(3,),
            path="README.md",
            files=_PROJECT,
        ),
        # a launcher script runs the command: a note after a backslash cuts it there too
        Invalid(
            "deepspeed --num_gpus 2 train.py \\\n    --model_name_or_path base-model \\ # the base\n"
            "    --deepspeed ds_config.json\n",
            lines=(2,),
            files=_PROJECT,
        ),
        Invalid(
            """\
            deepspeed --num_gpus 2 train.py \\
                --model_name_or_path base-model
                --deepspeed ds_config.json
            """,
            lines=(2,),
            files=_PROJECT,
        ),
        Invalid(
            "deepspeed --num_gpus 2 train.py \\\n    --model_name_or_path base-model \\ \n"
            "    --learning_rate 1e-5 \\\n    --deepspeed ds_config.json\n",
            lines=(2,),
            files=_PROJECT,
        ),
        # a note after the launcher's own backslash: bash runs `deepspeed` alone, the script never starts
        Invalid(
            "deepspeed \\    # the launcher\n    --num_gpus=2 \\  # two GPUs\n    train.py \\    # the script\n"
            "    --deepspeed ds_config.json\n",
            lines=(1,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        why = "a space after this backslash" if issue.cause == "space" else "this line, without a backslash,"
        return f"{why} ends the command that runs {issue.detail}: {lost_options_text(issue.options)}"

"""DSL422: a comment line inside a backslash-continued launch command."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule, lost_options_text
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue


class LaunchCommandCutByComment(LaunchRule):
    code = "DSL422"
    slug = "launch-command-cut-by-comment"
    kind = "cut"
    message = "a comment line inside a continued command ends it; move the comment above the command"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a comment line between the backslash-continued lines of a launch command (`deepspeed`,
            `torchrun`, `accelerate launch`, `python`) when option lines follow it, in a shell script, a
            Makefile recipe or a README's code block.
        """,
        why="""
            A backslash continues a line only when it is the line's last character outside a comment. On the
            comment line bash drops the comment, and the newline after it ends the command: the launcher runs
            the script with the options written before the comment only (the DeepSpeed config among the lost
            ones, often), and then runs each following option line as a command of its own, which fails
            (`--learning_rate: command not found`). Checked with bash.
        """,
        example="""
            deepspeed --num_gpus 2 train.py \\
                # the model to fine-tune
                --model_name_or_path base-model \\
                --deepspeed ds_config.json
        """,
        use_instead="""
            # --model_name_or_path: the model to fine-tune
            deepspeed --num_gpus 2 train.py \\
                --model_name_or_path base-model \\
                --deepspeed ds_config.json
        """,
    )
    valid = (
        Valid(
            """\
            # the model to fine-tune is the first option
            deepspeed --num_gpus 2 train.py \\
                --model_name_or_path base-model \\
                --deepspeed ds_config.json
            """,
            files=(("train.py", "import argparse\n"), ("ds_config.json", "{}\n")),
        ),
        Valid(
            """\
            deepspeed --num_gpus 2 train.py \\
                --deepspeed ds_config.json
            # another run
            echo done
            """,
            files=(("train.py", "import argparse\n"), ("ds_config.json", "{}\n")),
        ),
        # a document's snippet closed by a placeholder comment: the options after it are another block's
        Valid(
            "```bash\ndeepspeed --num_gpus 2 train.py \\\n    --deepspeed ds_config.json \\\n"
            "    # ... other options ...\n```\n\nThe options it adds:\n\n"
            "```bash\n--lora_r 8 \\\n--lora_alpha 16\n```\n",
            path="README.md",
            files=(("train.py", "import argparse\n"), ("ds_config.json", "{}\n")),
        ),
    )
    invalid = (
        Invalid(
            """\
            deepspeed --num_gpus 2 train.py \\
                # the model to fine-tune
                --model_name_or_path base-model \\
                --deepspeed ds_config.json
            """,
            lines=(2,),
            files=(("train.py", "import argparse\n"), ("ds_config.json", "{}\n")),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return (
            f"this comment line ends the continued command that runs {issue.detail}: {lost_options_text(issue.options)}"
        )

"""DSL427: `deepspeed` launcher options that its runner refuses together."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))


class LauncherOptionsRefusedTogether(LaunchRule):
    code = "DSL427"
    slug = "launcher-options-refused-together"
    kind = "refused_options"
    message = "deepspeed refuses these two launcher options together (a ValueError at launch); keep one"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a `deepspeed` launch command (in a shell script, a Makefile recipe, a README's or a guide's
            code block) whose own options the runner refuses together: `--include` or `--exclude` beside
            `--num_gpus` (`--num_accelerators`) or `--num_nodes`; `--include` beside `--exclude`; and
            `--num_nodes 1` (without a hostfile or a `--num_gpus` over 0) on a command that sets
            `CUDA_VISIBLE_DEVICES`. A filter whose value may be empty (a variable) is left alone.
        """,
        why="""
            `deepspeed/launcher/runner.py` (`main`, DeepSpeed 0.19.8, and as far back as 0.10) raises
            `ValueError("Cannot specify num_nodes/gpus with include/exclude")` when a node or GPU count is given
            beside a resource filter, and `parse_inclusion_exclusion` raises "include_str and exclude_str are
            mutually exclusive." Without a hostfile, the runner turns `CUDA_VISIBLE_DEVICES` into
            `--include localhost:...` itself unless a filter, `--num_gpus` over 0 or `--num_nodes` over 1 is
            given, and then refuses the `--num_nodes` beside it. Each stops the launch before any process
            starts. To pick GPUs, `--include localhost:0,1` alone is enough: the number of GPUs follows from it.
        """,
        example="""
            deepspeed --include localhost:0,1 --num_gpus 2 train.py --deepspeed ds.json
        """,
        use_instead="""
            deepspeed --include localhost:0,1 train.py --deepspeed ds.json
        """,
    )
    valid = (
        Valid("deepspeed --include localhost:0,1 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("deepspeed --num_nodes 1 --num_gpus 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid('deepspeed --include "$GPUS" --master_port 29501 train.py --deepspeed ds.json\n', files=_PROJECT),
        Valid("CUDA_VISIBLE_DEVICES=0,1 deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid(
            "CUDA_VISIBLE_DEVICES=0,1 deepspeed --hostfile hosts --num_nodes 1 train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid("torchrun --nproc_per_node 2 --nnodes 1 train.py --deepspeed ds.json\n", files=_PROJECT),
    )
    invalid = (
        Invalid(
            "deepspeed --include localhost:1,0 --num_gpus 2 train.py --deepspeed ds.json\n", lines=(1,), files=_PROJECT
        ),
        Invalid(
            "GPUS=4\ndeepspeed --num_gpus=$GPUS \\\n    --exclude localhost:0 train.py --deepspeed ds.json\n",
            lines=(3,),
            files=_PROJECT,
        ),
        Invalid("deepspeed --include localhost:0 --exclude localhost:1 train.py\n", lines=(1,), files=_PROJECT),
        Invalid(
            "CUDA_VISIBLE_DEVICES=2,3 deepspeed --num_nodes 1 train.py --deepspeed ds.json\n",
            lines=(1,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        first, second = issue.options
        return f"deepspeed refuses {first} with {second} (a ValueError at launch); keep only one of them"

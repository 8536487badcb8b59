"""DSL449: `CUDA_VISIBLE_DEVICES` picking GPUs beside the `deepspeed` launcher's `--num_gpus`, which ignores it."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))


class VisibleDevicesIgnored(LaunchRule):
    code = "DSL449"
    slug = "visible-devices-ignored"
    kind = "ignored_visible_devices"
    message = "deepspeed ignores CUDA_VISIBLE_DEVICES beside --num_gpus: the ranks run on the first GPUs"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags a `deepspeed` launch command (in a shell script, a Makefile recipe, a README's or a guide's
            code block, a notebook's `!` line) that picks GPUs with `CUDA_VISIBLE_DEVICES` (on the line, or
            exported earlier in the launcher) and gives the launcher `--num_gpus N`, when GPUs 0 to N-1, which
            the launcher takes, are not all among those picked. A hostfile, `--include`/`--exclude`,
            `--num_nodes` over 1, a variable's value built at run time or GPUs named other than by index are left
            alone, and so is a variable that allows every GPU the launcher takes (`CUDA_VISIBLE_DEVICES=0,1` with
            `--num_gpus 2` or `--num_gpus 1`). A GPU count built at run time (`--num_gpus=$N`, counted from the
            same list) is judged for GPU 0, which every count takes: flagged when the variable leaves it out.
        """,
        why="""
            The runner (`deepspeed/launcher/runner.py: main`, DeepSpeed 0.19.8, and as far back as 0.10) reads
            `CUDA_VISIBLE_DEVICES` only on a single node without a hostfile and without `--include`, `--exclude`,
            `--num_gpus` over 0 or `--num_nodes` over 1: then it turns the variable into `--include
            localhost:...`. Beside `--num_gpus` it prints "ignoring it", deletes the variable, counts every GPU
            of the machine and gives the ranks the first N (`launcher/launch.py` sets each rank's
            `CUDA_VISIBLE_DEVICES` to those indices). The job runs on GPUs 0 to N-1, often beside another job
            there, while the GPUs meant for it stay idle. `--include localhost:6,7` picks GPUs the way the
            runner reads; the GPU count follows from it.
        """,
        example="""
            CUDA_VISIBLE_DEVICES=6,7 deepspeed --num_gpus 2 train.py --deepspeed ds.json
        """,
        use_instead="""
            deepspeed --include localhost:6,7 train.py --deepspeed ds.json
        """,
    )
    valid = (
        Valid("CUDA_VISIBLE_DEVICES=0,1 deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("CUDA_VISIBLE_DEVICES=0,1 deepspeed --num_gpus 1 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("CUDA_VISIBLE_DEVICES=6,7 deepspeed train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("deepspeed --include localhost:6,7 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("CUDA_VISIBLE_DEVICES=$GPUS deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid(
            "CUDA_VISIBLE_DEVICES=4,5 deepspeed --hostfile hosts --num_gpus 2 train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid("CUDA_VISIBLE_DEVICES=6,7 torchrun --nproc_per_node 2 train.py --deepspeed ds.json\n", files=_PROJECT),
        # a count built at run time beside a variable holding GPU 0: the runner may take only GPUs it allows
        Valid(
            'GPU_IDS=${GPU_IDS:-"0,1"}\nexport CUDA_VISIBLE_DEVICES=$GPU_IDS\n'
            'N=$(echo "$GPU_IDS" | tr "," "\\n" | wc -l)\ndeepspeed --num_gpus=$N train.py --deepspeed ds.json\n',
            files=_PROJECT,
        ),
    )
    invalid = (
        Invalid(
            "CUDA_VISIBLE_DEVICES=6,7 deepspeed --num_gpus=2 train.py --deepspeed ds.json\n",
            lines=(1,),
            files=_PROJECT,
        ),
        Invalid(
            "export CUDA_VISIBLE_DEVICES=5\ndeepspeed --master_port 29600 --num_gpus 1 train.py --deepspeed ds.json\n",
            lines=(2,),
            files=_PROJECT,
        ),
        # a count built at run time: whatever it is, the runner starts at GPU 0, which the variable leaves out
        Invalid(
            'GPU_IDS=${GPU_IDS:-"1"}\nexport CUDA_VISIBLE_DEVICES=$GPU_IDS\n'
            'N=$(echo "$GPU_IDS" | tr "," "\\n" | wc -l)\ndeepspeed --num_gpus=$N train.py --deepspeed ds.json\n',
            lines=(4,),
            files=_PROJECT,
        ),
        Invalid(
            "CUDA_VISIBLE_DEVICES=0 deepspeed --num_gpus 2 train.py --deepspeed ds.json\n",
            lines=(1,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        (count,) = issue.options
        if not count:  # a count built at run time: whatever it is, the runner starts at GPU 0
            return (
                f"deepspeed ignores CUDA_VISIBLE_DEVICES={issue.detail} beside --num_gpus and runs from GPU 0, which "
                f"it leaves out; pass --include localhost:{issue.detail} in its place"
            )
        first = "GPU 0" if count == "1" else f"GPUs 0-{int(count) - 1}"
        return (
            f"deepspeed ignores CUDA_VISIBLE_DEVICES={issue.detail} beside --num_gpus {count} and runs on {first}; "
            f"pass --include localhost:{issue.detail} in its place"
        )

"""DSL473: `CUDA_VISIBLE_DEVICES` assigned without `export` before a launch, which never sees it."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))


class VisibleDevicesNotExported(LaunchRule):
    code = "DSL473"
    slug = "visible-devices-not-exported"
    kind = "visible_devices_unexported"
    message = "CUDA_VISIBLE_DEVICES is set but not exported: the launcher never sees it and takes every GPU"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags a launch command (`deepspeed`, `torchrun`, `accelerate launch`, `python` in a shell script or
            a Makefile recipe) after a line of its launcher that assigns `CUDA_VISIBLE_DEVICES` alone
            (`CUDA_VISIBLE_DEVICES=2,3`) without exporting it, when no `export` names it before the command and
            the command does not set it itself (`CUDA_VISIBLE_DEVICES=2,3 deepspeed ...`). Left alone: a launch
            that picks its GPUs itself (`deepspeed --include/--exclude/--num_gpus/--num_nodes` or a hostfile,
            `accelerate launch --gpu_ids`), a launcher that reads the variable itself (`$CUDA_VISIBLE_DEVICES`
            anywhere in it: a list it splits, an `--include` it builds), one with `set -a`, job scripts of a
            batch system (`#SBATCH`, `#BSUB`, `#PBS`, `srun`: the scheduler exports the variable to the job, so
            assigning it changes what the job's commands get), commands in documents (separate snippets), and
            the machine's first GPUs in order for as many processes as the launch starts on the node
            (`CUDA_VISIBLE_DEVICES=0,1` before `torchrun --nproc_per_node 2`: each rank takes its own of GPUs 0
            and 1 all the same) unless code in the script's folder uses every GPU it sees (`device_map`,
            `torch.cuda.device_count()`).
        """,
        why="""
            A shell variable reaches a command's processes only when it is exported or set on the command line:
            an assignment on a line of its own stays the script's. The launcher then sees every GPU of the
            machine: `deepspeed` and `torchrun` start their ranks on GPUs 0, 1... (`launcher/runner.py` counts
            the machine's GPUs when nothing narrows them), and a `python` process takes GPU 0, beside whatever
            already runs there, while the GPUs the script chose stay idle.
        """,
        example="""
            CUDA_VISIBLE_DEVICES=4,5,6,7
            deepspeed train.py --deepspeed ds.json
        """,
        use_instead="""
            export CUDA_VISIBLE_DEVICES=4,5,6,7
            deepspeed train.py --deepspeed ds.json
        """,
    )
    valid = (
        # the first two GPUs for two processes, each on its rank's GPU: the same GPUs whether exported or not
        Valid("CUDA_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node 2 train.py\n", files=_PROJECT),
        Valid("export CUDA_VISIBLE_DEVICES=4,5\ndeepspeed train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid(
            "CUDA_VISIBLE_DEVICES=4,5\nexport CUDA_VISIBLE_DEVICES\ntorchrun train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid("CUDA_VISIBLE_DEVICES=4,5 deepspeed train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid("set -a\nCUDA_VISIBLE_DEVICES=4,5\ndeepspeed train.py --deepspeed ds.json\n", files=_PROJECT),
        Valid(
            "CUDA_VISIBLE_DEVICES=4,5\n"
            "deepspeed --include localhost:$CUDA_VISIBLE_DEVICES train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid(  # a Slurm job: the scheduler exported the variable, the assignment changes what the job gets
            "#!/bin/bash\n#SBATCH --gres=gpu:4\nCUDA_VISIBLE_DEVICES=0,1\npython train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
    )
    invalid = (
        Invalid("CUDA_VISIBLE_DEVICES=4,5,6,7\ndeepspeed train.py --deepspeed ds.json\n", lines=(2,), files=_PROJECT),
        # the first two GPUs for two processes, but the script spreads its model over every GPU it sees
        Invalid(
            "CUDA_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node 2 train.py\n",
            lines=(2,),
            files=(("train.py", "model = AutoModel.from_pretrained(name, device_map='auto')\n"),),
        ),
        Invalid(
            "GPUS=2,3\nCUDA_VISIBLE_DEVICES=$GPUS  # the free ones\ntorchrun --nproc_per_node 2 train.py\n",
            lines=(3,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        value = issue.options[0] if issue.options else ""
        return f"CUDA_VISIBLE_DEVICES={value} (line {issue.detail}) is not exported: the launch sees every GPU"

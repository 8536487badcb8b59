"""DSL469: `srun` starting a per-node launcher (`deepspeed`, `torchrun`, `accelerate launch`) in a layout that
breaks the job."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_PROJECT = (("train.py", "import argparse\nimport deepspeed\n"), ("ds.json", "{}\n"))
_HEAD = "#!/bin/bash\n#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node={tasks}\n#SBATCH --gres=gpu:8\n"


class SrunLauncherLayout(LaunchRule):
    code = "DSL469"
    slug = "srun-launcher-layout"
    kind = "srun_layout"
    message = "srun starts this launcher in a layout that splits the job into separate worlds"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a launch command that `srun` starts, whose launcher forks the processes of its node itself
            (`deepspeed`, `torchrun`, `python -m torch.distributed.run`, `accelerate launch`), when the Slurm
            layout (the launcher file's `#SBATCH` lines, overridden by the `srun` options of the command) runs
            several tasks on a node (`--ntasks-per-node` over 1, or `--ntasks` above `--nodes`), or one task on
            each of several nodes while the launcher is told nothing of the others: `torchrun` without
            `--nnodes`, `--rdzv_endpoint`, `--master_addr` or `--node_rank`, the `deepspeed` runner without a
            hostfile, `--num_nodes`, `--node_rank`, `--master_addr`, `--no_ssh` or `--launcher`. Only literal
            counts are read.
        """,
        why="""
            Each of these launchers starts one process per GPU of its own node and gives them ranks, a world size
            and a rendezvous from its own arguments (`deepspeed/launcher/launch.py` in DeepSpeed 0.19.8; torchrun's
            standalone rendezvous when no node count or endpoint is given); none reads the Slurm tasks beside it.
            Several tasks on a node start several launchers there: each forms its own world on the same GPUs and
            the same default port, so the job fails to bind or trains unsynchronised copies. One task per node
            with a launcher told nothing of the other nodes makes a world of each node alone (the `deepspeed`
            runner without a hostfile runs on localhost with master address 127.0.0.1): every node trains its
            own copy and their checkpoints overwrite each other.
        """,
        example="""
            #SBATCH --nodes=1
            #SBATCH --ntasks-per-node=8
            srun deepspeed --num_gpus 8 train.py --deepspeed ds.json
        """,
        use_instead="""
            #SBATCH --nodes=1
            #SBATCH --ntasks-per-node=1
            srun deepspeed --num_gpus 8 train.py --deepspeed ds.json
        """,
    )
    valid = (
        Valid(
            _HEAD.format(nodes=1, tasks=1) + "srun deepspeed --num_gpus 8 train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid(  # Slurm itself starts one process a GPU: no launcher under it
            _HEAD.format(nodes=2, tasks=8) + "srun python train.py --deepspeed ds.json\n", files=_PROJECT
        ),
        Valid(
            _HEAD.format(nodes=4, tasks=1)
            + "srun torchrun --nnodes 4 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $HEAD:29500 "
            "train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid(  # the command's own count wins over the allocation's
            _HEAD.format(nodes=1, tasks=8) + "srun -n 1 deepspeed --num_gpus 8 train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid(
            _HEAD.format(nodes=2, tasks=1) + "srun deepspeed --hostfile hosts --no_ssh --node_rank $SLURM_NODEID "
            "--master_addr $HEAD train.py --deepspeed ds.json\n",
            files=_PROJECT,
        ),
        Valid("srun --ntasks-per-node=$TASKS deepspeed train.py --deepspeed ds.json\n", files=_PROJECT),
    )
    invalid = (
        Invalid(
            _HEAD.format(nodes=1, tasks=8) + "srun deepspeed --num_gpus 8 train.py --deepspeed ds.json\n",
            lines=(5,),
            files=_PROJECT,
        ),
        Invalid(
            _HEAD.format(nodes=4, tasks=1) + "srun torchrun --nproc_per_node 8 train.py --deepspeed ds.json\n",
            lines=(5,),
            files=_PROJECT,
        ),
        Invalid(
            "#!/bin/bash\nsrun --nodes=2 --ntasks=2 \\\n    deepspeed --num_gpus 8 train.py --deepspeed ds.json\n",
            lines=(3,),
            files=_PROJECT,
        ),
        Invalid(
            "srun -N 1 -n 4 torchrun --nproc_per_node 4 train.py --deepspeed ds.json\n", lines=(1,), files=_PROJECT
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        (count,) = issue.options
        if issue.detail == "tasks":
            return f"srun starts {count} of this launcher a node, each its own world on the same GPUs; use one a node"
        return f"srun starts this launcher on {count} nodes that never join: each trains alone; give it the nodes"

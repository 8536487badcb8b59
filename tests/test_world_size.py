"""World size from launch lines, as each launcher reads its arguments."""

from __future__ import annotations

import pytest

from dslint.project.accelerate_yaml import parse_accelerate_yaml
from dslint.project.launchers import parse_shell
from dslint.project.world_size import world_size

HOSTFILE = "# two nodes\nworker-0 slots=8\nworker-1 slots=8\n"


def size(command: str, files: dict[str, str] | None = None) -> tuple[int | None, int | None]:
    (line,) = parse_shell("run.sh", command)
    found = world_size(line, lambda name: (files or {}).get(name))
    return found.ranks, found.per_node


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("deepspeed --num_gpus 8 train.py --deepspeed_config ds.json", (8, 8)),
        ("deepspeed --num_gpus=4 train.py", (4, 4)),
        ("deepspeed train.py", (None, None)),
        ("CUDA_VISIBLE_DEVICES=0,1,2 deepspeed train.py", (3, 3)),
        ("export CUDA_VISIBLE_DEVICES=0,1\ndeepspeed train.py", (2, 2)),
        ("CUDA_VISIBLE_DEVICES=0,1,2 deepspeed --num_gpus 2 train.py", (2, 2)),  # ignored beside --num_gpus
        ("deepspeed --include localhost:0,1,2,3 train.py", (4, 4)),
        ("deepspeed --hostfile hostfile train.py", (16, 8)),
        ("deepspeed --hostfile hostfile --num_nodes 1 train.py", (8, 8)),
        ("deepspeed --hostfile hostfile --num_gpus 2 train.py", (4, 2)),
        ("deepspeed --hostfile hostfile --include worker-1:0,1 train.py", (2, 2)),
        ("deepspeed --hostfile hostfile --exclude worker-0 train.py", (8, 8)),
        ("deepspeed --hostfile missing train.py", (None, None)),
        ("N=$1\ndeepspeed --num_gpus $N train.py", (None, None)),
        ("torchrun --nproc_per_node 4 train.py", (4, 4)),
        ("torchrun --nnodes 2 --nproc-per-node=8 train.py", (16, 8)),
        ("torchrun --nnodes 1:4 --nproc_per_node 8 train.py", (None, None)),
        ("torchrun train.py", (1, 1)),
        ("python -m torch.distributed.launch --nproc_per_node=2 train.py", (2, 2)),
        ("CUDA_VISIBLE_DEVICES=4,5 torchrun --nproc_per_node gpu train.py", (2, 2)),
        ("torchrun --nproc_per_node gpu train.py", (None, None)),
        ("accelerate launch --num_processes 4 train.py", (4, 4)),
        ("accelerate launch train.py", (None, None)),
        ("python train.py", (1, 1)),
        ("srun python train.py", (None, None)),  # srun / mpirun start the processes: their counts are not read
        ("mpirun -np 8 python train.py", (None, None)),
        ("mpirun -np 8 bash -c 'python train.py --deepspeed_config ds.json'", (None, None)),
        ("bash -c 'deepspeed --num_gpus 2 train.py'", (2, 2)),
        # the launcher's options in a variable built at run time: any of them may be there
        ('ARGS="--nproc_per_node $GPUS"\ntorchrun $ARGS train.py', (None, None)),
        ("torchrun --master_port $PORT train.py", (1, 1)),  # a run-time value of a known option hides nothing
    ],
)
def test_world_size(command: str, expected: tuple[int | None, int | None]) -> None:
    assert size(command, {"hostfile": HOSTFILE}) == expected


def test_accelerate_yaml_num_processes() -> None:
    (line,) = parse_shell("run.sh", "accelerate launch --config_file acc.yaml train.py")
    yaml = parse_accelerate_yaml("acc.yaml", "distributed_type: DEEPSPEED\nnum_machines: 2\nnum_processes: 16\n")
    found = world_size(line, lambda name: None, yaml)
    assert (found.ranks, found.per_node, found.nodes) == (16, 8, 2)
    assert "acc.yaml" in found.source


def test_sources_say_where() -> None:
    (line,) = parse_shell("run.sh", "deepspeed --hostfile hostfile --num_gpus 2 train.py")
    assert world_size(line, lambda name: HOSTFILE).source == "hostfile hostfile, --num_gpus 2"
    (line,) = parse_shell("run.sh", "deepspeed train.py")
    assert "every GPU" in world_size(line, lambda name: None).source


def test_a_pipeline_script_checks_batches_against_its_data_parallel_ranks() -> None:
    """DeepSpeed's batch check counts data-parallel ranks: a PipelineModule with a literal `num_stages` divides
    the launch's ranks; a stage count the script computes leaves them unknown; no PipelineModule, all ranks."""
    from dslint.project.world_size import data_parallel_ranks

    pipe = b"from deepspeed.pipe import PipelineModule\nnet = PipelineModule(layers=layers, num_stages=2)\n"
    assert data_parallel_ranks(8, "--num_gpus 8", pipe) == (
        4,
        "--num_gpus 8; 2 pipeline stages (PipelineModule num_stages=2)",
    )
    computed = b"net = PipelineModule(layers=layers, num_stages=world // 2)\n"
    assert data_parallel_ranks(8, "--num_gpus 8", computed) == (None, "--num_gpus 8")
    assert data_parallel_ranks(8, "--num_gpus 8", b"engine = deepspeed.initialize(model=net)\n") == (8, "--num_gpus 8")

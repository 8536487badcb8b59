"""The launch rules added for issue #23: DSL430 (a Python interpreter given to the `deepspeed` launcher)."""

from __future__ import annotations

import pytest

from dslint.project.launch_issues import interpreter_given
from dslint.project.launchers import parse_makefile, parse_shell


def _issue(text: str):  # type: ignore[no-untyped-def]
    lines = parse_shell("run.sh", text)
    assert len(lines) == 1, lines
    return interpreter_given(lines[0])


@pytest.mark.parametrize(
    ("text", "word", "line", "column"),
    [
        ("deepspeed python train.py\n", "python", 1, 11),
        ("deepspeed --num_gpus=2 python3 train.py --deepspeed ds.json\n", "python3", 1, 24),
        ("deepspeed --hostfile hosts --master_port 29501 python train.py\n", "python", 1, 48),
        ("deepspeed -H hosts -q python train.py\n", "python", 1, 23),
        ("deepspeed --num_gpus 2 \\\n  --no_ssh_check \\\n  python train.py\n", "python", 3, 3),
        ("deepspeed --module python3.11 train.py\n", "python3.11", 1, 20),
        ("python -m deepspeed.launcher.runner python train.py\n", "python", 1, 37),
    ],
)
def test_interpreter_is_found_where_written(text: str, word: str, line: int, column: int) -> None:
    issue = _issue(text)
    assert issue is not None
    assert (issue.kind, issue.detail, issue.line, issue.column, issue.end_column) == (
        "interpreter",
        word,
        line,
        column,
        column + len(word),
    )


@pytest.mark.parametrize(
    "text",
    [
        "deepspeed train.py --deepspeed ds.json\n",
        "deepspeed --no_python python train.py\n",
        "deepspeed --num_gpus 2 train.py python\n",  # after the script: the script's own argument
        "deepspeed --launcher_args python train.py\n",  # an option's value
        "deepspeed --include localhost:0 pythonic.py\n",
        "torchrun --nproc_per_node 2 train.py\n",
        "accelerate launch --num_processes 2 train.py\n",
        "deepspeed run_python.py\n",
    ],
)
def test_no_interpreter(text: str) -> None:
    assert _issue(text) is None


def test_makefile_recipe() -> None:
    lines = parse_makefile("Makefile", "train:\n\tdeepspeed --num_gpus 8 python train.py\n")
    assert len(lines) == 1
    issue = interpreter_given(lines[0])
    assert issue is not None and (issue.line, issue.detail) == (2, "python")


# -- DSL433: rank variables overwritten under a launch of several processes -------------------------------------


def _launch(ranks_per_node: int | None, source: str):  # type: ignore[no-untyped-def]
    from dslint.diagnostics import Related
    from dslint.script.project_facts import LaunchedConfig

    return LaunchedConfig(
        Related("run.sh", 1, 1, "launch"), None, None, ranks_per_node=ranks_per_node, world_source=source
    )


@pytest.mark.parametrize(
    ("ranks_per_node", "source", "several"),
    [
        (2, "--num_gpus 2, one node (no hostfile)", True),
        (1, "python starts one process", False),
        (None, "deepspeed without --num_gpus, --include or a hostfile uses every GPU it finds", True),
        (None, "--nproc_per_node auto: every GPU of the machine", True),
        (None, "srun: not a launcher dslint reads", False),
        (None, "--num_gpus is set at run time", False),
    ],
)
def test_several_processes(ranks_per_node: int | None, source: str, several: bool) -> None:
    assert _launch(ranks_per_node, source).several_a_node is several


@pytest.mark.parametrize(
    ("code", "constant"),
    [('"0"', True), ("0", True), ("str(0)", True), ('str("1")', True), ("str(rank)", False), ("args.rank", False)],
)
def test_constant_values(code: str, constant: bool) -> None:
    import libcst as cst

    from dslint.rules.rank_environment_overwritten import _constant

    assert _constant(cst.parse_expression(code)) is constant


# -- DSL431: a client optimizer under ZeRO-Offload ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "refused"),
    [
        ({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, True),
        ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}}}, True),
        ({"zero_optimization": {"stage": 2, "cpu_offload": True}}, True),
        ({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}}}, False),
        ({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}, False),
        ({"zero_optimization": {"stage": 2, "cpu_offload": False}}, False),
        (
            {"zero_force_ds_cpu_optimizer": False, "zero_optimization": {"offload_optimizer": {"device": "cpu"}}},
            False,
        ),
        # the section is not built when initialize gets a client optimizer (it overrides it): still refused
        ({"optimizer": {"type": "Adam"}, "zero_optimization": {"offload_optimizer": {"device": "cpu"}}}, True),
        ({"zero_optimization": {"offload_optimizer": {"device": "auto"}}}, False),
    ],
)
def test_offload_refuses_client_optimizer(values: dict[str, object], refused: bool) -> None:
    from dslint.rules.client_optimizer_with_zero_offload import _offloads_to_cpu

    assert _offloads_to_cpu(values) is refused

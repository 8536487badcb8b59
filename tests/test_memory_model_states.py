"""The model-state forecast against DeepSpeed 0.19.8's own estimator functions (imported here, in the test only;
dslint never imports deepspeed)."""

from __future__ import annotations

import pytest

from dslint.memory.model_states import Setup, deepspeed_estimate, model_states, optimizer_state_bytes

stage_1_and_2 = pytest.importorskip("deepspeed.runtime.zero.stage_1_and_2")
stage3 = pytest.importorskip("deepspeed.runtime.zero.stage3")

SIZES = [(125_000_000, 38_597_376), (940_640_256, 65_536_000), (6_738_415_616, 131_072_000)]
LAYOUTS = [(1, 1), (4, 1), (8, 1), (8, 2), (16, 4)]  # (GPUs per node, nodes)


def within(ours: int, theirs: int, tolerance: float = 0.05) -> bool:
    return abs(ours - theirs) <= tolerance * theirs


@pytest.mark.parametrize(("params", "largest"), SIZES)
@pytest.mark.parametrize(("per_node", "nodes"), LAYOUTS)
@pytest.mark.parametrize("offload", [False, True])
def test_zero2_gpu_bytes_match_deepspeed(params: int, largest: int, per_node: int, nodes: int, offload: bool) -> None:
    _, gpu = stage_1_and_2.estimate_zero2_model_states_mem_needs(
        params, num_gpus_per_node=per_node, num_nodes=nodes, cpu_offload=offload
    )
    setup = Setup(params, per_node * nodes, per_node, 2, "bf16", "cpu" if offload else None, largest_layer=largest)
    assert within(model_states(setup).gpu_bytes, gpu)
    estimate = deepspeed_estimate(setup)
    assert estimate is not None and estimate["gpu_bytes"] == gpu


@pytest.mark.parametrize(("params", "largest"), SIZES)
@pytest.mark.parametrize(("per_node", "nodes"), LAYOUTS)
@pytest.mark.parametrize(("optimizer", "param"), [(False, False), (True, False), (True, True)])
def test_zero3_gpu_bytes_match_deepspeed(
    params: int, largest: int, per_node: int, nodes: int, optimizer: bool, param: bool
) -> None:
    host, gpu, _ = stage3.estimate_zero3_model_states_mem_needs(
        params, largest, num_gpus_per_node=per_node, num_nodes=nodes, cpu_offload=optimizer,
        cpu_offload_params=param, zero_init=True,
    )  # fmt: skip
    setup = Setup(
        params, per_node * nodes, per_node, 3, "fp16", "cpu" if optimizer else None, "cpu" if param else None,
        largest_layer=largest,
    )  # fmt: skip
    states = model_states(setup)
    assert within(states.gpu_bytes, gpu)
    estimate = deepspeed_estimate(setup)
    assert estimate is not None and estimate["gpu_bytes"] == gpu and estimate["host_bytes_per_node"] == host
    if optimizer:
        # DeepSpeed's host figure is per node with a 1.5 buffer factor; ours is per rank, without it.
        assert within(int(states.host_bytes * per_node * 1.5), host)


def test_zero3_host_parts_are_sharded_per_rank() -> None:
    states = model_states(Setup(8_000_000, 8, 8, 3, "bf16", "cpu", "cpu", largest_layer=1_000))
    assert states.host_bytes == 18 * 1_000_000
    assert states.gpu_bytes == 4_000
    assert states.nvme_bytes == 0


def test_nvme_offload_moves_the_states_to_nvme() -> None:
    states = model_states(Setup(1_000_000, 1, 1, 3, "bf16", "nvme", "nvme", largest_layer=10))
    assert states.nvme_bytes == 18_000_000
    assert states.host_bytes == 0


def test_stages_below_two() -> None:
    p = 1_000_000
    # ZeRO-0 bf16: 16-bit model and gradients, fp32 gradients, master and Adam moments, nothing sharded.
    assert model_states(Setup(p, 8, 8, 0, "bf16")).gpu_bytes == 20 * p
    # ZeRO-1: only the fp32 parts are sharded.
    assert model_states(Setup(p, 8, 8, 1, "bf16")).gpu_bytes == 4 * p + 16 * p // 8
    # fp32 without ZeRO: weights, gradients and two moments, no master copy.
    assert model_states(Setup(p, 1, 1, 0, "fp32")).gpu_bytes == 16 * p
    # fp32 ZeRO-2: the fp32 partition is a clone, the gradients are already fp32.
    assert model_states(Setup(p, 4, 4, 2, "fp32")).gpu_bytes == 4 * p + 16 * p // 4


def test_offload_param_below_stage_3_is_ignored() -> None:
    with_param = model_states(Setup(1_000_000, 2, 2, 2, "bf16", None, "cpu"))
    assert with_param.gpu_bytes == model_states(Setup(1_000_000, 2, 2, 2, "bf16")).gpu_bytes
    assert any("ignored" in note for note in with_param.notes)


def test_unknown_largest_layer_is_said() -> None:
    states = model_states(Setup(1_000_000, 2, 2, 3, "bf16"))
    assert states.part("largest layer, gathered") is None
    assert any("largest layer unknown" in note for note in states.notes)
    assert deepspeed_estimate(Setup(1_000_000, 2, 2, 3, "bf16")) is None


def test_optimizer_state_bytes() -> None:
    assert optimizer_state_bytes("AdamW") == 8
    assert optimizer_state_bytes("Adagrad") == 4
    assert optimizer_state_bytes("SGD") is None
    lion = model_states(Setup(1_000, 1, 1, 2, "bf16", optimizer_state_bytes=4))
    assert lion.gpu_bytes == 2_000 + 14_000

"""Model-state memory per rank: parameters, gradients, master weights and optimizer states, by ZeRO stage,
offload, precision and optimizer.

The baseline is DeepSpeed's own estimator (0.19.8, `runtime/zero/stage_1_and_2.py:
estimate_zero2_model_states_mem_needs`, `runtime/zero/stage3.py: estimate_zero3_model_states_mem_needs`), which
counts for 16-bit mixed precision with Adam:

    ZeRO-2                        GPU 2P + 18P/N          (18 = 16-bit grads 2 + fp32 grads 4 + fp32 master 4
    ZeRO-2, offload_optimizer     GPU 2P                        + two Adam moments 8)
    ZeRO-3                        GPU 4L + 18P/N          (L: the largest layer's parameters, gathered whole)
    ZeRO-3, offload_optimizer     GPU 4L + 2P/N
    ZeRO-3, offload both          GPU 4L

Here the same terms are kept as named parts, each on the GPU, in host memory or on NVMe, whole or sharded over
the N data-parallel ranks, so that the stages and settings the estimator does not cover follow from the same
bookkeeping: ZeRO-0 (nothing sharded: bf16 keeps an fp32 master and fp32 gradients beside the 16-bit model,
`runtime/bf16_optimizer.py`, as fp16's `FP16_Optimizer` does), ZeRO-3's 18 (16-bit parameters 2, fp32
gradients 4, master 4, moments 8: no separate 16-bit gradient partition), ZeRO-1 (only the fp32 parts sharded), fp32 (no
16-bit copy, no separate fp32 gradients: the fp32 partition is still a clone, `single_partition_of_fp32_groups`),
optimizers with other state sizes. Host bytes are per rank (the estimator reports a node's host memory, with a
1.5 buffer factor; `deepspeed_estimate` gives its figures as it computes them). Activations, communication
buckets, the CUDA context and the allocator's slack are not model states and are not counted here.
"""

from __future__ import annotations

from dataclasses import dataclass

PRECISION_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# Bytes of optimizer state per parameter (fp32 moments), by the optimizer's lower-case name.
OPTIMIZER_STATE_BYTES = {
    "adam": 8,
    "adamw": 8,
    "fusedadam": 8,
    "deepspeedcpuadam": 8,
    "cpuadam": 8,
    "lamb": 8,
    "fusedlamb": 8,
    "onebitadam": 8,
    "zerooneadam": 8,
    "onebitlamb": 8,
    "adagrad": 4,
    "deepspeedcpuadagrad": 4,
    "lion": 4,
    "fusedlion": 4,
    "deepspeedcpulion": 4,
}
GPU, HOST, NVME = "gpu", "host", "nvme"


@dataclass(frozen=True)
class Setup:
    """What the model-state memory depends on."""

    params: int
    world_size: int = 1
    gpus_per_node: int = 1
    zero_stage: int = 0
    precision: str = "bf16"  # bf16 | fp16 | fp32
    offload_optimizer: str | None = None  # cpu | nvme | None
    offload_param: str | None = None  # cpu | nvme | None (read at stage 3 only, as DeepSpeed does)
    largest_layer: int | None = None  # parameters of the largest module (ZeRO-3 gathers it whole)
    optimizer_state_bytes: int = 8  # per parameter: 8 for Adam/AdamW (two fp32 moments)

    @property
    def nodes(self) -> int:
        return max(1, -(-self.world_size // max(1, self.gpus_per_node)))


@dataclass(frozen=True)
class Part:
    """One model state on one rank."""

    name: str
    where: str  # gpu | host | nvme
    bytes: int
    sharded: bool
    bytes_per_param: float  # before sharding


@dataclass(frozen=True)
class ModelStates:
    setup: Setup
    parts: tuple[Part, ...]
    notes: tuple[str, ...] = ()

    def total(self, where: str) -> int:
        return sum(part.bytes for part in self.parts if part.where == where)

    @property
    def gpu_bytes(self) -> int:
        return self.total(GPU)

    @property
    def host_bytes(self) -> int:
        return self.total(HOST)

    @property
    def nvme_bytes(self) -> int:
        return self.total(NVME)

    def part(self, name: str) -> Part | None:
        return next((part for part in self.parts if part.name == name), None)


def model_states(setup: Setup) -> ModelStates:
    """The model states of one rank (the worst one: sharded parts are rounded up)."""
    if setup.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage {setup.zero_stage}")
    if setup.precision not in PRECISION_BYTES:
        raise ValueError(f"precision {setup.precision}")
    p = setup.params
    n = max(1, setup.world_size)
    stage = setup.zero_stage
    width = PRECISION_BYTES[setup.precision]
    half = width == 2
    notes: list[str] = []
    optimizer_place = _place(setup.offload_optimizer) if stage >= 1 else GPU
    if setup.offload_optimizer and stage == 0:
        notes.append("offload_optimizer needs ZeRO 1-3: ignored at stage 0")
    param_place = _place(setup.offload_param) if stage == 3 else GPU
    if setup.offload_param and stage < 3:
        notes.append("offload_param is read at ZeRO-3 only: ignored")

    def part(name: str, where: str, per_param: float, sharded: bool) -> Part:
        count = -(-p // n) if sharded else p
        return Part(name, where, int(per_param * count), sharded, per_param)

    parts: list[Part] = []
    model_name = f"{setup.precision} parameters"
    parts.append(part(model_name, param_place, width, stage == 3))
    if stage == 3:
        if setup.largest_layer is None:
            notes.append("largest layer unknown: ZeRO-3's gathered layer (4 bytes x its parameters) not counted")
        else:
            parts.append(Part("largest layer, gathered", GPU, 4 * setup.largest_layer, False, 0))
    # Gradients in the model's dtype: on the GPU unless the optimizer is offloaded (then they go straight into
    # the host's fp32 gradient partition; DeepSpeed's offload formulas count none on the GPU). ZeRO-3 reduces
    # 16-bit gradients into the fp32 gradient partition: its formula (18 = 2 + 4 + 4 + 8) has no 16-bit copy.
    if optimizer_place == GPU and not (stage == 3 and half):
        parts.append(part(f"{setup.precision} gradients", GPU, width, stage >= 2))
    if half:
        parts.append(part("fp32 gradients", optimizer_place, 4, stage >= 1))
    if half or stage >= 1:
        parts.append(part("fp32 master parameters", optimizer_place, 4, stage >= 1))
    if setup.optimizer_state_bytes:
        parts.append(part("optimizer states", optimizer_place, setup.optimizer_state_bytes, stage >= 1))
    return ModelStates(setup, tuple(parts), tuple(notes))


def _place(device: str | None) -> str:
    if device == "cpu":
        return HOST
    if device == "nvme":
        return NVME
    return GPU


def deepspeed_estimate(setup: Setup) -> dict[str, int] | None:
    """DeepSpeed's own estimator figures for this setup, computed as 0.19.8 computes them (GPU bytes per rank,
    host bytes per node with its 1.5 buffer factor, zero_init=True); None where it has no formula (ZeRO-0/1,
    fp32, an optimizer other than Adam's 8 bytes, a largest layer unknown at ZeRO-3)."""
    if setup.precision == "fp32" or setup.optimizer_state_bytes != 8 or setup.zero_stage < 2:
        return None
    p = setup.params
    total = max(1, setup.world_size)
    per_node = max(1, setup.gpus_per_node)
    nodes = setup.nodes
    factor = 1.5
    if setup.zero_stage == 2:
        if setup.offload_optimizer:
            return {"gpu_bytes": 2 * p, "host_bytes_per_node": int(p * max(4 * total, 16) * factor)}
        return {"gpu_bytes": 2 * p + int(18 * p / total), "host_bytes_per_node": int(p * 4 * per_node * factor)}
    if setup.largest_layer is None:
        return None
    largest = 4 * setup.largest_layer
    if setup.offload_optimizer:
        if setup.offload_param:
            return {"gpu_bytes": largest, "host_bytes_per_node": int(p * 18 / nodes * factor)}
        return {"gpu_bytes": largest + int(2 * p / total), "host_bytes_per_node": int(p * 16 / nodes * factor)}
    return {
        "gpu_bytes": largest + int(18 * p / total),
        "host_bytes_per_node": int(setup.largest_layer * 4 * per_node * factor),
    }


def optimizer_state_bytes(name: str | None) -> int | None:
    """Bytes of state per parameter for an optimizer named in a config or a script (None: not known)."""
    if name is None:
        return None
    return OPTIMIZER_STATE_BYTES.get(name.replace("_", "").replace("-", "").lower())

"""The memory forecast of one launch, per rank and per phase, as plain data (`dslint memory`, runtime_check).

A launch is what the project index found (launcher -> script -> config); the world size comes from the launch
line (`dslint.project.world_size`) unless given. Per rank means the worst rank: the one on GPU 0 of a node,
which also receives what a mistake puts on cuda:0.

Phases (the runtime check measures the same boundaries):

    init  until `deepspeed.initialize` returns, and what the script does before it: the model as built on the
          CPU (fp32, 4 bytes a parameter, unless built under `deepspeed.zero.Init`), then the states
          initialize allocates (16-bit parameters, fp32 master; the fp32 gradient partition it creates and frees
          in `initialize_optimizer_states`); under ZeRO-3 without `zero.Init` the whole 16-bit model is on each
          GPU before it is partitioned.
    load  from initialize to the first forward: the states that stay, and what a checkpoint load adds.
    step  the model states in full (DeepSpeed's estimator: optimizer moments are allocated at the first step).
          Activations are NOT included: they depend on batch, sequence length, checkpointing and kernels that
          the project's text does not settle.

What the project's findings add: `torch.load` to a CUDA device (DSL201) or without `map_location` (DSL202)
puts the whole checkpoint on a GPU (before initialize: cuda:0, for every rank of the node); a model moved before
initialize (DSL101) puts each rank's fp32 copy on its device, on cuda:0 for all of them when the move names no
index; a `torch.load(..., map_location="cpu")` puts a full copy in each rank's host memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dslint.config.facts import batch_values
from dslint.config.tree import Object, Scalar, node_at
from dslint.diagnostics import Diagnostic
from dslint.memory.model_states import (
    GPU,
    HOST,
    PRECISION_BYTES,
    ModelStates,
    Setup,
    deepspeed_estimate,
    model_states,
    optimizer_state_bytes,
)
from dslint.memory.params import ParamCount, from_script
from dslint.memory.script_scan import ABSENT, ScriptMemoryFacts, TorchLoad, scan
from dslint.project.config_access import load_config_tree
from dslint.project.describe import config_summary
from dslint.project.world_size import WorldSize

PHASES = ("init", "load", "step")
FINDING_CODES = ("DSL101", "DSL201", "DSL202")
ACTIVATIONS_NOTE = (
    "activations, ZeRO-3's gathered parameters beyond one layer, the CUDA context and the allocator's slack are not "
    "included"
)


@dataclass(frozen=True)
class Overrides:
    params: int | None = None
    world_size: int | None = None
    gpus_per_node: int | None = None


@dataclass
class Phase:
    gpu_bytes: int
    host_bytes: int
    added: list[dict[str, Any]] = field(default_factory=list)

    def add(self, where: str, amount: int, code: str | None, line: int, what: str, conditional: bool = False) -> None:
        """`conditional`: the statement is inside an `if` (its bytes count, and are marked, since it may not run)."""
        if where == GPU:
            self.gpu_bytes += amount
        else:
            self.host_bytes += amount
        item = {"code": code, "line": line, "on": where, "bytes": amount, "what": what, "conditional": conditional}
        self.added.append(item)


@dataclass(frozen=True)
class ConfigFacts:
    zero_stage: int | None
    precision: str | None
    offload_optimizer: str | None = None
    offload_param: str | None = None
    optimizer: str | None = None
    momentum: float | None = None
    batch: tuple[Any, Any, Any] = (None, None, None)
    reduce_bucket_size: int = 500_000_000  # DeepSpeed's defaults (runtime/zero/config.py)
    contiguous_gradients: bool = True
    overlap_comm: bool | None = None  # None: DeepSpeed's default, True at stage 3 only


def _device(tree: Object, section: str) -> str | None:
    node = node_at(tree, "zero_optimization", section, "device")
    if isinstance(node, Scalar) and isinstance(node.value, str) and node.value in ("cpu", "nvme"):
        return node.value
    return None


def read_config(
    path: str | None,
    inline_stage: int | None = None,
    mixed_precision: str | None = None,
    named_by: str | None = None,
) -> ConfigFacts:
    """The settings of a DeepSpeed config that the forecast needs (DeepSpeed's defaults where absent: no fp16 or
    bf16 section is fp32); the accelerate YAML's inline stage and mixed precision when there is no file.
    `named_by`: the script that uses it, whose project the config must be in (`config_access`)."""
    if path is None:
        precision = mixed_precision if mixed_precision in PRECISION_BYTES else None
        return ConfigFacts(inline_stage, precision)
    summary = config_summary(path, named_by)
    tree = load_config_tree(Path(path), named_by)
    if not summary["readable"] or not isinstance(tree, Object):
        return ConfigFacts(None, None)
    precision = summary["precision"]
    if precision in (None, "auto") and mixed_precision in PRECISION_BYTES:
        precision = mixed_precision
    elif precision is None and tree.get("fp16") is None and tree.get("bf16") is None and tree.get("bfloat16") is None:
        precision = "fp32"  # DeepSpeed's default: neither section
    optimizer = node_at(tree, "optimizer", "type")
    momentum = node_at(tree, "optimizer", "params", "momentum")
    return ConfigFacts(
        summary["zero_stage"],
        precision if precision in PRECISION_BYTES else None,
        _device(tree, "offload_optimizer"),
        _device(tree, "offload_param"),
        optimizer.value if isinstance(optimizer, Scalar) and isinstance(optimizer.value, str) else None,
        float(momentum.value)
        if isinstance(momentum, Scalar)
        and isinstance(momentum.value, (int, float))
        and not isinstance(momentum.value, bool)
        else None,
        batch_values(tree),
        *_buckets(tree),
    )


def _buckets(tree: Object) -> tuple[int, bool, bool | None]:
    size = node_at(tree, "zero_optimization", "reduce_bucket_size")
    contiguous = node_at(tree, "zero_optimization", "contiguous_gradients")
    overlap = node_at(tree, "zero_optimization", "overlap_comm")
    bucket = 500_000_000
    if isinstance(size, Scalar) and isinstance(size.value, (int, float)) and not isinstance(size.value, bool):
        bucket = int(size.value) if size.value > 0 else bucket
    flag = contiguous.value if isinstance(contiguous, Scalar) and isinstance(contiguous.value, bool) else True
    both = overlap.value if isinstance(overlap, Scalar) and isinstance(overlap.value, bool) else None
    return bucket, flag, both


def _optimizer(config: ConfigFacts, facts: ScriptMemoryFacts, script: str) -> tuple[str, int, str]:
    """(name, state bytes per parameter, where it came from)."""
    for name, source, momentum in (
        (config.optimizer, "the config's optimizer.type", config.momentum),
        (facts.optimizer, f"{script}:{facts.optimizer_line}", None),
    ):
        if name is None:
            continue
        if name.lower() == "sgd":
            return name, 4 if momentum else 0, f"{source} (SGD: a momentum buffer when momentum > 0)"
        size = optimizer_state_bytes(name)
        if size is not None:
            return name, size, source
        return "Adam", 8, f"{source} names {name}, whose state size dslint does not know: counted as Adam's"
    return "Adam", 8, "no optimizer named: Adam assumed, as DeepSpeed's estimator assumes"


def _checkpoint_bytes(load: TorchLoad, script: str, params: int, roots: tuple[str, ...]) -> tuple[int, str]:
    if load.path is not None:
        for base in (os.path.dirname(script), os.getcwd(), *roots):
            candidate = os.path.join(base, load.path)
            if os.path.isfile(candidate):
                return os.path.getsize(candidate), f"{load.path}, {os.path.getsize(candidate)} bytes on disk"
    return 4 * params, "the checkpoint assumed an fp32 state dict of the model (4 bytes a parameter)"


def _source_text(text: str, diagnostic: Diagnostic) -> str:
    lines = text.splitlines()
    start, end = diagnostic.start, diagnostic.end
    if not 0 < start.line <= len(lines):
        return ""
    if start.line == end.line:
        return lines[start.line - 1][start.column - 1 : end.column - 1]
    return "\n".join(lines[start.line - 1 : end.line])


def _unindexed(move: str) -> bool:
    compact = move.replace(" ", "")
    return (
        compact.endswith((".cuda()", "('cuda')", '("cuda")'))
        or "device='cuda')" in compact
        or 'device="cuda")' in compact
    )


def forecast(
    script: str,
    config_path: str | None,
    world: WorldSize,
    findings: list[Diagnostic],
    overrides: Overrides | None = None,
    inline_stage: int | None = None,
    mixed_precision: str | None = None,
    roots: tuple[str, ...] = (),
    text: str | None = None,
) -> dict[str, Any]:
    """The forecast of one script run with one config at one world size (`findings`: the script's DSL101,
    DSL201 and DSL202 findings; `text`: the script's text when it is not the file's, a fixed version)."""
    overrides = overrides or Overrides()
    shown = _shown(script)
    if text is None:
        try:
            text = Path(script).read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            return {"script": shown, "config": _shown(config_path), "unknown": f"cannot read the script: {error}"}
    facts = scan(text)
    count: ParamCount = (
        ParamCount(overrides.params, "--params") if overrides.params is not None else from_script(script, text, roots)
    )
    ranks = overrides.world_size or world.ranks
    per_node = overrides.gpus_per_node or (world.per_node if overrides.world_size is None else None)
    if ranks is not None and per_node is None:
        per_node = min(ranks, world.per_node or ranks)
    world_source = "--world-size" if overrides.world_size is not None else world.source
    config = read_config(config_path, inline_stage, mixed_precision, named_by=script)
    name, state_bytes, optimizer_source = _optimizer(config, facts, shown or script)
    result: dict[str, Any] = {
        "script": shown,
        "config": _shown(config_path),
        "world_size": ranks,
        "gpus_per_node": per_node,
        "world_size_source": world_source,
        "params": count.total,
        "params_source": count.source,
        "largest_layer": count.largest_layer,
        "zero_stage": config.zero_stage,
        "precision": config.precision,
        "offload_optimizer": config.offload_optimizer,
        "offload_param": config.offload_param,
        "optimizer": name,
        "optimizer_source": optimizer_source,
        "zero_init": facts.zero_init,
        "model_states": None,
        "phases": None,
        "activations": ACTIVATIONS_NOTE,
        "notes": [],
    }
    missing = [
        what
        for what, value in (
            ("the parameter count", count.total),
            ("the world size", ranks),
            ("the ZeRO stage", config.zero_stage),
            ("the precision", config.precision),
        )
        if value is None
    ]
    if missing:
        result["unknown"] = "no forecast: " + ", ".join(missing) + " unknown"
        return result
    assert count.total is not None and ranks is not None and per_node is not None
    assert config.zero_stage is not None and config.precision is not None
    setup = Setup(
        count.total, ranks, per_node, config.zero_stage, config.precision, config.offload_optimizer,
        config.offload_param, count.largest_layer, state_bytes,
    )  # fmt: skip
    states = model_states(setup)
    result["model_states"] = {
        "gpu_bytes": states.gpu_bytes,
        "host_bytes": states.host_bytes,
        "nvme_bytes": states.nvme_bytes,
        "parts": [
            {
                "name": p.name,
                "on": p.where,
                "bytes": p.bytes,
                "sharded": p.sharded,
                "bytes_per_param": p.bytes_per_param,
            }
            for p in states.parts
        ],
        "deepspeed_estimate": deepspeed_estimate(setup),
    }
    result["notes"].extend(states.notes)
    phases = _phases(states, facts, findings, text, script, roots, config)
    result["phases"] = {
        phase: {
            "gpu_bytes": value.gpu_bytes,
            "host_bytes": value.host_bytes,
            "host_bytes_per_node": value.host_bytes * per_node,
            "added": value.added,
        }
        for phase, value in phases.items()
    }
    if not facts.initialize_lines:
        result["notes"].append("no deepspeed.initialize call in the script: loads are taken as after it")
    return result


def _phases(
    states: ModelStates,
    facts: ScriptMemoryFacts,
    findings: list[Diagnostic],
    text: str,
    script: str,
    roots: tuple[str, ...],
    config: ConfigFacts | None = None,
) -> dict[str, Phase]:
    setup = states.setup
    config = config or ConfigFacts(setup.zero_stage, setup.precision)
    p = setup.params
    width = PRECISION_BYTES[setup.precision]
    local = max(1, setup.gpus_per_node)
    kept = ("parameters", "fp32 master parameters")
    lazy = ("optimizer states", f"{setup.precision} gradients")

    def total(where: str, names: tuple[str, ...] | None = None, skip: tuple[str, ...] = ()) -> int:
        return sum(
            part.bytes
            for part in states.parts
            if part.where == where
            and (names is None or any(part.name.endswith(n) for n in names))
            and not any(part.name.endswith(s) for s in skip)
            and part.name != "largest layer, gathered"
        )

    resident_gpu = total(GPU, kept)
    transient = total(GPU, ("fp32 gradients",)) if setup.zero_stage >= 1 else 0
    init_gpu = resident_gpu + transient
    if setup.zero_stage == 0:
        init_gpu = total(GPU, skip=lazy)
        resident_gpu = init_gpu
    built_on_host = 0 if (setup.zero_stage == 3 and facts.zero_init) else 4 * p
    host_resident = total(HOST, skip=("optimizer states",))
    phases = {
        "init": Phase(resident_gpu, built_on_host + host_resident),
        "load": Phase(resident_gpu, host_resident),
        "step": Phase(states.gpu_bytes, states.host_bytes),
    }
    # Buffers beyond the model states (DeepSpeed's estimator leaves them out). ZeRO-3's optimizer allocates, at the
    # end of initialize, the IPG reduce bucket (reduce_bucket_size elements of the 16-bit dtype, with
    # contiguous_gradients) and the 16-bit gradient partition (its share of P; on the host with offload_optimizer):
    # `stage3.py: DeepSpeedZeroOptimizer_Stage3.__init__`. ZeRO-1/2 allocate their bucket(s) in the first backward
    # (`setup_buckets`: two with overlap_comm).
    bucket = config.reduce_bucket_size * width if config.contiguous_gradients else 0
    if setup.zero_stage == 3:
        buffers: list[tuple[str, int, str]] = []
        if bucket:
            buffers.append((GPU, bucket, f"ZeRO-3's IPG reduce bucket ({config.reduce_bucket_size:,} x {width} B)"))
        share = width * -(-p // max(1, setup.world_size))
        where = HOST if setup.offload_optimizer else GPU
        buffers.append((where, share, f"ZeRO-3's {setup.precision} gradient partition (1/{setup.world_size} of P)"))
        for name in PHASES:
            for on, amount, what in buffers:
                phases[name].add(on, amount, None, 0, what)
        resident = phases["init"].gpu_bytes
        phases["init"].gpu_bytes = max(resident, resident_gpu + transient)  # the fp32 zeros are freed before
        if not facts.zero_init:  # the whole 16-bit module is on each GPU before it is partitioned
            phases["init"].gpu_bytes = max(phases["init"].gpu_bytes, width * p)
    else:
        phases["init"].gpu_bytes = init_gpu
        if setup.zero_stage in (1, 2) and bucket:
            count = 2 if config.overlap_comm else 1
            staging = 4 if setup.zero_stage == 1 else width
            amount = count * config.reduce_bucket_size * staging
            phases["step"].add(
                GPU, amount, None, 0, f"{count} IPG reduce bucket(s) of {config.reduce_bucket_size:,} x {staging} B"
            )
    if built_on_host:
        phases["init"].added.append(
            {"code": None, "line": 0, "on": HOST, "bytes": built_on_host, "what": "the model as built, fp32 on the CPU",
             "conditional": False}
        )  # fmt: skip
    order = list(PHASES)

    def place(name: str, on: str, amount: int, code: str | None, load: TorchLoad, what: str) -> None:
        phases[name].add(on, amount, code, load.line, what, load.conditional)
        if load.kept:  # the loaded dict stays referenced: its tensors stay where they were loaded
            for later in order[order.index(name) + 1 :]:
                phases[later].add(on, amount, code, load.line, f"still held (the name is never deleted): {what}",
                                  load.conditional)  # fmt: skip

    loads = {load.line: load for load in facts.torch_loads}
    flagged: set[int] = set()
    for diagnostic in findings:
        line = diagnostic.start.line
        if diagnostic.code == "DSL101" and diagnostic.message.startswith("model moved"):
            move = _source_text(text, diagnostic)
            if _unindexed(move):
                phases["init"].add(GPU, 4 * p * local, "DSL101", line,
                                   f"{move}: every rank's fp32 copy on cuda:0 ({local} ranks a node)")  # fmt: skip
            else:
                phases["init"].add(GPU, 4 * p, "DSL101", line, f"{move}: the rank's fp32 copy on its device")
        elif diagnostic.code in ("DSL201", "DSL202") and line in loads:
            flagged.add(line)
            load = loads[line]
            size, size_source = _checkpoint_bytes(load, script, p, roots)
            if load.conditional:
                size_source += "; inside an `if`: when it runs"
            before = facts.before_initialize(line)
            name = "init" if before else "load"
            if diagnostic.code == "DSL202":
                place(name, GPU, size * local, "DSL202", load,
                      f"no map_location: back to the device it was saved from (cuda:0 if saved from GPU 0) on "
                      f"every rank ({local} a node); {size_source}")  # fmt: skip
            elif before or (load.map_location not in (None, "cuda") and load.map_location != ABSENT):
                target = "cuda:0" if before else str(load.map_location)
                when = "before initialize " if before else ""
                place(name, GPU, size * local, "DSL201", load,
                      f"map_location {load.map_location or '(a CUDA device)'} {when}"
                      f"puts every rank's copy on {target} ({local} a node); {size_source}")  # fmt: skip
            else:
                place(name, GPU, size, "DSL201", load,
                      f"map_location cuda after initialize: on the rank's device; {size_source}")  # fmt: skip
    for load in facts.torch_loads:
        if load.line in flagged or load.map_location != "cpu":
            continue
        size, size_source = _checkpoint_bytes(load, script, p, roots)
        if load.conditional:
            size_source += "; inside an `if`: when it runs"
        before = facts.before_initialize(load.line)
        place("init" if before else "load", HOST, size, None, load,
              f"torch.load to the CPU: a full copy in each rank's host memory; {size_source}")  # fmt: skip
    return phases


def _shown(path: str | None) -> str | None:
    if path is None:
        return None
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative

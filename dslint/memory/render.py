"""The forecast as text: one table per launch (`dslint memory`, runtime_check --dry-run)."""

from __future__ import annotations

from typing import Any

GIB = 1 << 30


def size(value: int | float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= GIB / 10:
        return f"{value / GIB:.2f} GiB"
    if abs(value) >= 1 << 20:
        return f"{value / (1 << 20):.1f} MiB"
    return f"{int(value)} B"


def render_launch(entry: dict[str, Any]) -> str:
    out: list[str] = []
    head = entry.get("launcher")
    title = f"{head}: {entry.get('tool')} -> " if head else ""
    out.append(f"{title}{entry['script']}" + (f", config {entry['config']}" if entry.get("config") else ", no config"))
    if entry.get("unknown") and entry.get("params_source") is None:
        out.append(f"  {entry['unknown']}")
        return "\n".join(out) + "\n"
    world = entry.get("world_size")
    out.append(
        f"  world size  {world if world is not None else 'unknown'}"
        + (f" ({entry['gpus_per_node']} a node)" if world is not None else "")
        + f": {entry['world_size_source']}"
    )
    params = entry.get("params")
    out.append(f"  parameters  {f'{params:,}' if params is not None else 'unknown'}: {entry['params_source']}")
    stage = entry.get("zero_stage")
    offload = (
        ", ".join(f"{key} {entry[key]}" for key in ("offload_optimizer", "offload_param") if entry.get(key))
        or "no offload"
    )
    out.append(
        f"  ZeRO {stage if stage is not None else 'unknown'}, {entry.get('precision') or 'precision unknown'}, "
        f"{offload}; optimizer {entry['optimizer']} ({entry['optimizer_source']})"
    )
    if entry.get("unknown"):
        out.append(f"  {entry['unknown']}")
        return "\n".join(out) + "\n"
    states = entry["model_states"]
    estimate = states.get("deepspeed_estimate")
    beside = f"; DeepSpeed's estimator: GPU {size(estimate['gpu_bytes'])}" if estimate else ""
    nvme = f", NVMe {size(states['nvme_bytes'])}" if states["nvme_bytes"] else ""
    out.append(
        f"  model states per rank: GPU {size(states['gpu_bytes'])}, host {size(states['host_bytes'])}{nvme}{beside}"
    )
    for part in states["parts"]:
        shard = f"1/{world} of {part['bytes_per_param']:g} B/param" if part["sharded"] else "whole"
        if part["name"] == "largest layer, gathered":
            shard = "4 B x the largest layer"
        out.append(f"    {part['name']:<26} {part['on']:<5} {size(part['bytes']):>11}  {shard}")
    out.append(f"  {'phase':<6} {'GPU/rank':>11} {'host/rank':>11} {'host/node':>11}  what adds to it")
    for phase, value in entry["phases"].items():
        added = value["added"]
        first = _added(added[0]) if added else ""
        out.append(
            f"  {phase:<6} {size(value['gpu_bytes']):>11} {size(value['host_bytes']):>11} "
            f"{size(value['host_bytes_per_node']):>11}  {first}".rstrip()
        )
        for more in added[1:]:
            out.append(f"  {'':<6} {'':>11} {'':>11} {'':>11}  {_added(more)}")
    out.append(f"  not forecast: {entry['activations']}")
    for note in entry.get("notes", []):
        out.append(f"  note: {note}")
    return "\n".join(out) + "\n"


def _added(item: dict[str, Any]) -> str:
    code = f"{item['code']} " if item.get("code") else ""
    line = f"line {item['line']}: " if item.get("line") else ""
    return f"+{size(item['bytes'])} {item['on']}: {code}{line}{item['what']}"


def render(launches: list[dict[str, Any]]) -> str:
    if not launches:
        return "No launch found (shell scripts, Makefiles, README code blocks that start a training script).\n"
    return "\n".join(render_launch(entry) for entry in launches)

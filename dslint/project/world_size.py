"""The world size a launch line starts: how many ranks, on how many nodes.

Read as the launchers read their arguments: `deepspeed` (`deepspeed/launcher/runner.py`: a hostfile's `slots=`,
`--include`/`--exclude` filters, then `--num_nodes` keeps the first hosts and `--num_gpus` the first slots of
each; without a hostfile one node with `--num_gpus`, or the `CUDA_VISIBLE_DEVICES` list when no filter is given,
else every GPU of the machine: unknown here), `torchrun` and `python -m torch.distributed.launch/run`
(`--nproc_per_node`, default 1, times `--nnodes`, default 1), `accelerate launch` (`--num_processes`,
`--num_machines`, else its YAML's `num_processes`), and a plain `python script.py` (one rank). A value built at
run time is unknown, never guessed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from dslint.project.accelerate_yaml import AccelerateConfig
from dslint.project.launchers import LaunchLine
from dslint.project.shell_directories import UNKNOWN_VALUE

_HOST = re.compile(r"^(\S+)\s+slots=(\d+)")


@dataclass(frozen=True)
class WorldSize:
    ranks: int | None
    per_node: int | None
    source: str  # where the figures came from, or why they are unknown

    @property
    def nodes(self) -> int | None:
        if self.ranks is None or not self.per_node:
            return None
        return -(-self.ranks // self.per_node)


def _number(text: str | None) -> int | None:
    if text is None or text == UNKNOWN_VALUE or not text.strip().isdigit():
        return None
    return int(text.strip())


def _visible(line: LaunchLine) -> tuple[int | None, str | None]:
    """The number of devices CUDA_VISIBLE_DEVICES lists for the command, (None, None) when it is not set."""
    value = dict(line.environment).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None, None
    if value == UNKNOWN_VALUE:
        return None, "CUDA_VISIBLE_DEVICES is set at run time"
    devices = [item for item in value.split(",") if item.strip()]
    return len(devices), f"CUDA_VISIBLE_DEVICES={value}"


def _filter(pool: dict[str, list[int]], include: str | None, exclude: str | None) -> dict[str, list[int]] | None:
    """DeepSpeed's `parse_inclusion_exclusion`: `host[:slot,slot]@host...`."""
    if include:
        kept: dict[str, list[int]] = {}
        for part in include.split("@"):
            host, _, slots = part.partition(":")
            if host not in pool and host != "localhost":
                return None
            chosen = [int(s) for s in slots.split(",") if s.strip().isdigit()] if slots else pool.get(host, [])
            kept[host] = chosen
        return kept
    if exclude:
        kept = {host: list(slots) for host, slots in pool.items()}
        for part in exclude.split("@"):
            host, _, slots = part.partition(":")
            if host not in kept:
                continue
            if slots:
                dropped = {int(s) for s in slots.split(",") if s.strip().isdigit()}
                kept[host] = [s for s in kept[host] if s not in dropped]
            else:
                del kept[host]
        return {host: slots for host, slots in kept.items() if slots}
    return pool


def read_hostfile(text: str) -> dict[str, int]:
    pool: dict[str, int] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        match = _HOST.match(line)
        if match:
            pool[match.group(1)] = int(match.group(2))
    return pool


def _deepspeed(line: LaunchLine, read: Callable[[str], str | None]) -> WorldSize:
    option = line.launcher_option
    gpus = option("num_gpus")
    nodes = option("num_nodes")
    include, exclude, hostfile = option("include"), option("exclude"), option("hostfile")
    for given in (gpus, nodes, include, exclude, hostfile):
        if given is not None and given.value == UNKNOWN_VALUE:
            return WorldSize(None, None, f"--{given.name} is set at run time")
    num_gpus = _number(gpus.value) if gpus is not None else None
    num_nodes = _number(nodes.value) if nodes is not None else None
    pool: dict[str, list[int]] = {}
    where = ""
    if hostfile is not None and hostfile.value:
        text = read(hostfile.value)
        if text is None:
            return WorldSize(None, None, f"hostfile {hostfile.value} not found")
        pool = {host: list(range(slots)) for host, slots in read_hostfile(text).items()}
        if not pool:
            return WorldSize(None, None, f"hostfile {hostfile.value} lists no `host slots=N`")
        where = f"hostfile {hostfile.value}"
    else:
        count, shown = _visible(line)
        if count is None and shown is not None and num_gpus is None and include is None:
            return WorldSize(None, None, shown)
        filtered = include is not None or exclude is not None or (num_gpus or 0) > 0 or (num_nodes or 0) > 1
        if count is not None and not filtered:
            return WorldSize(count, count, f"{shown} (the deepspeed launcher's --include localhost:...)")
        if num_nodes is not None and num_nodes > 1:
            return WorldSize(None, None, "--num_nodes > 1 without a --hostfile")
        if include is not None and include.value:
            kept = _filter({"localhost": []}, include.value, None)
            slots = sum(len(s) for s in kept.values()) if kept else 0
            if kept and slots:
                return WorldSize(slots, slots, f"--include {include.value}")
            return WorldSize(None, None, f"--include {include.value}: the slots are the machine's")
        if num_gpus is not None:
            return WorldSize(num_gpus, num_gpus, f"--num_gpus {num_gpus}, one node (no hostfile)")
        return WorldSize(None, None, EVERY_GPU_SOURCE)
    kept_pool = _filter(pool, include.value if include else None, exclude.value if exclude else None)
    if kept_pool is None:
        return WorldSize(None, None, f"--include names a host not in {where}")
    hosts = list(kept_pool.items())
    if num_nodes is not None and num_nodes > 0:
        hosts = hosts[:num_nodes]
        where += f", --num_nodes {num_nodes}"
    if num_gpus is not None and num_gpus > 0:
        hosts = [(host, list(range(num_gpus))) for host, _ in hosts]
        where += f", --num_gpus {num_gpus}"
    ranks = sum(len(slots) for _, slots in hosts)
    if not ranks:
        return WorldSize(None, None, f"{where}: no slots left")
    return WorldSize(ranks, max(len(slots) for _, slots in hosts), where)


def _torchrun(line: LaunchLine) -> WorldSize:
    per_node_option = line.launcher_option("nproc_per_node")
    nodes_option = line.launcher_option("nnodes")
    parts: list[str] = []
    per_node = 1
    if per_node_option is not None:
        value = per_node_option.value or ""
        if value in ("gpu", "auto", "cuda"):
            count, shown = _visible(line)
            if count is None:
                return WorldSize(None, None, f"--nproc_per_node {value}: every GPU of the machine")
            per_node = count
            parts.append(f"--nproc_per_node {value} with {shown}")
        else:
            number = _number(value)
            if number is None:
                return WorldSize(None, None, f"--nproc_per_node {value!s} is not a number")
            per_node = number
            parts.append(f"--nproc_per_node {number}")
    else:
        parts.append("--nproc_per_node not given (1)")
    nodes = 1
    if nodes_option is not None:
        low, _, high = (nodes_option.value or "").partition(":")
        number, top = _number(low), _number(high) if high else _number(low)
        if number is None or top != number:
            return WorldSize(None, None, f"--nnodes {nodes_option.value} is not one number")
        nodes = number
        parts.append(f"--nnodes {nodes}")
    return WorldSize(per_node * nodes, per_node, ", ".join(parts))


def _accelerate(line: LaunchLine, accelerate: AccelerateConfig | None) -> WorldSize:
    processes = line.launcher_option("num_processes")
    machines = line.launcher_option("num_machines")
    total = _number(processes.value) if processes is not None else None
    count = _number(machines.value) if machines is not None else None
    where = "accelerate launch"
    if total is None and accelerate is not None and accelerate.num_processes is not None:
        total, where = accelerate.num_processes, f"num_processes in {_shown(accelerate.path)}"
    elif total is not None:
        where = f"--num_processes {total}"
    if count is None and accelerate is not None:
        count = accelerate.num_machines
    if total is None:
        return WorldSize(None, None, "accelerate launch without num_processes uses every GPU it finds")
    machines_count = count or 1
    return WorldSize(total, -(-total // machines_count), where)


# How the deepspeed launcher's default reads: one process for each GPU of the node, their count not written.
EVERY_GPU_SOURCE = "deepspeed without --num_gpus, --include or a hostfile uses every GPU it finds"


def world_size(
    line: LaunchLine, read: Callable[[str], str | None], accelerate: AccelerateConfig | None = None
) -> WorldSize:
    """`read`: a file named by the line (a hostfile), by its path as written; None when not found."""
    if _options_unknown(line):
        return WorldSize(None, None, f"{line.tool}: its options are set at run time")
    if line.tool == "deepspeed" or line.tool == "deepspeed.launcher.runner":
        return _deepspeed(line, read)
    if line.tool in ("torchrun", "torch.distributed.launch", "torch.distributed.run"):
        return _torchrun(line)
    if line.tool in ("accelerate", "accelerate.commands.launch"):
        return _accelerate(line, accelerate)
    if line.tool in ("python", "python3") and line.spawned_by:
        return WorldSize(None, None, f"{line.spawned_by} starts the processes")  # its counts are not read
    if line.tool in ("python", "python3"):
        return WorldSize(1, 1, "python starts one process")
    return WorldSize(None, None, f"{line.tool}: not a launcher dslint reads")


def _options_unknown(line: LaunchLine) -> bool:
    """A launcher word built at run time that is no option's value (`torchrun $DISTRIBUTED_ARGS train.py`): any
    option may be in it, so an option not seen is not known to be absent."""
    previous = ""
    for word, _, _ in line.launcher_words:
        if UNKNOWN_VALUE in word and not (previous.startswith("-") and "=" not in previous):
            return True
        previous = word
    return False


def _shown(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


_NUM_STAGES = re.compile(rb"\bnum_stages\s*=\s*(\d+)\b")


def data_parallel_ranks(ranks: int, source: str, script: bytes | None) -> tuple[int | None, str]:
    """The ranks DeepSpeed's batch check counts for a launch of `script` with `ranks` processes: its data-parallel
    world. A script that builds a `PipelineModule` splits the ranks into pipeline stages (`num_stages`): with one
    literal stage count the data-parallel world is `ranks // num_stages`; otherwise it is not known (None)."""
    if script is None or b"PipelineModule" not in script:
        return ranks, source
    stages = {int(n) for n in _NUM_STAGES.findall(script)}
    if len(stages) != 1:
        return None, source
    (count,) = stages
    if count <= 0 or ranks % count:
        return None, source
    return ranks // count, f"{source}; {count} pipeline stages (PipelineModule num_stages={count})"

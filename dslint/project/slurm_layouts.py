"""`srun` starting a launcher that starts the processes of a node itself, with a layout that breaks the job
(DSL469): several launchers on one node, or one per node that never join up.

`deepspeed` (`launcher/runner.py`, then `launcher/launch.py`, DeepSpeed 0.19.8), `torchrun` and `accelerate launch`
each fork one process per GPU of their node and give them ranks, a world size and a rendezvous of their own
arguments: they know nothing of the Slurm tasks beside them. So:

- with several tasks a node (`--ntasks-per-node=4`, or `--ntasks` above `--nodes`), `srun` starts that many
  launchers on each node, each starting its own world on the same GPUs and the same default port: the job fails to
  bind, or trains copies of the model that never meet;
- with one task on each of several nodes, a launcher told nothing of the other nodes makes a world of its own node
  alone: `torchrun` without `--nnodes`/`--rdzv_endpoint`/`--master_addr`/`--node_rank` (a standalone
  single-node rendezvous), the `deepspeed` runner without a hostfile, `--num_nodes`, `--node_rank`,
  `--master_addr` or `--no_ssh` (it runs on `localhost` only, with master address 127.0.0.1). Each node then trains
  its own copy, and the checkpoints of every node overwrite each other.

Read from the launcher file: the `#SBATCH` lines (`--nodes`, `--ntasks`, `--ntasks-per-node`, and their short
forms) and the `srun` options of the command, which win over them; only literal counts are read.
"""

from __future__ import annotations

import re
import shlex

from dslint.project.launch_wrappers import LAUNCHER_WORDS
from dslint.project.launchers import LaunchLine, logical_lines
from dslint.project.project_index import LaunchIssue

# The launchers that fork the processes of a node themselves, as `LaunchLine.tool` names them.
NODE_LAUNCHERS = frozenset({"deepspeed", "torchrun", "accelerate", "torch.distributed.run", "torch.distributed.launch"})
_SBATCH = re.compile(r"^\s*#SBATCH\s+(.*)$")
_COUNTS = {  # option -> what it counts
    "--nodes": "nodes",
    "-N": "nodes",
    "--ntasks": "tasks",
    "-n": "tasks",
    "--ntasks-per-node": "per_node",
}
# what tells each launcher of the other nodes (any one of them: left alone)
_JOINS = {
    "torchrun": ("nnodes", "rdzv_endpoint", "rdzv-endpoint", "master_addr", "master-addr", "node_rank", "node-rank"),
    "torch.distributed.run": ("nnodes", "rdzv_endpoint", "rdzv-endpoint", "master_addr", "master-addr", "node_rank"),
    "deepspeed": ("hostfile", "num_nodes", "node_rank", "master_addr", "no_ssh", "launcher", "force_multi"),
}


def srun_layout(line: LaunchLine, text: str | None) -> LaunchIssue | None:
    """The launch's command (positioned at its first word) when `srun` starts its node launcher in a layout that
    breaks the job; `detail` says which ("tasks" or "nodes"), `options` the counts read."""
    if line.spawned_by != "srun" or line.tool not in NODE_LAUNCHERS or text is None:
        return None
    counts = _sbatch_counts(text.splitlines())
    words = _command_words(text, line.line)
    if words is None or "srun" not in words:
        return None
    given = _option_counts(words[words.index("srun") + 1 : _launcher_index(words)])
    if ("tasks" in given or "nodes" in given) and "per_node" not in given:
        counts.pop("per_node", None)  # `srun -n 1` in an allocation of 8 tasks a node runs one
    counts.update(given)
    end = line.column + len(line.tool.rsplit(".", 1)[-1])
    nodes, tasks, per_node = counts.get("nodes"), counts.get("tasks"), counts.get("per_node")
    if per_node is None and tasks is not None and nodes is not None and tasks > nodes:
        per_node = -(-tasks // nodes)
    if per_node is not None and per_node > 1:
        return LaunchIssue("srun_layout", line.line, line.column, end, "tasks", (str(per_node),))
    if nodes is None or nodes < 2 or (tasks is not None and tasks != nodes):
        return None
    joins = _JOINS.get(line.tool)
    if joins is None or line.launcher_option(*joins) is not None or line.launcher_short_options:
        return None
    return LaunchIssue("srun_layout", line.line, line.column, end, "nodes", (str(nodes),))


def _sbatch_counts(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for raw in lines:
        found = _SBATCH.match(raw)
        if found is not None:
            counts.update(_option_counts(_split(found.group(1).split("#", 1)[0]) or []))
    return counts


def _option_counts(words: list[str]) -> dict[str, int]:
    """The literal counts among a wrapper's option words (`--nodes=2`, `-N 2`, `-N2`, `--ntasks-per-node 4`)."""
    counts: dict[str, int] = {}
    index = 0
    while index < len(words):
        word = words[index]
        name, equals, value = word.partition("=")
        if not equals and name in _COUNTS and index + 1 < len(words):
            value = words[index + 1]
            index += 1
        elif not equals and len(name) > 2 and name[:2] in ("-N", "-n") and name[2:].isdigit():
            name, value = name[:2], name[2:]
        index += 1
        if name in _COUNTS:
            number = value.split("-", 1)[0]  # `--nodes=2-4`: at least 2
            if number.isdigit():
                counts[_COUNTS[name]] = int(number)
    return counts


def _launcher_index(words: list[str]) -> int:
    for index, word in enumerate(words):
        if word.rsplit("/", 1)[-1] in LAUNCHER_WORDS:
            return index
    return len(words)


def _command_words(text: str, number: int) -> list[str] | None:
    """The words of the command whose launcher word is on line `number` (`launchers.logical_lines`: continued lines
    joined, so the `srun` may be on a line above, ending in a backslash)."""
    for first, logical in logical_lines(text):
        if first <= number <= first + logical.count("\n"):
            return _split(logical)
    return None


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return None

"""`CUDA_VISIBLE_DEVICES` assigned on a line of its own, never exported, before a launch (DSL473).

A shell variable reaches the processes a command starts only when it is exported (`export NAME=value`, an
`export NAME` after it, `set -a`) or written on the command itself (`NAME=value deepspeed ...`): a bare
`CUDA_VISIBLE_DEVICES=2,3` on a line of its own stays the script's, and the launcher (`deepspeed`, `torchrun`,
`accelerate launch`, `python`) sees every GPU of the machine: the job runs on GPUs 0, 1... beside whatever else
runs there, while the GPUs meant for it stay idle.

Read from the launcher file, before the launch's line: the last line assigning the variable alone, not exported
then nor by an `export` naming it later. Left alone: a value listing the machine's first GPUs in order for as many
processes as the launch starts on the node (`CUDA_VISIBLE_DEVICES=0,1` before `torchrun --nproc_per_node 2`:
the ranks take GPUs 0 and 1 all the same, unless the launched script's folder holds code that uses every GPU it
sees: `device_map`, `cuda.device_count()`), launches that pick their GPUs themselves (`--include`,
`--exclude`, a hostfile, `--num_gpus`, `--num_nodes` for `deepspeed`: DSL449's ground; `--gpu_ids` for
`accelerate launch`), a launcher that reads the variable itself (`gpu_list=$CUDA_VISIBLE_DEVICES`), one
with `set -a` (every assignment exported), job scripts of a batch system
(`#SBATCH`, `#BSUB`, `#PBS`, `srun`: the scheduler exports the variable to the job, so an assignment changes the
exported value), and commands in documents (README code blocks are separate snippets).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dslint.project.launch_cuts import strip_comment
from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.launchers import LaunchLine, logical_lines
from dslint.project.project_index import LaunchIssue
from dslint.project.shell_variables import assignment_in

VARIABLE = "CUDA_VISIBLE_DEVICES"
_EXPORTED_LATER = re.compile(r"^\s*(?:export|declare\s+-x)\s+(?:[A-Za-z_][A-Za-z0-9_]*\s+)*CUDA_VISIBLE_DEVICES\b")
_ALL_EXPORTED = re.compile(r"^\s*set\s+(?:-[a-zA-Z]*a[a-zA-Z]*|-o\s+allexport)\b", re.M)
_READ = re.compile(r"\$\{?CUDA_VISIBLE_DEVICES\b")
_SCHEDULED = re.compile(r"^\s*#(?:SBATCH|BSUB|PBS)\b|\bsrun\b|\bsbatch\b|\bbsub\b|\bqsub\b", re.M)
# The launcher's own options that choose the GPUs (then the variable never mattered)
_CHOOSES = {
    "deepspeed": ("include", "exclude", "hostfile", "num_gpus", "num_nodes", "master_addr"),
    "accelerate": ("gpu_ids",),
}


def unexported_devices(
    line: LaunchLine, text: str | None, spreads: Callable[[], bool] = lambda: True
) -> LaunchIssue | None:
    """The launch's command (positioned at its first word) when an earlier line of its launcher assigns
    `CUDA_VISIBLE_DEVICES` without exporting it; `detail` is the line of that assignment, `options` its value.
    `spreads()`: the launched code may use every GPU it sees (`device_map`, `cuda.device_count()`), not only its
    rank's (asked only where the value lists the first GPUs for as many processes)."""
    if text is None or VARIABLE not in text or line.launcher.lower().endswith(DOCUMENT_LAUNCHER_SUFFIXES):
        return None
    if line.spawned_by:
        return None
    if VARIABLE in dict(line.environment) or _ALL_EXPORTED.search(text) or _SCHEDULED.search(text):
        return None
    if _READ.search(text):
        return None  # the script reads the variable itself (`gpu_list=$CUDA_VISIBLE_DEVICES`, an `--include`)
    if line.launcher_option(*_CHOOSES.get(line.tool, ())) is not None or "-H" in line.launcher_short_options:
        return None
    assigned: tuple[int, str] | None = None
    for number, logical in logical_lines(text):
        if number >= line.line:
            break
        code = strip_comment(logical)
        if _EXPORTED_LATER.match(code):
            assigned = None  # exported from here on
            continue
        assignment = assignment_in(code)
        if assignment is not None and assignment.name == VARIABLE and not assignment.unset_only:
            assigned = None if assignment.exported else (number, code.split("=", 1)[1].strip())
    if assigned is None:
        return None
    number, value = assigned
    first = _first_devices(value)
    if first is not None and first == _processes_per_node(line) and not spreads():
        return None  # `0,1` for two processes, each on its rank's GPU: they take GPUs 0 and 1 all the same
    return LaunchIssue(
        "visible_devices_unexported", line.line, line.column, line.column + len(line.tool), str(number), (value,)
    )


def _first_devices(value: str) -> int | None:
    """N when the value lists the machine's first N GPUs in order (`0,1`, `"0,1,2,3"`), else None."""
    ids = value.strip("'\"").split(",")
    return len(ids) if ids == [str(index) for index in range(len(ids))] else None


def _processes_per_node(line: LaunchLine) -> int | None:
    """The processes a launch starts on its node, where its command says: `torchrun --nproc_per_node N`,
    `accelerate launch --num_processes N` (one machine), one for `python`."""
    if line.tool == "python":
        return 1
    per_node = ("nproc_per_node", "nproc-per-node")
    option = {"accelerate": ("num_processes",)}.get(line.tool, per_node if "torch" in line.tool else None)
    given = line.launcher_option(*option) if option is not None else None
    if given is None or given.value is None or not given.value.isdigit():
        return None
    if line.tool == "accelerate" and line.launcher_option("num_machines") is not None:
        return None
    return int(given.value)

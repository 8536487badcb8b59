"""`CUDA_VISIBLE_DEVICES` that the `deepspeed` launcher ignores: picked GPUs beside a GPU count (DSL449).

DeepSpeed's runner (`deepspeed/launcher/runner.py: main`, 0.19.8, as far back as 0.10) reads the variable only for
a single node without a hostfile, and only when no `--include`, `--exclude`, `--num_gpus` over 0 or `--num_nodes`
over 1 is given: then it turns `CUDA_VISIBLE_DEVICES=6,7` into `--include localhost:6,7`. Beside `--num_gpus N` it
prints that it ignores the variable, deletes it from the environment, counts every GPU of the machine, and gives
the ranks the first N of them (`launcher/launch.py` sets each rank's `CUDA_VISIBLE_DEVICES` to those indices):
the job runs on GPUs 0..N-1, not on the ones the variable named, often beside another job on GPU 0.

Read from the launch line alone: the variable set on the line or exported earlier in the launcher with a literal
list of indices, a literal `--num_gpus` over 0 (or one built at run time, when the variable leaves GPU 0 out: every
count takes GPU 0), no hostfile, filter or multi-node count. When the GPUs 0..N-1 the
runner takes are all among those the variable names, no GPU it leaves out is used: left alone.
"""

from __future__ import annotations

from dslint.project.launchers import LaunchLine
from dslint.project.project_index import LaunchIssue
from dslint.project.shell_directories import UNKNOWN_VALUE

_RUNNERS = frozenset({"deepspeed", "deepspeed.launcher.runner"})


def ignored_visible_devices(line: LaunchLine) -> LaunchIssue | None:
    """The launch's `--num_gpus` (positioned) when the runner ignores the GPUs `CUDA_VISIBLE_DEVICES` picks;
    `detail` is the variable's value, `options` the GPU count."""
    if line.tool not in _RUNNERS:
        return None
    visible = dict(line.environment).get("CUDA_VISIBLE_DEVICES")
    if not visible or UNKNOWN_VALUE in visible:
        return None
    devices = [part.strip() for part in visible.split(",")]
    if not all(part.isdigit() for part in devices):
        return None  # GPU UUIDs, `all`, an empty entry: not read
    if line.launcher_option("hostfile", "include", "exclude") is not None or line.launcher_short_options:
        return None  # a hostfile's pool, or a filter of its own: another path of the runner
    nodes = line.launcher_option("num_nodes")
    if nodes is not None and (nodes.value is None or not nodes.value.isdigit() or int(nodes.value) > 1):
        return None
    gpus = line.launcher_option("num_gpus", "num_accelerators")
    if gpus is None or not gpus.value:
        return None
    picked = {int(part) for part in devices}
    if gpus.value.isdigit():
        if int(gpus.value) == 0 or set(range(int(gpus.value))) <= picked:
            return None  # the runner takes GPUs the variable allows: no GPU left out is used
        count = gpus.value
    elif (UNKNOWN_VALUE in gpus.value or gpus.value.startswith("$")) and 0 not in picked:
        # a count built at run time (`--num_gpus=$NUM_DEVICES`, counted from the same list): every count the runner
        # takes starts at GPU 0, so a variable leaving GPU 0 out is ignored whatever the count
        count = ""
    else:
        return None
    end = gpus.column + len(gpus.name) + 2
    return LaunchIssue("ignored_visible_devices", gpus.line, gpus.column, end, visible, (count,))

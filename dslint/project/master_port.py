"""`MASTER_PORT` set for a `deepspeed` launch that never hands it to the ranks (DSL470).

DeepSpeed's runner (`launcher/runner.py`, 0.19.8) takes the rendezvous port from its own `--master_port` option
(default `TORCH_DISTRIBUTED_DEFAULT_PORT`, 29500), never from the environment, and passes it to
`launcher/launch.py`, which writes `MASTER_PORT=<that port>` into every rank's environment: a `MASTER_PORT` exported
by the launcher script (or set on the command) is overwritten. A script that picks a port to keep clear of
another job on the node (`export MASTER_PORT=29611`, `MASTER_PORT=$((RANDOM + 10000))`) still binds 29500, and
the second job fails with "address already in use".

Read from the launch line alone: the variable in the command's environment (`LaunchLine.environment`: exported
earlier in the launcher, or set on the line), a `deepspeed` command without `--master_port` and without another
launcher backend (`--launcher`), and a value other than 29500 (where nothing is lost). Launch commands in documents
(README code blocks, notebooks) are left alone: their blocks are separate snippets.
"""

from __future__ import annotations

from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.launchers import LaunchLine
from dslint.project.project_index import LaunchIssue

DEFAULT_PORT = "29500"  # deepspeed.constants.TORCH_DISTRIBUTED_DEFAULT_PORT
_RUNNERS = frozenset({"deepspeed", "deepspeed.launcher.runner"})


def master_port_unused(line: LaunchLine) -> LaunchIssue | None:
    """The launch's command (positioned at its first word) when it sets `MASTER_PORT` that the runner overwrites;
    `detail` is the value as the script sets it."""
    if line.tool not in _RUNNERS or line.spawned_by or line.launcher.lower().endswith(DOCUMENT_LAUNCHER_SUFFIXES):
        return None  # (a document's code blocks are snippets: an export in one is not the next one's environment)
    port = dict(line.environment).get("MASTER_PORT")
    if port is None or port.strip() in ("", DEFAULT_PORT):
        return None
    if line.launcher_option("master_port", "launcher") is not None:
        return None
    end = line.column + len("deepspeed")
    return LaunchIssue("master_port_unused", line.line, line.column, end, port)

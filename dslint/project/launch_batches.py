"""Launches whose world size a config's batch values fail (DSL407 at the launch).

DeepSpeed asserts `train_batch_size == micro batch x accumulation x world size` at start-up. When a config file's
batch values hold for some number of GPUs but not for the ranks a launch starts with it, the mistake is the
pairing of that launch with that file, and the launch is where it shows: the same file may be right for the
project's other launches. Each such launch gets one issue, positioned at its line in the launcher, naming the
config's batch key. Values that hold for no world size at all are the config's own mistake, reported in the
config file (`rules/unsatisfiable_batch_size.py`), as are launches written in a notebook or a Python file, whose
own lint holds their findings (`LaunchWorldSize.at_launcher`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from dslint.config.batch import holds, some_world_size_holds
from dslint.config.facts import batch_values
from dslint.config.tree import UNKNOWN, Node, Object, ParseError
from dslint.config.yaml_config import YAML_CONFIG_SUFFIXES, read_yaml_config
from dslint.diagnostics import Location, Related
from dslint.project.config_access import NotRead, load_config_tree
from dslint.project.inputs import absolute, read_input, shown_path
from dslint.project.project_index import LaunchIssue
from dslint.script.project_facts import LaunchWorldSize

BATCH_KEYS = frozenset({"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})


class Reading(Protocol):
    """What the project index knows of a config's readers (`ProjectIndex.config_reading`)."""

    @property
    def world_sizes(self) -> tuple[LaunchWorldSize, ...]: ...

    @property
    def replaced(self) -> frozenset[str]: ...


def batch_issues(
    configs: Iterable[str], reading_of: Callable[[str], Reading | None], launcher_text: Callable[[str], str | None]
) -> dict[str, list[LaunchIssue]]:
    """The launches, by launcher (absolute), whose world size the batch values of the config they pass fail.
    `configs`: the config files (absolute) launches pass; `reading_of(path)`: the world sizes of its launches
    and the keys every script reading it replaces in code first (then its batch values never reach DeepSpeed)."""
    found: dict[str, list[LaunchIssue]] = {}
    for path in configs:
        reading = reading_of(path)
        if reading is None:
            continue
        worlds, replaced = reading.world_sizes, reading.replaced
        launched = [world for world in worlds if world.at_launcher]
        read = _batch_of(path) if launched else None
        if read is None:
            continue
        values, anchor, whole_file = read
        if whole_file and replaced & BATCH_KEYS:
            continue  # the scripts write a batch value in code (a YAML section is read by another tool's code)
        if not some_world_size_holds(*values):
            continue  # wrong for every world size: the config's own finding
        seen: set[tuple[str, int]] = set()
        for world in launched:
            launcher = absolute(world.launch.path)
            if (launcher, world.launch.line) in seen or holds(*values, world.ranks):
                continue
            seen.add((launcher, world.launch.line))
            shown = ", ".join(
                f"{name} {value}"
                for name, value in zip(("train", "micro", "accumulation"), values, strict=True)
                if value is not None
            )
            issue = LaunchIssue(
                "unsatisfiable_batch",
                world.launch.line,
                world.launch.column,
                _end_column(launcher_text(launcher), world.launch.line, world.launch.column),
                f"{world.ranks} rank(s) ({world.source}) with {Path(path).name} ({shown})",
                related=(Related(shown_path(path), anchor.line, anchor.column, f"the batch values ({shown})"),),
            )
            found.setdefault(launcher, []).append(issue)
    return found


def _batch_of(path: str) -> tuple[tuple[Any, Any, Any], Location, bool] | None:
    """The config file's (train, micro, accumulation), where its first batch key is written, and whether the
    config is the whole file (not a YAML file's `deepspeed:` section); None when the file does not read, a value
    is not a literal, or no batch value is given. A JSON/HJSON file is read as the scripts' configs are
    (`config_access.load_config_tree`, parsed once per file)."""
    root: Node | ParseError | NotRead | None
    if path.endswith(YAML_CONFIG_SUFFIXES):
        data = read_input(path)
        text = data.decode("utf-8-sig", errors="replace") if data is not None else None
        if text is None:
            return None
        try:
            config = read_yaml_config(Path(path), text, known=True)
        except ParseError:
            return None
        root, whole_file = (config.tree, config.section is None) if config is not None else (None, False)
    else:
        root, whole_file = load_config_tree(Path(path), path), True
    if not isinstance(root, Object) or root.opaque:
        return None
    values = batch_values(root)
    if any(value is UNKNOWN for value in values) or (values[0] is None and values[1] is None):
        return None
    entry = root.entry("train_batch_size") or root.entry("train_micro_batch_size_per_gpu")
    return (values, entry.key_start, whole_file) if entry is not None else None


def _end_column(text: str | None, line: int, column: int) -> int:
    """The end of the launch's first physical line (its command as far as that line goes)."""
    lines = (text or "").splitlines()
    if not 0 < line <= len(lines):
        return column + 1
    code = lines[line - 1].rstrip()
    if code.endswith("\\"):
        code = code[:-1].rstrip()
    return max(len(code) + 1, column + 1)

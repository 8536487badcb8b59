"""The forecast of every launch the project index finds (launcher -> script -> config), for `dslint memory`."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dslint.diagnostics import Diagnostic
from dslint.lint.batch import index_project, lint_path
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.memory.forecast import FINDING_CODES, Overrides, forecast
from dslint.memory.script_scan import scan
from dslint.project.index import ProjectIndex, read_near
from dslint.project.world_size import world_size
from dslint.selection import RuleSelection


def script_findings(script: str, index: ProjectIndex | None, world: int | None = None) -> list[Diagnostic]:
    """The script's findings that move memory (DSL101, DSL201, DSL202), with what the project index knows."""
    selection = RuleSelection(select=FINDING_CODES)
    facts = index.facts_for(script) if index is not None else None
    result = lint_path(Path(script), selection, world, project=facts)
    return list(result.diagnostics) if isinstance(result, FileResult) else []


def literal_config(script: str) -> str | None:
    """The config file a script's own `initialize(config="ds.json")` names, when it exists beside the script."""
    try:
        facts = scan(Path(script).read_bytes())
    except OSError:
        return None
    if facts.config_literal is None:
        return None
    path = os.path.join(os.path.dirname(script), facts.config_literal)
    return os.path.normpath(path) if os.path.isfile(path) else None


def forecast_project(
    paths: Sequence[str], overrides: Overrides | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """One forecast per launch found under `paths`, and the errors met walking them."""
    overrides = overrides or Overrides()
    roots = list(paths) or ["."]
    found = discover(roots)
    index = index_project(found.files, roots)
    launches: list[dict[str, Any]] = []
    findings: dict[str, list[Diagnostic]] = {}
    for launch in index.launches:
        line = launch.line
        where = {"launcher": f"{_shown(line.launcher)}:{line.line}", "tool": line.tool}
        if launch.script is None:
            launches.append({**where, "script": line.script, "config": None, "unknown": "the script was not found"})
            continue
        world = world_size(line, functools.partial(_read_near, near=line.launcher, index=index), launch.accelerate)
        if launch.script not in findings:
            findings[launch.script] = script_findings(launch.script, index, overrides.world_size or world.ranks)
        config = launch.config.config_path
        if config is None and launch.config.option is None:
            config = literal_config(launch.script)
        entry = forecast(
            launch.script, config, world, findings[launch.script], overrides, launch.config.inline_stage,
            launch.config.mixed_precision, index.root_paths,
        )  # fmt: skip
        launches.append({**where, **entry})
    return launches, [str(error) for error in found.errors]


def _shown(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _read_near(name: str, near: str, index: ProjectIndex) -> str | None:
    return read_near(name, near, index.root_paths)

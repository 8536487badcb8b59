"""The forecast of every launch the project index finds (launcher -> script -> config), for `dslint memory`."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dslint.config import facts as config_facts
from dslint.config.tree import Object
from dslint.diagnostics import Diagnostic
from dslint.lint.batch import index_project, lint_path
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.lint.script import lint_source
from dslint.memory.forecast import FINDING_CODES, Overrides, forecast
from dslint.memory.script_scan import scan
from dslint.project.config_access import load_config_tree
from dslint.project.launchers import parse_shell
from dslint.project.project_index import ConfigReading, ProjectIndex
from dslint.project.world_size import WorldSize
from dslint.selection import RuleSelection

BATCH_CODES = ("DSL405", "DSL406", "DSL407")


def script_findings(script: str, index: ProjectIndex | None, world: int | None = None) -> list[Diagnostic]:
    """The script's findings that move memory (DSL101, DSL201, DSL202), with what the project index knows."""
    selection = RuleSelection(select=FINDING_CODES)
    facts = index.facts_for(script) if index is not None else None
    result = lint_path(Path(script), selection, world, project=facts)
    return list(result.diagnostics) if isinstance(result, FileResult) else []


def literal_config(script: str, text: str | None = None) -> str | None:
    """The config file a script's own `initialize(config="ds.json")` names, when it exists beside the script."""
    try:
        facts = scan(text if text is not None else Path(script).read_bytes())
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
        world = launch.world
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


def argument_config(script: str, script_args: Sequence[str]) -> str | None:
    """The config file the script's arguments name (`--deepspeed_config ds.json`, `--deepspeed ds.json`), read
    as a launcher's arguments are; relative to the current directory, then to the script's."""
    (line,) = parse_shell(script, shlex.join(["python", os.path.basename(script) or "script.py", *script_args]))
    option = line.config_option()
    if option is None or option.value is None:
        return None
    for base in (os.getcwd(), os.path.dirname(script)):
        candidate = os.path.join(base, option.value)
        if os.path.isfile(candidate):
            return os.path.normpath(os.path.abspath(candidate))
    return None


def script_forecast(
    script: str, script_args: Sequence[str], ranks: int, text: str | None = None, params: int | None = None
) -> dict[str, Any]:
    """The forecast of `script` (or of `text` in its place: a fixed version) started with `script_args` as
    `ranks` ranks of one node, as runtime_check starts it."""
    source = text if text is not None else Path(script).read_text(encoding="utf-8", errors="replace")
    config = argument_config(script, script_args) or literal_config(script, source)
    selection = RuleSelection(select=FINDING_CODES)
    findings = lint_source(script, source.encode("utf-8"), selection, ranks).diagnostics
    world = WorldSize(ranks, ranks, f"--nproc {ranks} (runtime_check starts one node)")
    return forecast(script, config, world, findings, Overrides(params=params), text=source)


def batch_check(config: str | None, ranks: int) -> dict[str, Any]:
    """DeepSpeed's batch arithmetic at `ranks` ranks: the config's batch values and dslint's batch findings
    (DSL405 "auto", DSL406 missing, DSL407 train != micro x accumulation x world size) at that world size."""
    if config is None:
        return {"config": None, "world_size": ranks, "ok": None, "findings": [], "values": None}
    tree = load_config_tree(Path(config))
    values = None
    if isinstance(tree, Object):
        train, micro, accum = config_facts.batch_values(tree)
        values = {"train_batch_size": train, "train_micro_batch_size_per_gpu": micro,
                  "gradient_accumulation_steps": accum}  # fmt: skip
        values = {key: (value if isinstance(value, (int, float)) else None) for key, value in values.items()}
    result = lint_path(
        Path(config), RuleSelection(select=BATCH_CODES), ranks, config_reader=ConfigReading("initialize")
    )
    diagnostics = list(result.diagnostics) if isinstance(result, FileResult) else []
    findings = [f"{d.where}: {d.code} {d.message}" for d in diagnostics]
    return {"config": _shown(config), "world_size": ranks, "ok": not findings, "findings": findings, "values": values}

"""Where a finding's facts come from when they live outside the reported line: the launcher and config that
set the ZeRO stage, the call that passes the engine in from another function or module.

Rules that depend on such a fact pass `evidence(context, engine)` to `report`: a short suffix for the message
("ZeRO-3 from scripts/run_z3.sh:6 --deepspeed_config configs/ds_z3.json") and the related locations that
JSON, SARIF and the full format show.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dslint.config.tree import node_at
from dslint.diagnostics import Related
from dslint.model.engine import Engine, EngineConfig
from dslint.project.config_link import resolve_config
from dslint.project.engine_config import known_config
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.context import ScriptContext


@dataclass(frozen=True)
class Evidence:
    suffix: str = ""
    related: tuple[Related, ...] = ()


NONE = Evidence()


def evidence(context: ScriptContext, engine: Engine | None) -> Evidence:
    """The evidence chain behind `engine` and its config; empty when everything is in this file."""
    if engine is None:
        return NONE
    related: list[Related] = []
    parts: list[str] = []
    if engine.site is not None:
        related.append(engine.site)
        parts.append(f"engine from {engine.site.path}:{engine.site.line}")
    config = resolve_config(context, engine)
    if config is not None and config.via:
        part, config_related = _config_chain(config)
        related.extend(config_related)
        parts.append(part)
    elif config is None:
        # what the project index read: a project helper's dict (`make_config() returns a stage 3 config`), with
        # the launches giving the options it is built from
        part, built = built_evidence(known_config(context, engine))
        related.extend(built)
        parts.extend([part] if part else [])
    if not related:
        return NONE
    return Evidence(f" ({'; '.join(parts)})", tuple(dict.fromkeys(related)))


def built_evidence(config: EngineConfig | None) -> tuple[str, list[Related]]:
    """ "ZeRO-3 from train.py:12, run.sh:3" and its locations, for a config the project index read as a project
    function's dict (`engine_config.known_config`); ("", []) for none."""
    if config is None or config.zero_stage is None:
        return "", []
    built = [r for r in config.evidence if r.message != "deepspeed.initialize"]
    if not built:
        return "", []
    return f"ZeRO-{config.zero_stage} from {', '.join(dict.fromkeys(f'{r.path}:{r.line}' for r in built))}", built


def config_evidence(configs: list[ResolvedConfig], files: bool = False) -> Evidence:
    """The launchers and config files behind configs a script is started with (the Hugging Face Trainer's
    `--deepspeed ds.json`), as `evidence` writes them; empty for configs written in the script itself.
    `files`: a config file the script names itself is named too ("ZeRO-3 in configs/zero3.json:23"): the
    stage is that file's fact, not the script's."""
    parts: list[str] = []
    related: list[Related] = []
    for config in configs:
        if config.via:
            part, found = _config_chain(config)
            parts.append(part)
            related.extend(found)
        elif files and config.path is not None:
            place = _stage_place(config)
            related.append(place)
            parts.append(f"ZeRO-{config.zero_stage} in {place.path}:{place.line}")
    if not related:
        return NONE
    return Evidence(f" ({'; '.join(dict.fromkeys(parts))})", tuple(dict.fromkeys(related)))


def _config_chain(config: ResolvedConfig) -> tuple[str, list[Related]]:
    """ "ZeRO-3 from run.sh:4 -> ds_z3.json:5" and the locations behind it, for a config a launcher names."""
    related = list(config.via)
    # the option or YAML key naming the file where there is one, else the launch line
    links = [r for r in config.via if " launches " not in r.message] or list(config.via)
    chain = ", ".join(dict.fromkeys(f"{r.path}:{r.line}" for r in links))
    if config.path is not None:
        place = _stage_place(config)
        related.append(place)
        chain += f" -> {place.path}:{place.line}"
    stage = config.zero_stage
    return f"{'config' if stage is None else f'ZeRO-{stage}'} from {chain}", related


def _stage_place(config: ResolvedConfig) -> Related:
    """Where the config's file sets `zero_optimization.stage` (its first line when it does not), the path as
    findings show it (relative to the current directory when below it)."""
    assert config.path is not None
    shown = os.path.relpath(config.path)
    shown = str(config.path) if shown.startswith("..") else shown
    stage = node_at(config.tree, "zero_optimization", "stage") if config.tree is not None else None
    line, column = (stage.start.line, stage.start.column) if stage is not None else (1, 1)
    return Related(shown, line, column, "zero_optimization.stage")

"""The config an initialize call elsewhere runs with (`EngineConfig`): a literal path beside the call, or the
configs its script's launchers pass for the option it reads; and the ZeRO stage a config file sets. The project
index asks this for every initialize site the program model finds."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from dslint.config import facts as config_facts
from dslint.config.tree import Object
from dslint.diagnostics import Related
from dslint.model.engine import EngineConfig
from dslint.model.summary import SummaryStore
from dslint.model.values import InitSite
from dslint.project.built_configs import built_stage
from dslint.project.config_access import load_config_tree
from dslint.project.importer_launches import IMPORT_LEVELS
from dslint.project.inputs import is_file, shown_path
from dslint.project.script_parser import argparse_defaults
from dslint.script.project_facts import LaunchedConfig, ProjectFacts


def config_stage(path: str, named_by: str | None = None) -> int | None:
    """The ZeRO stage a config file sets (0 when absent), or None when unreadable, not literal, or not read
    (`config_access`: outside the project of `named_by`, the file that names it)."""
    tree = load_config_tree(Path(path), named_by)
    if not isinstance(tree, Object):
        return None
    return config_facts.zero_stage(tree)


def engine_config(
    files: Mapping[str, ProjectFacts], site: InitSite, store: SummaryStore | None = None
) -> EngineConfig | None:
    """The config an initialize call elsewhere runs with, when a literal path or its script's launchers say, or
    (with the project's summaries) a dict built in code: a literal, or what a project function returns."""
    import ast

    config = site.config
    if isinstance(config, ast.Constant) and isinstance(config.value, str):
        path = os.path.normpath(os.path.abspath(str(Path(site.path).parent / config.value)))
        if is_file(path):
            stage = config_stage(path, site.path)
            written = Related(shown_path(site.path), site.line, site.column, f"config {config.value}")
            return EngineConfig(stage, (written,), path)
        return None
    built = built_engine_config(files, site, store) if store is not None else None
    if built is not None:
        return built
    facts = files.get(site.path)
    if facts is None or not facts.launches:
        return None
    wanted = None
    if config is None and site.has_args:
        wanted = "deepspeed_config"
    elif isinstance(config, ast.Attribute) and isinstance(config.value, ast.Name):
        wanted = config.attr
    if wanted is None:
        return None
    stages: dict[int | None, list[tuple[LaunchedConfig, str]]] = {}
    for launch in facts.launches:
        if launch.option != wanted or launch.config_path is None:
            return None  # one launch without a readable config: the stage cannot be known
        stages.setdefault(config_stage(launch.config_path, launch.launch.path), []).append((launch, launch.config_path))
    if not stages or None in stages:
        return None
    stage = max(s for s in stages if s is not None)
    chain: list[Related] = []
    for launch, _ in stages[stage]:
        chain.append(launch.launch)
        if launch.config_evidence is not None:
            chain.append(launch.config_evidence)
    return EngineConfig(stage, tuple(chain), stages[stage][0][1])


def built_engine_config(files: Mapping[str, ProjectFacts], site: InitSite, store: SummaryStore) -> EngineConfig | None:
    """The stage of the dict an initialize call's config is built as in code: a literal, or what a project
    function returns, read with each value its script's launches give the options it is handed."""
    built = built_stage(
        store, site.path, site.qualname, site.config, options=launch_option_values(files, store, site.path)
    )
    if built is None:
        return None
    where = Related(shown_path(site.path), site.line, site.column, "deepspeed.initialize")
    stage = built.stage
    what = f"{built.helper}() returns a stage {stage} config" if built.helper else f"a stage {stage} dict"
    how = Related(shown_path(built.path), built.line, 1, what)
    return EngineConfig(built.stage, (where, how, *_launches_giving(files, site.path, built.options)))


def launch_option_values(
    files: Mapping[str, ProjectFacts], store: SummaryStore, script: str
) -> dict[str, tuple[object, ...]]:
    """The values each command-line option of `script` takes across its launches: the literal a launch gives, else
    the default its parser declares (`argparse_defaults`, click's too); numbers as numbers. An option some launch
    gives no literal for, and none declared with a default, is left out. A module no launch starts runs under the
    launches of the launched scripts importing it (`importer_launches`), with their parsers' defaults beside its
    own. None at all where no launch reaches the script: run by hand, it may be given any value."""
    facts = files.get(script)
    module = store.get(script)
    defaults = argparse_defaults(module.tree) if module is not None else {}
    launches: Sequence[LaunchedConfig] = facts.launches if facts is not None else ()
    if facts is not None and facts.launches_partial:
        return {}  # a launcher whose launch is not read may give any value
    if not launches:
        importers = _importers(files, store, script)
        if importers is None:
            return {}
        launches, inherited = importers
        for name, default in inherited.items():
            if defaults.setdefault(name, default) != default:
                defaults[name] = ""  # declared twice with different defaults: neither is known
        defaults = {name: default for name, default in defaults.items() if default}
    if not launches:
        return {}
    given = [{name.replace("-", "_"): value for name, value in launch.options.items()} for launch in launches]
    found: dict[str, tuple[object, ...]] = {}
    for name in {*defaults, *(n for options in given for n in options)}:
        values: list[object] = []
        for options in given:
            value = options[name] if name in options else defaults.get(name)
            if value is None:
                break
            values.append(int(value) if value.isdigit() else value)
        else:
            found[name] = tuple(dict.fromkeys(values))
    return found


def _importers(
    files: Mapping[str, ProjectFacts], store: SummaryStore, module: str
) -> tuple[list[LaunchedConfig], dict[str, str]] | None:
    """The launches of the launched scripts that import `module` (`IMPORT_LEVELS` deep), and their parsers'
    defaults (an option the scripts default differently is left out); None when one of those scripts is named by a
    launch that is not read."""
    launches: list[LaunchedConfig] = []
    defaults: dict[str, str] = {}
    for script, facts in files.items():
        if not facts.launches or module not in store.imported_modules(script, IMPORT_LEVELS):
            continue
        if facts.launches_partial:
            return None
        launches.extend(facts.launches)
        summary = store.get(script)
        for name, value in (argparse_defaults(summary.tree) if summary is not None else {}).items():
            if defaults.setdefault(name, value) != value:
                defaults[name] = ""
    return launches, {name: value for name, value in defaults.items() if value}


def _launches_giving(
    files: Mapping[str, ProjectFacts], script: str, chosen: tuple[tuple[str, object], ...]
) -> tuple[Related, ...]:
    """The launches of `script` that give its options the values a built config's stage was read with (the
    highest stage's launches: where a finding about that stage applies)."""
    facts = files.get(script)
    if not chosen or facts is None:
        return ()
    wanted = {name: str(value) for name, value in chosen}
    found = [
        launch.launch
        for launch in facts.launches
        if all(
            {n.replace("-", "_"): v for n, v in launch.options.items()}.get(name) == value
            for name, value in wanted.items()
        )
    ]
    return tuple(found[:3])

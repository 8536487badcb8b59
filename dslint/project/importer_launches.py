"""The launches a module runs under without being launched itself: those of the launched scripts that import it.

A trainer class in `pkg/engine/trainer.py` that calls `deepspeed.initialize` runs in the processes of the script
that imports it (`scripts/train.py`, started by `deepspeed --num_gpus=1 --module scripts.train`); a question about
its ranks (`script/one_rank.one_process_launches`: is rank 0 every rank?) reads those launches. Asked only for the
modules the rank questions concern: those that call `initialize` or receive its engine (`targets`), and followed
three imports deep from each launched script (`SummaryStore.imported_modules`), so a project's whole import graph
is not parsed for it.
"""

from __future__ import annotations

from collections.abc import Collection, MutableMapping
from dataclasses import replace

from dslint.model.summary import SummaryStore
from dslint.project.script_parser import argparse_defaults
from dslint.script.project_facts import LaunchedConfig, ProjectFacts

# How many imports deep a launched script's modules are followed.
IMPORT_LEVELS = 3


def record_importer_launches(
    files: MutableMapping[str, ProjectFacts], targets: Collection[str], store: SummaryStore
) -> None:
    """Give each module of `targets` that no launch starts the launches of the launched scripts importing it; none
    where one of those scripts is named by a launcher whose launch is not read (`launches_partial`): its launches
    may not be all."""
    unlaunched = {path for path in targets if not (path in files and files[path].launches)}
    if not unlaunched:
        return
    inherited: dict[str, list[LaunchedConfig]] = {}
    defaults: dict[str, list[dict[str, str]]] = {}  # each importer's parser defaults
    partial: set[str] = set()
    for script, facts in list(files.items()):
        summary = store.get(script) if facts.launches else None
        if summary is None:
            continue
        parsed: dict[str, str] | None = None  # the script's parser defaults, read once
        for module in store.imported_modules(script, IMPORT_LEVELS):
            if module in unlaunched:
                inherited.setdefault(module, []).extend(facts.launches)
                parsed = argparse_defaults(summary.tree) if parsed is None else parsed
                defaults.setdefault(module, []).append(parsed)
                if facts.launches_partial:
                    partial.add(module)
    for module, launches in inherited.items():
        if module not in partial:
            agreed = _agreed(defaults[module])
            files[module] = replace(
                files.get(module, ProjectFacts()), importer_launches=tuple(launches), importer_defaults=agreed
            )


def _agreed(defaults: list[dict[str, str]]) -> dict[str, str]:
    """The option defaults every importing script's parser that declares the option gives alike."""
    agreed: dict[str, str] = {}
    clashing: set[str] = set()
    for found in defaults:
        for option, value in found.items():
            if agreed.setdefault(option, value) != value:
                clashing.add(option)
    return {option: value for option, value in agreed.items() if option not in clashing}

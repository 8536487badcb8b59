"""The launches a module runs under without being launched itself: those of the launched scripts that import it.

A trainer class in `pkg/engine/trainer.py` that calls `deepspeed.initialize` runs in the processes of the script
that imports it (`scripts/train.py`, started by `deepspeed --num_gpus=1 --module scripts.train`); a question about
its ranks (`script/one_rank.one_process_launches`: is rank 0 every rank?) reads those launches. Asked only for the
modules the rank questions concern: those that call `initialize` or receive its engine (`targets`), and followed
three imports deep from each launched script (`SummaryStore.imported_modules`), so a project's whole import graph
is not parsed for it.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Collection, Mapping, MutableMapping
from dataclasses import replace

from dslint.diagnostics import Related
from dslint.model.summary import ModuleSummary, SummaryStore, dotted, walk
from dslint.project.dataclass_defaults import parser_classes
from dslint.project.inputs import shown_path
from dslint.project.script_parser import argparse_defaults
from dslint.script.project_facts import LaunchedConfig, ProjectFacts

# How many imports deep a launched script's modules are followed.
IMPORT_LEVELS = 3


def trainer_modules(sources: Mapping[str, bytes]) -> list[str]:
    """The modules building a Trainer's arguments that may run DeepSpeed: they name it, or parse the arguments from
    the command line (`HfArgumentParser`), where a launch's `--deepspeed ds.json` turns it on."""
    return [
        path
        for path, data in sources.items()
        if b"TrainingArguments" in data and (b"deepspeed" in data or b"Parser" in data)
    ]


def record_importer_launches(
    files: MutableMapping[str, ProjectFacts], targets: Collection[str], store: SummaryStore
) -> None:
    """Give each module of `targets` that no launch starts the launches of the launched scripts importing it; and
    each module holding a parser of the Trainer's arguments in a function that a launched script importing it
    calls (`train()` of `train.py`, from `train_mem.py`), launched itself or not, those scripts' launches
    (`parser_launches`: the command lines its parser reads); none where one of those scripts is named by a
    launcher whose launch is not read (`launches_partial`): its launches may not be all."""
    unlaunched = {path for path in targets if not (path in files and files[path].launches)}
    parsers = {path for path in targets if b"Parser" in store.sources.get(path, b"")}
    parsing: dict[str, list[LaunchedConfig]] = {}  # the launches whose command line a module's parser reads
    parsing_functions: dict[str, set[str]] = {}  # each such module's functions holding the parser, read once
    if not unlaunched and not parsers:
        return
    inherited: dict[str, list[LaunchedConfig]] = {}
    defaults: dict[str, list[tuple[str, ast.Module, dict[str, str]]]] = {}  # each importer's parser defaults
    partial: set[str] = set()
    for script, facts in list(files.items()):
        summary = store.get(script) if facts.launches else None
        if summary is None:
            continue
        parsed: dict[str, str] | None = None  # the script's parser defaults, read once
        called: set[str | None] | None = None  # the names the script calls, read once
        for module in store.imported_modules(script, IMPORT_LEVELS):
            if module in parsers and module not in parsing_functions:
                parsing_functions[module] = _parsing_functions(store, module)
            if parsing_functions.get(module):
                called = (
                    {dotted(c.func) for _, calls in summary.body_calls() for c in calls} if called is None else called
                )
                if _calls_one_of(store, summary, script, module, parsing_functions[module], called):
                    parsing.setdefault(module, []).extend(facts.launches)
            if module in unlaunched:
                inherited.setdefault(module, []).extend(facts.launches)
                parsed = argparse_defaults(summary.tree) if parsed is None else parsed
                defaults.setdefault(module, []).append((script, summary.tree, parsed))
                if facts.launches_partial:
                    partial.add(module)
    for module, launches in parsing.items():
        if module not in partial:
            files[module] = replace(files.get(module, ProjectFacts()), parser_launches=tuple(launches))
    for module, launches in inherited.items():
        if module not in partial:
            agreed = _agreed(defaults[module])
            files[module] = replace(
                files.get(module, ProjectFacts()), importer_launches=tuple(launches), importer_defaults=agreed
            )


def _parsing_functions(store: SummaryStore, module: str) -> set[str]:
    """The module-level functions of `module` that parse the Trainer's arguments from the command line (holding
    `HfArgumentParser(...)`)."""
    target = store.get(module)
    if target is None:
        return set()
    return {
        qualname
        for qualname, calls in target.body_calls()
        if qualname and "." not in qualname and any(parser_classes(c) is not None for c in calls)
    }


def _calls_one_of(
    store: SummaryStore, importer: ModuleSummary, script: str, module: str, functions: set[str], called: set[str | None]
) -> bool:
    """Whether the launched `script` calls one of `functions` of `module`, imported by name (`from pkg.train import
    train` ... `train()`): a module launched itself too reads its importer's command line only through such a call
    (an importer with a parser of its own, taking only the module's argument classes, reads its own)."""
    return any(
        local in called and module == store.finder.find(dotted_name.rpartition(".")[0], script)
        for local, dotted_name in importer.imports.items()
        if dotted_name.rpartition(".")[2] in functions
    )


def _agreed(defaults: list[tuple[str, ast.Module, dict[str, str]]]) -> dict[str, tuple[str, Related]]:
    """The option defaults every importing script's parser that declares the option gives alike, each with where
    the first of them declares it."""
    agreed: dict[str, tuple[str, Related]] = {}
    clashing: set[str] = set()
    for script, tree, found in defaults:
        for option, value in found.items():
            if option in agreed:
                clashing.update([option] if agreed[option][0] != value else [])
                continue
            line = _declared_at(tree, option)
            note = f"{os.path.basename(script)} declares --{option} (default {value})"
            agreed[option] = (value, Related(shown_path(script), line, 1, note))
    return {option: found for option, found in agreed.items() if option not in clashing}


def _declared_at(tree: ast.Module, option: str) -> int:
    """The line of the `add_argument(...)` declaring `option` (its `dest`, or its long flag, dashes as underscores)."""
    for node in walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        ):
            continue
        written = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        names = {flag[2:].replace("-", "_") for flag in written if flag.startswith("--")}
        names |= {str(k.value.value) for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)}
        if option in names:
            return node.lineno
    return 1

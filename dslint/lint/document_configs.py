"""Lint the DeepSpeed configs written out in documents (`project/document_configs.py`: a tutorial's JSON code block
tied to the config file its launch command passes): the config rules over each block, at the DeepSpeed release
the document's settings select (and the newest its pin admits), read as the file it stands for is read
(`ProjectIndex.document_reading`), findings at the document's own lines and columns.

Never a fix: the fixes edit a config's text, and nothing proves an edit stays inside its block, so nothing is
written into a document. No noqa comment is read there either (`per-file-ignores` silences a document's findings,
as its launch findings).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from dslint.config.facts import Origin
from dslint.config.tree import Object
from dslint.config.versions import NewestAdmitted, Version, config_schema, selected_version
from dslint.diagnostics import Diagnostic
from dslint.framework.config_rule import ConfigContext
from dslint.lint.config import run_at_both_ends
from dslint.lint.result import FileResult, config_rules
from dslint.project.document_configs import DocumentConfig, config_tree
from dslint.project.project_index import ConfigReading
from dslint.selection import RuleSelection


def lint_document_configs(
    path: str,
    text: str,
    configs: Sequence[DocumentConfig],
    selection: RuleSelection,
    reading_of: Callable[[DocumentConfig], ConfigReading | None],
    world_size: int | None = None,
) -> list[Diagnostic]:
    """The config rules' findings on the `configs` written out in the document `path` whose text is `text`.
    `reading_of`: who reads each (the project index's `document_reading`); `world_size`: `--world-size`."""
    rules = config_rules(selection)
    if not rules:
        return []
    version = selected_version(selection.deepspeed_version)
    newest = NewestAdmitted.of(selection.deepspeed_newest, selection.deepspeed_pin)
    found: list[Diagnostic] = []
    for config in configs:
        root = config_tree(text, config)
        if root is None:
            continue
        context_at = functools.partial(_context, path, root, reading_of(config), world_size)
        found.extend(run_at_both_ends(context_at, version, newest, rules))
    return sorted(found, key=lambda d: d.sort_key)


def _context(
    path: str, root: Object, reading: ConfigReading | None, world_size: int | None, at: Version
) -> ConfigContext:
    return ConfigContext(
        path,
        root,
        reading.origin if reading is not None else Origin.FILE,
        world_size,
        load_source=None,  # no fix: nothing is written into a document
        schema=config_schema(at),
        deepspeed_version=at,
        replaced_keys=reading.replaced if reading is not None else frozenset(),
        launch_world_sizes=reading.world_sizes if reading is not None else (),
        read_in=reading.read_in if reading is not None else (),
    )


def document_results(
    documents: dict[str, list[DocumentConfig]],
    reading_of: Callable[[DocumentConfig], ConfigReading | None],
    selection_for: Callable[[Path], RuleSelection | None],
    read: Callable[[str], str | None],
    world_size: int | None = None,
) -> list[FileResult]:
    """One result per document whose written-out configs have findings (`documents`: by the path shown);
    `selection_for(path)`: the document's rules by its settings (None when its settings exclude it)."""
    results: list[FileResult] = []
    for path, configs in sorted(documents.items()):
        selection = selection_for(Path(path))
        text = read(path) if selection is not None else None
        if selection is None or text is None:
            continue
        found = lint_document_configs(path, text, configs, selection, reading_of, world_size)
        if found:
            results.append(FileResult(path, found, parsed=True, text=text))
    return results

"""Which scripts may apply a config's `activation_checkpointing` section (DSL455): only
`deepspeed.checkpointing.configure` reads it (or Megatron, which calls it), in the script or in a project module
it imports at any depth; and which launched configs no launch of theirs applies
(`ProjectIndex.checkpointing_unapplied`)."""

from __future__ import annotations

from pathlib import Path

from dslint.model.library import CHECKPOINTING_CONFIGURED
from dslint.model.summary import SummaryStore
from dslint.project.project_index import LaunchSite


def checkpointing_unapplied(
    sites: list[LaunchSite], sources: dict[str, bytes], store: SummaryStore, applies: dict[str, bool]
) -> set[str]:
    """The launched configs whose every launch starts a script that may not apply an `activation_checkpointing`
    section (`applies_checkpointing`); and, when no file of the project may, "" (every config its readers
    take)."""
    passed: dict[str, list[str | None]] = {}
    for site in sites:
        if site.config_path is not None:
            passed.setdefault(site.config_path, []).append(site.script)
    return {
        config
        for config, scripts in passed.items()
        if all(script is not None and not applies_checkpointing(script, sources, store, applies) for script in scripts)
    }


def applies_checkpointing(path: str, sources: dict[str, bytes], store: SummaryStore, applies: dict[str, bool]) -> bool:
    """Whether the script `path`, or a project module it imports at any depth, may apply an
    `activation_checkpointing` section (`library.CHECKPOINTING_CONFIGURED`); a file that is not a project module
    may. `applies` holds the answers, filled for the whole project on the first question (`_applying_modules`)."""
    if not applies:
        applies.update(dict.fromkeys(sources, False))
        applies.update(dict.fromkeys(_applying_modules(sources, store), True))
    return applies.get(path, True)  # not a project module: it may


def _applying_modules(sources: dict[str, bytes], store: SummaryStore) -> set[str]:
    """The project modules that hold a call applying the section, and those importing one of them, at any depth
    (through package `__init__` re-exports too). Read backwards from the few modules that hold the call: a module
    is parsed only where its text names the module it would import."""
    found = {path for path, data in sources.items() if any(token in data for token in CHECKPOINTING_CONFIGURED)}
    frontier = set(found)
    while frontier:
        words = {_module_word(path) for path in frontier}
        following: set[str] = set()
        for path, data in sources.items():
            if path in found or not any(word in data for word in words):
                continue
            if frontier & set(store.imported_modules(path, 1)):
                following.add(path)
        found |= following
        frontier = following
    return found


def _module_word(path: str) -> bytes:
    """The name an import of the module at `path` spells: its file's stem, or its package's for `__init__.py`."""
    file = Path(path)
    return (file.parent.name if file.stem == "__init__" else file.stem).encode()

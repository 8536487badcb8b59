"""Which scripts may apply a config's `activation_checkpointing` section (DSL455): only
`deepspeed.checkpointing.configure` reads it (or Megatron, which calls it), in the script or in a project module
it imports (six imports deep); and which launched configs no launch of theirs applies
(`ProjectIndex.checkpointing_unapplied`)."""

from __future__ import annotations

from dslint.model.library import CHECKPOINTING_CONFIGURED
from dslint.model.summary import SummaryStore
from dslint.project.project_index import LaunchSite

# How many imports deep a script's modules are read for a call that applies the section.
IMPORT_LEVELS = 6


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
    """Whether the script `path`, or a project module it imports (`IMPORT_LEVELS` imports deep, package
    `__init__` re-exports included), may apply an `activation_checkpointing` section
    (`library.CHECKPOINTING_CONFIGURED`); a file that is not a project module may. Read level by level from the
    script, stopping at the first module that may (a project's own initializer four imports away is reached
    without parsing the rest of its import graph); `applies` keeps the answers by script."""
    if path not in applies:
        applies[path] = _reaches_applying(path, sources, store) if path in sources else True
    return applies[path]


def _reaches_applying(path: str, sources: dict[str, bytes], store: SummaryStore) -> bool:
    seen = {path}
    level = [path]
    for depth in range(IMPORT_LEVELS + 1):
        if any(token in sources.get(module, b"") for module in level for token in CHECKPOINTING_CONFIGURED):
            return True
        if depth == IMPORT_LEVELS:
            break
        following = []
        for module in level:
            for imported in store.imported_modules(module, 1):
                if imported not in seen:
                    seen.add(imported)
                    following.append(imported)
        level = following
        if not level:
            break
    return False

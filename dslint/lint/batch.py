"""Lint many files, in worker processes when there are many."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from dslint.lint.file import lint_file
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

PARALLEL_THRESHOLD = 16


@dataclass
class FileFailure:
    path: str
    message: str


def lint_path(path: Path, selection: RuleSelection, world_size: int | None = None) -> FileResult | FileFailure:
    try:
        data = path.read_bytes()
    except OSError as error:
        return FileFailure(str(path), f"cannot read: {error.strerror or error}")
    try:
        return lint_file(str(path), data, selection, world_size)
    except RecursionError:
        return FileFailure(str(path), "internal error: the file is nested too deeply to analyse")
    except Exception as error:
        return FileFailure(str(path), f"internal error: {type(error).__name__}: {error}")


def _lint_item(item: tuple[Path, RuleSelection, int | None]) -> FileResult | FileFailure:
    return lint_path(*item)


def lint_files(
    items: Sequence[tuple[Path, RuleSelection]], jobs: int | None = None, world_size: int | None = None
) -> list[FileResult | FileFailure]:
    """Lint each (file, selection its settings give it); `world_size`, when known, makes the config batch check
    (DSL407) exact."""
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return [lint_path(path, selection, world_size) for path, selection in items]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        triples = [(path, selection, world_size) for path, selection in items]
        return list(pool.map(_lint_item, triples, chunksize=8))

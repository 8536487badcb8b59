"""Lint many files, in worker processes when there are many."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from dslint.lint.file import lint_file
from dslint.lint.file_kinds import NotAnalysed, not_analysed
from dslint.lint.notebook import NotebookError, NotPythonNotebook
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

PARALLEL_THRESHOLD = 16


@dataclass
class FileFailure:
    path: str
    message: str


def lint_path(
    path: Path, selection: RuleSelection, world_size: int | None = None
) -> FileResult | FileFailure | NotAnalysed:
    skipped = not_analysed(path)
    if skipped is not None:
        return skipped
    try:
        data = path.read_bytes()
    except OSError as error:
        return FileFailure(str(path), f"cannot read: {error.strerror or error}")
    return lint_bytes(path, data, selection, world_size)


def lint_bytes(
    path: Path, data: bytes, selection: RuleSelection, world_size: int | None = None
) -> FileResult | FileFailure | NotAnalysed:
    """Lint `data` as the contents of `path` (a script, a notebook or a config, by its suffix)."""
    try:
        return lint_file(str(path), data, selection, world_size)
    except NotPythonNotebook as error:
        return NotAnalysed(str(path), str(error))
    except NotebookError as error:
        return FileFailure(str(path), str(error))
    except RecursionError:
        return FileFailure(str(path), "internal error: the file is nested too deeply to analyse")
    except Exception as error:
        return FileFailure(str(path), f"internal error: {type(error).__name__}: {error}")


def _lint_item(item: tuple[Path, RuleSelection, int | None]) -> FileResult | FileFailure | NotAnalysed:
    return lint_path(*item)


def lint_files(
    items: Sequence[tuple[Path, RuleSelection]],
    jobs: int | None = None,
    world_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[FileResult | FileFailure | NotAnalysed]:
    """Lint each (file, selection its settings give it); `world_size`, when known, makes the config batch check
    (DSL407) exact; `progress(1)` is called as each file is done."""
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    done: list[FileResult | FileFailure | NotAnalysed] = []
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        for path, selection in items:
            done.append(lint_path(path, selection, world_size))
            if progress is not None:
                progress(1)
        return done
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        triples = [(path, selection, world_size) for path, selection in items]
        for result in pool.map(_lint_item, triples, chunksize=8):
            done.append(result)
            if progress is not None:
                progress(1)
        return done

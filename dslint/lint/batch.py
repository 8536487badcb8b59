"""Lint many files, in worker processes when there are many.

One file's failure is that file's error, never the end of the run: a file that cannot be read, is over
`max-file-size`, or raises inside dslint becomes a `FileFailure`; a worker process that dies (a crash in native
code: SIGSEGV, SIGABRT) is retried alone, and the file that kills it again is reported as its failure while the
others finish.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection
from pathlib import Path

from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.limits import Limits, TooLarge, read_capped
from dslint.lint.file import lint_file
from dslint.lint.file_kinds import NotAnalysed, not_analysed
from dslint.lint.notebook import NotebookError, NotPythonNotebook
from dslint.lint.result import FileResult
from dslint.project.index import ConfigReading, ProjectIndex, build_project_index
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection

PARALLEL_THRESHOLD = 16


@dataclass
class FileFailure:
    path: str
    message: str


def index_project(files: Sequence[Path], paths: Sequence[str]) -> ProjectIndex:
    """The project index over the files about to be linted, computed once, before any of them is."""
    return build_project_index(files, paths)


def lint_path(
    path: Path,
    selection: RuleSelection,
    world_size: int | None = None,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
    config_reader: ConfigReading | None = None,
) -> FileResult | FileFailure | NotAnalysed:
    """`project`: what the project index knows about a script; `config_reader`: who reads a config file (a
    launcher or script naming it makes it a DeepSpeed config whatever its name)."""
    skipped = not_analysed(path)
    if skipped is not None:
        return skipped
    limits = limits or Limits()
    config = path.suffix.lower() in CONFIG_SUFFIXES
    try:
        if config:
            data = read_capped(path, limits.max_config_size, "max-config-size")
        else:
            data = read_capped(path, limits.max_file_size, "max-file-size")
    except TooLarge as error:
        return FileFailure(str(path), str(error))
    except OSError as error:
        return FileFailure(str(path), f"cannot read: {error.strerror or error}")
    return lint_bytes(path, data, selection, world_size, limits, project, config_reader)


def lint_bytes(
    path: Path,
    data: bytes,
    selection: RuleSelection,
    world_size: int | None = None,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
    config_reader: ConfigReading | None = None,
) -> FileResult | FileFailure | NotAnalysed:
    """Lint `data` as the contents of `path` (a script, a notebook or a config, by its suffix)."""
    try:
        return lint_file(str(path), data, selection, world_size, limits or Limits(), project, config_reader)
    except NotPythonNotebook as error:
        return NotAnalysed(str(path), str(error))
    except NotebookError as error:
        return FileFailure(str(path), str(error))
    except RecursionError:
        return FileFailure(str(path), "internal error: the file is nested too deeply to analyse")
    except Exception as error:
        return FileFailure(str(path), f"internal error: {type(error).__name__}: {error}")


Item = tuple[Path, RuleSelection, "int | None", Limits, "ProjectFacts | None", "ConfigReading | None"]
Result = FileResult | FileFailure | NotAnalysed


def _lint_item(item: Item) -> Result:
    return lint_path(*item)


def lint_files(
    items: Sequence[tuple[Path, RuleSelection]],
    jobs: int | None = None,
    world_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    limits: Limits | Sequence[Limits] | None = None,
    project: ProjectIndex | None = None,
) -> list[Result]:
    """Lint each (file, selection its settings give it); `world_size`, when known, makes the config batch check
    (DSL407) exact; `progress(1)` is called as each file is done; `limits`: one for every file, or one per item;
    `project` (see `index_project`) gives each file what is known about it from elsewhere."""
    each = [limits or Limits()] * len(items) if limits is None or isinstance(limits, Limits) else list(limits)
    work: list[Item] = [
        (
            path,
            selection,
            world_size,
            limit,
            project.facts_for(path) if project is not None else None,
            project.config_reading(path) if project is not None else None,
        )
        for (path, selection), limit in zip(items, each, strict=True)
    ]
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        done: list[Result] = []
        for item in work:
            done.append(_lint_item(item))
            if progress is not None:
                progress(1)
        return done
    results: list[Result | None] = [None] * len(work)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
            for index, result in enumerate(pool.map(_lint_item, work, chunksize=8)):
                results[index] = result
                if progress is not None:
                    progress(1)
    except BrokenProcessPool:
        pass  # a worker died: the files without a result are retried one process each, below
    finished: list[Result] = []
    for index, maybe in enumerate(results):
        if maybe is None:
            maybe = _isolated(work[index])
            if progress is not None:
                progress(1)
        finished.append(maybe)
    return finished


def _isolated(item: Item) -> Result:
    """Lint one file in a process of its own: its death is this file's failure."""
    context = get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_send_result, args=(item, sender), daemon=True)
    process.start()
    sender.close()
    try:
        result: Result = receiver.recv()
    except EOFError:  # it died before sending
        process.join()
        code = process.exitcode or 0
        how = f" ({_signal_name(-code)})" if code < 0 else f" (exit status {code})" if code else ""
        return FileFailure(str(item[0]), f"internal error: dslint's parser crashed on this file{how}")
    finally:
        receiver.close()
    process.join()
    return result


def _send_result(item: Item, sender: Connection) -> None:
    sender.send(_lint_item(item))
    sender.close()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

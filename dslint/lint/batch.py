"""Lint many files, in worker processes when there are many.

One file's failure is that file's error, never the end of the run: a file that cannot be read, is over
`max-file-size`, or raises inside dslint becomes a `FileFailure`; a worker process that dies (a crash in native
code: SIGSEGV, SIGABRT) is retried alone, and the file that kills it again is reported as its failure while the
others finish.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection
from pathlib import Path

from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.limits import Limits, TooLarge, read_capped
from dslint.lint.file import lint_file
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

PARALLEL_THRESHOLD = 16


@dataclass
class FileFailure:
    path: str
    message: str


def lint_path(
    path: Path, selection: RuleSelection, world_size: int | None = None, limits: Limits | None = None
) -> FileResult | FileFailure:
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
    try:
        return lint_file(str(path), data, selection, world_size, limits)
    except RecursionError:
        return FileFailure(str(path), "internal error: the file is nested too deeply to analyse")
    except Exception as error:
        return FileFailure(str(path), f"internal error: {type(error).__name__}: {error}")


Item = tuple[Path, RuleSelection, "int | None", Limits]


def _lint_item(item: Item) -> FileResult | FileFailure:
    return lint_path(*item)


def lint_files(
    items: Sequence[tuple[Path, RuleSelection]],
    jobs: int | None = None,
    world_size: int | None = None,
    limits: Limits | Sequence[Limits] | None = None,
) -> list[FileResult | FileFailure]:
    """Lint each (file, selection its settings give it); `world_size`, when known, makes the config batch check
    (DSL407) exact; `limits`: one for every file, or one per item."""
    each = [limits or Limits()] * len(items) if limits is None or isinstance(limits, Limits) else list(limits)
    work: list[Item] = [
        (path, selection, world_size, limit) for (path, selection), limit in zip(items, each, strict=True)
    ]
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return [_lint_item(item) for item in work]
    results: list[FileResult | FileFailure | None] = [None] * len(work)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
            for index, result in enumerate(pool.map(_lint_item, work, chunksize=8)):
                results[index] = result
    except BrokenProcessPool:
        pass  # a worker died: the files without a result are retried one process each, below
    return [result if result is not None else _isolated(work[index]) for index, result in enumerate(results)]


def _isolated(item: Item) -> FileResult | FileFailure:
    """Lint one file in a process of its own: its death is this file's failure."""
    context = get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_send_result, args=(item, sender), daemon=True)
    process.start()
    sender.close()
    try:
        result: FileResult | FileFailure = receiver.recv()
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

"""Lint many files, in worker processes when there are many.

One file's failure is that file's error, never the end of the run: a file that cannot be read, is over
`max-file-size`, or raises inside dslint becomes a `FileFailure`; a worker process that dies (a crash in native
code: SIGSEGV, SIGABRT) is retried alone, and the file that kills it again is reported as its failure while the
others finish.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from dslint.collector import uncollected
from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.limits import NOTEBOOK_FILE_SETTING, Limits, TooLarge, read_capped
from dslint.lint.cache import ResultCache, code_fingerprint, digest
from dslint.lint.file import NOTEBOOK, lint_file
from dslint.lint.file_kinds import NotAnalysed, not_analysed
from dslint.lint.prefilter import may_create_engine
from dslint.lint.result import FileResult
from dslint.project.inputs import absolute, recording
from dslint.project.project_index import ConfigReading, ProjectIndex, launcher_files
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from dslint.lint.ahead import Ahead

PARALLEL_THRESHOLD = 16
YOUNG_OBJECTS = 50_000  # the collector's first threshold while files are linted (`_fewer_collections`)


@dataclass
class FileFailure:
    path: str
    message: str


def index_project(
    files: Sequence[Path], paths: Sequence[str], cache: ResultCache | None = None, jobs: int | None = None
) -> ProjectIndex:
    """The project index over the files about to be linted, computed once, before any of them is; from `cache`
    when it holds one built over the same files, launchers and inputs. `jobs`: the processes the run may use
    (None: one); with two or more, half of the build runs in a forked child beside the other (`beside`)."""
    beside = jobs is not None and jobs > 1
    if cache is not None:
        python = sorted(absolute(f) for f in files if str(f).endswith(".py") or "." not in Path(f).name)
        key = digest("index", code_fingerprint(), os.getcwd(), tuple(paths), python, launcher_files(paths or ["."]))
        cache.expect(len(files))
        cached = cache.get(key)
        if isinstance(cached, ProjectIndex):
            return cached
    from dslint.project.index import build_project_index  # the model and the project readers: not on a hit

    if cache is None:
        return build_project_index(files, paths, beside, _touched)
    with recording() as inputs:
        index = build_project_index(files, paths, beside, _touched)
    cache.put(key, index, inputs)
    return index


def _touched(data: bytes, facts: ProjectFacts | None) -> bool:
    """A script some rule may touch, given the facts the index has for it (`lint_file` settles the others from
    their text alone): the modules whose star imports the index reads."""
    from dslint.lint.activation import certainly_untouched

    return not certainly_untouched(data, facts)


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
    try:
        data = _read_capped(path, limits)
    except TooLarge as error:
        return NotAnalysed(str(path), error.reason)
    except OSError as error:
        return FileFailure(str(path), f"cannot read: {error.strerror or error}")
    return lint_bytes(path, data, selection, world_size, limits, project, config_reader)


def _read_limit(path: Path, limits: Limits) -> tuple[int, str]:
    """How much of `path` is read, and the setting that says so: a notebook file holds its outputs too (its code
    cells are held to max-file-size once read: `dslint.lint.notebook`)."""
    suffix = path.suffix.lower()
    if suffix in CONFIG_SUFFIXES:
        return limits.max_config_size, "max-config-size"
    if suffix == NOTEBOOK:
        return limits.max_notebook_file_size, NOTEBOOK_FILE_SETTING
    return limits.max_file_size, "max-file-size"


def _read_capped(path: Path, limits: Limits) -> bytes:
    return read_capped(path, *_read_limit(path, limits))


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
    from dslint.lint.notebook import NotebookError, NotPythonNotebook  # imported when a file is linted

    try:
        return lint_file(str(path), data, selection, world_size, limits or Limits(), project, config_reader)
    except NotPythonNotebook as error:
        return NotAnalysed(str(path), str(error))
    except TooLarge as error:  # a notebook whose code cells are over max-file-size
        return NotAnalysed(str(path), error.reason)
    except NotebookError as error:
        return FileFailure(str(path), str(error))
    except RecursionError:
        return FileFailure(str(path), "internal error: the file is nested too deeply to analyse")
    except Exception as error:
        return FileFailure(str(path), f"internal error: {type(error).__name__}: {error}")


Item = tuple[Path, RuleSelection, "int | None", Limits, "ProjectFacts | None", "ConfigReading | None"]
Result = FileResult | FileFailure | NotAnalysed
# A file whose bytes were read (for its cache key): linted from them, with the files read on the way.
DataItem = tuple[Path, bytes, RuleSelection, "int | None", Limits, "ProjectFacts | None", "ConfigReading | None"]
Recorded = tuple[Result, list[str]]


def _lint_item(item: Item) -> Result:
    return lint_path(*item)


def _lint_data_item(item: DataItem) -> Recorded:
    path, data, selection, world_size, limits, project, config_reader = item
    with recording() as inputs:
        result = lint_bytes(path, data, selection, world_size, limits, project, config_reader)
    return result, list(inputs)


def lint_files(
    items: Sequence[tuple[Path, RuleSelection]],
    jobs: int | None = None,
    world_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    limits: Limits | Sequence[Limits] | None = None,
    project: ProjectIndex | None = None,
    cache: ResultCache | None = None,
    ahead: Ahead[Item, Result] | None = None,
) -> list[Result]:
    """Lint each (file, selection its settings give it); `world_size`, when known, makes the config batch check
    (DSL407) exact; `progress(1)` is called as each file is done; `limits`: one for every file, or one per item;
    `project` (see `index_project`) gives each file what is known about it from elsewhere; `cache`: results
    are served from it when their keys match, and stored in it (`dslint.lint.cache`); `ahead` (`lint_ahead`, started
    before the index): the results it linted ahead, where they stand."""
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
    with _fewer_collections():
        if ahead is not None and cache is None:
            return _lint_with_ahead(work, jobs, progress, ahead)
        if ahead is not None:
            ahead.close()
        return _lint_work(work, jobs, progress, cache)


def lint_ahead(
    items: Sequence[tuple[Path, RuleSelection]],
    jobs: int | None = None,
    world_size: int | None = None,
    limits: Sequence[Limits] | None = None,
) -> Ahead[Item, Result] | None:
    """Start linting `items` in a forked child before the project index is built (`dslint.lint.ahead`), each as
    if the index knew nothing of it; None where that cannot pay: one process, or too few files for workers.
    `lint_files(..., ahead=)` keeps the child's results of the files the index indeed knows nothing of."""
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return None
    each = list(limits) if limits is not None else [Limits()] * len(items)
    work: list[Item] = [
        (path, selection, world_size, limit, None, None) for (path, selection), limit in zip(items, each, strict=True)
    ]
    from dslint.lint.ahead import Ahead  # multiprocessing and a temporary file: not for a run the cache serves

    return Ahead(_lint_item, work, _likely_known, YOUNG_OBJECTS)


def _likely_known(item: Item) -> bool:
    """A script the index is likely to know something of, so that the child's result would be redone (the child
    takes it last): one that may be run (`__main__`), make an engine, or hold a Trainer or an Accelerator."""
    path = item[0]
    if path.suffix.lower() != ".py":
        return False
    try:  # as the lint reads it: a regular file, within its size limit (a FIFO or /dev/zero is never read)
        data = _read_capped(path, item[3])
    except (OSError, TooLarge):
        return False
    return any(word in data for word in _LIKELY_KNOWN) or may_create_engine(data)


_LIKELY_KNOWN = (b"__main__", b"Trainer", b"Accelerator")


def _lint_with_ahead(
    work: list[Item], jobs: int, progress: Callable[[int], None] | None, ahead: Ahead[Item, Result]
) -> list[Result]:
    """`_run` over `work`, less the files the child linted ahead that the index knows nothing of (no facts, no
    config reading: the child's result is the one `_lint_item` gives here)."""
    done = ahead.stop()
    kept = {index: result for index, result in done.items() if work[index][4] is None and work[index][5] is None}
    rest = [index for index in range(len(work)) if index not in kept]
    results: list[Result | None] = [None] * len(work)
    for index, result in kept.items():
        results[index] = result
        if progress is not None:
            progress(1)
    # what is left after a child that got far is mostly the costly files (those the index knows): one at a time,
    # so that none waits behind another in a worker's share while the other worker idles
    _run_into(results, work, rest, jobs, progress, chunksize=1 if len(rest) * 4 <= len(work) else None)
    return [result for result in results if result is not None]


def _run_into(
    results: list[Result | None],
    work: list[Item],
    indexes: list[int],
    jobs: int,
    progress: Callable[[int], None] | None,
    chunksize: int | None = None,
) -> None:
    done = _run(_lint_item, [work[index] for index in indexes], jobs, progress, _crashed, _item_size, chunksize)
    for index, result in zip(indexes, done, strict=True):
        results[index] = result


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """A youngest generation of `YOUNG_OBJECTS` while files are linted (the workers, forked meanwhile, inherit
    it): a parse makes hundreds of thousands of objects that live until the file is done, and CPython's default
    (700) ran a collection over them every few hundred allocations, a sixth of the per-file time."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_OBJECTS), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _lint_work(
    work: list[Item], jobs: int, progress: Callable[[int], None] | None, cache: ResultCache | None
) -> list[Result]:
    if cache is None:
        return _run(_lint_item, work, jobs, progress, _crashed, _item_size)
    results: list[Result | None] = [None] * len(work)
    todo: list[tuple[int, str, DataItem]] = []
    uncached: list[int] = []
    cache.expect(len(work))
    for index, item in enumerate(work):
        keyed = _keyed(item, cache)
        if keyed is None:
            uncached.append(index)
            continue
        hit = cache.get(keyed)
        if isinstance(hit, (FileResult, NotAnalysed)):
            results[index] = hit
            cache.hits += 1
            if progress is not None:
                progress(1)
            continue
        data = _read(item)
        if isinstance(data, (FileFailure, NotAnalysed)):
            results[index] = data
            if progress is not None:
                progress(1)
            continue
        state = cache.remember(str(item[0]), data)
        key = keyed if keyed.endswith(state) else _file_key(item, state)  # changed since its state was read
        cache.misses += 1
        todo.append((index, key, (item[0], data, *item[1:])))
    for index, done in zip(
        uncached, _run(_lint_item, [work[i] for i in uncached], jobs, progress, _crashed, _item_size), strict=True
    ):
        results[index] = done
    fresh = _run(
        _lint_data_item, [data_item for _, _, data_item in todo], jobs, progress, _crashed_recorded, _data_size
    )
    for (index, key, _), (result, inputs) in zip(todo, fresh, strict=True):
        results[index] = result
        if isinstance(result, (FileResult, NotAnalysed)):
            cache.put(key, result, inputs)
    return [result for result in results if result is not None]


def _item_size(item: Item) -> int:
    """The file's size, the cost guess `_run` orders the work by (0 when it cannot be read: an error, at once)."""
    try:
        return os.stat(item[0]).st_size
    except OSError:
        return 0


def _data_size(item: DataItem) -> int:
    return len(item[1])


def _file_key(item: Item, state: str) -> str:
    path, selection, world_size, limits, project, config_reader = item
    return (
        digest(
            "file", code_fingerprint(), os.getcwd(), str(path), selection, limits, world_size, project, config_reader
        )
        + state
    )


def _keyed(item: Item, cache: ResultCache) -> str | None:
    """The cache key of a file (from its state, read once per run), or None for a file never cached: one dslint
    does not read, one that is missing or not a regular file, or one over its size limit."""
    path = item[0]
    if not_analysed(path) is not None:
        return None
    state = cache.state(str(path))
    if len(state) != 32:  # MISSING, a directory, a device, or too large to hash
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    limits = item[3]
    limit, _ = _read_limit(path, limits)
    if size > limit:
        return None
    return _file_key(item, state)


def _read(item: Item) -> bytes | FileFailure | NotAnalysed:
    path, limits = item[0], item[3]
    try:
        return _read_capped(path, limits)
    except TooLarge as error:  # it grew since its state was read
        return NotAnalysed(str(path), error.reason)
    except OSError as error:
        return FileFailure(str(path), f"cannot read: {error.strerror or error}")


T = TypeVar("T")
R = TypeVar("R")


def _run(
    function: Callable[[T], R],
    work: Sequence[T],
    jobs: int,
    progress: Callable[[int], None] | None,
    crashed: Callable[[T, str], R],
    weight: Callable[[T], int] | None = None,
    chunksize: int | None = None,
) -> list[R]:
    """`function` over `work`, in `jobs` worker processes when there is enough work; a worker that dies is
    retried alone per item (`_isolated`), and `crashed(item, why)` is the result of an item that kills it.
    `weight`: a guess at an item's cost (its size); the workers take the heaviest items first, so that one large
    file met last does not keep one worker busy while the others idle (the results keep `work`'s order);
    `chunksize`: the items a worker takes at a time (default: a few, fewer for little work)."""
    if jobs <= 1 or len(work) < PARALLEL_THRESHOLD:  # one forked child: a parser crash is one file's error
        from dslint.lint.isolation import Crashed, map_guarded  # multiprocessing: when there is work at all

        guarded = map_guarded(function, work, progress)
        return [crashed(item, r.why) if isinstance(r, Crashed) else r for item, r in zip(work, guarded, strict=True)]
    from concurrent.futures import ProcessPoolExecutor  # imported when there is work for workers
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_context

    results: list[R | None] = [None] * len(work)
    order = list(range(len(work)))
    if weight is not None:
        weights = [weight(item) for item in work]
        order.sort(key=lambda index: -weights[index])  # stable: equal weights keep their order
    # What is alive now moves out of the collector's sight before the fork: the workers' collections would walk all
    # of it for every few files, and touching it would copy the parent's pages into each worker.
    try:
        with uncollected(), ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
            ordered = [work[index] for index in order]
            done = pool.map(function, ordered, chunksize=chunksize or _chunksize(len(work), jobs))
            for index, result in zip(order, done, strict=True):
                results[index] = result
                if progress is not None:
                    progress(1)
    except BrokenProcessPool:
        pass  # a worker died: the files without a result are retried one process each, below
    finished: list[R] = []
    for index, maybe in enumerate(results):
        if maybe is None:
            maybe = _isolated(function, work[index], crashed)
            if progress is not None:
                progress(1)
        finished.append(maybe)
    return finished


def _chunksize(count: int, jobs: int) -> int:
    """Small chunks, so that one slow file does not hold a worker's whole share while the others idle."""
    return max(1, min(8, count // (jobs * 8)))


def _isolated(function: Callable[[T], R], item: T, crashed: Callable[[T, str], R]) -> R:
    """Run `function(item)` in a process of its own: its death is this item's failure."""
    from multiprocessing import get_context

    context = get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_send_result, args=(function, item, sender), daemon=True)
    process.start()
    sender.close()
    try:
        result: R = receiver.recv()
    except EOFError:  # it died before sending
        process.join()
        code = process.exitcode or 0
        how = f" ({_signal_name(-code)})" if code < 0 else f" (exit status {code})" if code else ""
        return crashed(item, f"internal error: dslint's parser crashed on this file{how}")
    finally:
        receiver.close()
    process.join()
    return result


def _send_result(function: Callable[[T], R], item: T, sender: Connection) -> None:
    sender.send(function(item))
    sender.close()


def _crashed(item: Item, why: str) -> Result:
    return FileFailure(str(item[0]), why)


def _crashed_recorded(item: DataItem, why: str) -> Recorded:
    return FileFailure(str(item[0]), why), []


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

"""Linting files ahead of the project index, in a forked child, while the caller builds the index.

The index is built on one core for most of its length (a project that makes no engine builds it on one core
throughout), while the files wait for it. `Ahead(function, work, deferred)` forks at once; the child runs
`function` over the items of `work` (each as if the index knew nothing of it), the items `deferred` says the index
is likely to know about last, and writes each answer to a file the caller made before the fork. `stop()` ends the
child (at once: an item it was still working on is the caller's to redo) and gives the answers it finished, by
their index in `work`. The caller keeps an answer only where the index indeed knows nothing of the item (the
answer is then the one it would compute itself), and computes the others, and everything the child did not
finish, as before.

The child runs at the lowest priority (`os.nice`): it takes a core only where neither the index (which every file
waits for, in one process or two) nor anything else wants it. Where there is no `fork`, no shared memory for the
flags, or the child dies or fails, its answers are simply missing: the caller computes them itself, so the answers
are the same either way.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import multiprocessing
import os
import pickle
import signal
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

NICE = 19  # the child's priority: idle cores only
_FREE, _TAKEN, _DONE = 0, 1, 2  # an item's flag; the last byte of the flags is "stop"
_HEADER = struct.Struct("<iq")  # an answer in the file: its item's index, the length of its pickle


class Ahead(Generic[T, R]):
    def __init__(
        self,
        function: Callable[[T], R],
        work: Sequence[T],
        deferred: Callable[[T], bool],
        young_objects: int = 0,
    ) -> None:
        self._process: multiprocessing.process.BaseProcess | None = None
        self._flags: mmap.mmap | None = None
        self._answers: IO[bytes] | None = None
        if not work or "fork" not in multiprocessing.get_all_start_methods():
            return
        context = multiprocessing.get_context("fork")
        try:  # the flags, in memory the child shares (anonymous: no file); the answers, in a file it shares
            flags = mmap.mmap(-1, len(work) + 1)
            answers = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `stop`)
        except OSError:
            return
        process = context.Process(
            target=_run_ahead, args=(function, work, deferred, flags, answers, young_objects), daemon=True
        )
        try:
            process.start()
        except OSError:  # no process to be had (limits): nothing is done ahead
            answers.close()
            return
        self._process, self._flags, self._answers = process, flags, answers

    def stop(self) -> dict[int, R]:
        """End the child now; the answers it finished, by the index of their item in `work`."""
        process, flags, answers = self._process, self._flags, self._answers
        if process is None or flags is None or answers is None:
            return {}
        self._process = self._flags = self._answers = None
        # The child marks an item done after its answer is whole in the file, and takes no item after it sees
        # "stop": an item done after this read is not counted (its answer is left unread). No lock is needed.
        flags[len(flags) - 1] = 1
        done = {index for index, flag in enumerate(flags[: len(flags) - 1]) if flag == _DONE}
        if process.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGKILL)  # what it still works on is redone by the caller
        process.join()
        flags.close()
        found: dict[int, R] = {}
        try:
            with answers:
                answers.seek(0)
                data = answers.read()
        except OSError:
            return {}
        at = 0
        while at + _HEADER.size <= len(data):
            index, size = _HEADER.unpack_from(data, at)
            at += _HEADER.size
            if index in done and at + size <= len(data):
                found[index] = pickle.loads(data[at : at + size])
            at += size
        return found

    def close(self) -> None:
        """End the child and forget its answers (a run that ended before asking for them)."""
        if self._process is not None:
            self.stop()


def _run_ahead(
    function: Callable[[T], R],
    work: Sequence[T],
    deferred: Callable[[T], bool],
    flags: mmap.mmap,
    answers: IO[bytes],
    young_objects: int,
) -> None:
    stop = len(work)
    with contextlib.suppress(BaseException):
        with contextlib.suppress(OSError):
            os.nice(NICE)
        gc.freeze()  # the caller's objects, out of the collector's sight (as in the lint's workers)
        if young_objects:
            first, *older = gc.get_threshold()
            gc.set_threshold(max(first, young_objects), *older)
        descriptor = answers.fileno()
        for item in _in_order(work, deferred):
            if flags[stop]:
                break
            flags[item] = _TAKEN
            answer = pickle.dumps(function(work[item]), protocol=pickle.HIGHEST_PROTOCOL)
            record = _HEADER.pack(item, len(answer)) + answer
            written = 0
            while written < len(record):
                written += os.write(descriptor, record[written:])
            flags[item] = _DONE  # after its answer is whole in the file
    os._exit(0)  # the parent's state (open files, atexit handlers) is not the child's to finish


def _in_order(work: Sequence[T], deferred: Callable[[T], bool]) -> Iterator[int]:
    """The items' indexes, those `deferred` picks last (each asked once, as the items come)."""
    later: list[int] = []
    for index, item in enumerate(work):
        if deferred(item):
            later.append(index)
        else:
            yield index
    yield from later

"""One half of a job done in a forked child process while the caller does the other half (a run has a core for
each: the project index's launchers and code facts beside its engine fixpoint).

`Beside(work)` forks at once; the child computes `work()` and sends the answer back through a pipe (pickled), and
`result()` waits for it. Where no child can do it (no `fork` on this platform, or the child dies, or `work` raises
there), `result()` computes `work()` in the caller instead: the answer is the same either way, so `work` must not
count on changes to the caller's objects (a child's are its own copies): it returns what it makes.

`Claim()`: a piece of work either side may do, taken once (by whichever side reaches it first, the child near the
end of its half or the caller done early with its own), so that the halves even out whichever is longer. The side
that does not get it skips it; the caller still computes it after `result()` if the child's answer lacks it (a
child that died after taking it).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_FAILED = b"failed"


class Beside(Generic[T]):
    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._receiver: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        if "fork" not in multiprocessing.get_all_start_methods():
            return
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        try:
            process = context.Process(target=_send, args=(work, sender), daemon=True)
            process.start()
        except OSError:  # no process to be had (limits): the caller does the work
            receiver.close()
            sender.close()
            return
        sender.close()
        self._receiver, self._process = receiver, process

    def result(self) -> T:
        """The child's answer; computed here when the child could not give one."""
        receiver, process = self._receiver, self._process
        if receiver is None or process is None:
            return self._work()
        try:
            data: bytes = receiver.recv_bytes()
        except (EOFError, OSError):  # it died before sending
            data = _FAILED
        finally:
            receiver.close()
            process.join()
        if data == _FAILED:
            return self._work()
        answer: T = pickle.loads(data)
        return answer


class Claim:
    def __init__(self) -> None:
        self._taken: Any = None
        if "fork" in multiprocessing.get_all_start_methods():
            # shared with a child forked after; its lock needs the platform's semaphores, and without them (no
            # /dev/shm) each process asks its own flag: both sides may take it, which costs time, never a different
            # answer (the work is the same either side)
            with contextlib.suppress(OSError, ImportError):
                self._taken = multiprocessing.get_context("fork").Value("b", 0)
        self._here = False  # without a shared flag: this process's own

    def take(self) -> bool:
        """True for the first side asking, False for any later ask (in this process, without a shared flag)."""
        taken = self._taken
        if taken is None:
            first, self._here = not self._here, True
            return first
        with taken.get_lock():
            if taken.value:
                return False
            taken.value = 1
            return True


def _send(work: Callable[[], T], sender: Connection) -> None:
    try:
        data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # any failure there is the caller's to redo, never a half answer
        data = _FAILED
    sender.send_bytes(data)
    sender.close()
    os._exit(0)  # the parent's state (open files, atexit handlers) is not the child's to finish

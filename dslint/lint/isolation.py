"""Running the parser where its death is one file's failure, not the run's.

libcst's native parser can abort the process (out of memory: SIGABRT; a native stack overflow: SIGSEGV) on a
file dslint cannot refuse beforehand. Batches of 16 files or more run in worker processes (`dslint.lint.batch`);
a smaller batch, a single file on stdin and each file `dslint fix` rewrites run here in one forked child: its
results come back one by one through a pipe, and when it dies, the item it was working on is the one that
killed it (reported as `Crashed`), and the items after it go on in a new child.

Where `fork` is not available (Windows; macOS defaults to spawn, but has fork) everything runs in-process, as
before.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Crashed:
    """The child died while working on an item: `why` says how ("internal error: ... (SIGABRT)")."""

    why: str


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def run_guarded(function: Callable[..., R], *args: Any) -> R | Crashed:
    """`function(*args)` in a forked child; its exception is raised here, its death is `Crashed`."""
    [outcome] = map_guarded(lambda item: function(*item), [args])
    return outcome


def map_guarded(
    function: Callable[[T], R], work: Sequence[T], progress: Callable[[int], None] | None = None
) -> list[R | Crashed]:
    """`function` over `work` in forked children, in order (see the module's docs)."""
    if not work:
        return []
    if not can_fork():
        done: list[R | Crashed] = []
        for item in work:
            done.append(function(item))
            if progress is not None:
                progress(1)
        return done
    results: list[R | Crashed] = []
    while len(results) < len(work):
        rest = work[len(results) :]
        received, why = _in_child(function, rest, progress)
        results.extend(received)
        if why is not None:
            results.append(Crashed(why))  # the item it died on
            if progress is not None:
                progress(1)
    return results


def _in_child(
    function: Callable[[T], R], work: Sequence[T], progress: Callable[[int], None] | None
) -> tuple[list[R], str | None]:
    """The results the child sent before it ended, and how it died (None when it finished)."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_serve, args=(function, work, sender), daemon=True)
    process.start()
    sender.close()
    results: list[R] = []
    try:
        while len(results) < len(work):
            try:
                kind, value = receiver.recv()
            except EOFError:
                break
            if kind == "raised":
                raise value
            results.append(value)
            if progress is not None:
                progress(1)
    finally:
        receiver.close()
        process.join()
    if len(results) == len(work):
        return results, None
    code = process.exitcode or 0
    how = f" ({_signal_name(-code)})" if code < 0 else f" (exit status {code})" if code else ""
    return results, f"internal error: dslint's parser crashed on this file{how}"


def _serve(function: Callable[[T], R], work: Sequence[T], sender: Connection) -> None:
    for item in work:
        try:
            result = function(item)
        except BaseException as error:  # the caller's exception, raised there
            try:
                sender.send(("raised", error))
            except Exception:  # an exception that does not pickle: its text
                sender.send(("raised", RuntimeError(f"{type(error).__name__}: {error}")))
            break
        sender.send(("done", result))
    sender.close()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

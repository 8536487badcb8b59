"""When the cyclic garbage collector runs during a large run, in one place.

A run over a large project keeps millions of objects alive for its whole length (the project index, the module
summaries and their syntax trees) and makes next to no reference cycles among them: every collection that walks
them frees nothing, and a single full one takes seconds. Objects whose last reference goes are freed by their
reference counts whatever the collector does.

- `paused()`: the collector does not run inside the block (the project index's build).
- `uncollected()`: what is alive inside the block is out of the collector's sight (`gc.freeze`) until the
  outermost such block ends, including what a `paused()` block inside it made: when the collector resumes, that
  goes out of sight at once instead of being walked by the first collection.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_uncollected_depth = 0


@contextlib.contextmanager
def paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if _uncollected_depth:
                gc.freeze()  # what the block made joins the rest out of sight, never walked
            gc.enable()


@contextlib.contextmanager
def uncollected() -> Iterator[None]:
    global _uncollected_depth
    gc.freeze()
    _uncollected_depth += 1
    try:
        yield
    finally:
        _uncollected_depth -= 1
        if not _uncollected_depth:
            gc.unfreeze()

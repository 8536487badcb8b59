"""Which files a result depends on, besides the file being linted: every place the project model reads or looks
for a file says so here, and the result cache (`dslint.lint.cache`) keys a result on those files' states.

Recording is off unless a caller asks (`recording()`): then each `record(path)` is kept, in the order met, and
the caller reads them back. `is_file(path)` is `os.path.isfile` that records the probe (a file that does not exist
today and would change the answer tomorrow is an input as much as one that is read).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

_recorded: list[dict[str, None]] = []  # a stack: nested recordings each see what is read inside them


def record(path: str | os.PathLike[str]) -> None:
    """`path` (a file, or a directory probed for existence) is an input of what is being computed."""
    if _recorded:
        name = os.path.abspath(os.fspath(path))
        for inputs in _recorded:
            inputs[name] = None


def is_file(path: str | os.PathLike[str]) -> bool:
    record(path)
    return os.path.isfile(path)


def exists(path: str | os.PathLike[str]) -> bool:
    record(path)
    return os.path.exists(path)


@contextmanager
def recording() -> Iterator[dict[str, None]]:
    """Collect the inputs recorded inside the block (absolute paths, as the keys of the dict yielded)."""
    inputs: dict[str, None] = {}
    _recorded.append(inputs)
    try:
        yield inputs
    finally:
        del _recorded[next(i for i, held in enumerate(_recorded) if held is inputs)]

"""Which files a result depends on, besides the file being linted: every place the project model reads or looks
for a file says so here, and the result cache (`dslint.lint.cache`) keys a result on those files' states.

Recording is off unless a caller asks (`recording()`): then each `record(path)` is kept, in the order met, and
the caller reads them back. `is_file(path)` is `os.path.isfile` that records the probe (a file that does not exist
today and would change the answer tomorrow is an input as much as one that is read).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dslint.limits import Limits, TooLarge, read_capped
from dslint.project.shell_directories import UNKNOWN_VALUE

_recorded: list[dict[str, None]] = []  # a stack: nested recordings each see what is read inside them


def is_python_script(path: str, data: bytes) -> bool:
    """A Python source: a `.py` file, or a file without a suffix whose first line is a Python shebang
    (`#!/usr/bin/env python3`: a script run as `./train`)."""
    if path.endswith(".py"):
        return True
    if "." in os.path.basename(path) or not data.startswith(b"#!"):
        return False
    first = data[: data.find(b"\n")] if b"\n" in data[:256] else data[:256]
    return b"python" in first


def has_python_shebang(path: str | os.PathLike[str]) -> bool:
    """A file without a suffix that starts with a Python shebang (its first 256 bytes read; unreadable: False)."""
    if "." in os.path.basename(path):
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return is_python_script(os.fspath(path), head)


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


def absolute(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(str(path)))


def shown_path(path: str) -> str:
    """A path as findings show it: relative to the current directory when below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def find_written(
    name: str,
    near: str,
    roots: Sequence[str],
    directory: str = "",
    found: Callable[[Path], bool] | None = None,
    by_name: Callable[[str], bool] | None = None,
) -> str | None:
    """A path written in a launcher: the launcher's directory and its parents up to a checked root, then the
    roots that hold the launcher (launchers are run from the repository root or from their own directory). After a `cd`
    in the launcher (`directory`), the path is read from that directory, itself relative to each of those; after a
    `cd` to an absolute folder of another machine (none of that name here), a relative path is also read as if
    there were no `cd`.
    `found`: what the path must be (default: a file; `os.path.isdir` for a folder). `by_name`: for an absolute path
    of another machine that no tail of two or more parts finds, the project's only file of that base name is it,
    when `by_name` accepts that file (a DeepSpeed config's text: `/nas/me/exp/zero3.json` is the project's one
    `zero3.json`)."""
    found = found or is_file
    if UNKNOWN_VALUE in name:
        return None
    candidate = Path(directory) / name if directory else Path(name)
    if candidate.is_absolute() and found(candidate):
        return absolute(candidate)
    folder = Path(near).parent
    tried: list[Path] = []
    for ancestor in [folder, *folder.parents]:
        tried.append(ancestor)
        if any(absolute(ancestor) == root for root in roots) or exists(ancestor / ".git"):
            break
    # the roots themselves: those holding the launcher (one project's launcher names its own files, not those of
    # another project checked in the same run), or every root for a launcher outside them
    own = [root for root in roots if absolute(near).startswith(root.rstrip(os.sep) + os.sep)]
    tried.extend(Path(root) for root in own or roots)
    # An absolute path of another machine (`$ROOT/run/nv/pretrain.py` with ROOT=/work/<user>/<repo>): the project's
    # own copy, found by the longest tail of two or more parts that the project holds; a file at the filesystem's
    # root (`/acc_zero3.yaml`, `//ds.json`: a prefix left out, or the image's copy of the project's file) is the
    # project's file of that name beside the launcher or at a root.
    parts = candidate.parts[1:] if candidate.is_absolute() else ()
    tails = [Path(*parts[i:]) for i in range(max(len(parts) - 1, 1))] if parts else [candidate]
    if parts and os.path.isabs(directory) and not os.path.isabs(name) and not os.path.isdir(directory):
        # `cd /scratch/<user>/<repo>` then `deepspeed train.py`: a folder of the machine the launcher was written
        # for (none here) is its deployed copy, so the relative path is read as if there were no `cd`
        tails.append(Path(name))
    for tail in tails:
        for base in tried:
            path = base / tail
            if found(path):
                return absolute(path)
    if by_name is not None and len(parts) >= 2:
        named = [path for root in own or roots for path in _files_named(root).get(candidate.name, ())]
        if len(named) == 1 and by_name(named[0]):
            record(named[0])
            return named[0]
    return None


_NAMES: dict[str, dict[str, tuple[str, ...]]] = {}  # a root's files by base name, walked once per project index
# what the base-name search leaves out besides hidden folders: tool and environment folders
_UNWALKED = frozenset({"node_modules", "__pycache__", "site-packages", "venv", ".venv"})


def forget_file_names() -> None:
    """Walk the roots again when next asked (a new project index: files may have come or gone)."""
    global _GENERATION
    _NAMES.clear()
    _GENERATION += 1


def generation() -> int:
    """How many project indexes this process has begun: an answer cached from the project's files is good within
    one (`settings_entries`)."""
    return _GENERATION


_GENERATION = 0


def _files_named(root: str) -> dict[str, tuple[str, ...]]:
    """Every file under `root` by base name (`file_names_under`), walked once per project index; the root itself
    recorded as an input (a file added beside it changes the answer)."""
    key = absolute(root)
    known = _NAMES.get(key)
    if known is None:
        record(key)
        known = _NAMES[key] = file_names_under([key], _UNWALKED)
    return known


def only_file_ending(written: str, roots: Sequence[str]) -> str | None:
    """The one file under `roots` whose path ends as `written` does (`accelerate_ds.yaml` for the project's
    `configs/accelerate_ds.yaml`); None for none or several, or a path going up (`..`)."""
    tail = os.path.normpath(written).lstrip(os.sep)
    if tail.startswith(".."):
        return None
    found = {
        p for root in roots for p in _files_named(root).get(os.path.basename(tail), ()) if p.endswith(os.sep + tail)
    }
    return found.pop() if len(found) == 1 else None


def file_names_under(roots: Sequence[str], skipped: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """Every file under `roots` (absolute paths) by base name (hidden and tool folders skipped)."""
    names: dict[str, list[str]] = {}
    for root in roots:
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if d not in skipped and not d.startswith(".")]
            folder = absolute(directory)  # once per folder, not per file
            for file in files:
                names.setdefault(file, []).append(os.path.join(folder, file))
    return {name: tuple(paths) for name, paths in names.items()}


def read_input(path: str) -> bytes | None:
    """A file's bytes, or None when it cannot be read or is over the default max-file-size (a device such as
    /dev/zero never ends; the file's own lint reports it)."""
    record(path)
    try:
        return read_capped(path, Limits().max_file_size, "max-file-size")
    except (OSError, TooLarge):
        return None

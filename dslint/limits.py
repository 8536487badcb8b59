"""Limits that keep one hostile file from taking a run down: how large a file dslint reads, how deeply nested a
script it hands to its parser, how large a config or pyproject.toml it reads. Settings in `[tool.dslint]`
(`max-file-size`, `max-nesting`, `max-config-size`), shown by `dslint settings`.

Why these defaults (measured with libcst 1.9.0 on CPython 3.11, see benchmarks/hostile_limits.py):
- `max-file-size`: libcst's native parser needs about 700 bytes of memory per byte of source and about half a
  minute per MB (`hostile_limits.py memory`: 0.2 MB 221 MB peak; 1.0 MB 817 MB and 35 s; 3.2 MB 2.3 GB and 124 s;
  50 MB aborts the process). Real training scripts are well under 200 kB; 1 MB keeps the worst case under 1 GB.
- `max-nesting`: the depth of the syntax tree as libcst builds it (`dslint.lint.parse_guard.tree_depth`: each
  operator of an `and` chain and each piece of an implicitly concatenated string counts one level, an element
  of a list or an argument of a call two). CPython refuses most deep files itself (200 nested brackets; chains
  of 5,000). Among those it accepts, an `and` chain or a concatenated string of 5,000-20,000 pieces crashes
  libcst's parser (SIGSEGV), and dslint's own traversal of libcst's tree (Python recursion) gives up first.
  The largest files a whole lint + fix survives (`hostile_limits.py nesting`) have a depth of 271 (lists,
  dicts or calls nested 134 deep) to 324 (unary, `not`, lambda, attribute, subscript, `+`, `and`, `elif`,
  ternary and implicit string chains of 316-320). 200 leaves room for the frames of a caller (an editor,
  pytest).
- `max-config-size`: DeepSpeed configs are a few kB; a config path that is /dev/zero must not be read forever.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

MB = 1024 * 1024
DEFAULT_MAX_FILE_SIZE = 1 * MB
DEFAULT_MAX_NESTING = 200
DEFAULT_MAX_CONFIG_SIZE = 4 * MB
# A notebook file holds its outputs (images, tables) besides its code: the file may be this many times
# max-file-size, which applies to the code cells dslint parses (`dslint.lint.notebook`).
NOTEBOOK_FILE_FACTOR = 64
NOTEBOOK_FILE_SETTING = f"the notebook file limit, {NOTEBOOK_FILE_FACTOR} x max-file-size"


@dataclass(frozen=True)
class Limits:
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes
    max_nesting: int = DEFAULT_MAX_NESTING  # syntax-tree depth
    max_config_size: int = DEFAULT_MAX_CONFIG_SIZE  # bytes

    @property
    def max_notebook_file_size(self) -> int:
        return self.max_file_size * NOTEBOOK_FILE_FACTOR


class TooLarge(Exception):
    """A file over its size limit; the message is the whole reason ("skipped: 2.4 MB over max-file-size ...").
    `dslint check` reports such a file as skipped, not as an error: a limit is a setting, not a failure."""

    @property
    def reason(self) -> str:
        """The message without its "skipped: " (for a line that already says the file was skipped)."""
        return str(self).removeprefix("skipped: ")


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|k|kib|mb|m|mib|gb|g|gib)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "k": 1024, "m": MB, "g": 1024 * MB}


def parse_size(value: object) -> int | None:
    """A size setting: an integer number of bytes, or a string such as "512 kB" or "2MB" (powers of 1024); None
    when `value` is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str) or len(value) > 40:
        return None
    match = _SIZE.match(value)
    if match is None:
        return None
    unit = (match.group(2) or "b").lower()[0]
    size = int(float(match.group(1)) * _UNITS[unit])
    return size if size > 0 else None


def format_size(size: int) -> str:
    if size >= MB:
        return f"{size / MB:.1f} MB"
    if size >= 1024:
        return f"{size / 1024:.1f} kB"
    return f"{size} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "special"


def open_regular(path: str | os.PathLike[str]) -> int:
    """A file descriptor of `path`, opened for reading only once it is known to be a regular file: the open
    itself never blocks (O_NONBLOCK: opening a FIFO with no writer waits forever otherwise), and a path that is
    not a regular file is refused before a byte is read. Raises OSError (IsADirectoryError for a directory, an
    OSError whose strerror says what it is for anything else that is not a regular file)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    handle = os.open(path, flags)
    try:
        mode = os.fstat(handle).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", os.fsdecode(path))
        if not stat.S_ISREG(mode):
            raise OSError(0, f"not a regular file ({_kind(mode)})")
        if hasattr(os, "set_blocking"):
            os.set_blocking(handle, True)
    except BaseException:
        os.close(handle)
        raise
    return handle


def read_capped(path: str | os.PathLike[str], limit: int, setting: str) -> bytes:
    """The bytes of `path`, reading at most `limit` + 1 bytes (a path that is /dev/zero or a pipe never ends, and
    is refused before it is read: `open_regular`). Raises TooLarge over the limit, OSError when it cannot be read
    or is not a regular file (IsADirectoryError, or an OSError whose strerror says what it is)."""
    with os.fdopen(open_regular(path), "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > limit:
            raise TooLarge(f"skipped: {format_size(size)} over {setting} ({format_size(limit)})")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"skipped: over {setting} ({format_size(limit)})")
    return data


def read_small_text(path: str | os.PathLike[str], limit: int = DEFAULT_MAX_CONFIG_SIZE) -> str:
    """A small UTF-8 text file (a .gitignore, a version file), read as `read_capped` does; undecodable bytes are
    replaced. Raises OSError or TooLarge as `read_capped`."""
    return read_capped(path, limit, "the size limit").decode("utf-8", errors="replace")

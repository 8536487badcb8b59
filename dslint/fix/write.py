"""Reading a source file (a script, or a config: `read_text_source`) for fixing and writing it back exactly as it
was stored, but for the fixed text.

What is kept: the encoding (PEP 263 cookie or UTF-8), a UTF-8 byte-order mark, the newline style (text is
never normalised: CRLF stays CRLF), and the file mode. The write is atomic: a temporary file in the same
directory, flushed to disk, then `os.replace` over the original, so a reader sees the old file or the new one,
never half of it.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from dslint.limits import DEFAULT_MAX_CONFIG_SIZE, DEFAULT_MAX_FILE_SIZE, TooLarge, read_capped
from dslint.project.config_access import project_top


class SourceError(Exception):
    """A file that cannot be read as Python source or written back."""


@dataclass(frozen=True)
class SourceFile:
    path: Path
    text: str  # decoded, without the BOM, newlines as stored
    encoding: str  # the codec for `text` (never "utf-8-sig": the BOM is kept apart)
    bom: bool
    mode: int  # permission bits to keep
    original: bytes | None = None  # the bytes read: the file must still hold them when the fix is written

    def encode(self, text: str) -> bytes:
        """`text` as this file stores it: same codec, and the BOM when the original had one."""
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as error:
            raise SourceError(f"the fixed text cannot be encoded as {self.encoding}: {error}") from error
        return (codecs.BOM_UTF8 + data) if self.bom else data


def decode_source(data: bytes) -> tuple[str, str, bool]:
    """(text, encoding, bom) of Python source bytes, as the interpreter would read them."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(str(error)) from error
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8) :]
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"cannot decode as {encoding}: {error}") from error
    return text, encoding, bom


def read_source(path: Path, max_size: int = DEFAULT_MAX_FILE_SIZE) -> SourceFile:
    try:
        data = read_capped(path, max_size, "max-file-size")
        mode = stat.S_IMODE(path.stat().st_mode)
    except TooLarge as error:
        raise SourceError(str(error)) from error
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from error
    text, encoding, bom = decode_source(data)
    return SourceFile(path, text, encoding, bom, mode, data)


def read_text_source(path: Path, max_size: int = DEFAULT_MAX_CONFIG_SIZE) -> SourceFile:
    """A UTF-8 text file (a JSON/HJSON config: no coding cookie applies), its BOM kept apart as in `read_source`."""
    try:
        data = read_capped(path, max_size, "max-config-size")
        mode = stat.S_IMODE(path.stat().st_mode)
    except TooLarge as error:
        raise SourceError(str(error)) from error
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from error
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        text = data[len(codecs.BOM_UTF8) :].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SourceError(f"cannot decode as utf-8: {error}") from error
    return SourceFile(path, text, "utf-8", bom, mode, data)


def write_source(source: SourceFile, text: str, *, outside: bool = False) -> None:
    """Replace the file with `text`, atomically, keeping encoding, BOM and mode (symlinks are written through,
    but only to a file inside the project unless `outside`: `config_access.project_top`). The file is read again
    just before the replace: when it no longer holds the bytes the fix was made from (edited meanwhile), nothing
    is written."""
    data = source.encode(text)
    try:
        target = source.path.resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop
        raise SourceError(f"cannot write: {getattr(error, 'strerror', None) or error}") from error
    if not outside and source.path.is_symlink():
        top = project_top(source.path.absolute().parent)
        if target != top and top not in target.parents:
            raise SourceError(
                f"not written: a symbolic link to a file outside the project ({top}); "
                "pass --write-through-links to write through it"
            )
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".dslint-tmp", dir=target.parent)
    except OSError as error:  # a read-only directory
        raise SourceError(f"cannot write: {error.strerror or error}") from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, source.mode)
        if source.original is not None and _current(target, len(source.original)) != source.original:
            os.unlink(temporary)
            raise SourceError("not written: the file changed while dslint was fixing it; run dslint fix again")
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise SourceError(f"cannot write: {error.strerror or error}") from error


def _current(path: Path, size: int) -> bytes | None:
    """What `path` holds now (at most one byte more than `size`), None when it cannot be read."""
    try:
        return read_capped(path, size, "the size read")
    except (OSError, TooLarge):
        return None

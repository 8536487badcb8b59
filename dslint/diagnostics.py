"""The one data type every rule produces and every reporter, fixer and adapter reads."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    """How bad a finding is; ordered from worst to mildest."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, enum.Enum):
    """Whether a fix can be applied without review (safe) or only with `--unsafe-fixes` (unsafe)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Location:
    """A position in a file: 1-based line, 1-based column (in characters of the decoded line)."""

    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between `start` (inclusive) and `end` (exclusive) with `content`."""

    start: Location
    end: Location
    content: str

    @classmethod
    def insertion(cls, at: Location, content: str) -> Edit:
        return cls(at, at, content)

    @classmethod
    def deletion(cls, start: Location, end: Location) -> Edit:
        return cls(start, end, "")


@dataclass(frozen=True)
class Fix:
    """A set of edits that must be applied together.

    `imports` are the import statements the edited code needs (`"import os"`, `"from torch import nn"`); the
    fixer adds each one once, at the top of the module, unless the module already has it.
    """

    edits: tuple[Edit, ...]
    applicability: Applicability
    message: str
    imports: tuple[str, ...] = ()

    @property
    def is_safe(self) -> bool:
        return self.applicability is Applicability.SAFE


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str, keep: str = "") -> str:
    """`text` with every character that is not printable escaped (`\\n`, `\\x1b`, `\\u202e`, `\\udcff`): what every
    text output does with a file name, and with a finding's or an error's message, so that a hostile name can
    neither start a line of its own (a forged finding, a `::error` workflow command) nor reach the terminal as
    an escape sequence. Printable text, spaces included, is unchanged, and so are the characters of `keep` (the
    github format encodes CR and LF its own way)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else _ESCAPES.get(c) or _escaped(c) for c in text)


def _escaped(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@dataclass(frozen=True)
class Related:
    """Where a fact a finding depends on comes from: a launcher line, a config key, a helper in another module."""

    path: str
    line: int
    column: int
    message: str


@dataclass(frozen=True)
class Diagnostic:
    """One finding in one file; `related` names the places elsewhere that the finding's facts come from."""

    code: str
    slug: str
    message: str
    severity: Severity
    path: str
    start: Location
    end: Location
    fix: Fix | None = field(default=None, compare=False)
    cell: int | None = None  # in a notebook: the 1-based cell number; lines then count within the cell
    related: tuple[Related, ...] = field(default=(), compare=False)

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.start.line, self.start.column, self.code)

    @property
    def where(self) -> str:
        """`path:line:col`, or `path:cell N:line:col` in a notebook (as ruff writes it)."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{printable(self.path)}:{cell}{self.start.line}:{self.start.column}"

    def concise(self) -> str:
        """The flake8-compatible one-line form, with the severity before the message (an info fails a run too,
        unless `--fail-on` says otherwise): `path:line:col: CODE [severity] message` (`printable`: one line,
        always)."""
        return f"{self.where}: {self.code} [{self.severity.value}] {printable(self.message)}"

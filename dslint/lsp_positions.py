"""LSP positions in the negotiated encoding, and the language server's own copy of each open document.

An LSP position is a 0-based line and a 0-based offset in that line counted in the code units of the encoding the
client and server agreed on at `initialize` (`positionEncoding`: "utf-8", "utf-16" - the default - or "utf-32").
dslint's `Location` is a 1-based line and a 1-based column in code points. Every position the server sends
(diagnostic ranges, code action edits) and reads (incremental `didChange` ranges) goes through `PositionCodec`.

Lines are counted as LSP and Python's tokenizer count them: only CR, LF and CRLF end a line (`str.splitlines`
also breaks at form feeds, U+2028 and others, which would shift every line after them).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.protocol.language_server import LanguageServerProtocol, lsp_method

from dslint.diagnostics import Location

LINE_BREAK = re.compile(r"\r\n|\r|\n")
ENCODINGS = ("utf-8", "utf-16", "utf-32")


def lsp_lines(text: str) -> list[str]:
    """The lines of `text` without their endings; a final line break starts no further line."""
    parts = LINE_BREAK.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def _units(character: str, encoding: str) -> int:
    point = ord(character)
    if encoding == "utf-8":
        return 1 if point < 0x80 else 2 if point < 0x800 else 3 if point < 0x10000 else 4
    if encoding == "utf-16":
        return 2 if point > 0xFFFF else 1
    return 1


@dataclass(frozen=True)
class PositionCodec:
    """Converts between code-point columns and the negotiated code units (unknown encodings: UTF-16)."""

    encoding: str = "utf-16"

    @classmethod
    def negotiated(cls, encoding: str | None) -> PositionCodec:
        return cls(encoding if encoding in ENCODINGS else "utf-16")

    def units(self, text: str) -> int:
        """The length of `text` in code units."""
        if self.encoding == "utf-32" or text.isascii():
            return len(text)
        if self.encoding == "utf-8":
            return len(text.encode("utf-8", "surrogatepass"))
        return sum(_units(c, "utf-16") for c in text)

    def column_to_units(self, line: str, column: int) -> int:
        """The code-unit offset of the 0-based code point `column` of `line` (past the end: counted as ASCII)."""
        return self.units(line[:column]) + max(column - len(line), 0)

    def units_to_column(self, line: str, units: int) -> int:
        """The 0-based code point at code-unit offset `units` of `line`: an offset inside a character means that
        character; past the end of the line, the end of the line (as the LSP specification says)."""
        if self.encoding == "utf-32" or line.isascii():
            return min(units, len(line))
        seen = 0
        for index, character in enumerate(line):
            width = _units(character, self.encoding)
            if seen + width > units:
                return index
            seen += width
        return len(line)

    def to_position(self, lines: Sequence[str], location: Location) -> types.Position:
        line = location.line - 1
        if line >= len(lines):
            return types.Position(line=len(lines), character=0)
        return types.Position(line=line, character=self.column_to_units(lines[line], location.column - 1))

    def to_range(self, lines: Sequence[str], start: Location, end: Location) -> types.Range:
        return types.Range(start=self.to_position(lines, start), end=self.to_position(lines, end))

    def end_of(self, text: str) -> types.Position:
        """The position just after the last character of `text`."""
        lines = lsp_lines(text)
        if not lines or text.endswith(("\n", "\r")):
            return types.Position(line=len(lines), character=0)
        return types.Position(line=len(lines) - 1, character=self.units(lines[-1]))

    def offset(self, text: str, position: types.Position) -> int:
        """The index into `text` of `position` (a line past the end: the end of the text)."""
        starts = [0]
        for match in LINE_BREAK.finditer(text):
            starts.append(match.end())
        if position.line >= len(starts):
            return len(text)
        start = starts[position.line]
        line = LINE_BREAK.split(text[start:], maxsplit=1)[0]
        return start + self.units_to_column(line, position.character)

    def apply_change(self, text: str, change: types.TextDocumentContentChangeEvent) -> str:
        """`text` after one `didChange` content change (a range in this encoding, or the whole text)."""
        if not isinstance(change, types.TextDocumentContentChangePartial):
            return change.text
        start = self.offset(text, change.range.start)
        end = max(self.offset(text, change.range.end), start)
        return text[:start] + change.text + text[end:]


class OwnDocumentsProtocol(LanguageServerProtocol):
    """pygls's protocol, except that `didChange` leaves the changes to the server's handler untouched.

    pygls applies each change to its own copy first, splitting lines with `str.splitlines` (which also breaks
    at form feeds and U+2028) and clamping a position it finds past the end of such a line by assigning to the
    params' `character`: the server's handler then received altered ranges, and a file with a form feed above
    the edit was corrupted. The server applies the changes itself (`PositionCodec.apply_change`) and puts the
    result back into pygls's workspace."""

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

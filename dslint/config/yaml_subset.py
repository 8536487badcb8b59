"""The part of YAML that accelerate's config files are written in, read into the positioned tree of
`dslint.config.tree` (so that a finding points at the key, line and column, in the YAML file).

accelerate writes its configs with `yaml.safe_dump` and reads them with `yaml.safe_load` (YAML 1.1): block
mappings, one `key: value` a line, nested mappings indented under a bare `key:`, block sequences (`- item`), empty
flow collections (`{}`, `[]`), plain and quoted scalars, comments. That is what this reader reads; anything else
(a multi-line or block scalar, a flow collection with content, an anchor or alias, a tag, a second document) is
kept as an opaque value where it stands (its key is still known; its value is UNKNOWN), and a line that is none
of these raises ParseError with its position. dslint does not depend on PyYAML at lint time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dslint.config.tree import UNKNOWN, Array, Entry, Node, Object, ParseError, Scalar
from dslint.diagnostics import Location

_KEY = re.compile(r"""(?P<key>"[^"\n]*"|'[^'\n]*'|[^\s#'"\-?:,\[\]{}&*!|>%@`][^:#]*?)\s*:(?:\s+|$)""")
# YAML 1.1 as PyYAML's safe_load resolves plain scalars (booleans include yes/no/on/off).
_TRUE = frozenset({"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?")
_SPECIAL_FLOAT = {".inf": float("inf"), "+.inf": float("inf"), "-.inf": float("-inf"), ".nan": float("nan")}
# Other YAML 1.1 integers (octal, hexadecimal, binary, base 60): kept unread.
_OTHER_INT = re.compile(r"[-+]?(?:0[0-9_]+|0x[0-9a-fA-F_]+|0b[01_]+|[1-9][0-9_]*(?::[0-5]?[0-9])+)")


@dataclass
class _Line:
    number: int
    indent: int
    text: str  # without indentation and trailing comment


def parse_yaml_subset(text: str) -> Object:
    """The top-level mapping of `text`; ParseError (message, line, column) for a line it cannot place."""
    lines = _significant_lines(text)
    root = Object(Location(1, 1), Location(1, 1))
    if not lines:
        return root
    position = _Mapping(lines, 0, root, lines[0].indent).read()
    if position < len(lines):
        line = lines[position]
        raise ParseError("this line is not inside the mapping above it", line.number, line.indent + 1)
    root.end = Location(lines[-1].number, lines[-1].indent + len(lines[-1].text) + 1)
    return root


def _significant_lines(text: str) -> list[_Line]:
    found: list[_Line] = []
    for number, raw in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        stripped = raw.rstrip()
        content = stripped.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        if content.startswith("\t") or (stripped[: len(stripped) - len(content)].count("\t")):
            raise ParseError("a tab in the indentation (YAML does not allow it)", number, 1)
        if content in ("---", "...") or content.startswith(("--- ", "%")):
            if found:  # a second document, or the end of the first: accelerate reads the first only
                break
            continue
        found.append(_Line(number, len(stripped) - len(content), _without_comment(content)))
    return found


def _without_comment(content: str) -> str:
    """`content` less a trailing ` # comment` outside quotes."""
    quote = ""
    for index, char in enumerate(content):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"" and (index == 0 or content[index - 1] in " :-[{,"):
            quote = char
        elif char == "#" and index > 0 and content[index - 1] in " \t":
            return content[:index].rstrip()
    return content


class _Mapping:
    """A block mapping whose keys stand at `indent`, read from `lines[start]` into `node`."""

    def __init__(self, lines: list[_Line], start: int, node: Object, indent: int) -> None:
        self.lines, self.position, self.node, self.indent = lines, start, node, indent

    def read(self) -> int:
        while self.position < len(self.lines):
            line = self.lines[self.position]
            if line.indent < self.indent:
                break
            if line.indent > self.indent:
                raise ParseError("unexpected indentation", line.number, line.indent + 1)
            match = _KEY.match(line.text)
            if match is None:
                raise ParseError("expected `key: value`", line.number, line.indent + 1)
            key = match.group("key")
            key_start = Location(line.number, line.indent + 1)
            key_end = Location(line.number, line.indent + len(key) + 1)
            if key[0] in "'\"":
                key = key[1:-1]
            rest = line.text[match.end() :]
            value_start = Location(line.number, line.indent + match.end() + 1)
            self.position += 1
            value = self._value(rest, value_start, line)
            self.node.entries.append(Entry(key, key_start, key_end, value))
            self.node.end = value.end
        return self.position

    def _value(self, rest: str, start: Location, line: _Line) -> Node:
        following = self.lines[self.position] if self.position < len(self.lines) else None
        if rest:
            node = _scalar(rest, start)
            # A plain scalar continued on the next, deeper lines: its value is not read.
            while following is not None and following.indent > self.indent:
                node = Scalar(start, Location(following.number, following.indent + len(following.text) + 1), UNKNOWN)
                self.position += 1
                following = self.lines[self.position] if self.position < len(self.lines) else None
            return node
        if following is None:
            return Scalar(start, start, None)
        if following.text.startswith("- ") or following.text == "-":
            if following.indent < self.indent:
                return Scalar(start, start, None)
            return self._sequence(following.indent)
        if following.indent > self.indent:
            child = Object(Location(following.number, following.indent + 1), start)
            self.position = _Mapping(self.lines, self.position, child, following.indent).read()
            return child
        return Scalar(start, start, None)

    def _sequence(self, indent: int) -> Array:
        first = self.lines[self.position]
        array = Array(Location(first.number, first.indent + 1), Location(first.number, first.indent + 1))
        while self.position < len(self.lines):
            line = self.lines[self.position]
            if line.indent != indent or not (line.text.startswith("- ") or line.text == "-"):
                if line.indent > indent:  # a nested item's own block: not read
                    self.position += 1
                    continue
                break
            item = line.text[2:].strip()
            start = Location(line.number, line.indent + 3)
            node = _scalar(item, start) if item and not _KEY.match(item) else Scalar(start, start, UNKNOWN)
            array.items.append(node)
            array.end = node.end
            self.position += 1
        return array


def _scalar(text: str, start: Location) -> Scalar:
    end = Location(start.line, start.column + len(text))
    if text[0] in "'\"":
        if len(text) >= 2 and text[-1] == text[0]:
            inner = text[1:-1]
            if text[0] == '"' and "\\" in inner:
                return Scalar(start, end, UNKNOWN)  # escapes: not read
            return Scalar(start, end, inner.replace("''", "'") if text[0] == "'" else inner)
        return Scalar(start, end, UNKNOWN)  # a quoted scalar over several lines
    if text in ("{}", "[]"):
        return Scalar(start, end, {} if text == "{}" else [])
    if text[0] in "{[&*!|>":
        return Scalar(start, end, UNKNOWN)  # a flow collection, anchor, alias, tag or block scalar: not read
    if text in _NULL:
        return Scalar(start, end, None)
    if text in _TRUE or text in _FALSE:
        return Scalar(start, end, text in _TRUE)
    if _INT.fullmatch(text):
        return Scalar(start, end, int(text.replace("_", "")))
    if text.lower() in _SPECIAL_FLOAT:
        return Scalar(start, end, _SPECIAL_FLOAT[text.lower()])
    if _FLOAT.fullmatch(text) and any(c.isdigit() for c in text):
        return Scalar(start, end, float(text.replace("_", "")))
    if _OTHER_INT.fullmatch(text):
        return Scalar(start, end, UNKNOWN)
    return Scalar(start, end, text)

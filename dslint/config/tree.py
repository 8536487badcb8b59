"""A DeepSpeed config as a tree of positioned nodes, read from JSON/HJSON text or from a Python dict literal.

Every node knows where it starts and ends, every object entry where its key is, so a finding points at the key
(in a JSON file or in the script that holds the dict). Objects keep all entries in order, duplicates included;
`get` returns the last one, as `json.loads` and a Python dict literal do.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dslint.diagnostics import Location


class _Unknown:
    """A value that cannot be known without running the script (shared with the script config link)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass
class Node:
    start: Location
    end: Location


@dataclass
class Scalar(Node):
    value: Any  # str, int, float, bool, None, or UNKNOWN
    # Where a value a script writes from its command line comes from: the launches that give it
    # (`cfg["gradient_accumulation_steps"] = args.gas` under `deepspeed train.py --gas 8`).
    via: tuple[Any, ...] = field(default=(), compare=False)


@dataclass
class Array(Node):
    items: list[Node] = field(default_factory=list)


@dataclass
class Entry:
    key: str
    key_start: Location
    key_end: Location
    value: Node
    # The file the key and its value are written in, when not the config's own: a key a script writes into a
    # config it loads from a file (`cfg["zero_optimization"]["mics_shard_size"] = n`); a finding there is the
    # script's.
    source: str | None = None


@dataclass
class Object(Node):
    entries: list[Entry] = field(default_factory=list)
    opaque: bool = False  # `**other` in a dict literal: keys may exist that we cannot see
    # Opaque, but the entries shown were written into it by the script (`cfg["fp16"]["enabled"] = True` on a dict
    # of unknown content): they are there, and sections are checked for them.
    written: bool = False

    def entry(self, key: str) -> Entry | None:
        found = None
        for entry in self.entries:
            if entry.key == key:
                found = entry
        return found

    def get(self, key: str) -> Node | None:
        entry = self.entry(key)
        return entry.value if entry is not None else None

    def keys(self) -> list[str]:
        return list(dict.fromkeys(e.key for e in self.entries))

    def last_entries(self) -> Iterator[Entry]:
        """The entries that count (the last of each key), in order."""
        last = {e.key: e for e in self.entries}
        return (e for e in self.entries if last[e.key] is e)


def to_python(node: Node) -> Any:
    if isinstance(node, Object):
        if node.opaque:
            return UNKNOWN
        return {e.key: to_python(e.value) for e in node.last_entries()}
    if isinstance(node, Array):
        return [to_python(i) for i in node.items]
    assert isinstance(node, Scalar)
    return node.value


def node_at(node: Node | None, *keys: str) -> Node | None:
    for key in keys:
        if not isinstance(node, Object):
            return None
        node = node.get(key)
    return node


def scalar(node: Node | None) -> Any:
    """The value of a scalar node; None when absent, UNKNOWN for anything else."""
    if node is None:
        return None
    if isinstance(node, Scalar):
        return node.value
    return UNKNOWN


class ParseError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


_WHITESPACE = " \t\r\n\ufeff"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NUMBER_CHARS = set("+-0123456789.eE")
_MAX_DEPTH = 200


class _Reader:
    """JSON with what hjson (DeepSpeed's reader) also accepts around it: comments, trailing commas, and a line
    break instead of a comma between members."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0

    def here(self) -> Location:
        return Location(self.line, self.pos - self.line_start + 1)

    def fail(self, message: str) -> ParseError:
        where = self.here()
        return ParseError(message, where.line, where.column)

    def advance(self, count: int = 1) -> None:
        for _ in range(count):
            if self.pos < len(self.text) and self.text[self.pos] == "\n":
                self.line += 1
                self.line_start = self.pos + 1
            self.pos += 1

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in _WHITESPACE:
                self.advance()
            elif char == "#" or text.startswith("//", self.pos):
                while self.pos < len(text) and text[self.pos] != "\n":
                    self.advance()
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.advance(end + 2 - self.pos)
            else:
                return

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def document(self) -> Node:
        self.skip()
        if not self.peek():
            raise self.fail("the file is empty")
        node = self.value(0)
        self.skip()
        if self.pos < len(self.text):
            raise self.fail(f"unexpected {self.peek()!r} after the end of the document")
        return node

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail("nested too deeply")
        char = self.peek()
        start = self.here()
        if char == "{":
            return self.obj(depth)
        if char == "[":
            return self.array(depth)
        if char == '"':
            text = self.string()
            return Scalar(start, self.here(), text)
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.advance(len(word))
                return Scalar(start, self.here(), value)
        for word, number in (("NaN", math.nan), ("Infinity", math.inf), ("-Infinity", -math.inf)):
            if self.text.startswith(word, self.pos):
                self.advance(len(word))
                return Scalar(start, self.here(), number)
        if char and char in _NUMBER_CHARS:
            return self.number()
        if char.isalpha() or char == "_":
            return self.placeholder()
        if not char:
            raise self.fail("unexpected end of file")
        raise self.fail(f"unexpected {char!r}")

    def placeholder(self) -> Scalar:
        """A bare name such as `CONFIG_BATCH_SIZE`: a template placeholder that a script substitutes (sed) before
        DeepSpeed reads the file. Its value is unknown; rules stay silent on it."""
        start = self.here()
        while self.peek() and (self.peek().isalnum() or self.peek() == "_"):
            self.advance()
        return Scalar(start, self.here(), UNKNOWN)

    def number(self) -> Scalar:
        start = self.here()
        begin = self.pos
        while self.peek() and self.peek() in _NUMBER_CHARS:
            self.advance()
        raw = self.text[begin : self.pos]
        try:
            value: Any = float(raw) if any(c in raw for c in ".eE") else int(raw)
        except ValueError:
            raise ParseError(f"invalid number {raw!r}", start.line, start.column) from None
        return Scalar(start, self.here(), value)

    def string(self) -> str:
        self.advance()  # opening quote
        parts: list[str] = []
        while True:
            char = self.peek()
            if not char:
                raise self.fail("unterminated string")
            if char == '"':
                self.advance()
                return "".join(parts)
            if char == "\n":
                raise self.fail("unterminated string")
            if char == "\\":
                self.advance()
                escape = self.peek()
                if escape == "u":
                    digits = self.text[self.pos + 1 : self.pos + 5]
                    try:
                        code = int(digits, 16)
                    except ValueError:
                        raise self.fail("invalid \\u escape") from None
                    self.advance(5)
                    low = self.text[self.pos + 2 : self.pos + 6]
                    if 0xD800 <= code < 0xDC00 and self.text.startswith("\\u", self.pos):
                        try:
                            second = int(low, 16)
                        except ValueError:
                            second = 0
                        if 0xDC00 <= second < 0xE000:  # a surrogate pair: one character
                            code = 0x10000 + ((code - 0xD800) << 10) + (second - 0xDC00)
                            self.advance(6)
                    parts.append(chr(code))
                    continue
                if escape not in _ESCAPES:
                    raise self.fail(f"invalid escape \\{escape}")
                parts.append(_ESCAPES[escape])
                self.advance()
                continue
            parts.append(char)
            self.advance()

    def obj(self, depth: int) -> Object:
        start = self.here()
        self.advance()
        entries: list[Entry] = []
        while True:
            self.skip()
            if self.peek() == "}":
                self.advance()
                return Object(start, self.here(), entries)
            if self.peek() != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.here()
            key = self.string()
            key_end = self.here()
            self.skip()
            if self.peek() != ":":
                raise self.fail(f"expected ':' after key {key!r}")
            self.advance()
            self.skip()
            value = self.value(depth + 1)
            entries.append(Entry(key, key_start, key_end, value))
            line = self.line
            self.skip()
            if self.peek() == ",":
                self.advance()
            elif self.peek() != "}" and (self.line == line or self.peek() != '"'):
                raise self.fail("expected ',' or '}' (a comma is missing?)")

    def array(self, depth: int) -> Array:
        start = self.here()
        self.advance()
        items: list[Node] = []
        while True:
            self.skip()
            if self.peek() == "]":
                self.advance()
                return Array(start, self.here(), items)
            items.append(self.value(depth + 1))
            line = self.line
            self.skip()
            if self.peek() == ",":
                self.advance()
            elif self.peek() != "]" and self.line == line:
                raise self.fail("expected ',' or ']' (a comma is missing?)")


# The first line of a file Git LFS keeps out of the repository: the checkout holds this pointer, not the file
LFS_POINTER = "version https://git-lfs.github.com/spec/"


def parse_text(text: str, *, hjson: bool = True) -> Node:
    """Parse JSON (with comments and trailing commas); falls back to HJSON, whose positions are approximate
    (`hjson=False`: JSON only, as for a config pasted into a document)."""
    try:
        return _Reader(text).document()
    except ParseError as error:
        tree = _parse_hjson(text) if hjson else None
        if tree is None:
            raise error from None
        return tree


def _parse_hjson(text: str) -> Node | None:
    try:
        import hjson  # type: ignore[import-untyped]
    except ImportError:
        return None
    pairs_seen: list[list[tuple[str, Any]]] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        pairs_seen.append(pairs)
        return dict(pairs)

    try:
        loaded = hjson.loads(text, object_pairs_hook=hook)
    except Exception:
        return None
    return _from_loaded(loaded, text)


def _from_loaded(value: Any, text: str) -> Node:
    """A tree for a value whose positions we do not know: keys point at their first occurrence in the text."""
    origin = Location(1, 1)
    if isinstance(value, dict):
        entries = []
        for key, inner in value.items():
            at = _find_key(text, key)
            entries.append(Entry(key, at, at, _from_loaded(inner, text)))
        return Object(origin, origin, entries)
    if isinstance(value, list):
        return Array(origin, origin, [_from_loaded(v, text) for v in value])
    return Scalar(origin, origin, value)


def _find_key(text: str, key: str) -> Location:
    index = text.find(key)
    if index < 0:
        return Location(1, 1)
    line = text.count("\n", 0, index) + 1
    return Location(line, index - (text.rfind("\n", 0, index) + 1) + 1)

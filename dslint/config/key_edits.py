"""Text edits on a DeepSpeed config at the positions its tree records: rename a key, remove an entry.

The edits change only the characters of the key or the entry (and the one comma that separated it), so the file
keeps its formatting, its comments (JSON with comments, HJSON) and its key order; nothing is re-serialised. The
same edits work on a dict literal in a script, whose tree points into the script. Each builder returns None when
the text at the recorded position is not what the tree says it is (a tree read by the HJSON fallback has no exact
positions) or when the edit could not keep the surrounding text intact: then the finding gets no fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from dslint.config.tree import Entry, Object
from dslint.diagnostics import Edit, Location

_BLANK = " \t"


class _Text:
    """Offsets <-> (line, column) locations of one text, as the config reader and libcst count them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for index, char in enumerate(text):
            if char == "\n":
                self.starts.append(index + 1)

    def offset(self, location: Location) -> int | None:
        if not 1 <= location.line <= len(self.starts):
            return None
        offset = self.starts[location.line - 1] + location.column - 1
        return offset if 0 <= offset <= len(self.text) else None

    def location(self, offset: int) -> Location:
        line = 0
        low, high = 0, len(self.starts) - 1
        while low <= high:  # the last line start at or before `offset`
            middle = (low + high) // 2
            if self.starts[middle] <= offset:
                line, low = middle, middle + 1
            else:
                high = middle - 1
        return Location(line + 1, offset - self.starts[line] + 1)

    def deletion(self, start: int, end: int) -> Edit:
        return Edit.deletion(self.location(start), self.location(end))


def _key_span(text: _Text, entry: Entry) -> tuple[int, int] | None:
    """The offsets of the entry's key, when the text there is exactly the key in plain double or single quotes
    (no escapes, no string prefix): the only form whose characters a rename may replace one for one."""
    start, end = text.offset(entry.key_start), text.offset(entry.key_end)
    if start is None or end is None:
        return None
    if text.text[start:end] not in (f'"{entry.key}"', f"'{entry.key}'"):
        return None
    return start, end


def single_close_match(
    key: str, candidates: Iterable[str], canonical: Callable[[str], str] | None = None
) -> str | None:
    """The one known key that `key` is a misspelling of, compared as `did_you_mean` compares (without case, `-` as
    `_`); None when there is none, or more than one near enough to be meant. `canonical` names the setting a
    spelling stands for (a field's name and its alias are one setting): two spellings of one setting are one
    match, and the closest spelling is returned."""

    def norm(text: str) -> str:
        return text.lower().replace("-", "_")

    same = canonical or (lambda spelling: spelling)
    by_norm: dict[str, list[str]] = {}
    for candidate in candidates:
        by_norm.setdefault(norm(candidate), []).append(candidate)
    exact = by_norm.get(norm(key))
    if exact is not None:
        return exact[0] if len({same(c) for c in exact}) == 1 else None
    close = difflib.get_close_matches(norm(key), list(by_norm), n=len(by_norm), cutoff=0.8)
    settings = {same(spelling) for match in close for spelling in by_norm[match]}
    if len(settings) != 1:
        return None
    return by_norm[close[0]][0]


def rename_key(source: str, entry: Entry, new_key: str) -> Edit | None:
    """Replace the key's characters between its quotes by `new_key` (a plain identifier-like key)."""
    if not new_key or any(char in new_key for char in "\"'\\\n"):
        return None
    text = _Text(source)
    span = _key_span(text, entry)
    if span is None:
        return None
    start, end = span
    return Edit(text.location(start + 1), text.location(end - 1), new_key)


def remove_entry(source: str, parent: Object, entry: Entry) -> tuple[Edit, ...] | None:
    """Delete `entry` from `parent` with the comma that separated it.

    An entry on lines of its own loses those whole lines (with a comment after its comma on its last line);
    comments on other lines stay. When it was the last entry, the comma before it goes too, so strict JSON stays
    strict. An entry that shares its line with others is cut out with one adjacent comma, but only when nothing
    but blanks and that comma lies between it and its neighbour (no comment is ever deleted that way)."""
    text = _Text(source)
    index = next((i for i, e in enumerate(parent.entries) if e is entry), None)
    span = _key_span(text, entry)
    value_end = text.offset(entry.value.end)
    if index is None or span is None or value_end is None or value_end <= span[1]:
        return None
    raw = text.text
    key_start = span[0]
    previous = parent.entries[index - 1] if index > 0 else None
    following = parent.entries[index + 1] if index + 1 < len(parent.entries) else None

    after = _skip_blanks(raw, value_end)
    has_comma = after < len(raw) and raw[after] == ","
    if has_comma:
        after = _skip_blanks(raw, after + 1)
    if raw.startswith(("//", "#"), after):
        after = _line_end(raw, after)
    line_start = raw.rfind("\n", 0, key_start) + 1
    own_lines = raw[line_start:key_start].strip(_BLANK) == "" and (after == len(raw) or raw[after] in "\r\n")
    if own_lines:
        end = after + 2 if raw.startswith("\r\n", after) else after + 1 if raw.startswith("\n", after) else after
        edits = [text.deletion(line_start, end)]
        if following is None and not has_comma and previous is not None:
            comma = _comma_after(raw, previous, text)
            if comma is not None and comma < line_start:
                edits.append(text.deletion(comma, comma + 1))
        return tuple(edits)
    if previous is not None:
        previous_end = text.offset(previous.value.end)
        if previous_end is None or raw[previous_end:key_start].strip(" \t\r\n") != ",":
            return None
        return (text.deletion(previous_end, value_end),)
    if following is not None:
        next_start = text.offset(following.key_start)
        if next_start is None or raw[value_end:next_start].strip(" \t\r\n") != ",":
            return None
        return (text.deletion(key_start, next_start),)
    end = _skip_blanks(raw, value_end)
    if end < len(raw) and raw[end] == ",":
        return (text.deletion(key_start, end + 1),)
    return (text.deletion(key_start, value_end),)


def _skip_blanks(raw: str, offset: int) -> int:
    while offset < len(raw) and raw[offset] in _BLANK:
        offset += 1
    return offset


def _line_end(raw: str, offset: int) -> int:
    end = raw.find("\n", offset)
    if end < 0:
        return len(raw)
    return end - 1 if end > offset and raw[end - 1] == "\r" else end


def _comma_after(raw: str, entry: Entry, text: _Text) -> int | None:
    """The offset of the comma that follows `entry`'s value, past blanks, line breaks and comments."""
    offset = text.offset(entry.value.end)
    if offset is None:
        return None
    while offset < len(raw):
        char = raw[offset]
        if char in " \t\r\n":
            offset += 1
        elif raw.startswith(("//", "#"), offset):
            offset = _line_end(raw, offset)
        elif raw.startswith("/*", offset):
            close = raw.find("*/", offset + 2)
            if close < 0:
                return None
            offset = close + 2
        else:
            return offset if char == "," else None
    return None

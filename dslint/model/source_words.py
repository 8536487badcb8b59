"""Which project sources hold a name, from one pass over every source instead of one per name.

The fixpoint asks, for each name it follows, which files hold `name(` (a text test before parsing them); the
class hierarchy asks which files write a name in a `class` statement's bases or import it under another name.
Scanning every source per name makes a project's whole-tree passes grow with (names x files): on a tree of
thousands of files, minutes. Each index here is built on its first question, by one regular-expression pass per
source, and answers exactly what the scan per name answered (same files, in the sources' order):

- `calling(name)`: the files holding the bytes `name(`, i.e. a maximal run of word characters that ends with
  `name` right before a `(` (the run may be longer: `build_name(` holds `name(`);
- `class_word(name)`: the files where `name` is a whole word inside the parentheses of a `class X(...)` statement
  (up to its first `)`), or a whole word before `as WORD` (`import Name as Other`);
- `importing(word)`: the files where `word` is a whole word of a line starting with `from` or `import`
  (`from train import main`, `import pkg.train as t`);
- `aliases(name)`: the words an import line renames `name` to (`from train import main as run_train`).

Both test ASCII word characters, as the patterns they replace did; a name with other characters is answered by
the scan (`None`: the caller scans).

The passes are written so that `re` can skip ahead in C instead of trying its pattern at every byte (which cost
seconds on a large tree): each pattern searched through whole sources leads with a literal. The words before `(`
are read from the reversed source, where `(` leads (`_CALLED`); a pattern anchored at a line start (`^`) is
searched from the newline before the line (`_AtLineStart`); `as` leads the search for the words before `as WORD`
(`_renamed`). The import lines are found once for both `importing` and `aliases`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator

# A maximal run of word characters right before a `(`, read in the reversed source (`(` first, the run reversed):
# the same runs as `\b(\w+)\(` in the source, which tries a word at every position
_CALLED = re.compile(rb"\((\w+)")
_WORD = re.compile(rb"\w+")
# `as` between white space and a word: the literal `as` leads the pattern, so the engine skips to each `as`
# instead of trying a word at every position (the word before it is found backwards: `_renamed`)
_AS = re.compile(rb"as(?=\s+\w)")
_IMPORT_ALIAS = re.compile(rb"\b(\w+)\s+as\s+(\w+)")
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SPACE_BYTES = frozenset(b" \t\n\r\f\v")


class _AtLineStart:
    """The pattern `^BODY` under re.MULTILINE, searched for as `\\nBODY` (and BODY at the source's start): a
    leading literal lets `re` skip from newline to newline, where `^` is tried at every position. `findall` gives
    what `re.compile(b"^" + BODY, re.MULTILINE).findall` gives (BODY holding one group, never matching empty)."""

    def __init__(self, body: bytes) -> None:
        self.first = re.compile(body)
        self.after_newline = re.compile(b"\n" + body)

    def findall(self, data: bytes) -> list[bytes]:
        found: list[bytes] = []
        end = 0
        match = self.first.match(data)
        if match is not None:
            found.append(match.group(1))
            end = match.end()
        # findall goes on where the last match ended: a line start there, or after, is a newline at `end - 1` or
        # after (a match spanning lines may end right after a newline)
        while (match := self.after_newline.search(data, max(end - 1, 0))) is not None:
            found.append(match.group(1))
            end = match.end()
        return found


_DEF = re.compile(rb"def[ \t]+(\w+)[ \t]*\(")


def _definitions(data: bytes) -> list[tuple[bytes, bool]]:
    """`def NAME(` at a line's start (after `async `: False) or after indentation (True); any other `def` (in a
    comment, a string) is read as indented: it only ever makes the callers' search wider."""
    found: list[tuple[bytes, bool]] = []
    for match in _DEF.finditer(data):
        start = match.start()
        line = data.rfind(b"\n", 0, start) + 1
        prefix = data[line:start]
        if prefix.startswith(b"async"):
            prefix = prefix[5:].lstrip(b" \t") if prefix[5:6] in (b" ", b"\t") else b"x"
        if start > 0 and data[start - 1 : start] not in (b"\n", b" ", b"\t") and prefix:
            continue  # `undef(`, `_def x(`: not the keyword
        found.append((match.group(1), bool(prefix)))
    return found


_CLASS_BASES = _AtLineStart(rb"[ \t]*class\s+\w+\s*\(([^)]*)")
_IMPORT_LINE = _AtLineStart(rb"([ \t]*(?:from|import)\b[^\n]*)")
_PARENTHESIZED_IMPORT = _AtLineStart(rb"[ \t]*from\s+[\w.]+\s+import\s*\(([^)]*)\)")


class SourceWords:
    def __init__(self, sources: dict[str, bytes]) -> None:
        self.sources = sources
        self._order: dict[str, int] | None = None
        # the words before `(`, reversed (a suffix is a prefix range of them, sorted) -> the files (by order)
        self._called: dict[bytes, list[int]] | None = None
        self._reversed: list[bytes] = []  # those reversed words, sorted
        self._class_words: dict[bytes, list[int]] | None = None
        self._import_words: dict[bytes, list[int]] | None = None
        self._aliases: dict[bytes, set[bytes]] = {}
        self._definitions: dict[bytes, tuple[list[int], bool]] | None = None
        self._paths: list[str] = []

    def _number(self) -> None:
        if self._order is None:
            self._paths = list(self.sources)
            self._order = {path: i for i, path in enumerate(self._paths)}

    def _index(self, words_of: Callable[[bytes], set[bytes]]) -> dict[bytes, list[int]]:
        """word -> the sources (by their order) whose `words_of` holds it: one pass over every source."""
        self._number()
        index: dict[bytes, list[int]] = {}
        for number, data in enumerate(self.sources.values()):
            for word in words_of(data):
                index.setdefault(word, []).append(number)
        return index

    def calling(self, name: str) -> list[str] | None:
        """The sources holding `name(` as bytes, in the sources' order (None: not an ASCII name, scan)."""
        if not name.isascii() or not name.isidentifier():
            return None
        if self._called is None:
            self._called = self._index(lambda data: set(_CALLED.findall(data[::-1])) if b"(" in data else set())
            self._reversed = sorted(self._called)
        needle = name.encode()[::-1]
        start = bisect.bisect_left(self._reversed, needle)
        numbers: set[int] = set()
        for reversed_word in self._reversed[start:]:
            if not reversed_word.startswith(needle):
                break
            numbers.update(self._called[reversed_word])
        return [self._paths[n] for n in sorted(numbers)]

    def class_word(self, name: str) -> list[str] | None:
        """The sources naming `name` as a whole word in a class statement's bases or before `as WORD`, in the
        sources' order (None: not an ASCII name, scan)."""
        if not name.isascii() or not name.isidentifier():
            return None
        if self._class_words is None:
            self._class_words = self._index(_class_words)
        return [self._paths[n] for n in self._class_words.get(name.encode(), ())]

    def definitions(self, name: str) -> tuple[list[str], bool]:
        """The sources defining a function `name` at their top level (`def name(` at a line's start, `async` too),
        in the sources' order, and whether any source defines one indented (a method, a nested function)."""
        if self._definitions is None:
            self._number()
            found: dict[bytes, tuple[list[int], bool]] = {}
            for number, data in enumerate(self.sources.values()):
                for word, indented in _definitions(data) if b"def" in data else ():
                    numbers, nested = found.get(word, ([], False))
                    if not indented and (not numbers or numbers[-1] != number):
                        numbers.append(number)
                    found[word] = (numbers, nested or indented)
            self._definitions = found
        numbers, nested = self._definitions.get(name.encode(), ([], False))
        return [self._paths[n] for n in numbers], nested

    def importing(self, word: str) -> list[str]:
        """The sources with `word` as a whole word of an import line, in the sources' order."""
        self._read_imports()
        assert self._import_words is not None
        return [self._paths[n] for n in self._import_words.get(word.encode(), ())]

    def aliases(self, name: str) -> set[str]:
        """The names import lines of any source rename `name` to (`name as other`)."""
        self._read_imports()
        return {alias.decode() for alias in self._aliases.get(name.encode(), ())}

    def _read_imports(self) -> None:
        """The words of every source's import lines and the renamings they write, from one search for them."""
        if self._import_words is not None:
            return
        self._number()
        self._import_words = {}
        for number, data in enumerate(self.sources.values()):
            lines = _IMPORT_LINE.findall(data) if b"import" in data else []
            # the lines joined by a byte no word holds: their words, from one call
            for word in set(_WORD.findall(b"\n".join(lines))):
                self._import_words.setdefault(word, []).append(number)
            if b" as " in data and b"import" in data:
                for line in (*lines, *_PARENTHESIZED_IMPORT.findall(data)):
                    for original, alias in _IMPORT_ALIAS.findall(line):
                        self._aliases.setdefault(original, set()).add(alias)


def _class_words(data: bytes) -> set[bytes]:
    """The words inside a class statement's bases, and those before `as WORD`."""
    found: set[bytes] = set()
    if b"class" in data:
        for bases in _CLASS_BASES.findall(data):
            found.update(_WORD.findall(bases))
    if b"as" in data:
        found.update(_renamed(data))
    return found


def _renamed(data: bytes) -> set[bytes]:
    """Every whole word followed by white space, `as`, white space and a word character (what the pattern
    `\\b(\\w+)(?=\\s+as\\s+\\w)` finds, ASCII), read from each `as` backwards: several times faster on a large tree."""
    words: set[bytes] = set()
    for match in _AS.finditer(data):
        end = match.start()  # `as` must follow white space, after a word
        space = end
        while space > 0 and data[space - 1] in _SPACE_BYTES:
            space -= 1
        if space == end:
            continue
        start = space
        while start > 0 and data[start - 1] in _WORD_BYTES:
            start -= 1
        if start < space:
            words.add(data[start:space])
    return words


def word_led_matches(pattern: re.Pattern[bytes], data: bytes) -> Iterator[re.Match[bytes]]:
    """The matches `\\b` + `pattern` would give with `finditer`, for a pattern led by a word's literal (`import`,
    a name): a match inside a longer word is skipped and the search goes on right after its start. A pattern that
    starts with `\\b` is tried at every byte of the source; the literal-led one skips to the literal in C."""
    at = 0
    while (match := pattern.search(data, at)) is not None:
        start = match.start()
        if start > 0 and data[start - 1] in _WORD_BYTES:
            at = start + 1
            continue
        yield match
        at = match.end()


def matches_from(pattern: re.Pattern[bytes], data: bytes, starts: Iterable[bytes]) -> Iterator[re.Match[bytes]]:
    """The matches `pattern.finditer(data)` gives, for a pattern each match of which begins with one of the literals
    `starts` (after zero-width tests only: `\\b`, a lookbehind), tried only where one of them occurs. A pattern that
    leads with `\\b` or a lookbehind is tried by `re` at every byte of the source; this skips to the literals in C.
    `pattern.match` at a position sees the bytes before it, so `\\b` and lookbehinds answer as in `finditer`."""
    positions: set[int] = set()
    for literal in starts:
        at = data.find(literal)
        while at >= 0:
            positions.add(at)
            at = data.find(literal, at + 1)
    end = 0
    for position in sorted(positions):
        if position < end:
            continue  # inside the last match: `finditer` goes on after it
        match = pattern.match(data, position)
        if match is not None:
            yield match
            end = max(match.end(), position + 1)

"""Suppression, applied in one place after linting: `# noqa`, `# noqa: CODES`, `# dslint: noqa`, and DSL010.

- `# noqa` silences every finding of its line; `# noqa: DSL101, DSL2` silences the codes it lists and, as code
  prefixes, every code they start (`DSL2` covers DSL201, DSL202, ...); an old code covers the codes it is
  redirected to (`framework/catalog.py:REDIRECTS`: `# noqa: DSL415` silences DSL210). The comment is read
  exactly as flake8 reads it (same pattern), so `dslint check` and the flake8 plugin agree.
- As in flake8, a noqa comment anywhere in a statement that spans several lines covers all of its lines.
- `# dslint: noqa` (a comment anywhere in the file) silences the whole file; `# dslint: noqa: DSL101` silences
  those codes in the whole file.
- DSL010 (unused-noqa) reports DSL codes in noqa comments that silenced nothing. Only DSL codes are judged,
  never other tools' codes nor a bare `# noqa`, and only codes whose rules ran (a code for a rule that is not
  selected for this file may well be needed elsewhere), plus codes that name no dslint rule at all.

The flake8 plugin passes `line_noqa=False`: flake8 applies line noqa comments itself, and doing it twice would
hide findings from flake8's `--disable-noqa`.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dslint.config.tree import ParseError, parse_text, to_python
from dslint.diagnostics import Diagnostic, Edit, Location
from dslint.framework.catalog import covers
from dslint.selection import RuleSelection

# flake8's own pattern (flake8/defaults.py NOQA_INLINE_REGEXP), searched in each comment.
NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.I)
FILE_NOQA = re.compile(r"#\s*dslint[:=]\s*noqa(?::\s?(?P<codes>([A-Z]+[0-9]*(?:[,\s]+)?)+))?\s*$", re.I)
CODE = re.compile(r"[A-Z]+[0-9]*", re.I)
DSL_CODE = re.compile(r"^DSL[0-9]*$")


@dataclass(frozen=True)
class NoqaDirective:
    """One `# noqa` comment: where it is, what it lists, and which physical lines it covers."""

    line: int
    start: int  # 1-based column of '#' of `# noqa`
    end: int  # 1-based column just past the match
    codes: tuple[str, ...] | None  # None: a bare `# noqa`
    codes_start: int  # 1-based column of the codes text (== end when bare)
    codes_text: str
    comment_start: int  # 1-based column of the comment's '#'
    comment_end: int
    covers: tuple[int, int]  # first and last physical line of the statement

    def silences(self, code: str) -> bool:
        return self.codes is None or any(covers(listed, code) for listed in self.codes)


@dataclass
class NoqaIndex:
    directives: list[NoqaDirective] = field(default_factory=list)
    file_codes: tuple[str, ...] | None = None  # None: no file-level comment; (): the whole file
    statement_of: dict[int, tuple[int, int]] = field(default_factory=dict)  # physical line -> statement span
    tokenized: bool = True

    def file_silences(self, code: str) -> bool:
        if self.file_codes is None:
            return False
        return not self.file_codes or any(covers(listed, code) for listed in self.file_codes)

    def directives_for(self, line: int) -> list[NoqaDirective]:
        return [d for d in self.directives if d.covers[0] <= line <= d.covers[1]]

    def silences(self, diagnostic: Diagnostic) -> bool:
        """Whether a file-level comment or a comment of its line silences `diagnostic` (of this file)."""
        line = self.directives_for(diagnostic.start.line)
        return self.file_silences(diagnostic.code) or any(d.silences(diagnostic.code) for d in line)

    def statement_end(self, line: int) -> int:
        return self.statement_of.get(line, (line, line))[1]


@dataclass(frozen=True)
class _Comment:
    line: int
    column: int  # 0-based
    text: str


def _comments_and_statements(text: str) -> tuple[list[_Comment], dict[int, tuple[int, int]], bool]:
    """Comments, and the span of physical lines each line belongs to, computed as flake8 does
    (`FileProcessor._noqa_line_mapping`): tokens between two NL/NEWLINE tokens form one span, so a multi-line
    string or a backslash continuation is one span, while each line inside brackets is its own."""
    comments: list[_Comment] = []
    statements: dict[int, tuple[int, int]] = {}
    first, last = 0, -1
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            if token.type == tokenize.COMMENT:
                comments.append(_Comment(token.start[0], token.start[1], token.string))
            first = token.start[0] if last < 0 else min(first, token.start[0])
            last = max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                for line in range(first, last + 1):
                    statements[line] = (first, last)
                first, last = 0, -1
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # A file that does not tokenize (DSL001): read comments line by line, each line on its own.
        comments = []
        for number, physical in enumerate(_physical_lines(text), start=1):
            hash_at = physical.find("#")
            if hash_at >= 0:
                comments.append(_Comment(number, hash_at, physical[hash_at:]))
        return comments, {}, False
    return comments, statements, True


def might_have_noqa(text: str) -> bool:
    return "noqa" in text.lower()


def config_comments(text: str) -> list[_Comment]:
    """The `#` comments of a JSON/HJSON config (outside double-quoted strings); `//` and `/* */` comments are
    skipped but never read as noqa comments, which are written `# noqa`, as in scripts."""
    comments: list[_Comment] = []
    line, line_start, pos, length = 1, 0, 0, len(text)
    while pos < length:
        char = text[pos]
        if char == "\n":
            line, line_start = line + 1, pos + 1
        elif char == '"':
            pos += 1
            while pos < length and text[pos] not in '"\n':
                pos += 2 if text[pos] == "\\" else 1
        elif char == "#" or text.startswith("//", pos):
            end = text.find("\n", pos)
            end = length if end < 0 else end
            if char == "#":
                comments.append(_Comment(line, pos - line_start, text[pos:end].rstrip("\r")))
            pos = end
            continue
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            end = length if end < 0 else end + 2
            for offset in range(pos, end):
                if text[offset] == "\n":
                    line, line_start = line + 1, offset + 1
            pos = end
            continue
        pos += 1
    return comments


def shell_comments(text: str) -> list[_Comment]:
    """The `#` comments of a shell script or Makefile (a `#` that starts a word outside quotes), each line alone."""
    from dslint.project.launch_cuts import strip_comment

    comments: list[_Comment] = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = strip_comment(line)
        if len(code) < len(line):
            comments.append(_Comment(number, len(code), line[len(code) :].rstrip("\r")))
    return comments


def scan(text: str, *, config: bool = False, shell: bool = False) -> NoqaIndex:
    """The noqa comments of a script (`config`: of a JSON/HJSON config, `shell`: of a shell script or Makefile,
    where each line stands alone)."""
    statements: dict[int, tuple[int, int]] = {}
    if shell:
        comments, tokenized = shell_comments(text), True
    elif config:
        comments, tokenized = config_comments(text), True
    else:
        comments, statements, tokenized = _comments_and_statements(text)
    index = NoqaIndex(statement_of=statements, tokenized=tokenized)
    for comment in comments:
        file_match = FILE_NOQA.match(comment.text)
        if file_match:
            codes = tuple(c.upper() for c in CODE.findall(file_match.group("codes") or ""))
            index.file_codes = () if not codes or index.file_codes == () else (*(index.file_codes or ()), *codes)
            continue
        match = NOQA.search(comment.text)
        if not match:
            continue
        base = comment.column + 1
        codes_text = match.group("codes")
        listed = tuple(c.upper() for c in CODE.findall(codes_text)) if codes_text is not None else None
        codes_offset = match.start("codes") if codes_text is not None else match.end()
        index.directives.append(
            NoqaDirective(
                line=comment.line,
                start=base + match.start(),
                end=base + match.end(),
                codes=listed,
                codes_start=base + codes_offset,
                codes_text=codes_text or "",
                comment_start=base,
                comment_end=base + len(comment.text),
                covers=statements.get(comment.line, (comment.line, comment.line)),
            )
        )
    return index


@dataclass
class Suppressed:
    diagnostics: list[Diagnostic]
    suppressed: int


def apply_noqa(
    path: str,
    text: str | None,
    diagnostics: Sequence[Diagnostic],
    selection: RuleSelection,
    *,
    line_noqa: bool = True,
    config: bool = False,
    shell: bool = False,
) -> Suppressed:
    """Drop silenced findings and add DSL010 findings for unused DSL codes in noqa comments. A line comment
    silences findings of its own file only: a script's result also holds findings inside the config files it
    points at, whose line numbers are the config's. `config`: `text` is a JSON/HJSON config."""
    if text is None or not might_have_noqa(text):
        return Suppressed(list(diagnostics), 0)
    if not diagnostics and "dsl" not in text.lower():
        return Suppressed([], 0)  # nothing to silence, and no DSL code a comment could name in vain (DSL010)
    index = scan(text, config=config, shell=shell)
    unused = unused_noqa_diagnostics(path, text, index, [d for d in diagnostics if d.path == path], selection)
    kept: list[Diagnostic] = []
    for diagnostic in [*diagnostics, *unused]:
        if index.file_silences(diagnostic.code):
            continue
        own_line = line_noqa and diagnostic.path == path
        if own_line and any(d.silences(diagnostic.code) for d in index.directives_for(diagnostic.start.line)):
            continue
        kept.append(diagnostic)
    kept.sort(key=lambda d: d.sort_key)
    return Suppressed(kept, len(diagnostics) + len(unused) - len(kept))


def _ran(code: str, selection: RuleSelection, known: Sequence[str]) -> str | None:
    """Why `code` in a noqa comment counts as unused when it silenced nothing, or None to stay silent."""
    matching = [rule for rule in known if covers(code, rule)]
    if not matching:
        return "no such rule"
    if any(selection.enabled(rule) for rule in matching):
        return "nothing to silence"
    return None  # its rules did not run on this file: the comment may be needed under other settings


def unused_noqa_diagnostics(
    path: str,
    text: str,
    index: NoqaIndex,
    diagnostics: Sequence[Diagnostic],
    selection: RuleSelection,
) -> list[Diagnostic]:
    # the rule framework and the registry (every rule module, libcst): imported only where a noqa comment is judged
    from dslint.framework.driver_rules import UnusedNoqaCodes
    from dslint.framework.registry import all_rules, implementation

    rule = implementation(UnusedNoqaCodes)
    if not selection.enabled(rule.code) or index.file_codes == ():
        return []
    known = [rule.code for rule in all_rules()]
    lines = _physical_lines(text)
    found: list[Diagnostic] = []
    for directive in index.directives:
        if directive.codes is None:
            continue
        first, last = directive.covers
        nearby = [d.code for d in diagnostics if first <= d.start.line <= last]
        unused: list[tuple[str, str]] = []
        for code in directive.codes:
            if not DSL_CODE.match(code) or rule.code.startswith(code):
                continue
            if any(covers(code, found_code) for found_code in nearby):
                continue
            reason = _ran(code, selection, known)
            if reason is not None:
                unused.append((code, reason))
        if not unused:
            continue
        edits = _removal_edits(directive, lines[directive.line - 1], {code for code, _ in unused})
        found.append(rule.from_codes(path, directive.line, directive.start, directive.end, unused, edits))
    return found


def _removal_edits(directive: NoqaDirective, line: str, unused: set[str]) -> list[Edit]:
    raw_codes = CODE.findall(directive.codes_text)
    remaining = [code for code in raw_codes if code.upper() not in unused]
    number = directive.line
    if remaining:
        tail = directive.codes_text[len(directive.codes_text.rstrip()) :]
        new = ", ".join(remaining) + tail
        end = directive.codes_start + len(directive.codes_text)
        return [Edit(Location(number, directive.codes_start), Location(number, end), new)]
    # Nothing left: drop the directive (and the comment, when it held nothing else).
    before = line[: directive.start - 1]
    after = line[directive.end - 1 : directive.comment_end - 1]
    if directive.start == directive.comment_start and after.strip():
        return [Edit(Location(number, directive.start), Location(number, directive.end), "# ")]
    start = len(before.rstrip()) + 1
    if directive.start == directive.comment_start and not before.strip():
        start = 1  # a comment on its own line: the line is left empty
    return [Edit(Location(number, start), Location(number, directive.end), "")]


PHYSICAL_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")


def _physical_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines as the tokenizer numbers them: only CR, LF and CRLF end one (`str.splitlines` also breaks at form
    feeds and U+2028, which put `--add-noqa`'s comment on the wrong line below them)."""
    found = [m.group(0) if keepends else m.group(1) for m in PHYSICAL_LINE.finditer(text) if m.group(0)]
    return found


def add_noqa(text: str, diagnostics: Iterable[Diagnostic]) -> tuple[str, int]:
    """`text` with a `# noqa: CODES` comment for every finding (for adopting dslint in old code).

    The comment goes at the end of the statement's last line (where a comment is always valid) or joins an
    existing noqa comment there. Returns the new text and the number of lines changed."""
    index = scan(text)
    if not index.tokenized:
        return text, 0
    wanted = _codes_by_line(index, diagnostics)
    lines = _physical_lines(text, keepends=True)
    changed = 0
    for number, codes in sorted(wanted.items()):
        if number > len(lines):
            continue
        updated = _with_noqa(lines[number - 1], [d for d in index.directives if d.line == number], codes)
        if updated is not None:
            lines[number - 1] = updated
            changed += 1
    return "".join(lines), changed


def admits_comments(path: str, text: str) -> bool:
    """Whether a config file may carry a `# noqa` comment: an `.hjson` file, or one that already is not strict
    JSON (it has comments or trailing commas, so only DeepSpeed's hjson reader reads it). A strict JSON file is
    also read by `json.load` (the Hugging Face Trainer, accelerate, jq), for which a comment breaks it."""
    if path.lower().endswith(".hjson"):
        return True
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def add_config_noqa(text: str, diagnostics: Iterable[Diagnostic]) -> tuple[str, int]:
    """`add_noqa` for a JSON/HJSON config that admits comments (`admits_comments`): the comment goes at the end of
    the finding's line, and only where the file then still reads as the same config (not after an HJSON
    quoteless string, which would take the comment into its value, nor inside a block comment)."""
    index = scan(text, config=True)
    wanted = _codes_by_line(index, diagnostics)
    lines = _physical_lines(text, keepends=True)
    before = _config_value(text)
    changed = 0
    for number, codes in sorted(wanted.items()):
        if number > len(lines) or before is None:
            continue
        updated = _with_noqa(lines[number - 1], [d for d in index.directives if d.line == number], codes)
        if updated is None:
            continue
        candidate = [*lines[: number - 1], updated, *lines[number:]]
        if _config_value("".join(candidate)) == before:
            lines = candidate
            changed += 1
    return "".join(lines), changed


def _config_value(text: str) -> object:
    try:
        return to_python(parse_text(text))
    except ParseError:
        return None


def _codes_by_line(index: NoqaIndex, diagnostics: Iterable[Diagnostic]) -> dict[int, list[str]]:
    from dslint.framework.driver_rules import UnusedNoqaCodes
    from dslint.framework.registry import implementation

    wanted: dict[int, list[str]] = {}
    for diagnostic in diagnostics:
        if diagnostic.code == implementation(UnusedNoqaCodes).code:
            continue
        codes = wanted.setdefault(index.statement_end(diagnostic.start.line), [])
        if diagnostic.code not in codes:
            codes.append(diagnostic.code)
    return wanted


def _with_noqa(raw: str, existing: list[NoqaDirective], codes: list[str]) -> str | None:
    """The physical line `raw` with `codes` in its noqa comment (one added when it has none), or None when its
    comment already silences them."""
    body = raw.rstrip("\r\n")
    ending = raw[len(body) :]
    if existing:
        directive = existing[0]
        if directive.codes is None:
            return None
        missing = [code for code in codes if not directive.silences(code)]
        if not missing:
            return None
        insert_at = directive.codes_start - 1 + len(directive.codes_text.rstrip().rstrip(","))
        body = body[:insert_at] + ", " + ", ".join(missing) + body[insert_at:]
    else:
        body = body.rstrip() + "  # noqa: " + ", ".join(codes)
    return body + ending

"""A small .gitignore matcher for walking directories: patterns, `!` negation, `/` anchoring, `dir/`, `**`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from dslint.limits import TooLarge, read_small_text


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def _translate(glob: str) -> str:
    """Glob to regex on a '/'-separated relative path; `*` stays within one component, `**` crosses them."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


class IgnoreFile:
    """The patterns of one .gitignore, relative to the directory that holds it."""

    def __init__(self, base: Path, lines: list[str]) -> None:
        self.base = base
        self.patterns: list[_Pattern] = []
        self.problems: list[str] = []  # "PATH:LINE: ignoring bad pattern ...": the line is skipped, as git does
        for number, raw in enumerate(lines, start=1):
            line = raw.rstrip("\n").rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            if line.startswith("\\"):
                line = line[1:]
            directory_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/")
            prefix = "" if anchored else "(?:.*/)?"
            try:
                regex = re.compile(f"^{prefix}{_translate(line)}$")
            except re.error as error:
                self.problems.append(
                    f"{base / '.gitignore'}:{number}: ignoring bad pattern {raw.strip()!r}: {error.msg}"
                )
                continue
            self.patterns.append(_Pattern(regex, negated, directory_only))
        # one expression per kind of path that no pattern can match unless one of its own does: a path none
        # matches (most of them) is decided by one match instead of one per pattern
        self._any = {
            is_dir: _joined([p.regex for p in self.patterns if is_dir or not p.directory_only])
            for is_dir in (False, True)
        }
        self._prefix = "" if str(base) == "." else os.path.join(str(base), "")  # `Path("./x")` is "x"

    @classmethod
    def read(cls, directory: Path) -> IgnoreFile | None:
        path = directory / ".gitignore"
        try:
            return cls(directory, read_small_text(path).splitlines())
        except (OSError, TooLarge):
            return None

    def decision(self, path: Path, is_dir: bool) -> bool | None:
        """True ignored, False re-included, None: this file says nothing about `path`."""
        text = str(path)
        if not text.startswith(self._prefix):
            return None
        relative = text[len(self._prefix) :].replace(os.sep, "/")
        if self._any[is_dir].match(relative) is None:
            return None
        verdict: bool | None = None
        for pattern in self.patterns:
            if pattern.directory_only and not is_dir:
                continue
            if pattern.regex.match(relative):
                verdict = not pattern.negated
        return verdict


def _joined(regexes: list[re.Pattern[str]]) -> re.Pattern[str]:
    """One expression matching where any of `regexes` (each `^...$`) matches."""
    if not regexes:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{regex.pattern})" for regex in regexes))


def is_ignored(path: Path, is_dir: bool, ignore_files: list[IgnoreFile]) -> bool:
    """Later (deeper) files win, as in git."""
    verdict = False
    for ignore_file in ignore_files:
        decision = ignore_file.decision(path, is_dir)
        if decision is not None:
            verdict = decision
    return verdict

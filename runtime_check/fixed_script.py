"""Making the fixed script: dslint's fixer on the user's text, in memory; the caller writes it to a temp dir."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from dslint.diagnostics import Diagnostic
from dslint.fix.loop import fix_source
from dslint.lint.script import lint_source


class NothingToRun(Exception):
    """The fixer produced no different script, so there is nothing to compare: a reported failure (exit 1)."""


@dataclass
class FixedScript:
    path: Path
    original: str
    text: str
    encoding: str
    applied: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)

    def diff(self) -> str:
        name = self.path.name
        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                fromfile=f"{name} (original)",
                tofile=f"{name} (fixed)",
            )
        )

    def changed_lines(self) -> list[int]:
        """1-based line numbers of the original that the fix changed or removed."""
        matcher = difflib.SequenceMatcher(a=self.original.splitlines(), b=self.text.splitlines(), autojunk=False)
        lines: list[int] = []
        for tag, a_start, a_end, _, _ in matcher.get_opcodes():
            if tag in ("replace", "delete"):
                lines.extend(range(a_start + 1, a_end + 1))
        return lines


def make_fixed(path: Path, unsafe: bool) -> FixedScript:
    """Run dslint's fixer over `path` without writing it; raise NothingToRun when nothing would change."""
    data = path.read_bytes()
    first = lint_source(str(path), data)
    if first.text is None:
        reason = "it has no DeepSpeed code" if first.skipped else "it does not parse"
        raise NothingToRun(f"dslint cannot fix {path}: {reason}")
    encoding = first.encoding
    outcome = fix_source(str(path), first.text, unsafe=unsafe)
    if outcome.error is not None:
        raise NothingToRun(f"dslint's fixer refused {path}: {outcome.error}")
    if not outcome.changed:
        unsafe_left = [d for d in outcome.remaining if d.fix is not None and not d.fix.is_safe]
        hint = (
            f"; {len(unsafe_left)} unsafe fix(es) available with --unsafe-fixes" if unsafe_left and not unsafe else ""
        )
        findings = len(outcome.remaining)
        raise NothingToRun(
            f"the fixer changes nothing in {path} ({findings} finding(s), none with an applicable fix{hint}): "
            "there is no fixed script to compare"
        )
    return FixedScript(
        path=path,
        original=first.text,
        text=outcome.text,
        encoding=encoding,
        applied=list(outcome.applied),
        remaining=list(outcome.remaining),
    )

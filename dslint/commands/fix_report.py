"""What `dslint fix` did, shared by the script side (`dslint.commands.fix`) and the config side
(`dslint.commands.fix_configs`): the findings fixed, the diffs, the errors, and what remains."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from dslint.diagnostics import Diagnostic, printable
from dslint.fix.edits import FixOutcome
from dslint.fix.write import SourceError, SourceFile, write_source


@dataclass
class FixReport:
    fixed: list[tuple[str, Diagnostic]] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    files_changed: int = 0
    write_outside: bool = False  # --write-through-links: write through symlinks to files outside the project

    def record(self, name: str, source: SourceFile, outcome: FixOutcome, *, diff: bool) -> None:
        """One file's outcome: a refusal as an error; otherwise the fixes applied, then its diff or the write."""
        if outcome.error is not None:
            self.errors.append(f"{name}: not fixed, left as it was: {outcome.error}")
            return
        if not outcome.changed:
            return
        if diff:
            self.fixed.extend((name, d) for d in outcome.applied)
            self.diffs.append(unified_diff(name, outcome.original, outcome.text))
            return
        try:
            write_source(source, outcome.text, outside=self.write_outside)
        except SourceError as error:
            self.errors.append(f"{name}: {error}")
            return
        self.fixed.extend((name, d) for d in outcome.applied)  # only what was written counts as fixed
        self.files_changed += 1


def unified_diff(name: str, before: str, after: str) -> str:
    relative = not Path(name).is_absolute()
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{printable(name)}" if relative else printable(name),
        tofile=f"b/{printable(name)}" if relative else printable(name),
    )
    text = ""
    for line in lines:
        text += line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
    return text

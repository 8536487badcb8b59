"""What `dslint fix` did, shared by the script side (`dslint.commands.fix`) and the config side
(`dslint.commands.fix_configs`): the findings fixed, the diffs, the errors, and what remains."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from dslint.diagnostics import Diagnostic


@dataclass
class FixReport:
    fixed: list[tuple[str, Diagnostic]] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    files_changed: int = 0


def unified_diff(name: str, before: str, after: str) -> str:
    relative = not Path(name).is_absolute()
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}" if relative else name,
        tofile=f"b/{name}" if relative else name,
    )
    text = ""
    for line in lines:
        text += line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
    return text

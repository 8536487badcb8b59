"""What every output format receives: the findings, and a `ReportContext` for what else a format may need."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dslint.diagnostics import Diagnostic


@dataclass
class ReportContext:
    """What a format may need beyond the findings: the file texts (for `full`), where paths are relative to."""

    cwd: Path = field(default_factory=Path.cwd)
    sources: dict[str, str] = field(default_factory=dict)
    unsafe_fixes: bool = False
    files_checked: int = 0

    def source(self, path: str) -> str | None:
        if path not in self.sources:
            try:
                with open(path, encoding="utf-8", newline="") as handle:
                    self.sources[path] = handle.read()
            except (OSError, UnicodeDecodeError):
                return None
        return self.sources[path]


Renderer = Callable[[Sequence[Diagnostic], ReportContext], str]

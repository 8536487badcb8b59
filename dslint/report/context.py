"""What every output format receives: the findings, and a `ReportContext` for what else a format may need."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dslint.diagnostics import Diagnostic
from dslint.limits import DEFAULT_MAX_FILE_SIZE, TooLarge, read_capped


@dataclass
class ReportContext:
    """What a format may need beyond the findings: the file texts (for `full`), where paths are relative to."""

    cwd: Path = field(default_factory=Path.cwd)
    sources: dict[str, str] = field(default_factory=dict)
    unsafe_fixes: bool = False
    files_checked: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (path, message): files not checked

    def source(self, path: str) -> str | None:
        if path not in self.sources:
            try:
                self.sources[path] = read_capped(path, DEFAULT_MAX_FILE_SIZE, "max-file-size").decode("utf-8")
            except (OSError, TooLarge, UnicodeDecodeError):
                return None
        return self.sources[path]


Renderer = Callable[[Sequence[Diagnostic], ReportContext], str]

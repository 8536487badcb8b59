"""`gitlab`: a GitLab Code Quality report (a JSON array; `artifacts: reports: codequality:` in .gitlab-ci.yml).

Each finding has a description, `check_name` (the code), a severity GitLab knows (error: major, warning: minor,
info: info), its location (the path relative to the current directory, which is the project directory in a
GitLab job, and its lines) and a fingerprint: a hash of the path, the code and the message (and, for the same
finding twice in a file, its rank), so a finding keeps its fingerprint when lines move above it and GitLab can
tell new findings from old ones in a merge request."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dslint.diagnostics import Diagnostic, Severity
from dslint.report.context import ReportContext
from dslint.report.file_position import file_position

SEVERITIES = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def _relative(path: str, cwd: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return candidate.resolve().relative_to(cwd.resolve()).as_posix()
        except (ValueError, OSError):
            return candidate.as_posix()
    return os.path.normpath(path).replace(os.sep, "/")


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    seen: dict[tuple[str, str, str], int] = {}
    entries: list[dict[str, Any]] = []
    for diagnostic in diagnostics:
        path = _relative(diagnostic.path, context.cwd)
        where = file_position(diagnostic)
        key = (path, diagnostic.code, where.message)
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        digest = hashlib.sha256("\0".join([*key, str(rank)]).encode("utf-8", "surrogateescape")).hexdigest()
        entries.append(
            {
                "description": f"{diagnostic.code} {where.message}",
                "check_name": diagnostic.code,
                "fingerprint": digest,
                "severity": SEVERITIES[diagnostic.severity],
                "location": {"path": path, "lines": {"begin": where.line, "end": where.end_line}},
            }
        )
    return json.dumps(entries, indent=2, ensure_ascii=False) + "\n"

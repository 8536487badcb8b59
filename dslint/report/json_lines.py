"""`json-lines`: one JSON object per line, each the object the `json` format gives (for `jq -c` and log tools)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from dslint.diagnostics import Diagnostic
from dslint.lint.suppression import NoqaIndex
from dslint.report.context import ReportContext
from dslint.report.json import with_cell


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    indexes: dict[str, NoqaIndex] = {}
    return "".join(json.dumps(with_cell(d, context, indexes), ensure_ascii=False) + "\n" for d in diagnostics)

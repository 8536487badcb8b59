"""`markdown`: the findings as Markdown, for a GitHub Actions step summary (`$GITHUB_STEP_SUMMARY`, which the
GitHub Action writes: annotations are capped per step, the summary lists every finding) or a review comment.

A heading with the totals, a table of the codes (most frequent first), then one table row per finding, at most
`MAX_ROWS` (a step summary holds at most 1 MiB). Cells are HTML-escaped and `|` is written `&#124;`, so no file
name or message can break the table or inject markup."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence

from dslint.diagnostics import Diagnostic
from dslint.report.context import ReportContext

MAX_ROWS = 1000


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "&#124;")


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    files = len({d.path for d in diagnostics})
    lines = [f"### dslint: {plural(len(diagnostics), 'finding')} in {plural(files, 'file')}", ""]
    if context.failures:
        lines += [f"{plural(len(context.failures), 'file')} could not be checked:", ""]
        lines += [f"- {cell(path)}: {cell(reason)}" for path, reason in context.failures]
        lines.append("")
    if not diagnostics:
        return "\n".join(lines) + "\n"
    counts = Counter(d.code for d in diagnostics)
    slugs = {d.code: d.slug for d in diagnostics}
    lines += ["| Code | Rule | Findings |", "|---|---|---:|"]
    lines += [f"| {code} | {cell(slugs[code])} | {count} |" for code, count in counts.most_common()]
    lines += ["", "| Severity | Code | Where | Message |", "|---|---|---|---|"]
    for diagnostic in diagnostics[:MAX_ROWS]:
        row = [diagnostic.severity.value, diagnostic.code, cell(diagnostic.where), cell(diagnostic.message)]
        lines.append("| " + " | ".join(row) + " |")
    if len(diagnostics) > MAX_ROWS:
        lines += ["", f"... and {len(diagnostics) - MAX_ROWS} more (run `dslint check` for all)."]
    return "\n".join(lines) + "\n"

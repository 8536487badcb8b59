"""Fixing one script's text with dslint's own rules: the entry point for `dslint fix` and for other tools.

    from dslint.fix.loop import fix_source
    outcome = fix_source("train.py", text, unsafe=True)
    if outcome.error is None and outcome.changed:
        fixed = outcome.text

`fix_source(path, text, unsafe=..., selection=...)` lints `text` as the file `path` (the path matters for
configs referenced relative to the script), applies every applicable fix in rounds (`dslint.fix.edits.fix_text`)
and returns a `FixOutcome`: `text` (fixed, or the original on a refusal), `applied` (the findings fixed),
`remaining` (the findings of the final text), `error` (why the fixer refused: the result would not parse,
or would not settle), `changed`. It never writes anything; `dslint.fix.write` does that for the CLI.
"""

from __future__ import annotations

import dataclasses

from dslint.diagnostics import Diagnostic
from dslint.fix.edits import FixOutcome, fix_text
from dslint.limits import Limits
from dslint.lint.file import lint_text
from dslint.lint.uncalled import outside
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection

__all__ = ["FixOutcome", "fix_source"]


def fix_source(
    path: str,
    text: str,
    *,
    unsafe: bool = False,
    selection: RuleSelection | None = None,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
    uncalled: frozenset[tuple[bytes, bytes]] = frozenset(),
) -> FixOutcome:
    """Fix `text` (the content of `path`) with the selected rules; safe fixes only unless `unsafe`. `project`:
    what the project index knows about the file from elsewhere (`dslint fix` passes what `dslint check` uses, so
    a finding that needs another file's fact is fixed too); by default what the file itself says. `uncalled`:
    the file's definitions nothing in the project calls (`dslint.lint.uncalled`): their findings are not fixed.

    A file whose lines end in a lone CR (old Mac style; CPython reads it) is fixed as LF text and written back
    with CRs: libcst's parser does not take CR-only newlines, and the positions are the same either way."""
    cr_only = "\r" in text and "\n" not in text
    working = text.replace("\r", "\n") if cr_only else text

    def findings(current: str) -> list[Diagnostic]:
        return outside(path, current, lint_text(path, current, selection, limits, project), uncalled)

    outcome = fix_text(working, findings, unsafe=unsafe)
    if not cr_only:
        return outcome
    return dataclasses.replace(outcome, original=text, text=outcome.text.replace("\n", "\r"))

"""DSL010: a DSL code in a `# noqa` comment that silences nothing. Reported by `dslint.lint.suppression`."""

from __future__ import annotations

from collections.abc import Sequence

from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity
from dslint.framework.driver_rules import UnusedNoqaCodes
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class UnusedNoqa(UnusedNoqaCodes):
    code = "DSL010"
    slug = "unused-noqa"
    message = "a DSL code in this noqa comment silences nothing: remove it"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Reports DSL codes in `# noqa: ...` comments that silenced no finding on their line: codes of rules
            that ran on the file and found nothing there, and codes that name no dslint rule. Other tools' codes
            (`# noqa: E501`) and a bare `# noqa` are never reported; neither is a code whose rules were not
            selected for the file (by `--select`, `ignore` or `per-file-ignores`).
        """,
        why="""
            A stale noqa comment hides the next real finding on its line: after the code was fixed or moved, the
            comment still silences whatever the rule finds there later. A misspelt code silences nothing while
            looking as if it did.
        """,
        example="""
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")  # noqa: DSL101
        """,
        use_instead="""
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
        """,
        fix_safety="""
            The fix removes the unused codes from the comment (the whole `# noqa` when none is left). It is safe:
            comments do not change what the program does.
        """,
    )
    valid = (
        Valid("import deepspeed\nx = 1  # noqa\n"),
        Valid("import os  # noqa: F401\n"),
        Valid("x = 1  # noqa: E501, W291\n"),
        Valid("x = 1  # not a noqa: DSL999\n"),
        # DSL101 does not run when only DSL010 is selected: its noqa may be needed under other settings
        Valid("x = 1  # noqa: DSL101\n"),
    )
    invalid = (
        Invalid("x = 1  # noqa: DSL999\n", lines=(1,), fixed="x = 1\n"),
        Invalid("import os  # noqa: DSL999, F401\n", lines=(1,), fixed="import os  # noqa: F401\n"),
        Invalid(
            """
            def f():
                # noqa: DSL997
                return (
                    1,  # noqa: DSL998 reason
                )
            """,
            lines=(3, 5),
            fixed="""
            def f():

                return (
                    1,  # reason
                )
            """,
        ),
    )

    @classmethod
    def from_codes(
        cls, path: str, line: int, start: int, end: int, unused: Sequence[tuple[str, str]], edits: Sequence[Edit]
    ) -> Diagnostic:
        listed = ", ".join(f"{code} ({reason})" for code, reason in unused)
        noun = "code" if len(unused) == 1 else "codes"
        return cls.diagnostic(
            path,
            Location(line, start),
            Location(line, end),
            f"unused noqa {noun}: {listed}; remove {'it' if len(unused) == 1 else 'them'}",
            fix=Fix(tuple(edits), Applicability.SAFE, f"remove unused noqa {noun}"),
        )

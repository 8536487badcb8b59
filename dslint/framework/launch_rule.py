"""The base class of launch rules: rules over a launch command's own mistakes (`project.launch_issues`), reported
in the launcher (a shell script, a Makefile, a README's or a guide's code block).

A launch rule answers one kind of `LaunchIssue`; `dslint.lint.launcher` runs the selected rules over the issues
the project index found in a launcher. Its cases are launchers (`run.sh` unless the case names another path),
with the other files of their project in `files` (`tests/test_rule_cases.py` lays them out in a folder).
"""

from __future__ import annotations

from typing import ClassVar

from dslint.diagnostics import Diagnostic, Location
from dslint.framework.rule_base import Rule
from dslint.project.project_index import LaunchIssue


def lost_options_text(lost: tuple[str, ...]) -> str:
    """`--a, --b, --c and 2 more never reach it`: the options a cut-short command loses (DSL422, DSL438)."""
    shown = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
    return f"{shown} {'never reaches' if len(lost) == 1 else 'never reach'} it"


class LaunchRule(Rule):
    """A rule over one kind of launch issue; `message_for` words the finding."""

    kind: ClassVar[str]
    case_path: ClassVar[str] = "run.sh"

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        raise NotImplementedError

    @classmethod
    def finding(cls, path: str, issue: LaunchIssue) -> Diagnostic:
        diagnostic = cls.diagnostic(
            path, Location(issue.line, issue.column), Location(issue.line, issue.end_column), cls.message_for(issue)
        )
        return Diagnostic(**{**diagnostic.__dict__, "related": issue.related})

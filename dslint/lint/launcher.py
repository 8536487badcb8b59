"""Lint a launcher: the launch rules (`framework/launch_rule.py`) over the mistakes the project index found in
its commands (`ProjectIndex.launch_issues`), positioned in the launcher itself.

A shell script or Makefile takes `# noqa: CODE` at the end of a line and `# dslint: noqa: CODE` on a line of its
own (a comment line inside a continued command would cut the command: a finding on such a line is silenced by
the file-level comment or `per-file-ignores`). A Markdown or reStructuredText document has no comment dslint
reads: `per-file-ignores` only. Nothing is ever written into a launcher.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dslint.diagnostics import Diagnostic, Location
from dslint.lint.result import FileResult, rules_in_modules
from dslint.lint.suppression import apply_noqa
from dslint.project.project_index import LAUNCHER_SUFFIXES, LaunchIssue
from dslint.selection import RuleSelection

if TYPE_CHECKING:  # the rules are imported when a launcher has findings to report
    from dslint.framework.launch_rule import LaunchRule

# The launchers whose format has `#` comments that dslint reads as noqa comments.
COMMENTED = LAUNCHER_SUFFIXES
NOTEBOOK = ".ipynb"


def lint_launcher(
    path: str, issues: Sequence[LaunchIssue], selection: RuleSelection, text: str | None = None
) -> FileResult:
    """The findings of the selected launch rules over `issues` (of the launcher `path`, whose `text` carries
    its noqa comments)."""
    rules = _launch_rules(selection)
    found: list[Diagnostic] = [
        rule.finding(path, issue) for issue in issues for rule in rules if rule.kind == issue.kind
    ]
    found.extend(_written_config_findings(path, issues, selection))
    if path.endswith(NOTEBOOK) and text is not None:  # the lines of a notebook's JSON text: lines of its cells
        found = in_cells(text, found)
    if text is None or not path.endswith(COMMENTED):
        return FileResult(path, sorted(found, key=lambda d: d.sort_key), parsed=True)
    kept = apply_noqa(path, text, found, selection, shell=True)
    return FileResult(path, kept.diagnostics, parsed=True, suppressed=kept.suppressed)


def launcher_results(
    issues: dict[str, list[LaunchIssue]],
    selection_for: Callable[[Path], RuleSelection | None],
    read: Callable[[str], str | None],
) -> list[FileResult]:
    """One result per launcher with issues; `selection_for(path)`: the launcher's rules by its settings (None
    when its settings exclude it)."""
    results: list[FileResult] = []
    for path, found in sorted(issues.items()):
        selection = selection_for(Path(path))
        if selection is None:
            continue
        result = lint_launcher(path, found, selection, read(path) if path.endswith((*COMMENTED, NOTEBOOK)) else None)
        if result.diagnostics or result.suppressed:
            results.append(result)
    return results


def in_cells(text: str, found: list[Diagnostic]) -> list[Diagnostic]:
    """Findings at lines of a notebook's JSON text (a shell command's line: `launch_documents.notebook_shells`,
    whose columns count in the command, after a `!` and the spaces before it) placed as the notebook's own
    findings are: in the cell holding the line (`cell`, 1-based among all cells), at the line and column within
    the cell's source. A finding at no source line keeps the file's line."""
    from dslint.config.tree import Array, Object, ParseError, Scalar, parse_text

    try:
        tree = parse_text(text, hjson=False)
    except ParseError:
        return found
    cells = tree.get("cells") if isinstance(tree, Object) else None
    places: dict[int, tuple[int, int, int]] = {}  # JSON line -> (cell, line in the cell, the command's offset)
    for number, node in enumerate(cells.items if isinstance(cells, Array) else [], start=1):
        source = node.get("source") if isinstance(node, Object) else None
        for index, part in enumerate(source.items if isinstance(source, Array) else []):
            value = part.value if isinstance(part, Scalar) and isinstance(part.value, str) else ""
            bang = value.lstrip().startswith("!")
            offset = len(value) - len(value.lstrip()) + 1 if bang else 0
            places.setdefault(part.start.line, (number, index + 1, offset))
    placed: list[Diagnostic] = []
    for diagnostic in found:
        place = places.get(diagnostic.start.line)
        if place is None or diagnostic.end.line != diagnostic.start.line:
            placed.append(diagnostic)
            continue
        cell, line, offset = place
        start, end = Location(line, diagnostic.start.column + offset), Location(line, diagnostic.end.column + offset)
        placed.append(dataclasses.replace(diagnostic, cell=cell, start=start, end=end))
    return placed


def _written_config_findings(path: str, issues: Sequence[LaunchIssue], selection: RuleSelection) -> list[Diagnostic]:
    """A config the launcher writes that its strict reader cannot parse (`project/written_configs.py`): the config
    parse error (DSL400), reached through its driver contract, positioned in the launcher."""
    written = [issue for issue in issues if issue.kind == "written_config"]
    if not written:
        return []
    from dslint.config.tree import ParseError
    from dslint.framework.driver_rules import ConfigSyntaxError
    from dslint.framework.registry import implementation

    rule = implementation(ConfigSyntaxError)
    if not selection.enabled(rule.code):
        return []
    return [rule.from_error(path, ParseError(issue.detail, issue.line, issue.column)) for issue in written]


@functools.lru_cache(maxsize=64)
def _launch_rules(selection: RuleSelection) -> tuple[type[LaunchRule], ...]:
    """The enabled launch rules, importing only their modules (`catalog.LAUNCH_RULE_MODULES`)."""
    from dslint.framework.catalog import LAUNCH_RULE_MODULES
    from dslint.framework.launch_rule import LaunchRule

    return rules_in_modules(LAUNCH_RULE_MODULES, LaunchRule, selection)

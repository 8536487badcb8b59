"""Code no launch of the project runs: the arm of an `if` whose test every launch of the script decides the other
way. `if args.early_stopping and not args.eval_steps:` never runs its body when every launch of the script passes
`--eval_steps 4000`, so a finding there describes a mistake none of the project's runs makes, and the script's
lint drops it, as it drops code after a `return` (`dslint.lint.unreachable`).

Only tests of what the command line sets are read: an attribute of a name bound to the script's parse
(`args = parser.parse_args()`, `model_args, training_args = parser.parse_args_into_dataclasses()`) or of a
parameter named `args`, compared as `model.conditions.settled` reads a launch (the option given by every launch,
literally). A script that no launcher starts, or one a launcher names where the index reads no launch of it, keeps
every finding.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import replace

from dslint.diagnostics import Diagnostic
from dslint.model.conditions import Guard, settled, test_guards
from dslint.model.summary import nodes_of
from dslint.script.project_facts import ProjectFacts

# Methods whose result is the command line parsed (argparse, transformers' HfArgumentParser)
_PARSES = frozenset({"parse_args", "parse_known_args", "parse_args_into_dataclasses"})


def without_launch_dead(
    path: str, diagnostics: Sequence[Diagnostic], tree: ast.Module | None, project: ProjectFacts | None
) -> list[Diagnostic]:
    """`diagnostics` less the findings of this file (`path`) that start in an arm no launch of it runs."""
    if tree is None or project is None or project.launches_partial or not project.launches or not diagnostics:
        return list(diagnostics)
    launches = [launch.options for launch in project.launches]
    parsed = _parsed_names(tree)
    ranges: list[tuple[int, int]] = []
    for node in nodes_of(tree, ast.If):
        for truth, block in ((True, node.body), (False, node.orelse)):
            if block and any(_never(launches, guard, parsed) for guard in test_guards(node.test, truth)):
                ranges.append((block[0].lineno, block[-1].end_lineno or block[-1].lineno))
    if not ranges:
        return list(diagnostics)
    return [
        d
        for d in diagnostics
        if d.path != path or d.cell is not None or not any(first <= d.start.line <= last for first, last in ranges)
    ]


def _never(launches: Sequence[Mapping[str, str | None]], guard: Guard, parsed: frozenset[str]) -> bool:
    """Every launch makes `guard` fail (its opposite holds), for a test of the parsed command line."""
    head = guard.subject.rpartition(".")[0]
    return head in parsed and settled(launches, replace(guard, truth=not guard.truth))


def _parsed_names(tree: ast.Module) -> frozenset[str]:
    """`args` and the names the module binds to its parsed command line."""
    found = {"args"}
    for node in nodes_of(tree, ast.Assign):
        if not isinstance(node.value, ast.Call):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Attribute) and func.attr in _PARSES):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            found.update(name.id for name in names if isinstance(name, ast.Name))
    return frozenset(found)

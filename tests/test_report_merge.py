"""`ScriptRule.report`: the same finding reported twice from different facts (another launch, another config
naming the same problem) is one finding whose related places are all of them, in order, never two findings
nor one that silently keeps only the first fact."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.rule import ScriptRule
from dslint.script.collect import collect_facts
from dslint.script.context import ScriptContext


class _Twice(ScriptRule):
    code = "DSL999"
    slug = "reported-twice"
    message = "the same problem"
    severity = Severity.WARNING


def _context() -> ScriptContext:
    module = cst.parse_module("train(model)\n")
    return ScriptContext("train.py", module, collect_facts(module))


def test_a_finding_reported_from_two_launches_names_both() -> None:
    context = _context()
    rule = _Twice(context)
    call = context.module.body[0].body[0].value  # type: ignore[attr-defined]
    first, second = Related("run.sh", 2, 1, "first launch"), Related("run_big.sh", 3, 1, "second launch")
    rule.report(call, related=(first,))
    rule.report(call, related=(second, first))
    (finding,) = context.diagnostics
    assert finding.related == (first, second)


def test_different_messages_stay_apart() -> None:
    context = _context()
    rule = _Twice(context)
    call = context.module.body[0].body[0].value  # type: ignore[attr-defined]
    rule.report(call, "one problem", related=(Related("a.sh", 1, 1, "a"),))
    rule.report(call, "another problem", related=(Related("b.sh", 1, 1, "b"),))
    assert [d.message for d in context.diagnostics] == ["one problem", "another problem"]

"""Text edits that fixes are made of, built from libcst nodes and their positions."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Edit, Location
from dslint.script.context import ScriptContext
from dslint.script.names import dotted_name


def replace_node(context: ScriptContext, node: cst.CSTNode, content: str) -> Edit:
    start, end = context.span(node)
    return Edit(start, end, content)


def delete_line(context: ScriptContext, line: cst.SimpleStatementLine) -> Edit:
    """Delete a whole statement line (its indentation, trailing comment and newline too).

    A line that is the only statement of its block becomes `pass`, so the block stays valid.
    """
    start, end = context.span(line)
    if context.facts.is_only_statement_of_block(line):
        return Edit(start, Location(end.line, end.column), "pass")
    return Edit(Location(start.line, 1), Location(end.line + 1, 1), "")


def unwrap_method_call(context: ScriptContext, call: cst.Call) -> Edit | None:
    """`receiver.method(...)` -> `receiver` (drop one call from a chain)."""
    if not isinstance(call.func, cst.Attribute):
        return None
    return replace_node(context, call, context.code(call.func.value))


def delete_call_statement(context: ScriptContext, call: cst.Call) -> Edit | None:
    """Delete the statement that exists only for `call`: `x.cuda()` alone on its line, or `x = x.to(d)`."""
    facts = context.facts
    line = facts.lone_expression_statement(call)
    if line is not None:
        return delete_line(context, line)
    small = facts.small_statement_of_call.get(call)
    statement = facts.statement_of(call)
    if not isinstance(call.func, cst.Attribute):
        return None
    receiver = dotted_name(call.func.value)
    if (
        isinstance(small, cst.Assign)
        and small.value is call
        and receiver is not None
        and all(dotted_name(t.target) == receiver for t in small.targets)
        and isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
    ):
        return delete_line(context, statement)
    return None

"""Text edits that fixes are made of, built from libcst nodes and their positions."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Edit
from dslint.script.context import ScriptContext
from dslint.script.names import dotted_name
from dslint.script.statement_removal import delete_statements


def replace_node(context: ScriptContext, node: cst.CSTNode, content: str) -> Edit:
    start, end = context.span(node)
    return Edit(start, end, content)


def delete_line(context: ScriptContext, line: cst.SimpleStatementLine) -> Edit | None:
    """Delete a whole statement line (its indentation, trailing comment and newline too).

    A line that is the only statement of its block takes the `if` it empties with it; where the block cannot go
    (a loop's, a function's, an `if` with an `else`), None: no fix leaves a block holding only `pass`.
    """
    edits = delete_statements(context, [line])
    return edits[0] if edits is not None and len(edits) == 1 else None


def line_deletion(context: ScriptContext, line: cst.SimpleStatementLine | None) -> list[Edit]:
    """`delete_line` as a fix's edit list: empty (no fix) when there is no line or it cannot go."""
    edit = delete_line(context, line) if line is not None else None
    return [edit] if edit is not None else []


def unwrap_method_call(context: ScriptContext, call: cst.Call) -> Edit | None:
    """`receiver.method(...)` -> `receiver` (drop one call from a chain): only the text after the receiver goes,
    so a receiver spread over lines keeps its own layout."""
    if not isinstance(call.func, cst.Attribute):
        return None
    if call.lpar:  # `(model.cuda())`: the span covers the call's own parentheses, which must stay
        return replace_node(context, call, context.code(call.func.value))
    return Edit.deletion(context.span(call.func.value)[1], context.span(call)[1])


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

"""Removing statements without leaving a block that holds only `pass`.

A fix that deletes the only statement of a block must not leave `if cond: pass` behind (the reader is left to
wonder what was there, and a test with side effects would still run). So when the deleted lines empty a block:

- the block of an `if` without `else`/`elif`, whose test has no side effects (names, attributes, literals,
  comparisons, arithmetic; no calls), goes with its `if`; the `if` is then a deleted statement of its own block,
  which may empty that block in turn (and so on, outwards);
- anything else (a loop, a function, a `with`, an `if` with an `else`, a test that calls something) cannot be
  emptied: the removal is refused (None) and the caller offers no fix.

`statement_parents(context)` maps each statement to the block holding it and each block to the compound statement
that owns it, computed once per module (statements only: cheap) and shared.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from dslint.diagnostics import Edit, Location
from dslint.script.context import ScriptContext
from dslint.script.facts import ScriptFacts

Block = cst.IndentedBlock | cst.Module


@dataclass
class StatementParents:
    """Where each statement sits: its block, and the statement that owns that block (None for the module)."""

    block_of: dict[cst.CSTNode, Block]
    owner_of: dict[cst.CSTNode, cst.CSTNode]  # block -> If / For / While / With / Try / FunctionDef / Else ...
    if_of_else: dict[cst.CSTNode, cst.If]  # an `Else` clause or `elif` If -> the If it belongs to

    def statements(self, block: Block) -> Sequence[cst.CSTNode]:
        return block.body


_CACHE: weakref.WeakKeyDictionary[ScriptFacts, StatementParents] = weakref.WeakKeyDictionary()


def statement_parents(context: ScriptContext) -> StatementParents:
    cached = _CACHE.get(context.facts)
    if cached is None:
        cached = StatementParents({}, {}, {})
        _collect(context.module, None, cached)
        _CACHE[context.facts] = cached
    return cached


def _collect(block: Block, owner: cst.CSTNode | None, parents: StatementParents) -> None:
    if owner is not None:
        parents.owner_of[block] = owner
    for statement in block.body:
        parents.block_of[statement] = block
        _collect_compound(statement, parents)


def _collect_compound(statement: cst.CSTNode, parents: StatementParents) -> None:
    if not isinstance(statement, cst.BaseCompoundStatement):
        return
    for child in _child_blocks(statement, parents):
        owner, block = child
        if isinstance(block, cst.IndentedBlock):
            _collect(block, owner, parents)


def _child_blocks(statement: cst.CSTNode, parents: StatementParents) -> Iterable[tuple[cst.CSTNode, cst.BaseSuite]]:
    if isinstance(statement, cst.If):
        yield statement, statement.body
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            parents.if_of_else[orelse] = statement
            _collect_compound(orelse, parents)
        elif isinstance(orelse, cst.Else):
            parents.if_of_else[orelse] = statement
            yield orelse, orelse.body
        return
    if isinstance(statement, (cst.For, cst.While)):
        yield statement, statement.body
        if statement.orelse is not None:
            yield statement.orelse, statement.orelse.body
        return
    if isinstance(statement, cst.Try):
        yield statement, statement.body
        for handler in statement.handlers:
            yield handler, handler.body
        if statement.orelse is not None:
            yield statement.orelse, statement.orelse.body
        if statement.finalbody is not None:
            yield statement.finalbody, statement.finalbody.body
        return
    body = getattr(statement, "body", None)
    if isinstance(body, cst.BaseSuite):
        yield statement, body


def is_pure_test(node: cst.BaseExpression) -> bool:
    """An expression whose evaluation has no side effects worth keeping: no calls, no walrus, no await/yield."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
        return True
    if isinstance(node, cst.Attribute):
        return is_pure_test(node.value)
    if isinstance(node, cst.Comparison):
        return is_pure_test(node.left) and all(is_pure_test(c.comparator) for c in node.comparisons)
    if isinstance(node, cst.BooleanOperation):
        return is_pure_test(node.left) and is_pure_test(node.right)
    if isinstance(node, cst.BinaryOperation):
        return is_pure_test(node.left) and is_pure_test(node.right)
    if isinstance(node, cst.UnaryOperation):
        return is_pure_test(node.expression)
    if isinstance(node, cst.Subscript):
        return is_pure_test(node.value) and all(
            isinstance(s.slice, cst.Index) and is_pure_test(s.slice.value) for s in node.slice
        )
    return False


def removable_statements(context: ScriptContext, statements: Iterable[cst.CSTNode]) -> list[cst.CSTNode] | None:
    """The statements to delete so that `statements` are gone and no block is left empty: `statements` plus any
    `if` they empty (outwards); None when a block would be left empty that cannot go."""
    parents = statement_parents(context)
    removed: list[cst.CSTNode] = []
    pending = list(dict.fromkeys(statements))
    gone: set[int] = set()
    while pending:
        statement = pending.pop(0)
        if id(statement) in gone:
            continue
        block = parents.block_of.get(statement)
        if block is None:
            return None
        gone.add(id(statement))
        removed.append(statement)
        if any(id(other) not in gone and not _only_pass(other) for other in block.body):
            continue  # something real is left in the block
        owner = parents.owner_of.get(block)
        if isinstance(block, cst.Module) or owner is None:
            continue  # a module may be empty
        if not (isinstance(owner, cst.If) and owner.orelse is None and owner not in parents.if_of_else):
            return None
        if not is_pure_test(owner.test):
            return None
        pending.append(owner)
    # Keep only the outermost statements: an `if` that goes takes its body with it.
    outermost = [s for s in removed if not _inside_any(context, s, removed)]
    return outermost


def _only_pass(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in statement.body)


def _inside_any(context: ScriptContext, statement: cst.CSTNode, others: Sequence[cst.CSTNode]) -> bool:
    facts = context.facts
    start = facts.start(statement)
    return any(o is not statement and facts.start(o) < start < facts.end(o) for o in others)


def delete_statements(context: ScriptContext, statements: Iterable[cst.CSTNode]) -> list[Edit] | None:
    """Edits that delete whole statement lines (and any `if` they empty); None when that would leave an empty
    block that cannot be removed (see the module docstring)."""
    removable = removable_statements(context, statements)
    if removable is None:
        return None
    edits = []
    for statement in removable:
        start, end = context.span(statement)
        edits.append(Edit(Location(start.line, 1), Location(end.line + 1, 1), ""))
    return edits

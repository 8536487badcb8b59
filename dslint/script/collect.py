"""The one traversal that fills a `ScriptFacts` (`collect_facts`).

It records imports, the scope of every name, attribute, subscript and call, every `deepspeed.initialize(...)` call
with its arguments, the calls that set the device, and the `if`s whose plain-PyTorch side `script/branches.py`
marks once the walk is done (where no rule reports). The scopes and bindings are the module's
(`dslint.model.bindings`, read from CPython's tree): the traversal lays them over libcst's nodes and marks the
bindings that hold initialize's results (here, or from a helper the project model knows returns them).
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import libcst as cst

from dslint.model.bindings import Binding, BindingKind, Bindings, Scope, ScopeKind, module_bindings
from dslint.model.engine import Engine, Origin
from dslint.model.library import RESULT_ORDER
from dslint.model.summary import dotted
from dslint.script.branches import deepspeed_flag_polarity, resolve_branches
from dslint.script.facts import (
    INIT_INFERENCE,
    INITIALIZE,
    INITIALIZE_POSITIONAL,
    RESULT_ARITY,
    SET_DEVICE_CALLS,
    InitializeCall,
    ScriptFacts,
    constant_index,
    result_role,
)
from dslint.script.names import ImportTable, dotted_name
from dslint.script.project_facts import ProjectFacts
from dslint.script.statement_lines import StatementLines
from dslint.script.walk import walk


class _Misaligned(Exception):
    """libcst's tree and CPython's disagree on where a `def` or `class` is: the bindings cannot be laid over."""


_BLOCK, _LINE, _COMPOUND, _SMALL = 1, 2, 4, 8
# The compound statements `ScriptFacts.held_by` asks about, each kept with the innermost function holding it.
_HOLDERS = frozenset({cst.FunctionDef, cst.If, cst.For, cst.While, cst.Try})


@functools.cache
def _kind(node_type: type[cst.CSTNode]) -> int:
    """What the traversal keeps of a node of this type, as flags: a block of statements, a statement line (a simple
    line or a compound statement), a compound statement, a small statement. Asked once per type: an `isinstance`
    against libcst's classes runs ABCMeta's Python-level check, and the traversal would ask it of every node."""
    kind = _BLOCK if issubclass(node_type, (cst.IndentedBlock, cst.Module)) else 0
    if issubclass(node_type, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        kind |= _LINE | (0 if issubclass(node_type, cst.SimpleStatementLine) else _COMPOUND)
    elif issubclass(node_type, cst.BaseSmallStatement):
        kind |= _SMALL
    return kind


class _Collector:
    """The one traversal that fills a ScriptFacts (driven by `dslint.script.walk.walk`); the scopes and bindings are
    the module's (`dslint.model.bindings`), laid over this traversal's nodes."""

    def __init__(self, facts: ScriptFacts, table: Bindings | None) -> None:
        self.facts = facts
        self.table = table  # None: no bindings are known (bare scopes are made here)
        self.scopes: list[Scope] = [facts.module_scope]
        self.lines: list[cst.CSTNode] = []
        self.smalls: list[cst.BaseSmallStatement] = []
        self.branches: list[tuple[cst.If, bool | None]] = []
        self.if_blocks: dict[cst.If, cst.IndentedBlock | cst.Module] = {}  # each `if` statement's own block
        self.flag_expressions: list[tuple[cst.IfExp, bool]] = []  # conditional expressions testing a DeepSpeed flag
        self.counter = 0
        self.pending_ends: dict[cst.CSTNode, list[InitializeCall]] = {}
        # the nodes the model's bindings hang on, each kind in source order (`Bindings.place`)
        self.statements: list[cst.CSTNode] = []
        self.handlers: list[cst.CSTNode] = []
        self.items: list[cst.WithItem] = []
        self.walruses: list[cst.NamedExpr] = []
        self.functions: list[cst.FunctionDef | None] = [None]  # the innermost `def` around the node (`held_by`)
        self.statement_lines: StatementLines | None = None  # the paired statements' lines, once the walk is done
        self.blocks: list[tuple[cst.CSTNode, cst.CSTNode | None]] = []  # `ScriptFacts.blocks`, filled on the way
        facts.blocks = self.blocks

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    # --- statements -------------------------------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> None:
        self.counter += 1
        self.facts.entered[node] = self.counter
        kind = _kind(type(node))
        if kind & _BLOCK:
            body = node.body  # type: ignore[attr-defined]
            for child in body:
                self.facts.block_size_of_line[child] = len(body)
                if type(child) is cst.If:
                    self.if_blocks[child] = node  # type: ignore[assignment]
        if kind & _LINE:
            self.lines.append(node)
            if kind & _COMPOUND:
                self.statements.append(node)
                if type(node) in _HOLDERS:
                    self.blocks.append((node, self.functions[-1]))
        elif kind & _SMALL:
            self.smalls.append(node)  # type: ignore[arg-type]
            self.statements.append(node)
        handler = self._handlers("visit_", type(node))
        if handler is not None:
            handler(self, node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.counter += 1
        self.facts.exited[original_node] = self.counter
        handler = self._handlers("leave_", type(original_node))
        if handler is not None:
            handler(self, original_node)
        kind = _kind(type(original_node))
        if kind & _LINE:
            self.lines.pop()
        elif kind & _SMALL:
            self.smalls.pop()
        for init in self.pending_ends.pop(original_node, ()):
            init.end = self.counter

    @staticmethod
    @functools.cache
    def _handlers(prefix: str, node_type: type[cst.CSTNode]) -> Callable[[_Collector, Any], None] | None:
        handler: Callable[[_Collector, Any], None] | None = getattr(_Collector, prefix + node_type.__name__, None)
        return handler

    # --- scopes -----------------------------------------------------------------------------------------------
    def _enter_scope(self, node: cst.FunctionDef | cst.ClassDef, kind: ScopeKind) -> None:
        if self.table is None:
            self.scopes.append(Scope(kind, node, self.scope))
            return
        index = len(self.statements) - 1
        model = self.table.statements[index] if index < len(self.table.statements) else None
        scope = self.table.scope_of(model) if model is not None else None
        if scope is None or scope.kind is not kind or getattr(model, "name", None) != node.name.value:
            raise _Misaligned
        self.scopes.append(scope)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter_scope(node, ScopeKind.CLASS)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter_scope(node, ScopeKind.FUNCTION)
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()
        self.functions.pop()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.handlers.append(node)

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        self.handlers.append(node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.items.append(node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.walruses.append(node)

    # --- names and calls --------------------------------------------------------------------------------------
    def visit_Name(self, node: cst.Name) -> None:
        self.facts.scope_of_node[node] = self.scope

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.facts.scope_of_node[node] = self.scope

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.facts.scope_of_node[node] = self.scope

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.facts
        facts.scope_of_node[node] = self.scope
        if self.lines:
            facts.statement_of_call[node] = self.lines[-1]
        if self.smalls:
            facts.small_statement_of_call[node] = self.smalls[-1]
        qualified = facts.imports.qualified(node.func)
        if qualified is None and not self._aliases_initialize(node):
            return
        if qualified == INITIALIZE or qualified is None:
            statement = self.smalls[-1] if self.smalls else (self.lines[-1] if self.lines else node)
            init = InitializeCall(
                call=node,
                scope=self.scope,
                start=facts.start(node),
                end=facts.start(node),  # set to the statement's end when it is left
                arguments=_initialize_arguments(node),
            )
            facts.initialize_calls.append(init)
            facts.calls_of_engine[init.engine] = init
            self.pending_ends.setdefault(statement, []).append(init)
        elif qualified in SET_DEVICE_CALLS or self._sets_device(node):
            facts.device_set_calls.append((self.scope, facts.start(node)))
        elif qualified == INIT_INFERENCE:
            facts.inference_calls.append(node)

    def _sets_device(self, node: cst.Call) -> bool:
        """`init_distributed_mode(args)`: a project function that sets the current device (`device_setting_calls`)."""
        setting = self.facts.project.device_setting_calls if self.facts.project is not None else ()
        return bool(setting) and self.facts.may_be_at(node, setting) and self.facts.call_position(node) in setting

    def _aliases_initialize(self, node: cst.Call) -> bool:
        """`ds_init(...)` where the project model knows `ds_init` holds deepspeed.initialize."""
        project = self.facts.project
        if project is None or not project.initialize_aliases:
            return False
        return self.facts.call_position(node) in project.initialize_aliases

    # --- branches ---------------------------------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        self.branches.append((node, deepspeed_flag_polarity(node.test)))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        """`a if trainer.is_deepspeed_enabled else b`: the side a DeepSpeed flag rules out is plain PyTorch."""
        polarity = deepspeed_flag_polarity(node.test)
        if polarity is not None:
            self.flag_expressions.append((node, polarity))

    # --- bindings: the model's, laid over this traversal ------------------------------------------------------
    def place(self) -> None:
        """Lay the module's bindings over the nodes walked, then enter them in source order, each marked with the
        initialize results it holds (an alias of a result tuple sees only the bindings made before it)."""
        table = self.table
        if table is None:
            return
        nodes: dict[int, cst.CSTNode] = {id(table.module_scope.node): self.facts.module}
        if len(table.statements) != len(self.statements):
            raise _Misaligned
        nodes.update(zip(map(id, table.statements), self.statements, strict=True))
        for theirs, ours in ((table.handlers, self.handlers), (table.items, self.items)):
            if len(theirs) == len(ours):
                nodes.update(zip(map(id, theirs), ours, strict=True))
        walruses = list(zip(table.walruses, self.walruses, strict=False))
        if len(table.walruses) == len(self.walruses) and all(
            dotted_name(ours.target) == dotted(theirs.target) for theirs, ours in walruses
        ):
            nodes.update((id(theirs), ours) for theirs, ours in walruses)
        table.place(lambda node: nodes.get(id(node)), self.facts.start, self.facts.end, lambda s: s.value)
        for binding in table.every:
            self._mark_results(binding)
            table.enter(binding)
            if binding.engine is not None and result_role(binding) is not None:
                self.facts.result_bindings.setdefault(binding.engine, []).append(binding)

    def _mark_results(self, binding: Binding) -> None:
        """An assignment target holding initialize's results (here, or a helper's the project model knows)."""
        if binding.value is None and binding.element is None:
            return
        source = self._result_source(binding.statement.value, binding.scope)
        if source is None:
            return
        if binding.element is not None:
            i, count, star = binding.element
            arity = len(source.order) if source.order is not None else RESULT_ARITY
            index = i if star is None or i < star else arity - (count - i)
            item = source.item(index)
            if item is not None:
                binding.kind, binding.engine, binding.index = BindingKind.INIT_ITEM, source.engine, item
            return
        if source.order is not None and source.order != (0, 1, 2, 3):
            return  # a helper's tuple in its own order: its items are known only when unpacked
        if source.whole:
            binding.kind, binding.engine = BindingKind.INIT_TUPLE, source.engine
        elif source.index is not None:
            binding.kind, binding.engine, binding.index = BindingKind.INIT_ITEM, source.engine, source.index

    def _result_source(self, value: cst.BaseExpression, scope: Scope) -> _ResultSource | None:
        """Whether `value` is initialize's result tuple (or one item of it)."""
        facts = self.facts
        if isinstance(value, cst.Call):
            init = facts.initialize_call_for(value)
            if init is not None:
                return _ResultSource(init.engine, None, whole=True)
            return self._helper_result(value)
        if isinstance(value, cst.Subscript):
            inner = self._result_source(value.value, scope)
            index = constant_index(value)
            if inner is not None and inner.whole and index is not None:
                return _ResultSource(inner.engine, index % RESULT_ARITY, whole=False)
            return None
        key = dotted_name(value)
        if key is not None and self.table is not None:
            binding = self.table.binding_at(key, scope, facts.start(value))
            if binding is not None and binding.kind is BindingKind.INIT_TUPLE and binding.engine is not None:
                return _ResultSource(binding.engine, None, whole=True)
            if binding is not None and binding.kind is BindingKind.INIT_ITEM and binding.engine is not None:
                # `self.engine = engine`, `model = engine`: the alias holds the same item
                return _ResultSource(binding.engine, binding.index, whole=False)
        return None

    def _may_be_at(self, call: cst.Call, positions: Collection[tuple[int, int]]) -> bool:
        """`ScriptFacts.may_be_at` once the traversal is done and before the facts are, with the statements it
        paired (`place`); true where they are not paired."""
        if self.table is None or len(self.table.statements) != len(self.statements):
            return True
        if self.statement_lines is None:
            facts = self.facts
            self.statement_lines = StatementLines(
                self.table.statements, self.statements, facts.statement_of_call, facts.small_statement_of_call
            )
        return self.statement_lines.may_hold(call, positions)

    def _helper_result(self, call: cst.Call) -> _ResultSource | None:
        """`engine, opt, sched = setup_engine(...)`: a helper the project index knows returns initialize's
        results (in its own order)."""
        project = self.facts.project
        if project is None or not project.returns:
            return None
        fact = (
            project.returns.get(self.facts.call_position(call) or (0, 0))
            if self._may_be_at(call, project.returns)
            else None
        )
        if fact is None or fact.keys:
            return None  # a dict of results is read by key (`ScriptFacts._keyed_role`)
        engine = self.facts.remote_engine(fact, Origin.RETURN, fact.origin, fact.config, fact.origin)
        order = tuple(RESULT_ORDER.index(r) if r in RESULT_ORDER else None for r in fact.roles)
        if fact.is_tuple:
            return _ResultSource(engine, None, whole=True, order=order)
        return _ResultSource(engine, order[0], whole=False) if order and order[0] is not None else None


@dataclass(frozen=True)
class _ResultSource:
    engine: Engine
    index: int | None
    whole: bool
    order: tuple[int | None, ...] | None = None  # a helper's own result order: item i is initialize's order[i]

    def item(self, index: int) -> int | None:
        if not self.whole:
            return None
        if self.order is not None:
            return self.order[index] if 0 <= index < len(self.order) else None
        return index


def _initialize_arguments(call: cst.Call) -> dict[str, cst.BaseExpression]:
    found: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            continue
        if arg.keyword is not None:
            found[arg.keyword.value] = arg.value
        elif i < len(INITIALIZE_POSITIONAL):
            found[INITIALIZE_POSITIONAL[i]] = arg.value
    return found


def collect_facts(
    module: cst.Module, project: ProjectFacts | None = None, tree: ast.Module | None = None, text: str | None = None
) -> ScriptFacts:
    """The facts of `module`; `tree`: CPython's tree of the same code, when the caller has it (its imports and its
    bindings are read from it, as the project model reads them; without it the code is parsed again for them);
    `text`: the source `module` was parsed from (positions are then read from one statement's code)."""
    if tree is None:
        tree = _python_tree(module)
    try:
        return _collected(module, project, tree, module_bindings(tree) if tree is not None else None, text)
    except _Misaligned:
        # the two trees disagree (never seen on real code): the facts hold scopes and no binding
        return _collected(module, project, tree, None, text)


def _collected(
    module: cst.Module,
    project: ProjectFacts | None,
    tree: ast.Module | None,
    table: Bindings | None,
    text: str | None = None,
) -> ScriptFacts:
    facts = ScriptFacts(module, project)
    facts.text = text
    if tree is not None:
        facts.imports = ImportTable.of(tree)
        if project is not None and project.star_imports:  # `from header import *` of a module importing torch
            facts.imports = ImportTable({**project.star_imports, **facts.imports.aliases})
    if table is not None:
        facts.bindings = table
        facts.module_scope = table.module_scope
    collector = _Collector(facts, table)
    walk(module, collector.on_visit, collector.on_leave)
    if table is not None and len(table.statements) == len(collector.statements):
        facts.statement_twins = (table.statements, collector.statements)  # positions from one statement's code
    collector.place()
    if table is not None and tree is not None:  # paired (`place`): the path guards are looked up through it
        facts.statement_pairs = (tree.body, table.statements, collector.statements)
    resolve_branches(facts, collector.branches, collector.flag_expressions, collector.if_blocks)
    facts.collected = True
    return facts


def _python_tree(module: cst.Module) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's SyntaxWarnings are not dslint's to print
            return ast.parse(module.code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # code libcst reads and CPython refuses: no import is known

"""The one traversal that fills a `ScriptFacts` (`collect_facts`), and the plain-PyTorch branches it marks.

It records imports, the scope of every name, attribute, subscript and call, every `deepspeed.initialize(...)` call
with its arguments, the calls that set the device, and the `else:` of `if args.deepspeed:` (and the other side of
an `if` that holds initialize on one side only), where no rule reports. The scopes and bindings are the module's
(`dslint.model.bindings`, read from CPython's tree): the traversal lays them over libcst's nodes and marks the
bindings that hold initialize's results (here, or from a helper the project model knows returns them).
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from dslint.model.bindings import Binding, BindingKind, Bindings, Pos, Scope, ScopeKind, module_bindings
from dslint.model.conditions import PLAIN_BACKENDS, deepspeed_flag_word
from dslint.model.engine import Engine, Origin
from dslint.model.library import ENGINE_ONLY_METHODS, RESULT_ORDER
from dslint.model.summary import dotted
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


def deepspeed_flag_polarity(test: cst.BaseExpression) -> bool | None:
    """For `if <test>:`, True if the body is the DeepSpeed branch, False if the else branch is, None if
    `<test>` is not a DeepSpeed on/off flag (`args.deepspeed`, `not use_ds`, `args.backend == "deepspeed"`)."""
    positive = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        positive = not positive
        test = test.expression
    name = dotted_name(test)
    if name is not None:
        return positive if deepspeed_flag_word(name.split(".")[-1]) else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left = dotted_name(test.left)
        target = test.comparisons[0]
        operator = target.operator
        right = target.comparator
        if left is not None and isinstance(right, cst.SimpleString) and right.evaluated_value == "deepspeed":
            if isinstance(operator, cst.Equal):
                return positive
            if isinstance(operator, cst.NotEqual):
                return not positive
        # `if env_type == "pytorchDDP":` selects another backend: its body is plain PyTorch
        if (
            left is not None
            and isinstance(right, cst.SimpleString)
            and str(right.evaluated_value).lower() in PLAIN_BACKENDS
            and isinstance(operator, cst.Equal)
        ):
            return not positive
        if left is not None and deepspeed_flag_word(left.split(".")[-1]) and isinstance(right, cst.Name):
            if right.value == "None" and isinstance(operator, cst.IsNot):
                return positive
            if right.value == "None" and isinstance(operator, cst.Is):
                return not positive
    return None


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
        elif qualified in SET_DEVICE_CALLS:
            facts.device_set_calls.append((self.scope, facts.start(node)))
        elif qualified == INIT_INFERENCE:
            facts.inference_calls.append(node)

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


# calls whose result says what files there are, not which backend runs (`has_deepspeed = "latest" in os.listdir(d)`)
_FILE_FACTS = frozenset({"listdir", "exists", "isfile", "isdir", "glob", "iterdir", "scandir", "walk"})
# a flag's name that says what is there, not what to use
_HOLDING_WORDS = re.compile(r"^(has|have|found)_|_(found|exists?|present|files?|ckpt|checkpoint)$")


def _fact_about_files(facts: ScriptFacts, test: cst.BaseExpression) -> bool:
    """The test is a name that says what a folder holds (`has_deepspeed`, `ds_ckpt_found`: not `use_deepspeed`)
    bound in its scope from a look at the file system (directly, or through a name its value reads: `files =
    os.listdir(d)`, `has_deepspeed = "latest" in files`): a fact about a checkpoint folder, not a DeepSpeed on/off
    switch (`use_ds = os.path.exists(ds_config)` stays one)."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if not isinstance(test, cst.Name) or not _HOLDING_WORDS.search(test.value.lower()):
        return False
    value = facts.assigned_value(test, test)
    if value is None:
        return False
    calls, names = _calls_and_names(value)
    if calls & _FILE_FACTS:
        return True
    for name in names[:8]:  # one level: the names the value reads
        read = facts.assigned_value(name, name) if name.value != test.value and name in facts.entered else None
        if read is not None and _calls_and_names(read)[0] & _FILE_FACTS:
            return True
    return False


def _calls_and_names(value: cst.CSTNode) -> tuple[set[str], list[cst.Name]]:
    """The last names of the calls in `value`, and the names it reads."""
    calls: set[str] = set()
    names: list[cst.Name] = []

    def enter(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            calls.add((dotted_name(node.func) or "").rsplit(".", 1)[-1])
        elif isinstance(node, cst.Name):
            names.append(node)
        return True

    walk(value, enter, lambda node: None)
    return calls, names


def _resolve_branches(
    facts: ScriptFacts,
    branches: Sequence[tuple[cst.If, bool | None]],
    expressions: Sequence[tuple[cst.IfExp, bool]] = (),
) -> None:
    """Mark the plain-PyTorch side of every `if` that chooses between DeepSpeed and plain PyTorch, and of every
    conditional expression whose test is a DeepSpeed flag (`expressions`, with the flag's polarity).

    An `if` chooses when its test is a DeepSpeed flag, when exactly one side holds a `deepspeed.initialize`
    call or uses a conditional engine parameter as the engine (`ParameterFact.conditional`: `model.backward(loss)`
    in one arm, the plain model's loss scaler in the other), or when its test reads the same as the test of such
    an `if`.
    """
    init_positions = [init.start for init in facts.initialize_calls] + _conditional_engine_uses(facts)

    def holds_init(span: tuple[Pos, Pos] | None) -> bool:
        return span is not None and any(span[0] <= p < span[1] for p in init_positions)

    sides: list[tuple[cst.If, tuple[Pos, Pos], tuple[Pos, Pos] | None, bool | None]] = []
    guards: list[tuple[cst.BaseExpression, bool]] = []
    for node, polarity in branches:
        if polarity is not None and _fact_about_files(facts, node.test):
            polarity = None
        body = (facts.start(node.body), facts.end(node.body))
        orelse = (facts.start(node.orelse), facts.end(node.orelse)) if node.orelse is not None else None
        if polarity is None and init_positions:
            in_body, in_else = holds_init(body), holds_init(orelse)
            if in_body != in_else:
                polarity = in_body
                guards.append((node.test, polarity))
        sides.append((node, body, orelse, polarity))
    for expression, positive in expressions:
        if not _fact_about_files(facts, expression.test):
            plain = expression.orelse if positive else expression.body
            facts.plain_ranges.append((facts.start(plain), facts.end(plain)))
    for node, body, orelse, polarity in sides:
        if polarity is None and guards:
            # Code generation is costly: compare tests only where an initialize guard exists.
            polarity = next((p for test, p in guards if test.deep_equals(node.test)), None)
        if polarity is None:
            continue
        plain_side = orelse if polarity else body
        if plain_side is not None:
            facts.plain_ranges.append(plain_side)


def _conditional_engine_uses(facts: ScriptFacts) -> list[Pos]:
    """Where a method only the engine has (`backward`) is called on a parameter the callers fill with the engine
    on some of their paths only (`ParameterFact.conditional`)."""
    project = facts.project
    if project is None or not any(fact.conditional for found in project.parameters.values() for fact in found.values()):
        return []
    uses: list[Pos] = []
    for call in facts.statement_of_call:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ENGINE_ONLY_METHODS):
            continue
        if not isinstance(func.value, cst.Name):
            continue
        binding = facts.binding_at(func.value.value, facts.scope_at(call), facts.start(call))
        fact = facts.project_parameter(binding) if binding is not None else None
        if fact is not None and fact.conditional:
            uses.append(facts.start(call))
    return uses


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
    _resolve_branches(facts, collector.branches, collector.flag_expressions)
    facts.collected = True
    return facts


def _python_tree(module: cst.Module) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's SyntaxWarnings are not dslint's to print
            return ast.parse(module.code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # code libcst reads and CPython refuses: no import is known

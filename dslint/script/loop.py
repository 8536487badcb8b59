"""Training-loop facts shared by the DSL3xx rules.

- Engine-derived values: whether an expression holds the engine's output, or a value computed from it (`loss =
  criterion(engine(x), y)`, `loss = outputs.loss`, `loss = compute_loss(engine, batch)`), traced through the
  bindings `ScriptFacts` records. Reading an attribute of the engine (`engine.device`, `engine.get_lr()`) is not
  a use of its output.
- Accumulation tests: whether a statement sits in the body of an `if` whose test is a modulo test
  (`if (step + 1) % args.gradient_accumulation_steps == 0:`), i.e. code that runs on some micro-steps only.
- The engine's name at a point, when it is certain (exactly one name holds the engine of a given initialize call
  there), which fixes need to write `engine.backward(loss)` or `engine.step()`; the `engine.step()` calls of a
  function; whether a call runs after `initialize`.
- Division by the accumulation steps (`loss / args.gradient_accumulation_steps`, `loss /= accum`), recognised by
  the divisor's name, and the `gradient_accumulation_steps` a known config sets.

Everything here is derived from the module and the `ScriptFacts`, computed lazily and cached per file.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from dslint.model.engine import Engine, Origin
from dslint.script.facts import BindingKind, Pos, Role, RoleAnswer, ScriptFacts, method_name
from dslint.script.names import dotted_name
from dslint.script.walk import children, visit_tree

if TYPE_CHECKING:
    pass

ENGINE_ROLES = (Role.ENGINE, Role.ENGINE_MODULE)
# Methods whose result no longer carries the autograd graph of their receiver.
GRAPH_CUTTING_METHODS = frozenset({"detach", "detach_", "item", "tolist", "numpy"})
MAX_DEPTH = 6
_PICKED = Engine(Origin.CALL)  # stands for the model a `derived_from` call picks: no engine of this file's


@dataclass(frozen=True)
class EngineUse:
    """An engine a value derives from: the engine expression's dotted name and the engine."""

    key: str
    engine: Engine


@dataclass
class LoopFacts:
    facts: ScriptFacts
    accumulation_ifs: list[tuple[cst.If, Pos, Pos]] = field(default_factory=list)
    loop_bodies: list[tuple[Pos, Pos]] = field(default_factory=list)
    calls: list[cst.Call] = field(default_factory=list)

    # --- forward passes ---------------------------------------------------------------------------------------
    def engine_of_forward(self, call: cst.Call) -> RoleAnswer | None:
        """`engine(x)`, `engine.module(x)`, `engine.forward(x)`: the engine whose forward runs, else None."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        answer = self.facts.role_of(func, at=call)
        if answer is not None and answer.role in ENGINE_ROLES:
            return answer
        return None

    # --- values derived from the engine's output --------------------------------------------------------------
    def engine_sources(self, expr: cst.CSTNode) -> list[EngineUse]:
        """The engines whose forward output `expr` is computed from (names read where they stand); empty when
        none is known."""
        found: list[EngineUse] = []
        self._sources(expr, found, depth=0, seen=set())
        unique: dict[str, EngineUse] = {}
        for use in found:
            unique.setdefault(use.key, use)
        return list(unique.values())

    def derived_from(self, expr: cst.CSTNode, forward: Callable[[cst.Call], bool]) -> bool:
        """Whether `expr` is computed from the output of a call `forward` picks (the forward of a model accelerate
        prepared), traced as `engine_sources` traces an engine's output."""
        found: list[EngineUse] = []
        self._sources(expr, found, depth=0, seen=set(), forward=forward)
        return bool(found)

    def _sources(
        self,
        expr: cst.CSTNode,
        found: list[EngineUse],
        depth: int,
        seen: set[int],
        forward: Callable[[cst.Call], bool] | None = None,
    ) -> None:
        if depth > MAX_DEPTH:
            return
        for node in _walk(expr):
            if isinstance(node, cst.Call):
                if forward is not None:
                    if forward(node):
                        found.append(EngineUse(_engine_key(node), _PICKED))
                    continue
                answer = self.engine_of_forward(node)
                if answer is not None:
                    found.append(EngineUse(_engine_key(node), answer.engine))
                    continue
                for arg in node.args:
                    answer = self.facts.role_of(arg.value) if dotted_name(arg.value) else None
                    if answer is not None and answer.role is Role.ENGINE:
                        found.append(EngineUse(dotted_name(arg.value) or "", answer.engine))
            elif isinstance(node, (cst.Name, cst.Attribute)):
                key = dotted_name(node)
                if key is None:
                    continue
                self._sources_of_key(key, node, found, depth, seen, forward)

    def _sources_of_key(
        self,
        key: str,
        node: cst.CSTNode,
        found: list[EngineUse],
        depth: int,
        seen: set[int],
        forward: Callable[[cst.Call], bool] | None = None,
    ) -> None:
        facts = self.facts
        scope = facts.scope_at(node)
        binding = facts.binding_at(key, scope, facts.start(node))
        if binding is None or binding.kind is not BindingKind.OTHER or id(binding) in seen:
            return
        if binding.scope is not scope:
            return  # values bound in another function: their order relative to this one is unknown
        seen.add(id(binding))
        value = _bound_value(binding.statement, binding.value)
        if value is None:
            return
        if forward is None and self._engine_rebound(key, value):
            return  # `model = convert(model, ...)` on the engine: the name still holds the engine, not its output
        self._sources(value, found, depth + 1, seen, forward)

    def _engine_rebound(self, key: str, value: cst.CSTNode) -> bool:
        """`key = helper(key, ...)` where `key` holds an engine before: the engine passed through a conversion
        or wrapping function and bound back to its own name."""
        if not isinstance(value, cst.Call):
            return False
        for arg in value.args:
            if arg.keyword is None and dotted_name(arg.value) == key:
                answer = self.facts.role_of(arg.value)
                return answer is not None and answer.role in ENGINE_ROLES
        return False

    # --- accumulation tests -----------------------------------------------------------------------------------
    def accumulation_test(self, node: cst.CSTNode) -> cst.If | None:
        """The innermost `if <modulo test>:` whose body (not its `else`) holds `node` in the same loop iteration.

        A loop inside the `if` body between the test and `node` (`if epoch % 2 == 0: for batch in ...:`) means
        `node` runs on every iteration of that inner loop: then it is not under an accumulation test.
        """
        pos = self.facts.start(node)
        best: tuple[cst.If, Pos] | None = None
        for branch, lo, hi in self.accumulation_ifs:
            if lo <= pos < hi and (best is None or lo > best[1]):
                best = (branch, lo)
        if best is None:
            return None
        test_body = best[1]
        if any(test_body <= lo and lo <= pos < hi for lo, hi in self.loop_bodies):
            return None
        if isinstance(node, cst.Call) and self._in_every_arm(best[0], node):
            return None  # the same statement in every arm of the test runs on every micro-step
        return best[0]

    def _in_every_arm(self, branch: cst.If, call: cst.Call) -> bool:
        """`call` is a statement of its own directly in `branch`'s body, and every other arm (`elif`s and a final
        `else`, which must exist) holds the same statement directly in its block."""
        line = self.facts.lone_expression_statement(call)
        if line is None or not any(other is line for other in _block_lines(branch.body)):
            return False
        text = _code(line.body[0])
        arm: cst.If | cst.Else | None = branch.orelse
        while arm is not None:
            if not any(
                isinstance(other, cst.SimpleStatementLine) and len(other.body) == 1 and _code(other.body[0]) == text
                for other in _block_lines(arm.body)
            ):
                return False
            if isinstance(arm, cst.Else):
                return True
            arm = arm.orelse
        return False

    def after_initialize(self, engine: Engine | None, node: cst.CSTNode) -> bool:
        """Whether `node` runs after `engine` is created: later in the same function, or in another function
        (which setup code such as `initialize` is assumed to precede), or anywhere for an engine from elsewhere."""
        if engine is None:
            return False
        init = self.facts.initialize_of(engine)
        return init is None or init.scope is not self.facts.scope_at(node) or self.facts.start(node) >= init.end

    # --- the engine's name ------------------------------------------------------------------------------------
    def certain_engine_name(self, engine: Engine | None, at: cst.CSTNode) -> str | None:
        """The one name that holds `engine` at `at`; None when there is none or more than one."""
        if engine is None:
            return None
        names = {key for key in self.facts.result_keys(engine, Role.ENGINE) if self._is_engine_here(key, engine, at)}
        if len(names) != 1:
            return None
        key = names.pop()
        scope = self.facts.scope_at(at)
        if key.startswith("self.") and scope.self_name is not None and scope.self_name != "self":
            key = scope.self_name + key[len("self") :]
        elif key.startswith("self.") and scope.self_name is None:
            return None
        return key

    def _is_engine_here(self, key: str, engine: Engine, at: cst.CSTNode) -> bool:
        facts = self.facts
        answer = facts.role_of_key(key, facts.scope_at(at), facts.start(at))
        return answer is not None and answer.role is Role.ENGINE and answer.engine is engine

    def engine_step_calls(
        self, engine: Engine | None, scope_node: cst.CSTNode, roles: tuple[Role, ...] = (Role.ENGINE,)
    ) -> list[cst.Call]:
        """`engine.step()` calls on `engine` inside the function (or module) `scope_node` (any engine: None;
        with `roles` including Role.OPTIMIZER, also `optimizer.step()` on the optimizer its initialize returned)."""
        lo, hi = self.facts.start(scope_node), self.facts.end(scope_node)
        found = []
        for call in self.calls:
            if method_name(call) != "step" or not (lo <= self.facts.start(call) < hi):
                continue
            assert isinstance(call.func, cst.Attribute)
            answer = self.facts.role_of(call.func.value, at=call)
            if answer is not None and answer.role in roles and (engine is None or answer.engine is engine):
                found.append(call)
        return found


def is_accumulation_test(test: cst.BaseExpression) -> bool:
    """`(i + 1) % n == 0`, `step % accum == 0`, `0 == (i + 1) % n`, also as one side of `and` / `or`."""
    if isinstance(test, cst.BooleanOperation):
        return is_accumulation_test(test.left) or is_accumulation_test(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not isinstance(target.operator, cst.Equal):
            return False
        sides = (test.left, target.comparator)
        return any(_is_modulo(a) and _is_zero(b) for a, b in (sides, sides[::-1]))
    return False


ACCUMULATION_WORDS = ("accum", "grad_acc", "gradient_acc")
# `update_freq`: fairseq's name for it, kept by the BEiT/MAE family of training scripts.
ACCUMULATION_NAMES = frozenset({"gas", "ga_steps", "accumulation_steps", "gradient_accumulation_steps", "update_freq"})


def is_accumulation_steps(node: cst.BaseExpression) -> bool:
    """`args.gradient_accumulation_steps`, `accum_steps`, `gas`, `engine.gradient_accumulation_steps()`,
    `config["gradient_accumulation_steps"]` (a mapping's entry named so)."""
    if isinstance(node, cst.Call) and not node.args:
        node = node.func
    if (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and isinstance(node.slice[0].slice.value, cst.SimpleString)
    ):
        key = node.slice[0].slice.value.evaluated_value
        return isinstance(key, str) and _accumulation_word(key)
    name = dotted_name(node)
    if name is None:
        return False
    return _accumulation_word(name.split(".")[-1])


def _accumulation_word(word: str) -> bool:
    last = word.lower()
    return last in ACCUMULATION_NAMES or any(word in last for word in ACCUMULATION_WORDS)


def divided_by_accumulation(node: cst.BaseExpression) -> cst.BinaryOperation | None:
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Divide)
        and is_accumulation_steps(node.right)
    ):
        return node
    return None


def scaled_for_accumulation(facts: ScriptFacts, expr: cst.BaseExpression) -> bool:
    """Whether `expr` is, or names in its own function, a loss divided by the accumulation steps."""
    if divided_by_accumulation(expr) is not None:
        return True
    binding = facts.local_binding(expr)
    if binding is None:
        return False
    statement = binding.statement
    if isinstance(statement, cst.AugAssign):
        return isinstance(statement.operator, cst.DivideAssign) and is_accumulation_steps(statement.value)
    return binding.value is not None and divided_by_accumulation(binding.value) is not None


def _is_modulo(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 0


def _engine_key(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    key = dotted_name(func) or ""
    return key[: -len(".module")] if key.endswith(".module") else key


def _bound_value(statement: cst.CSTNode | None, value: cst.BaseExpression | None) -> cst.CSTNode | None:
    """What a binding was computed from: the assigned value, or the whole right side of a tuple assignment."""
    if isinstance(statement, cst.AugAssign):
        return statement  # `loss /= n` computes from the previous `loss` and `n`
    if value is not None:
        return value
    if isinstance(statement, (cst.Assign, cst.AnnAssign)):
        return statement.value
    if isinstance(statement, cst.For):
        return statement.iter
    return None


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node of `node` (itself first), not descending into lambdas, comprehensions' own scopes or defs."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)  # exact types: libcst's classes have no subclasses (no ABCMeta check per node)
        if type(current) is cst.Call and method_name(current) in GRAPH_CUTTING_METHODS:
            continue  # `fake.detach()`: a value computed from it is no longer the engine's output
        yield current
        if kind is cst.Lambda or kind is cst.FunctionDef or kind is cst.ClassDef:
            continue
        if isinstance(current, cst.Attribute):
            # `outputs.loss`: the base is what holds a value; the attribute name is not a variable.
            stack.append(current.value)
            continue
        stack.extend(reversed(children(current)))


class _Collector(cst.CSTVisitor):
    def __init__(self, loop: LoopFacts) -> None:
        super().__init__()
        self.loop = loop

    def visit_If(self, node: cst.If) -> None:
        test = node.test
        if isinstance(test, cst.Name):  # `should_step = step % accum == 0` ... `if should_step:`
            binding = self.loop.facts.local_binding(test)
            test = binding.value if binding is not None and binding.value is not None else test
        if is_accumulation_test(test):
            facts = self.loop.facts
            self.loop.accumulation_ifs.append((node, facts.start(node.body), facts.end(node.body)))

    def visit_Call(self, node: cst.Call) -> None:
        self.loop.calls.append(node)

    def visit_For(self, node: cst.For) -> None:
        self.loop.loop_bodies.append((self.loop.facts.start(node.body), self.loop.facts.end(node.body)))

    def visit_While(self, node: cst.While) -> None:
        self.loop.loop_bodies.append((self.loop.facts.start(node.body), self.loop.facts.end(node.body)))


_CACHE: weakref.WeakKeyDictionary[ScriptFacts, LoopFacts] = weakref.WeakKeyDictionary()


def loop_facts(facts: ScriptFacts) -> LoopFacts:
    """The loop facts of a file, computed once and shared by every rule that asks."""
    cached = _CACHE.get(facts)
    if cached is None:
        cached = LoopFacts(facts)
        visit_tree(facts.module, _Collector(cached))
        _CACHE[facts] = cached
    return cached


def _block_lines(block: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [block] if isinstance(block, cst.SimpleStatementSuite) else []


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


# what a training loop wraps its loader in (`enumerate(tqdm(loader))`)
LOADER_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "iter"})


def unwrapped_loader(expression: cst.BaseExpression) -> cst.BaseExpression:
    """The loader inside `enumerate(tqdm(loader, ...))` (the expression itself when it wraps nothing)."""
    while isinstance(expression, cst.Call) and dotted_name(expression.func) in LOADER_WRAPPERS and expression.args:
        expression = expression.args[0].value
    return expression

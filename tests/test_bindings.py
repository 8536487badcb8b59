"""The one binding model (dslint.model.bindings): scopes and bindings read from CPython's tree, and the per-file
script facts as a view over it (laid over libcst's nodes by dslint.script.collect)."""

from __future__ import annotations

import ast
import sys
import textwrap

import libcst as cst
import libcst.matchers as m
import pytest

from dslint.model.bindings import BindingKind, Bindings, Scope, ScopeKind, module_bindings
from dslint.script.collect import collect_facts
from dslint.script.facts import Role, ScriptFacts


def _at(node: ast.AST, end: bool = False) -> int:
    if end:
        return getattr(node, "end_lineno", 0) * 10_000 + getattr(node, "end_col_offset", 0)
    return getattr(node, "lineno", 0) * 10_000 + getattr(node, "col_offset", 0)


def placed(code: str) -> tuple[ast.Module, Bindings]:
    """The table laid over CPython's own tree, positions from its line and column (the model alone)."""
    tree = ast.parse(textwrap.dedent(code))
    table = module_bindings(tree)
    table.place(lambda node: node, _at, lambda node: _at(node, end=True), lambda statement: statement.value)
    for binding in table.every:
        table.enter(binding)
    return tree, table


def scope_named(table: Bindings, name: str) -> Scope:
    return next(s for s in table.scopes.values() if s.node.name == name)


def line(number: int) -> int:
    return number * 10_000


def test_latest_binding_before_the_place_read() -> None:
    _, table = placed(
        """\
        model = build()
        use(model)
        model = wrap(model)
        """
    )
    first = table.binding_at("model", table.module_scope, line(2))
    second = table.binding_at("model", table.module_scope, line(4))
    assert first is not None and isinstance(first.value, ast.Call) and ast.unparse(first.value) == "build()"
    assert second is not None and ast.unparse(second.value) == "wrap(model)"
    assert table.binding_at("model", table.module_scope, line(1)) is None


def test_an_except_handlers_fallback_gives_way_to_the_try_after_the_handler() -> None:
    """`try: engine = initialize(...)` / `except: engine = model`: in the handler the fallback is the name's value;
    after it, the `try`'s binding (the path where initialize succeeded). A name the `try` binds to something else
    keeps the handler's value after it (`except: tag = 0`)."""
    _, table = placed(
        """\
        try:
            tag = latest()
        except Exception:
            tag = 0
            use(tag)
        use(tag)
        """
    )
    after = table.binding_at("tag", table.module_scope, line(6))
    assert after is not None and ast.unparse(after.value) == "0"
    facts = facts_of(
        """\
        import deepspeed
        try:
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
        except Exception:
            engine = model
            engine.train()
        engine.train()
        """
    )
    inside, after_handler = names(facts, "engine")[-2:]
    assert facts.role_of(inside) is None or facts.role_of(inside).role is not Role.ENGINE
    answer = facts.role_of(after_handler)
    assert answer is not None and answer.role is Role.ENGINE


def test_global_sends_the_binding_to_the_module() -> None:
    _, table = placed(
        """\
        engine = None
        def setup():
            global engine
            engine = make()
        def train():
            return engine
        """
    )
    found = table.module_scope.bindings["engine"]
    assert [ast.unparse(b.value) for b in found] == ["None", "make()"]
    assert found[1].scope is scope_named(table, "setup")  # made in setup, held by the module
    assert "engine" not in scope_named(table, "setup").bindings
    # read from another function: two plain bindings, so unknown
    assert table.binding_at("engine", scope_named(table, "train"), line(6)) is None


def test_self_attribute_from_another_method_whatever_self_is_called() -> None:
    _, table = placed(
        """\
        class Trainer:
            def setup(this):
                this.engine = make()
            def run(self):
                self.engine.step()
        """
    )
    run = scope_named(table, "run")
    found = table.binding_at("self.engine", run, line(5))
    assert found is not None and found.key == "self.engine" and found.scope is scope_named(table, "setup")
    assert scope_named(table, "Trainer").attribute_bindings["self.engine"] == [found]


def test_class_body_is_not_seen_from_its_methods() -> None:
    _, table = placed(
        """\
        class Config:
            stage = 3
            def read(self):
                return stage
        """
    )
    assert table.binding_at("stage", scope_named(table, "read"), line(4)) is None
    assert table.binding_at("stage", scope_named(table, "Config"), line(3)) is not None


def test_parameters_walrus_and_unpacking() -> None:
    _, table = placed(
        """\
        def step(model, *batches, scale=1, **options):
            first, *rest, last = batches
            values = [y for x in rest if (y := x)]
            run = lambda inner: inner
        """
    )
    scope = scope_named(table, "step")
    assert scope.kind is ScopeKind.FUNCTION and scope.self_name is None
    params = [k for k, found in scope.bindings.items() if found[0].kind is BindingKind.PARAMETER]
    assert params == ["model", "scale", "batches", "options"]
    assert [scope.bindings[k][0].element for k in ("first", "last")] == [(0, 3, 1), (2, 3, 1)]
    assert scope.bindings["rest"][0].element is None  # the starred one: a plain binding
    assert "y" in scope.bindings  # a walrus in a comprehension binds in the function
    assert "inner" not in scope.bindings and "x" not in scope.bindings  # nor lambdas nor comprehensions


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11's")
def test_except_star_binds_nothing_plain_except_does() -> None:
    _, table = placed(
        """\
        try:
            run()
        except* ValueError as group:
            pass
        try:
            run()
        except OSError as error:
            pass
        """
    )
    assert "group" not in table.module_scope.bindings and "error" in table.module_scope.bindings


# --- the per-file view -----------------------------------------------------------------------------------------
def facts_of(code: str, tree: ast.Module | None = None) -> ScriptFacts:
    return collect_facts(cst.parse_module(textwrap.dedent(code)), None, tree)


def names(facts: ScriptFacts, text: str) -> list[cst.CSTNode]:
    found = [node for node in m.findall(facts.module, m.Name() | m.Attribute()) if facts.code(node) == text]
    return sorted(found, key=facts.start)


DECORATED = """\
import deepspeed

@decorate(lambda: None)
def outer(model):
    @staticmethod
    def inner(value=(size := 3)):
        return value
    print(f"{(label := 'x')}")
    results = deepspeed.initialize(model=model)
    with open(path) as handle, lock:
        data = handle.read()
    return results, size, label, data
"""


def test_the_view_holds_libcst_nodes_at_the_traversal_s_positions() -> None:
    facts = facts_of(DECORATED)
    returned = names(facts, "label")[-1]
    scope = facts.scope_at(returned)
    assert isinstance(scope.node, cst.FunctionDef) and scope.node.name.value == "outer"
    value = names(facts, "value")[-1]
    parameter = facts.binding_at("value", facts.scope_at(value), facts.start(value))
    assert parameter is not None and parameter.kind is BindingKind.PARAMETER
    assert isinstance(parameter.statement, cst.FunctionDef) and parameter.statement.name.value == "inner"
    label = facts.binding_at("label", scope, facts.start(names(facts, "label")[-1]))
    assert label is not None and facts.code(label.value) == "'x'"
    handle = facts.binding_at("handle", scope, facts.start(names(facts, "handle")[-1]))
    assert handle is not None and isinstance(handle.statement, cst.WithItem)
    results = facts.binding_at("results", scope, facts.start(names(facts, "results")[-1]))
    assert results is not None and results.kind is BindingKind.INIT_TUPLE
    assert results.engine is facts.initialize_calls[0].engine


def test_an_alias_of_initialize_s_results_read_in_a_later_function() -> None:
    facts = facts_of(
        """\
        import deepspeed
        results = deepspeed.initialize(model=net)
        def train():
            alias = results
            alias[0].backward(loss)
        """
    )
    engine = next(n for n in m.findall(facts.module, m.Subscript()) if facts.code(n) == "alias[0]")
    answer = facts.role_of(engine)
    assert answer is not None and answer.role is Role.ENGINE and answer.init is facts.initialize_calls[0]


def test_trees_that_do_not_pair_leave_scopes_and_no_binding() -> None:
    code = """\
    def train(model):
        model = model.cuda()
        return model
    """
    other = ast.parse("def evaluate(model):\n    return model\n")
    facts = facts_of(code, other)
    read = names(facts, "model")[-1]
    scope = facts.scope_at(read)
    assert scope.kind is ScopeKind.FUNCTION and isinstance(scope.node, cst.FunctionDef)
    assert facts.binding_at("model", scope, facts.start(read)) is None
    paired = facts_of(code)
    found = paired.binding_at(
        "model", paired.scope_at(names(paired, "model")[-1]), paired.start(names(paired, "model")[-1])
    )
    assert found is not None and paired.code(found.value) == "model.cuda()"

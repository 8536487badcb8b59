"""Path exclusivity (`dslint/model/conditions.py`, `dslint/script/paths.py`): which places never share a path."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest

from dslint.model.conditions import guards_of
from dslint.script.collect import collect_facts

SOURCE = textwrap.dedent(
    """
    def f(args, zero3):
        if args.engine == "torch_ddp":
            a()
        else:
            b()
        if args.engine == "deepspeed":
            c()
        if not zero3:
            d()
        elif args.fast and zero3:
            e()
        if args.engine != "deepspeed":
            g()
            return
        h()
        if is_zero3_enabled():
            i()
        else:
            j()
        if args.rank == -1 or args.gpus > 1:
            k()
        l()
    """
)


def _calls() -> tuple[dict[str, cst.Call], object]:
    module = cst.parse_module(SOURCE)
    facts = collect_facts(module)
    found: dict[str, cst.Call] = {}

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and len(node.func.value) == 1:
                found[node.func.value] = node

    module.visit(Calls())
    return found, facts


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("a", "b", True),  # the two arms of one `if`
        ("a", "c", True),  # one subject equal to two constants
        ("b", "c", False),  # `!= "torch_ddp"` does not exclude `== "deepspeed"`
        ("d", "e", True),  # `zero3` false in the `if`, true in the `elif`
        ("g", "h", True),  # an early return: `h` runs only when `args.engine == "deepspeed"`
        ("c", "h", False),
        ("a", "h", True),
        ("i", "j", True),  # a call without arguments, tested both ways
        ("k", "l", False),  # `or` true tells nothing; `l` is after the `if`
        ("c", "c", False),
    ],
)
def test_exclusive_places(first: str, second: str, expected: bool) -> None:
    calls, facts = _calls()
    assert facts.paths.exclusive(calls[first], calls[second]) is expected  # type: ignore[attr-defined]


def test_the_project_model_reads_the_same_guards() -> None:
    """CPython's tree gives the same guards as libcst's, so a call's guards from another module compare."""
    tree = ast.parse(SOURCE)
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    by_name = {
        node.func.id: node
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.func.id) == 1
    }
    calls, facts = _calls()
    for name in "abcdeghijkl":
        assert guards_of(function.body, by_name[name]) == facts.paths.at(calls[name]), name  # type: ignore[attr-defined]


def _two_arms(code: str, tree: ast.Module | None = None) -> bool:
    module = cst.parse_module(textwrap.dedent(code))
    facts = collect_facts(module, tree=tree)
    calls = [node for node in facts.entered if isinstance(node, cst.Call)]
    return facts.paths.exclusive(calls[0], calls[1])


def test_constant_tests_are_subjects() -> None:
    """`if True:` and its `else:` never both run (CPython's tree reads `True` as libcst's reader did)."""
    assert _two_arms("if True:\n    a()\nelse:\n    b()\n")
    assert _two_arms("if cfg[-1] == 'x':\n    a()\nelse:\n    b()\n")


def test_guards_come_through_the_statement_pairing() -> None:
    """The guards are CPython's, laid over libcst's statements: trees that cannot be paired exclude nothing."""
    code = "if args.deepspeed:\n    a()\nelse:\n    b()\n"
    assert _two_arms(code)
    assert not _two_arms(code, tree=ast.parse("pass"))

"""Positions from one statement's code generation (`dslint/script/local_positions.py`) are libcst's own: on every
fixture script and on shapes that move columns (a tab, non-ASCII text before a node, bracket continuation lines
inside an indented block, a `;`, a one-line suite, a string spanning lines, a CRLF file, compound statements'
headers), every node a statement's table answers (a statement line's from its first and last statements') has the
range the whole module's pass gives it, and the shapes it cannot place fall back."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from fixture_support import FIXTURES

from dslint.script.collect import collect_facts
from dslint.script.facts import node_positions
from dslint.script.local_positions import NodePositions

SHAPES = {
    "tab_and_unicode": (
        "def f(model):\n\tif model:\n\t\tname = 'héllo wörld'; engine = deepspeed.initialize(model=model)\n"
        "\t\tx = g('日本', h(1))\n"
    ),
    "continuations": (
        "class A:\n    def f(self):\n        return {\n            'a': [x.index_select(1, o)],\n"
        "              'b': y.cuda(),  # c\n        }\n"
    ),
    "suite_and_semicolon": "if x: a = f(\n    1)\nb = 1; c = g(\n  2)\nfor i in r: h(i); k(i)\n",
    "strings": 'def f():\n    s = """one\n    two"""; t = u(s)\n    v = (w(1)\n         + w(2))\n',
    "crlf": "def f():\r\n    a = g(1,\r\n          2)\r\n    return a\r\n",
    "backslash": "x = a + \\\n    b(1)\nif y:\n    z = c(\\\n        2)\n",
    "compound_headers": (
        "# lead\n\nif f(1):  # c\n    # d\n    x = 1\nelif g(2):\n    y = 2\nelse:\n    pass\n"
        "def run():\n    for i in h(3):\n        while k(4):\n            break\n    with m(5) as n, (o(6)):\n"
        "        pass\n    try:\n        p()\n    except q(7):\n        pass\n"
    ),
}


def _compare(source: str) -> tuple[int, int]:
    """(nodes a statement's table answered, nodes that fell back); asserts every answer equals the whole pass."""
    data = source.encode("utf-8")
    module = cst.parse_module(data)
    facts = collect_facts(module, None, ast.parse(data))
    text = data.decode(module.encoding)
    facts.text = text[1:] if text.startswith("\ufeff") else text
    whole = node_positions(module)
    local = NodePositions(facts, lambda: pytest.fail("a lookup asked for the whole pass"))
    answered = fell = 0
    for node, expected in whole.items():
        found = local._line(node) if isinstance(node, cst.SimpleStatementLine) else local._local(node)
        if found is None:
            fell += 1
            continue
        answered += 1
        assert found == expected, (type(node).__name__, module.code_for_node(node)[:40])
    return answered, fell


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_that_move_columns(name: str) -> None:
    answered, _ = _compare(SHAPES[name])
    assert answered > 0


def test_a_compound_statements_header_is_read_from_its_own_table() -> None:
    """The calls in an `if`'s test, a `for`'s iterable, a `with`'s items, an `except`'s type: from the table of the
    compound statement holding them (its own comment lines counted before it); an `elif` (written `if` alone)
    falls back."""
    source = SHAPES["compound_headers"]
    module = cst.parse_module(source)
    facts = collect_facts(module, None, ast.parse(source))
    facts.text = source
    whole = node_positions(module)
    local = NodePositions(facts, lambda: pytest.fail("a lookup asked for the whole pass"))
    calls = {cst.ensure_type(c.func, cst.Name).value: c for c in _calls(module)}
    for name in ("f", "h", "k", "m", "o", "q"):
        assert local._local(calls[name]) == whole[calls[name]], name
    assert local._local(calls["g"]) is None


def _calls(module: cst.Module) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    module.visit(Calls())
    return found


def test_every_fixture_script() -> None:
    answered = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            ast.parse(source)
        except SyntaxError:
            continue  # the fixtures of DSL001
        answered += _compare(source)[0]
    assert answered > 10_000


def test_a_statement_after_a_semicolon_on_a_continuation_line_falls_back() -> None:
    """Its block's indentation is not what precedes it on its line: no table, the whole pass answers."""
    source = "def f():\n    a = g(1,\n          2); b = h(\n    3)\n"
    module = cst.parse_module(source)
    facts = collect_facts(module, None, ast.parse(source))
    facts.text = source
    second = next(c for c in facts.small_statement_of_call if cst.ensure_type(c.func, cst.Name).value == "h")
    local = NodePositions(facts, lambda: node_positions(module))
    assert local._local(second) is None
    assert local[second] == node_positions(module)[second]

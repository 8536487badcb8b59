"""dslint.model.required_arms: which arms of a branch the code after it needs (a name bound only there and read
after it on every path that goes on), each case both ways."""

from __future__ import annotations

import ast
import textwrap

import pytest

from dslint.model.required_arms import required_arms, scope_stores


def _needed(source: str, params: tuple[str, ...] = (), module_level: bool = False) -> list[int] | None:
    """The arms the first branch of `source` (a function body, or a module's) must have run."""
    body = ast.parse(textwrap.dedent(source)).body
    index, statement = next((i, s) for i, s in enumerate(body) if isinstance(s, (ast.If, ast.Try)))
    if isinstance(statement, ast.If):
        arms = [statement.body, statement.orelse]
    else:
        arms = [statement.body + statement.orelse, *(h.body for h in statement.handlers)]
    return required_arms(statement, arms, body[index + 1 :], scope_stores(body, params, module_level))


@pytest.mark.parametrize(
    ("source", "needed"),
    [
        ("if ds:\n    engine, opt = init()\nfor _ in range(3):\n    train(engine, opt)\n", [0]),
        ("if ds:\n    engine = init()\ntrain(engine)\n", [0]),
        ("if not ds:\n    pass\nelse:\n    engine = init()\nengine.step()\n", [1]),
        ("if ds:\n    engine = init()\nwith engine.ctx():\n    pass\n", [0]),
        ("if ds:\n    engine = init()\ntry:\n    engine.step()\nexcept ValueError:\n    pass\n", [0]),
        ("if ds:\n    engine = x()\nelif zero:\n    engine = y()\nelse:\n    engine = None\nuse(engine)\n", None),
        ("if ds:\n    if a:\n        engine = x()\n    else:\n        engine = y()\nuse(engine)\n", [0]),
        ("try:\n    engine = init()\nexcept ImportError:\n    pass\nuse(engine)\n", [0]),
    ],
    ids=["loop-body", "next-statement", "else-arm", "with-item", "try-body", "every-arm-binds", "nested-if", "try"],
)
def test_a_name_bound_in_some_arms_and_read_after_on_every_path(source: str, needed: list[int] | None) -> None:
    assert _needed(source) == needed


@pytest.mark.parametrize(
    "source",
    [
        "if ds:\n    engine = init()\nif ds:\n    engine.step()\n",  # read only under a later branch
        "if ds:\n    engine = init()\nok = ds and engine.step()\n",  # the right of `and`
        "if ds:\n    engine = init()\nx = engine.step() if ds else None\n",  # an arm of `x if c else y`
        "if ds:\n    engine = init()\nreturn 1\nuse(engine)\n",  # after a return
        "engine = None\nif ds:\n    engine = init()\nuse(engine)\n",  # bound before
        "if ds:\n    engine = init()\nuse(engine)\nengine = other()\n",  # bound again elsewhere in the scope
        "for engine in engines:\n    pass\nif ds:\n    engine = init()\nuse(engine)\n",  # a loop target
        "from models import engine\nif ds:\n    engine = init()\nuse(engine)\n",  # an import
        "global engine\nif ds:\n    engine = init()\nuse(engine)\n",  # a global
        "if ds:\n    engine = init()\ntry:\n    pass\nexcept ValueError:\n    use(engine)\n",  # an except arm
        "if ds:\n    engine = init()\nf = lambda: engine\n",  # a lambda's body runs later, if ever
        "if ds:\n    engine = init()\nuse([engine for _ in xs])\n",  # a comprehension's element, maybe never
        "if ds:\n    engine = init()\n",  # nothing after
    ],
)
def test_no_arm_is_required(source: str) -> None:
    assert _needed(source) is None


def test_parameters_and_star_imports_may_bind_the_name() -> None:
    source = "if ds:\n    engine = init()\nuse(engine)\n"
    assert _needed(source) == [0]
    assert _needed(source, params=("engine",)) is None, "a parameter is bound on entry"
    assert _needed("from helpers import *\n" + source, module_level=True) is None, "the star import may define it"
    assert _needed(source, module_level=True) == [0]

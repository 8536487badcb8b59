"""The engine as a typed value (`dslint.model.engine.Engine`): a rule asks the script facts whether an expression
is the engine there and gets the engine with its origin: this file's call, a caller, a helper's return, an
attribute of a project class's instance; only a real `deepspeed.initialize(...)` of the file is an
`InitializeCall`. Read over fixtures/projects/travel, where each way is written with a silent twin."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from fixture_support import FIXTURES

from dslint.lint.files import discover
from dslint.model.engine import Origin
from dslint.project.index import build_project_index
from dslint.script.collect import collect_facts
from dslint.script.facts import Role, RoleAnswer, ScriptFacts

TRAVEL = FIXTURES / "projects" / "travel"


@pytest.fixture(scope="module")
def travel() -> dict[str, ScriptFacts]:
    files = discover([str(TRAVEL)]).files
    index = build_project_index(files, [str(TRAVEL)])
    found = {}
    for name in ("train.py", "by_parameter.py", "by_attribute.py", "deep.py"):
        path = TRAVEL / name
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        found[name] = collect_facts(module, index.facts_for(path))
    return found


def _receiver(facts: ScriptFacts, receiver: str, line_text: str = "") -> RoleAnswer | None:
    """What the receiver of the `<receiver>.load_checkpoint(...)` call (on a line holding `line_text`) is."""
    lines = facts.module.code.splitlines()
    for call in facts.statement_of_call:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "load_checkpoint"):
            continue
        if facts.code(func.value) != receiver:
            continue
        position = facts.call_position(call)
        if position is not None and line_text in lines[position[0] - 1]:
            return facts.role_of(func.value, at=call)
    raise AssertionError(f"no {receiver}.load_checkpoint(...)")


def test_an_engine_made_here_is_this_files_call(travel: dict[str, ScriptFacts]) -> None:
    facts = travel["train.py"]
    inits = facts.initialize_calls
    assert len(inits) == 2 and all(init.engine.origin is Origin.CALL for init in inits)
    seen = 0
    for call in facts.statement_of_call:
        if facts.code(call) == "second(torch.zeros(2, 4))":
            found = facts.role_of(call.func, at=call)
            assert found is not None and found.role is Role.ENGINE
            assert found.engine is inits[1].engine and found.init is inits[1]
            assert found.engine.site is None and not found.engine.elsewhere
            seen += 1
    assert seen == 1


def test_an_engine_from_a_helpers_return(travel: dict[str, ScriptFacts]) -> None:
    for receiver in ("built", "first", 'state["engine"]', "deep_engine"):
        answer = _receiver(travel["train.py"], receiver)
        assert answer is not None and answer.role is Role.ENGINE, receiver
        engine = answer.engine
        assert engine.origin is Origin.RETURN and answer.init is None, receiver
        assert engine.site is not None and engine.site.message.startswith("deepspeed.initialize inside ")
        assert engine.created == (engine.site.path, engine.site.line, engine.site.column)
    # the twins: a helper that returns the plain model on one path, a list whose first item may not be the engine
    assert _receiver(travel["train.py"], "maybe") is None
    assert _receiver(travel["train.py"], "other") is None


def test_an_engine_from_the_callers(travel: dict[str, ScriptFacts]) -> None:
    answer = _receiver(travel["by_parameter.py"], "engine")
    assert answer is not None and answer.role is Role.ENGINE and answer.init is None
    engine = answer.engine
    assert engine.origin is Origin.CALLER
    assert engine.site is not None and Path(engine.site.path).name == "train.py"  # the call that passes it
    assert engine.created is not None and Path(engine.created[0]).name == "train.py"
    assert engine.created[1] == _line_of(TRAVEL / "train.py", "engine, _, _, _ = deepspeed.initialize(")
    assert _receiver(travel["by_parameter.py"], "model") is None  # one call passes the plain model
    three = _receiver(travel["deep.py"], "engine")
    assert three is not None and three.engine.origin is Origin.CALLER


def test_an_engine_from_an_instances_attribute(travel: dict[str, ScriptFacts]) -> None:
    answer = _receiver(travel["train.py"], "pair.policy")
    assert answer is not None and answer.role is Role.ENGINE and answer.engine.origin is Origin.ATTRIBUTE
    assert answer.engine.site is not None and Path(answer.engine.site.path).name == "by_return.py"
    assert _receiver(travel["train.py"], "pair.critic") is None
    held = _receiver(travel["by_attribute.py"], "self.engine", "DSL205")
    assert held is not None and held.engine.origin is Origin.CALLER  # `Holder(engine)`: self.engine = engine


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)

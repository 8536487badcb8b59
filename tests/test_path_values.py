"""The paths a script builds from literals and its own location (dslint.script.path_values), and None for any
part read at run time."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from dslint.script.collect import collect_facts
from dslint.script.path_values import path_value

CASES = [
    ('"configs/ds.json"', "configs/ds.json"),
    ('Path(__file__).parent / "ds.json"', "ds.json"),
    ('Path(__file__).resolve().parent.parent / "configs" / "ds.json"', "../configs/ds.json"),
    ('str(Path(__file__).parent.parent.parent / "configs" / "train" / "ds.json")', "../../configs/train/ds.json"),
    ('os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "ds.json")', "configs/ds.json"),
    ('os.path.join(os.path.dirname(__file__), "..", "ds.json")', "../ds.json"),
    ('Path(__file__).parent.joinpath("ds.json")', "ds.json"),
    ("HERE / 'ds.json'", "ds.json"),  # a name bound to the script's folder
    ('"/data/ds.json"', "/data/ds.json"),
    # read at run time: not guessed
    ('os.path.join(os.getcwd(), "ds.json")', None),
    ('os.path.join(args.config_dir, "ds.json")', None),
    ('Path(os.environ["CONFIGS"]) / "ds.json"', None),
    ("args.deepspeed", None),
    ('f"{root}/ds.json"', None),
]


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_path_value(expression: str, expected: str | None) -> None:
    source = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        HERE = Path(__file__).parent
        config = {expression}
        """
    )
    module = cst.parse_module(source)
    facts = collect_facts(module, None)
    statement = module.body[-1]
    assert isinstance(statement, cst.SimpleStatementLine)
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    assert path_value(facts, assign.value, "src/train.py") == expected

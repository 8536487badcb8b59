"""`script/config_loads`: the file a config dict is read from in the script itself, through a loader of the
module or directly; loaders that call each other (or themselves) end."""

from __future__ import annotations

import libcst as cst

from dslint.script.collect import collect_facts
from dslint.script.config_loads import loaded_path


def _value_of(source: str, name: str) -> tuple[cst.BaseExpression | None, object]:
    module = cst.parse_module(source)
    facts = collect_facts(module)
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign):
            assign = statement.body[0]
            if isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == name:
                return loaded_path(facts, assign.value), facts
    raise AssertionError(name)


def test_a_loader_of_the_module_reads_the_path_it_is_given() -> None:
    source = (
        "import json, os\n"
        "def get_ds_config(filepath):\n"
        "    data = json.load(open(filepath, 'r'))\n"
        "    return data\n"
        "cfg = get_ds_config(os.path.join(os.path.dirname(__file__), 'ds.json'))\n"
    )
    path, _ = _value_of(source, "cfg")
    assert isinstance(path, cst.SimpleString) and path.evaluated_value == "ds.json"


def test_loaders_calling_each_other_end() -> None:
    """One-parameter functions returning each other's calls (or their own) are no loaders, and reading them ends
    (it once recursed without end on a script whose `get_ds_config(args)` returned another helper's call)."""
    source = (
        "def get_ds_config(args):\n"
        "    return build(args)\n"
        "def build(args):\n"
        "    return get_ds_config(args)\n"
        "def again(args):\n"
        "    return again(args)\n"
        "cfg = get_ds_config(args)\n"
        "other = again(args)\n"
    )
    assert _value_of(source, "cfg")[0] is None
    assert _value_of(source, "other")[0] is None


def test_a_write_mode_open_is_no_read() -> None:
    source = "import json\ncfg = json.load(open('ds.json', 'w'))\n"
    assert _value_of(source, "cfg")[0] is None

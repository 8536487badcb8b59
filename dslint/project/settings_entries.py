"""An entry of a settings file the script reads by a written path: the DeepSpeed config path a project keeps in its
own YAML or JSON settings.

    with open("configs/sft_config.yaml") as f:
        sft_conf = yaml.safe_load(f)["sft"]
    TrainingArguments(..., deepspeed=sft_conf.get("deepspeed"))      # "configs/ds_config.json", from the YAML

The chain is read back from the expression: `x["key"]` and `x.get("key")` / `x.get("key", default)` (the entry
when the file has it, else a literal default), names bound once to such an expression or to a load
(`yaml.safe_load`, `json.load` of an `open(...)` of a path `path_values` reads). A settings dict the script writes
into, or an entry that is not a string, gives no answer. `config_link` asks where a config expression is no path
of its own.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from dslint.config.tree import UNKNOWN, Node, Object, ParseError, Scalar, to_python
from dslint.config.yaml_subset import parse_yaml_subset
from dslint.diagnostics import Location, Related
from dslint.project.config_access import config_path
from dslint.project.config_edits import literal_value, module_index
from dslint.project.inputs import is_file, read_input, shown_path
from dslint.script.config_loads import loaded_path
from dslint.script.facts import BindingKind
from dslint.script.path_values import path_value

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext

_DEPTH = 8  # entries and names followed, at most
_ABSENT = object()


def settings_entry(context: ScriptContext, node: cst.BaseExpression) -> tuple[str, Related | None] | None:
    """The string `node` reads from a settings file (see the module's docstring), with where the file writes it
    (the entry of that key holding that string, when one is found), or None."""
    if not isinstance(node, (cst.Subscript, cst.Call)):
        return None
    read: list[tuple[Path, Object]] = []
    value = _entry(context, node, 0, read)
    if not isinstance(value, str) or not value:
        return None
    key = _keyed(node)[0]
    for path, tree in read:
        written = _written(tree, key, value)
        if written is not None:
            return value, Related(shown_path(str(path)), written.line, written.column, f"{key}: {value}")
    return value, None


def _written(node: Node, key: object, value: str) -> Location | None:
    """Where an entry `key` holding the string `value` is written in a settings tree."""
    if not isinstance(node, Object):
        return None
    for entry in node.entries:
        if entry.key == key and isinstance(entry.value, Scalar) and entry.value.value == value:
            return entry.key_start
        found = _written(entry.value, key, value)
        if found is not None:
            return found
    return None


def _entry(context: ScriptContext, node: cst.BaseExpression, depth: int, read: list[tuple[Path, Object]]) -> object:
    if depth > _DEPTH:
        return _ABSENT
    facts = context.facts
    key, default, base = _keyed(node)
    if base is not None:
        mapping = _entry(context, base, depth + 1, read)
        if not isinstance(mapping, dict):
            return _ABSENT
        return mapping.get(key, default) if isinstance(key, str) else _ABSENT
    if isinstance(node, cst.Name):
        binding = facts.binding_at(node.value, facts.scope_at(node), facts.start(node))
        if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
            return _ABSENT
        if module_index(context.module).mutations.get(node.value):
            return _ABSENT  # the script writes into it
        return _entry(context, binding.value, depth + 1, read)
    opened = loaded_path(facts, node)
    written = path_value(facts, opened, context.path) if opened is not None else None
    return _read(config_path(context.path, written), read) if written else _ABSENT


def _keyed(node: cst.BaseExpression) -> tuple[object, object, cst.BaseExpression | None]:
    """(key, default, the mapping read) for `x["key"]` and `x.get("key"[, default])`; base None for neither."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return literal_value(node.slice[0].slice.value), _ABSENT, node.value
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "get"
        and 1 <= len(node.args) <= 2
        and all(arg.keyword is None and not arg.star for arg in node.args)
    ):
        default = literal_value(node.args[1].value) if len(node.args) == 2 else None
        return literal_value(node.args[0].value), _ABSENT if default is UNKNOWN else default, node.func.value
    return None, None, None


def _read(path: Path, read: list[tuple[Path, Object]]) -> object:
    """A JSON or YAML settings file's content, as plain values (each file parsed once per content: a script asks
    for every entry it reads, `_parsed`)."""
    if not is_file(str(path)) or path.suffix not in (".json", ".yaml", ".yml"):
        return _ABSENT
    data = read_input(str(path))
    if data is None:
        return _ABSENT
    parsed = _parsed(data, path.suffix == ".json")
    if not isinstance(parsed, Node):
        return parsed
    if isinstance(parsed, Object):
        read.append((path, parsed))
    return to_python(parsed)


@functools.lru_cache(maxsize=64)
def _parsed(data: bytes, is_json: bool) -> object:
    """The JSON value, or the YAML tree (`Object`, never changed by its readers), of a settings file's bytes."""
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text) if is_json else parse_yaml_subset(text)
    except (ValueError, ParseError):
        return _ABSENT

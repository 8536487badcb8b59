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
import os
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from dslint.config.facts import Origin
from dslint.config.recognition import is_deepspeed_config
from dslint.config.tree import UNKNOWN, Node, Object, ParseError, Scalar, parse_text, to_python
from dslint.config.yaml_subset import parse_yaml_subset
from dslint.diagnostics import Location, Related
from dslint.model.library import is_training_arguments_name
from dslint.project.config_access import checked_scope, config_path
from dslint.project.config_edits import literal_value, module_index
from dslint.project.inputs import generation, is_file, read_input, record, shown_path
from dslint.project.project_index import SKIPPED_DIRECTORIES
from dslint.project.resolved_configs import ResolvedConfig, launched_file
from dslint.project.splatted_arguments import splatted_entries
from dslint.script.config_loads import loaded_path
from dslint.script.facts import BindingKind
from dslint.script.names import dotted_name
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
    key = _keyed(node)[0]
    if (not isinstance(value, str) or not value) and not read and isinstance(key, str):
        return project_entry(context, key)  # a mapping not followed to its file: the project's settings agree
    if not isinstance(value, str) or not value:
        return None
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


def project_entry(context: ScriptContext, key: str) -> tuple[str, Related | None] | None:
    """The one config path the project's settings files write for `key` (an entry at any depth of a YAML or JSON
    file under the project's top, or the folder checked inside it: `training: {deepspeed: configs/ds.json}`),
    where a script reads `key` from a mapping dslint does not follow to its file (a YAML a launch option names,
    handed through a constructor; a dict splatted into `TrainingArguments(**settings)`), with where the first
    file writes it. None when no file writes it, they write different paths, or the path names no file."""
    found, read = _project_entries(str(checked_scope(Path(context.path).parent)), key, generation())
    for path in read:  # inputs of this answer each time it is given (the result cache), not only when first read
        record(path)
    if len({value for value, _ in found}) != 1:
        return None
    value, where = found[0]
    return (value, where) if is_file(str(config_path(context.path, value))) else None


def splatted_settings(context: ScriptContext, call: cst.Call, key: str) -> tuple[str, Related | None] | None:
    """`project_entry` for a `key` that `call` may take from a dict splatted into it whose entries are not known
    (`SFTConfig(**json.load(f))`, `TrainingArguments(**cfg)`), when no keyword of its own gives it."""
    if any(arg.keyword is not None and arg.keyword.value == key for arg in call.args):
        return None
    unknown = any(arg.star == "**" and splatted_entries(context, arg.value, call) is None for arg in call.args)
    return project_entry(context, key) if unknown else None


def splatted_trainer_configs(context: ScriptContext) -> list[ResolvedConfig]:
    """The config of each `*TrainingArguments(**settings)` whose dict dslint does not follow, where the project's
    settings files agree on its `deepspeed` (`splatted_settings`)."""
    found: list[ResolvedConfig] = []
    for call in module_index(context.module).calls:
        name = (dotted_name(call.func) or "").split(".")[-1]
        entry = splatted_settings(context, call, "deepspeed") if name and is_training_arguments_name(name) else None
        resolved = _entry_config(context, entry, Origin.TRAINER) if entry is not None else None
        found.extend([resolved] if resolved is not None else [])
    return found


def settings_config(context: ScriptContext, key: str, origin: Origin) -> ResolvedConfig | None:
    """The DeepSpeed config the project's settings files agree on for `key` (`project_entry`), read: for an
    attribute of a settings object dslint does not follow (`open(self.config.deepspeed_config)`)."""
    entry = project_entry(context, key)
    resolved = _entry_config(context, entry, origin) if entry is not None else None
    return resolved if resolved is not None and is_deepspeed_config(resolved.tree, True) else None  # type: ignore[arg-type]


def _entry_config(context: ScriptContext, entry: tuple[str, Related | None], origin: Origin) -> ResolvedConfig | None:
    """The config file an agreed settings entry names, read as a launched file is (`launched_file`)."""
    return launched_file(str(config_path(context.path, entry[0])), origin, (entry[1],) if entry[1] is not None else ())


_MAX_SETTINGS_FILES = 400
_MAX_SETTINGS_SIZE = 256 * 1024


@functools.lru_cache(maxsize=32)
def _project_entries(top: str, key: str, _generation: int) -> tuple[list[tuple[str, Related | None]], list[str]]:
    """Each string a settings file under `top` writes for `key`, naming a `.json` file, with where; and the folders
    and files read (`_settings_files`)."""
    texts, read = _settings_files(top, _generation)
    found: list[tuple[str, Related | None]] = []
    for path, data in texts:
        tree = _positioned(data, path.endswith(".json")) if key.encode() in data else None
        for value in _strings_of(to_python(tree), key) if tree is not None else ():
            if value.endswith(".json"):
                at = _written(tree, key, value)  # type: ignore[arg-type]
                shown = Related(shown_path(path), at.line, at.column, f"{key}: {value}") if at else None
                found.append((value, shown))
    return found, read


@functools.lru_cache(maxsize=4)
def _settings_files(top: str, _generation: int) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The settings files under `top` that may name a `.json` config (hidden, tool and environment folders skipped;
    at most _MAX_SETTINGS_FILES files of at most _MAX_SETTINGS_SIZE bytes read), with their bytes; and the folders
    and files read: walked and read once for every key asked, again for each project index (`inputs.generation`)."""
    texts: list[tuple[str, bytes]] = []
    read: list[str] = [top]
    seen = 0
    for directory, folders, files in os.walk(top):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_DIRECTORIES)
        for name in sorted(files):
            if not name.endswith((".yaml", ".yml", ".json")) or seen >= _MAX_SETTINGS_FILES:
                continue
            path = os.path.join(directory, name)
            seen += 1
            try:
                if os.path.getsize(path) > _MAX_SETTINGS_SIZE:
                    continue
            except OSError:
                continue
            data = read_input(path)
            read.append(path)
            if data is not None and b".json" in data:
                texts.append((path, data))
    return texts, read


def _positioned(data: bytes, is_json: bool) -> Object | None:
    """A settings file's tree with positions (JSON through the config reader, YAML through `_parsed`)."""
    if not is_json:
        parsed = _parsed(data, False)
        return parsed if isinstance(parsed, Object) else None
    try:
        tree = parse_text(data.decode("utf-8", errors="replace"), hjson=False)
    except ParseError:
        return None
    return tree if isinstance(tree, Object) else None


def _strings_of(value: object, key: str) -> list[str]:
    """The strings a parsed settings value holds for `key`, at any depth."""
    if isinstance(value, dict):
        own = [value[key]] if isinstance(value.get(key), str) else []
        return own + [s for inner in value.values() for s in _strings_of(inner, key)]
    if isinstance(value, list):
        return [s for inner in value for s in _strings_of(inner, key)]
    return []

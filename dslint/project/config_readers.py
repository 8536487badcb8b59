"""Configs handed to a framework that reads DeepSpeed's config for you, through a loader helper.

`DeepSpeedStrategy(config=cfg)` (PyTorch Lightning), `TrainingArguments(deepspeed=cfg)` and
`DeepSpeedPlugin(hf_ds_config=cfg)` (Hugging Face) are readers that fill some values before DeepSpeed sees the
config: the HF integrations fill "auto", Lightning sets `train_micro_batch_size_per_gpu` from the data loader when
the config lacks it (and `gradient_accumulation_steps` from its Trainer). When `cfg` is a file path literal, or a
name bound in the same function to the result of a loader helper (`cfg = get_ds_config(precision)`, defined in the
module or imported, through `from m import *` re-exports), the JSON files that helper names (a literal ending in
`.json`, resolved from the helper's own directory: `os.path.join(os.path.dirname(__file__), "ds.json")`) are read
by that framework. Only files that exist are recorded; nothing is guessed.
"""

from __future__ import annotations

import ast
import os
import re

from dslint.model.summary import SummaryStore
from dslint.project.inputs import is_file
from dslint.project.reader_calls import ParsedModules, own_nodes, reader_call, scopes

TOKENS = (b"DeepSpeedStrategy", b"DeepSpeedPlugin", b"TrainingArguments")
# A text test before parsing: a reader call with its config keyword given a name or a call (a literal path is
# `index._trainer_literals`'s), without a closing parenthesis between them.
_CANDIDATE = re.compile(
    rb"(?:DeepSpeedStrategy|DeepSpeedPlugin|TrainingArguments)\s*\([^)]*?\b(?:config|hf_ds_config|deepspeed)\s*=\s*\w"
)


def _json_literals(function: ast.AST) -> list[str]:
    return [
        node.value
        for node in ast.walk(function)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".json")
    ]


def _existing(name: str, directory: str) -> str | None:
    path = name if os.path.isabs(name) else os.path.join(directory, name)
    path = os.path.normpath(os.path.abspath(path))
    return path if is_file(path) else None


def framework_configs(sources: dict[str, bytes], store: SummaryStore | None = None) -> list[tuple[str, str, str]]:
    """(config path, reader, the script naming it) for each config file given to a framework reader through a
    literal or a loader helper; reader is "lightning" or "trainer"."""
    wanted = [
        path
        for path, data in sources.items()
        if any(token in data for token in TOKENS) and _CANDIDATE.search(data) is not None
    ]
    if not wanted:
        return []
    modules = ParsedModules(sources, store)
    found: list[tuple[str, str, str]] = []
    for path in wanted:
        tree = modules.tree(path)
        if tree is None:
            continue
        for scope in scopes(tree):
            nodes = list(own_nodes(scope))
            calls_by_name: dict[str, list[ast.Call]] = {}
            for node in nodes:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            calls_by_name.setdefault(target.id, []).append(node.value)
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                reader = reader_call(node, initialize=False)
                if reader is None:
                    continue
                value = next((k.value for k in node.keywords if k.arg == reader.keyword), None)
                for config in _configs_of(modules, path, value, calls_by_name):
                    found.append((config, reader.reader, path))
    return found


def _configs_of(
    modules: ParsedModules, path: str, value: ast.expr | None, calls_by_name: dict[str, list[ast.Call]]
) -> list[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        config = _existing(value.value, os.path.dirname(path))
        return [config] if config is not None else []
    calls: list[ast.Call] = []
    if isinstance(value, ast.Call):
        calls = [value]
    elif isinstance(value, ast.Name):
        calls = calls_by_name.get(value.id, [])
    configs: list[str] = []
    for call in calls:
        if not isinstance(call.func, ast.Name):
            continue
        helper = modules.function(path, call.func.id)
        if helper is None:
            continue
        helper_path, function = helper
        for name in _json_literals(function):
            config = _existing(name, os.path.dirname(helper_path))
            if config is not None:
                configs.append(config)
    return configs


def replaced_keys(data: bytes, option: str) -> frozenset[str] | None:
    """The top-level keys a script replaces in the config file it is given as `--option`, before the dict reaches
    `deepspeed.initialize(config=...)`: the script loads the file itself (`with open(args.<option>) as f:
    cfg = json.load(f)`, or `json.load(open(args.<option>))`), assigns `cfg["key"] = ...` later in the same
    function, and passes `cfg` as `config=` / `config_params=`. None when the script does not load the file so
    (DeepSpeed then reads the file as it stands)."""
    if option.encode() not in data or b"json" not in data:
        return None
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: set[str] | None = None
    for scope in scopes(tree):
        nodes = list(own_nodes(scope))
        loaded = _loaded_names(nodes, option)
        if not loaded:
            continue
        for name, line in loaded.items():
            given = _given_to_initialize(nodes, name)
            if given is None:
                continue
            keys = {
                target.slice.value
                for node in nodes
                if isinstance(node, ast.Assign) and line < node.lineno < given
                for target in node.targets
                if isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == name
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            }
            found = keys if found is None else found & keys
    return frozenset(found) if found is not None else None


def _opens_option(node: ast.expr | None, option: str) -> bool:
    """`open(<x>.<option>, ...)`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "open"
        and bool(node.args)
        and isinstance(node.args[0], ast.Attribute)
        and node.args[0].attr == option
    )


def _loaded_names(nodes: list[ast.AST], option: str) -> dict[str, int]:
    """Names bound to `json.load(...)` of the option's file: name -> line of the load."""
    handles = {
        item.optional_vars.id
        for node in nodes
        if isinstance(node, ast.With)
        for item in node.items
        if _opens_option(item.context_expr, option) and isinstance(item.optional_vars, ast.Name)
    }
    loaded: dict[str, int] = {}
    for node in nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "json"
            and value.func.attr in ("load", "loads")
            and value.args
        ):
            continue
        source = value.args[0]
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "read":
            source = source.func.value  # json.loads(f.read())
        if (isinstance(source, ast.Name) and source.id in handles) or _opens_option(source, option):
            loaded[node.targets[0].id] = node.lineno
    return loaded


def _given_to_initialize(nodes: list[ast.AST], name: str) -> int | None:
    """The line of the first `initialize(config=name)` (or `config_params=name`) call; None when there is none."""
    lines = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last != "initialize":
            continue
        if any(
            k.arg in ("config", "config_params") and isinstance(k.value, ast.Name) and k.value.id == name
            for k in node.keywords
        ):
            lines.append(node.lineno)
    return min(lines) if lines else None

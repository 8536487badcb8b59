"""Config files a launched script picks by a path written in its own code: read by that script (the config rules
check them as a launched file's, `ProjectIndex.config_chosen`), with the launch's world size where the launcher
says it (DSL407).

`deepspeed --include localhost:0 train.py --stage 1` with `cfg = f"dsconfig/stage_{args['stage']}.json"` in
train.py: that launch runs with `dsconfig/stage_1.json`, on one rank. The path is read as the launch gives it:
an f-string over the script's own options (`args["stage"]`, `args.size`), each part the launch's literal value or,
when the launch does not give the option, its argparse default; or, when the script builds no such path, the one
literal config path it writes (`"ds_config.json"`); or the entry of a module-level table of named setups the
launch's option picks (`ZERO_CONFIGS[args.config]`, `{"zero1": (..., "configs/zero1.json")}`). Several literal
paths, a part of unknown value (a variable, an option set at run time, no default), or a path naming no DeepSpeed
config file of the project: nothing is picked, nothing is guessed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dslint.config.recognition import mentions_strong_key
from dslint.model.summary import nodes_of
from dslint.project.script_parser import argparse_defaults
from dslint.project.shell_directories import UNKNOWN_VALUE

CONFIG_SUFFIXES = (".json", ".hjson")


@dataclass(frozen=True)
class ChosenConfig:
    path: str  # absolute
    how: str  # "train.py opens dsconfig/stage_1.json (--stage 1)"


def _option_name(node: ast.expr) -> str | None:
    """`args["stage"]`, `args.stage`, `self.args['stage']`: the option a formatted part reads."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        return node.attr
    return None


def _formatted(node: ast.JoinedStr, values: Callable[[str], str | None]) -> tuple[str, list[str]] | None:
    """The path an f-string writes with the launch's option values, and the options it read; None if unknown."""
    text: list[str] = []
    used: list[str] = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            text.append(part.value)
            continue
        if not isinstance(part, ast.FormattedValue) or part.format_spec is not None or part.conversion != -1:
            return None
        name = _option_name(part.value)
        value = values(name) if name is not None else None
        if name is None or value is None:
            return None
        text.append(value)
        used.append(name)
    return "".join(text), used


@dataclass(frozen=True)
class ScriptPaths:
    """What a script's code writes that may pick a config, whatever the launch: its argparse defaults, its
    f-strings (read per launch) and the literal config paths no option's default hands elsewhere."""

    defaults: dict[str, str]
    formatted: list[ast.JoinedStr]
    literals: dict[str, str]  # path -> how
    # `ZERO_CONFIGS[args.config]` of a module-level table `{"zero1": (..., "configs/zero1.json"), ...}`: each
    # lookup's option and, per key, the config paths its entry writes
    lookups: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)


def may_pick(source: bytes) -> bool:
    """The text test before any parse: `deepspeed` and a config suffix written somewhere in the script."""
    return b"deepspeed" in source and any(suffix.encode() in source for suffix in CONFIG_SUFFIXES)


def script_paths(
    source: bytes,
    script_name: str,
    reaches_reader: Callable[[str], bool] = lambda option: True,
    tree: ast.Module | None = None,
) -> ScriptPaths | None:
    """The launch-independent half of `chosen_configs` (None: the script picks nothing); `tree`: CPython's tree of
    `source` when the caller has it (the project's module summary), else `source` is parsed."""
    if not may_pick(source):
        return None
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    defaults = argparse_defaults(tree)
    literals: dict[str, str] = {}
    for node in nodes_of(tree, ast.Constant):
        if isinstance(node.value, str) and node.value.endswith(CONFIG_SUFFIXES):
            owners = [name for name, default in defaults.items() if default == node.value]
            if all(reaches_reader(name) for name in owners):
                literals.setdefault(node.value, f"{script_name} opens {node.value}")
    return ScriptPaths(defaults, nodes_of(tree, ast.JoinedStr), literals, _table_lookups(tree))


def _table_lookups(tree: ast.Module) -> list[tuple[str, dict[str, list[str]]]]:
    """The lookups of a module-level dict display keyed by strings, whose entries write config paths, by an
    option's value (`TABLE[args.config]`): the option, and each key's paths."""
    tables: dict[str, dict[str, list[str]]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.value, ast.Dict):
            target, table = statement.targets[0], statement.value
            entries = {
                key.value: [
                    str(n.value) for n in ast.walk(value) if isinstance(n, ast.Constant) and _config_path(n.value)
                ]
                for key, value in zip(table.keys, table.values, strict=True)
                if isinstance(key, ast.Constant) and isinstance(key.value, str)
            }
            if isinstance(target, ast.Name) and any(entries.values()):
                tables[target.id] = entries
    lookups: list[tuple[str, dict[str, list[str]]]] = []
    for node in nodes_of(tree, ast.Subscript) if tables else ():
        option = _option_name(node.slice)
        if isinstance(node.value, ast.Name) and node.value.id in tables and option is not None:
            lookups.append((option, tables[node.value.id]))
    return lookups


def _config_path(value: object) -> bool:
    return isinstance(value, str) and value.endswith(CONFIG_SUFFIXES)


def chosen_configs(
    source: bytes,
    script_name: str,
    options: Mapping[str, str | None],
    find: Callable[[str], str | None],
    read: Callable[[str], bytes | None],
    reaches_reader: Callable[[str], bool] = lambda option: True,
    paths: ScriptPaths | None = None,
) -> list[ChosenConfig]:
    """The DeepSpeed config files the script picks for a launch giving `options` (`--name value`, literal or
    UNKNOWN_VALUE). `find(path)`: the file a path written in the script names (absolute) or None; `read(path)`:
    its bytes; `reaches_reader(option)`: whether the script hands that option's value to a DeepSpeed reader (a
    literal path that is only an option's default, `--settings cfg/run.json` for the script's own loader, is
    not DeepSpeed's config when that option goes elsewhere). `paths`: `script_paths` of the same script, source
    and `reaches_reader`, when the caller keeps it for the script's launches (else it is read here)."""
    written = paths if paths is not None else script_paths(source, script_name, reaches_reader)
    if written is None:
        return []
    defaults = written.defaults

    def value(name: str) -> str | None:
        if name in options:
            given = options[name]
            return None if given is None or given == UNKNOWN_VALUE else given
        return defaults.get(name)

    built: dict[str, str] = {}
    for node in written.formatted:
        formatted = _formatted(node, value)
        if formatted is not None and formatted[1] and formatted[0].endswith(CONFIG_SUFFIXES):
            given = ", ".join(f"--{name} {value(name)}" for name in dict.fromkeys(formatted[1]))
            built.setdefault(formatted[0], f"{script_name} opens {formatted[0]} ({given})")
    for option, table in written.lookups:
        picked_key = value(option)
        for entry_path in table.get(picked_key, []) if picked_key is not None else []:
            built.setdefault(entry_path, f"{script_name} opens {entry_path} (--{option} {picked_key})")
    picked = built if built else written.literals
    found: list[ChosenConfig] = []
    for written_path, how in picked.items():
        path = find(written_path)
        data = read(path) if path is not None else None
        if path is not None and data is not None and mentions_strong_key(data):
            found.append(ChosenConfig(path, how))
    return found if built or len(found) == 1 else []

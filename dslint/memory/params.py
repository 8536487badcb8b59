"""The parameter count of a training script's model, without importing torch or transformers, and where it came
from.

In order: `--params` given by the user; a model-config literal in the script (`LlamaConfig(hidden_size=2048,
...)`, its values literals or module-level constants); a `from_pretrained("id-or-dir")` whose config.json is a
local directory or in the local Hugging Face cache; a config.json with a `model_type` beside the script. Anything
else is unknown, with the reason: a count is never guessed.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dslint.memory.architectures import (
    CAUSAL,
    CONFIG_CLASSES,
    HEADS,
    MODEL_CLASSES,
    NotCounted,
    count,
    head_of,
)

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMbBtT]?)\s*$")
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
MAX_CONFIG_JSON = 1 << 20


@dataclass(frozen=True)
class ParamCount:
    total: int | None  # None: unknown
    source: str  # where the count came from, or why it is unknown
    largest_layer: int | None = None
    model_type: str | None = None
    head: str | None = None

    @property
    def known(self) -> bool:
        return self.total is not None


def parse_size(text: str) -> int:
    """`7B`, `1.3b`, `125M`, `940640256` -> a whole number of parameters (ValueError otherwise)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a parameter count: {text!r} (write e.g. 7B, 125M or 940640256)")
    number, unit = match.groups()
    value = float(number) * _SCALE[unit.lower()]
    if value < 1:
        raise ValueError(f"not a parameter count: {text!r}")
    return round(value)


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names assigned one literal, once."""
    seen: dict[str, Any] = {}
    twice: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if target.id in seen:
            twice.add(target.id)
        try:
            seen[target.id] = ast.literal_eval(value)
        except ValueError:
            twice.add(target.id)
    return {name: value for name, value in seen.items() if name not in twice}


_NOT_LITERAL = object()


def _value(node: ast.expr, constants: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _NOT_LITERAL


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def _model_head(tree: ast.AST, model_type: str | None) -> tuple[str | None, str]:
    """The head of the model class the script builds (`LlamaForCausalLM(config)`,
    `AutoModelForCausalLM.from_config(config)`), and how it was found."""
    heads: dict[str, str] = {}
    for call in _calls(tree):
        function = call.func
        name = _name(function)
        if isinstance(function, ast.Attribute) and function.attr in ("from_config", "from_pretrained", "_from_config"):
            name = _name(function.value)
        if name in MODEL_CLASSES:
            wanted, head = MODEL_CLASSES[name]
            if wanted is None or model_type is None or wanted == model_type:
                heads.setdefault(head, f"{name} at line {call.lineno}")
    if len(heads) == 1:
        head, where = next(iter(heads.items()))
        return head, where
    return None, "several model classes" if heads else "no model class seen"


def _with_head(model_type: str, values: Mapping[str, Any], head: str | None, where: str, source: str) -> ParamCount:
    if head is None:
        if CAUSAL not in HEADS.get(model_type, ()):
            return ParamCount(None, f"{source}: the model class is not known ({where})")
        head, where = CAUSAL, f"{where}: counted as the causal-LM model"
    try:
        found = count(model_type, values, head)
    except NotCounted as reason:
        return ParamCount(None, f"{source}: {reason}")
    return ParamCount(found.total, f"{source} ({found.model_type}, {found.head}; {where})", found.largest_layer,
                      found.model_type, found.head)  # fmt: skip


def from_script(path: str | Path, source: bytes | str, roots: tuple[str, ...] = ()) -> ParamCount:
    """The parameter count a training script's own text gives."""
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ParamCount(None, f"{shown} does not parse")
    constants = _constants(tree)
    literals: list[tuple[str, dict[str, Any], int]] = []
    problems: list[str] = []
    for call in _calls(tree):
        name = _name(call.func)
        if name not in CONFIG_CLASSES:
            continue
        model_type = CONFIG_CLASSES[name]
        if call.args or any(keyword.arg is None for keyword in call.keywords):
            problems.append(f"{name}(...) at line {call.lineno} has positional or ** arguments")
            continue
        values: dict[str, Any] = {}
        for keyword in call.keywords:
            value = _value(keyword.value, constants)
            if value is _NOT_LITERAL:
                values[str(keyword.arg)] = f"not a literal at line {keyword.value.lineno}"
            else:
                values[str(keyword.arg)] = value
        literals.append((model_type, values, call.lineno))
    if literals:
        distinct = {(t, json.dumps(v, sort_keys=True, default=str)) for t, v, _ in literals}
        if len(distinct) > 1:
            lines = ", ".join(str(line) for _, _, line in literals)
            return ParamCount(None, f"{shown}: several different model configs (lines {lines})")
        model_type, values, line = literals[0]
        head, where = _model_head(tree, model_type)
        return _with_head(model_type, values, head, where, f"{shown}:{line}: {_config_name(model_type)}(...)")
    if problems:
        return ParamCount(None, f"{shown}: {problems[0]}")
    return _from_pretrained(tree, constants, Path(path), shown, roots)


def _config_name(model_type: str) -> str:
    return next(name for name, kind in CONFIG_CLASSES.items() if kind == model_type)


def _from_pretrained(
    tree: ast.Module, constants: Mapping[str, Any], path: Path, shown: str, roots: tuple[str, ...]
) -> ParamCount:
    ids: list[tuple[str, int]] = []
    for call in _calls(tree):
        function = call.func
        if not (isinstance(function, ast.Attribute) and function.attr == "from_pretrained" and call.args):
            continue
        owner = _name(function.value) or ""
        if not (owner in MODEL_CLASSES or owner in CONFIG_CLASSES or owner == "AutoConfig"):
            continue
        value = _value(call.args[0], constants)
        if isinstance(value, str) and value:
            ids.append((value, call.lineno))
    for model_id, line in ids:
        config = _local_config(model_id, path.parent, roots) or hub_cache_config(model_id)
        if config is not None:
            head, where = _model_head(tree, None)
            return _from_config_json(config, head, where, f"{shown}:{line}: from_pretrained({model_id!r}) -> ")
    if ids:
        model_id, line = ids[0]
        return ParamCount(
            None,
            f"{shown}:{line}: from_pretrained({model_id!r}): "
            "no config.json in the tree or the local Hugging Face cache",
        )
    beside = path.parent / "config.json"
    if beside.is_file():
        head, where = _model_head(tree, None)
        found = _from_config_json(beside, head, where, "")
        if found.known:
            return found
    return ParamCount(None, f"{shown}: no model config, from_pretrained id or config.json found (give --params)")


def _local_config(model_id: str, directory: Path, roots: tuple[str, ...]) -> Path | None:
    for base in (directory, Path.cwd(), *(Path(root) for root in roots)):
        candidate = base / model_id / "config.json"
        if candidate.is_file():
            return candidate
    return None


def hub_cache_config(model_id: str) -> Path | None:
    """The config.json of `model_id` in the local Hugging Face hub cache (refs/main's snapshot, else the only one)."""
    if model_id.count("/") > 1 or model_id.startswith((".", "/")):
        return None
    env = os.environ
    hub = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if not hub:
        home = env.get("HF_HOME") or os.path.join(
            env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
        )
        hub = os.path.join(home, "hub")
    folder = Path(hub) / ("models--" + model_id.replace("/", "--"))
    snapshots = folder / "snapshots"
    ref = folder / "refs" / "main"
    try:
        if ref.is_file():
            candidate = snapshots / ref.read_text(encoding="utf-8").strip() / "config.json"
            if candidate.is_file():
                return candidate
        found = sorted(snapshots.glob("*/config.json")) if snapshots.is_dir() else []
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def _from_config_json(path: Path, head: str | None, where: str, prefix: str) -> ParamCount:
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    source = f"{prefix}{shown}"
    try:
        if path.stat().st_size > MAX_CONFIG_JSON:
            return ParamCount(None, f"{source}: too large for a model config")
        values = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as error:
        return ParamCount(None, f"{source}: unreadable ({error})")
    if not isinstance(values, dict) or not isinstance(values.get("model_type"), str):
        return ParamCount(None, f"{source}: no model_type")
    declared = head_of(values.get("architectures"))
    if head is None and declared is not None:
        head, where = declared, f"architectures {values['architectures'][0]}"
    return _with_head(values["model_type"], values, head, where, source)

"""The link from a script's `deepspeed.initialize(...)` call to the DeepSpeed config it uses.

Rules of every family that depend on the ZeRO stage or the precision ask `resolve_config(context, init)`.
What is resolved statically: a dict literal passed as `config=` / `config_params=` (directly or through a name
bound to one), and a string path to a JSON file (relative to the script). Values that are not literals are
`UNKNOWN`; a question whose answer depends on one gets None, and rules then say "under ZeRO-3" rather than guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import libcst as cst

from dslint.script.facts import BindingKind, InitializeCall
from dslint.script.names import dotted_name

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext


class _Unknown:
    """A value that cannot be known without running the script."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class ResolvedConfig:
    """A DeepSpeed config as far as it can be read without running anything."""

    values: Mapping[str, Any]
    source: str  # a file path, or "dict literal at line N"
    path: Path | None = None

    def get(self, *keys: str) -> Any:
        """`get("zero_optimization", "stage")`; None when absent, UNKNOWN when not a literal."""
        current: Any = self.values
        for key in keys:
            if current is UNKNOWN:
                return UNKNOWN
            if not isinstance(current, Mapping):
                return None
            if key not in current:
                return None
            current = current[key]
        return current

    @property
    def zero_stage(self) -> int | None:
        """The stage DeepSpeed will run: absent section or key means 0; "auto" is dropped (0) outside the HF
        Trainer, but the Trainer fills it, so "auto" and non-literal values are unknown (None)."""
        section = self.get("zero_optimization")
        if section is None:
            return 0
        if not isinstance(section, Mapping):
            return None
        stage = section.get("stage", 0)
        if isinstance(stage, bool) or not isinstance(stage, int):
            return None
        return stage

    def _enabled(self, section_name: str) -> bool | None:
        section = self.get(section_name)
        if section is None:
            return False
        if not isinstance(section, Mapping):
            return None
        enabled = section.get("enabled", False)
        return enabled if isinstance(enabled, bool) else None

    @property
    def fp16_enabled(self) -> bool | None:
        return self._enabled("fp16")

    @property
    def bf16_enabled(self) -> bool | None:
        enabled = self._enabled("bf16")
        if enabled is False and self.get("bfloat16") is not None:
            return self._enabled("bfloat16")  # DeepSpeed's older spelling of the section
        return enabled


def literal_value(node: cst.BaseExpression) -> Any:
    """A Python value for a literal expression (dicts, lists, strings, numbers, True/False/None)."""
    if isinstance(node, cst.Dict):
        result: dict[str, Any] = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return UNKNOWN  # `**other`: the whole dict is unknowable
            key = literal_value(element.key)
            if not isinstance(key, str):
                return UNKNOWN
            result[key] = literal_value(element.value)
        return result
    if isinstance(node, (cst.List, cst.Tuple)):
        return [literal_value(e.value) if isinstance(e, cst.Element) else UNKNOWN for e in node.elements]
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else UNKNOWN
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    if isinstance(node, cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else UNKNOWN
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return UNKNOWN


def load_config_file(path: Path) -> Mapping[str, Any] | None:
    """Read a JSON (or, when the hjson package is present, HJSON) config file; None if unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError:
        try:
            import hjson  # type: ignore[import-untyped]
        except ImportError:
            return None
        try:
            loaded = hjson.loads(text)
        except Exception:
            return None
    return loaded if isinstance(loaded, Mapping) else None


def resolve_config(context: ScriptContext, init: InitializeCall) -> ResolvedConfig | None:
    """The config `init` uses, or None when it cannot be resolved statically."""
    expression = init.config
    if expression is None:
        return None
    return _resolve_expression(context, expression, depth=0)


def _resolve_expression(context: ScriptContext, node: cst.BaseExpression, depth: int) -> ResolvedConfig | None:
    if depth > 4:
        return None
    facts = context.facts
    if isinstance(node, cst.Dict):
        values = literal_value(node)
        if not isinstance(values, dict):
            return None
        return ResolvedConfig(values, f"dict literal at line {context.span(node)[0].line}")
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        if not isinstance(value, str):
            return None
        path = Path(value)
        if not path.is_absolute():
            path = Path(context.path).parent / path
        loaded = load_config_file(path)
        return ResolvedConfig(loaded, str(path), path) if loaded is not None else None
    key = dotted_name(node)
    if key is None:
        return None
    binding = facts.binding_at(key, facts.scope_at(node), facts.start(node))
    if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
        return None
    return _resolve_expression(context, binding.value, depth + 1)

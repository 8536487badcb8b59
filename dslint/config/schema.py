"""The committed snapshots of DeepSpeed's config schema (`schemas/<release>.json`, one per supported release, made
by `python -m dslint.config.generate_schema --all`), and the checks
that read it: which keys exist, which sections DeepSpeed validates, and whether a value passes pydantic's
(lax) validation of a field. Answers are three-valued where the value is not a literal: True, False, or None
(cannot tell, so rules stay silent).
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dslint.config.tree import UNKNOWN

SCHEMAS_DIR = Path(__file__).with_name("schemas")


def schema_releases() -> list[str]:
    """The releases with a committed schema (`0.14.5`, ...), oldest first."""
    names = [path.stem for path in SCHEMAS_DIR.glob("*.json")]
    return sorted(names, key=lambda name: tuple(int(part) for part in name.split(".")))


SCHEMA_PATH = SCHEMAS_DIR / f"{schema_releases()[-1]}.json"  # the newest release's
_BOOL_STRINGS = {"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"}


@dataclass(frozen=True)
class Field:
    name: str
    type: Mapping[str, Any]
    bounds: Mapping[str, float]
    alias: str | None
    deprecated: bool
    new_param: str | None


@dataclass(frozen=True)
class AcceptedStrings:
    """The only strings a top-level key takes (`communication_data_type`: fp16, bf16, fp32)."""

    values: tuple[str, ...]
    ignore_case: bool

    def accepts(self, value: str) -> bool:
        if self.ignore_case:
            return value.lower() in {v.lower() for v in self.values}
        return value in self.values


@dataclass(frozen=True)
class Model:
    name: str
    forbids_extra: bool
    fields: Mapping[str, Field]  # by every spelling DeepSpeed accepts (name and alias)

    def field(self, key: str) -> Field | None:
        return self.fields.get(key)

    def spellings(self) -> list[str]:
        return sorted(self.fields)


class Schema:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.version: str = data["deepspeed_version"]
        # DeepSpeed before 0.15 validates with pydantic 1, whose lax mode coerces more (`accepts`)
        self.pydantic: int = int(data.get("pydantic", 2))
        self.top_level_keys: frozenset[str] = frozenset(data["top_level_keys"])
        self.removed_top_level: Mapping[str, str] = data["removed_top_level_keys"]
        # Sections DeepSpeed reads as plain dicts at this release: the keys it asks for (None: read whole);
        # any other key there is ignored silently. Absent from schemas generated before it was recorded.
        self.read_section_keys: Mapping[str, list[str] | None] = data.get("read_section_keys", {})
        self.removed_zero: Mapping[str, str] = data["removed_zero_keys"]
        self.sections: Mapping[str, str] = data["validated_sections"]
        self.refused_value_kinds: Mapping[str, list[str]] = data["refused_value_kinds"]
        self.keys_read_only_by_initialize: list[str] = data["keys_read_only_by_initialize"]
        # Refused kinds whose falsy value (false, 0, "", []) DeepSpeed accepts: it tests the value for truth first.
        self.falsy_values_accepted: Mapping[str, list[str]] = data["falsy_values_accepted"]
        self.accepted_strings: Mapping[str, AcceptedStrings] = {
            key: AcceptedStrings(tuple(raw["values"]), bool(raw["ignore_case"]))
            for key, raw in data["accepted_strings"].items()
        }
        self.models: dict[str, Model] = {}
        for name, model in data["models"].items():
            fields: dict[str, Field] = {}
            for field_name, raw in model["fields"].items():
                bounds = {b: raw[b] for b in ("ge", "gt", "le", "lt") if b in raw}
                field = Field(
                    field_name,
                    raw["type"],
                    bounds,
                    raw.get("alias"),
                    bool(raw.get("deprecated")),
                    raw.get("new_param"),
                )
                fields[field_name] = field
                if field.alias:
                    fields[field.alias] = field
            self.models[name] = Model(name, model["extra"] == "forbid", fields)

    @property
    def live_top_level_keys(self) -> frozenset[str]:
        """Top-level keys DeepSpeed reads and uses (not the removed ones it only reads to refuse)."""
        return self.top_level_keys - frozenset(self.removed_top_level)

    def section_model(self, key: str) -> Model | None:
        name = self.sections.get(key)
        return self.models[name] if name is not None else None


@functools.cache
def load_schema() -> Schema:
    """The newest release's schema."""
    return Schema(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


@functools.cache
def load_release_schema(release: str) -> Schema:
    """The schema of one release with a committed snapshot (`schema_releases()`)."""
    path = SCHEMAS_DIR / f"{release}.json"
    return load_schema() if path == SCHEMA_PATH else Schema(json.loads(path.read_text(encoding="utf-8")))


def did_you_mean(key: str, candidates: list[str] | frozenset[str]) -> str | None:
    """The closest known spelling, compared without case and separators (`zero_optimisation`)."""

    def norm(text: str) -> str:
        return text.lower().replace("-", "_")

    by_norm = {norm(c): c for c in candidates}
    if norm(key) in by_norm:
        return by_norm[norm(key)]
    close = difflib.get_close_matches(norm(key), list(by_norm), n=1, cutoff=0.8)
    return by_norm[close[0]] if close else None


def _lax_int(value: Any) -> int | None:
    """The int pydantic's lax mode makes of `value`, or None when it refuses."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return None
            return int(number) if math.isfinite(number) and number.is_integer() else None
    return None


def _lax_float(value: Any) -> float | None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
        return math.inf if value > 0 else -math.inf  # a 400-digit integer: beyond every bound, no OverflowError
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def accepts(type_: Mapping[str, Any], value: Any, schema: Schema) -> bool | None:
    """Whether pydantic (lax mode) accepts `value` for a field of this type; None when we cannot tell.

    Dicts are checked only at this level: a nested model's own keys are checked by the caller, field by field.
    """
    if value is UNKNOWN:
        return None
    kind = type_["kind"]
    if kind == "any":
        return True
    if kind == "none":
        return value is None
    if kind == "union":
        answers = [accepts(option, value, schema) for option in type_["options"]]
        if any(a is True for a in answers):
            return True
        return False if all(a is False for a in answers) else None
    if value is None:
        return False
    if kind == "bool":
        if isinstance(value, bool):
            return True
        if isinstance(value, (int, float)):
            return value in (0, 1)
        if isinstance(value, str):
            return value.lower() in _BOOL_STRINGS
        return False
    if schema.pydantic == 1:
        answer = _accepts_pydantic_1(kind, type_, value)
        if answer is not None:
            return answer
    if kind == "int":
        return _lax_int(value) is not None
    if kind == "float":
        return _lax_float(value) is not None
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "model":
        return isinstance(value, dict)
    if kind == "enum":
        values = type_["values"]
        if all(isinstance(v, str) for v in values):
            return isinstance(value, str) and value in values
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            number = _lax_int(value)
            return number is not None and number in values
        return None
    return None


def _accepts_pydantic_1(kind: str, type_: Mapping[str, Any], value: Any) -> bool | None:
    """pydantic 1's coercions where they differ from pydantic 2's lax mode: `int(value)` (a float is truncated,
    a bool is 0 or 1), `str` of any number, and an int enum looked up by value (a string is refused)."""
    if kind == "int":
        if isinstance(value, float):
            return math.isfinite(value)
        if isinstance(value, str):
            try:
                int(value)
            except ValueError:
                return False
            return True
        return isinstance(value, (bool, int))
    if kind == "str":
        return isinstance(value, (str, int, float))
    if kind == "enum" and all(isinstance(v, int) and not isinstance(v, bool) for v in type_["values"]):
        return isinstance(value, (bool, int, float)) and value in type_["values"]
    return None


def within_bounds(field: Field, value: Any) -> bool | None:
    if not field.bounds or value is UNKNOWN:
        return None if value is UNKNOWN else True
    number = _lax_float(value)
    if number is None or math.isnan(number):
        return None
    checks = {
        "ge": lambda b: number >= b,
        "gt": lambda b: number > b,
        "le": lambda b: number <= b,
        "lt": lambda b: number < b,
    }
    return all(checks[name](bound) for name, bound in field.bounds.items())


def describe(type_: Mapping[str, Any]) -> str:
    """A short human description of a field type, for messages."""
    kind = type_["kind"]
    if kind == "union":
        parts = [describe(o) for o in type_["options"] if o["kind"] != "none"]
        return " or ".join(parts) if parts else "null"
    if kind == "enum":
        return "one of " + ", ".join(json.dumps(v) for v in type_["values"])
    if kind == "model":
        return "an object"
    return {
        "bool": "true or false",
        "int": "an integer",
        "float": "a number",
        "str": "a string",
        "list": "a list",
        "dict": "an object",
    }.get(kind, str(kind))


def model_of(type_: Mapping[str, Any], schema: Schema) -> Model | None:
    """The nested model a field holds (directly or as an Optional), if any."""
    if type_["kind"] == "model":
        return schema.models.get(type_["model"])
    if type_["kind"] == "union":
        for option in type_["options"]:
            found = model_of(option, schema)
            if found is not None:
                return found
    return None

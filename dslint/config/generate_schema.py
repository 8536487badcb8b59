"""Generate `dslint/config/schema.json` from the installed DeepSpeed: `python -m dslint.config.generate_schema`.

Everything in the snapshot comes from DeepSpeed itself, not from documentation:

- the top-level keys DeepSpeed reads: `DeepSpeedConfig` is run on configs whose dict records every key it is
  asked for (`get`, `[]`, `in`, `.keys()`), once empty and once with every section present;
- which top-level sections are validated by a pydantic model (`extra="forbid"`): a probe key is put into each
  section, and the model named by the resulting ValidationError is the section's model;
- the fields of those models (names, aliases, types, enum values, bounds, deprecation), walked from
  `model_fields`;
- the keys DeepSpeed removed and now refuses (`_REMOVED_TOP_LEVEL_CONFIG_KEYS`, `_REMOVED_ZERO_CONFIG_KEYS`);
- the top-level keys that take only certain strings (`communication_data_type`: fp16, bf16 or fp32), probed
  with a vocabulary drawn from DeepSpeed's own constants (`runtime/constants.py`) and the key's default.

Only this generator and the tests import deepspeed; linting reads the committed JSON.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import importlib
import inspect
import json
import logging
import os
import re
import sys
import types
import typing
from collections.abc import KeysView
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("schema.json")
PROBE = "__dslint_probe__"


class RecordingDict(dict[str, Any]):
    """A dict that records every key DeepSpeed asks it for (also through copies: the record is shared)."""

    def __init__(self, data: dict[str, Any], record: set[str]) -> None:
        super().__init__(data)
        self.record = record

    def __getitem__(self, key: str) -> Any:
        self.record.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.record.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.record.add(key)
        return super().__contains__(key)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        return KeysView(self)

    def __copy__(self) -> RecordingDict:
        return RecordingDict(super().copy(), self.record)  # dict.copy: reads no key through the recorder


def _deepspeed(module: str) -> Any:
    """Import a DeepSpeed module (untyped; only this generator and the tests import deepspeed)."""
    return importlib.import_module(module)


def _single_process_env() -> None:
    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "DS_ACCELERATOR": "cpu"}.items():
        os.environ.setdefault(key, value)


def keys_read(config: dict[str, Any]) -> set[str]:
    """The top-level keys `DeepSpeedConfig(config)` reads (whether or not it then raises)."""
    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig

    record: set[str] = set()
    with contextlib.suppress(Exception):
        DeepSpeedConfig(RecordingDict(config, record))
    return record


FULL_SECTIONS: dict[str, Any] = {
    "fp16": {"enabled": False},
    "bf16": {"enabled": False},
    "zero_optimization": {"stage": 0},
    "optimizer": {"type": "Adam", "params": {"lr": 0.001}},
    "scheduler": {"type": "WarmupLR", "params": {}},
    "torch_autocast": {"enabled": False},
    "expert_parallel": {"enabled": False},
    "data_efficiency": {"enabled": False},
    "checkpoint": {},
    "data_types": {},
    "weight_quantization": {},
    "compile": {},
    "pipeline": {},
    "tensorboard": {"enabled": False},
    "wandb": {"enabled": False},
    "csv_monitor": {"enabled": False},
    "comet": {"enabled": False},
}


def top_level_keys() -> list[str]:
    base = {"train_batch_size": 1}
    found = keys_read(base) | keys_read({**base, **FULL_SECTIONS})
    return sorted(k for k in found if k != PROBE)


_SOURCE_PATTERNS = (
    re.compile(r"""["'](\w+)["']\s+in\s+config\b"""),
    re.compile(r"""\bconfig\[\s*["'](\w+)["']"""),
    re.compile(r"""\bconfig\.get\(\s*["'](\w+)["']"""),
)


def keys_read_before_config() -> list[str]:
    """Top-level keys `deepspeed.initialize` and `DeepSpeedConfig.__init__` read from the raw config dict only
    in a distributed run (mesh and sequence-parallel sizes, tensor parallel), found in their source."""
    deepspeed = _deepspeed("deepspeed")
    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig

    found: set[str] = set()
    for function in (deepspeed.initialize, DeepSpeedConfig.__init__):
        source = inspect.getsource(function)
        for pattern in _SOURCE_PATTERNS:
            found.update(pattern.findall(source))
    return sorted(found)


def _all_model_classes() -> dict[str, type]:
    DeepSpeedConfigModel = _deepspeed("deepspeed.runtime.config_utils").DeepSpeedConfigModel

    found: dict[str, type] = {}
    stack: list[type] = [DeepSpeedConfigModel]
    while stack:
        cls = stack.pop()
        sub: type
        for sub in cls.__subclasses__():
            found.setdefault(sub.__name__, sub)
            stack.append(sub)
    return found


def validated_sections(keys: list[str]) -> dict[str, str]:
    """Top-level keys whose dict value is validated by a pydantic model that forbids extra keys."""
    import pydantic

    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig
    sections: dict[str, str] = {}
    for key in keys:
        try:
            DeepSpeedConfig({"train_batch_size": 1, key: {PROBE: 1}})
        except pydantic.ValidationError as error:
            for detail in error.errors():
                if detail["type"] == "extra_forbidden" and detail["loc"] and detail["loc"][-1] == PROBE:
                    sections[key] = _model_at(error.title, [str(p) for p in detail["loc"][:-1]])
        except Exception:
            continue
    return sections


PROBE_VALUES: dict[str, Any] = {
    "string": "x",
    "numeric_string": "8",
    "number": 1,
    "bool": True,
    "list": [1],
    "object": {},
    "null": None,
}


# Further values of each kind: a kind is recorded as refused only when every probe of it is refused
# (`"train_batch_size": 0` is refused for its value, not its kind).
KIND_PROBES: dict[str, tuple[Any, ...]] = {"number": (7, -3, 2.5, 1e9)}
# The falsy value of each kind, probed apart: a key DeepSpeed tests for truth first (`expert_parallel`,
# `vocabulary_size`) takes `false`, `0`, `""` and `[]` where it refuses `true`, `1`, `"x"` and `[1]`.
FALSY_PROBES: dict[str, Any] = {"string": "", "number": 0, "bool": False, "list": []}


def _refused(key: str, value: Any) -> bool:
    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig
    base = {k: 1 for k in ("train_batch_size", "train_micro_batch_size_per_gpu") if k != key}
    try:
        DeepSpeedConfig({**base, key: copy.deepcopy(value)})
    except Exception:
        return True
    return False


def refused_value_kinds(keys: list[str], removed: set[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """For each top-level key, the kinds of JSON value `DeepSpeedConfig` refuses there (it raises), probed
    with values of each kind and generalised only where the probes speak for the whole kind: a section
    that refuses every non-object value requires an object; a string is refused only where numbers are
    accepted and both "x" and "8" are refused (keys such as `communication_data_type` take some strings,
    recorded by `accepted_strings`); a number or a bool wherever every probe of it is refused
    (`communication_data_type` lower()s any number, `timers` looks a key up in it).

    Second, for each key, the refused kinds whose falsy value is accepted all the same (DeepSpeed tests the
    value for truth before it uses it): `"expert_parallel": false` passes where `true` fails."""
    found: dict[str, list[str]] = {}
    falsy_accepted: dict[str, list[str]] = {}
    for key in keys:
        if key in removed:
            continue
        refused = {
            kind: all(_refused(key, v) for v in (value, *KIND_PROBES.get(kind, ())))
            for kind, value in PROBE_VALUES.items()
        }
        kinds: list[str] = []
        if not refused["object"] and all(refused[k] for k in ("string", "numeric_string", "number", "list")):
            kinds = [k for k in ("string", "number", "bool", "list", "null") if refused[k]]
        else:
            if refused["list"]:
                kinds.append("list")
            if refused["object"]:
                kinds.append("object")
            if not refused["number"] and refused["string"] and refused["numeric_string"]:
                kinds.append("string")
            kinds += [k for k in ("number", "bool") if refused[k]]
            if refused["null"]:
                kinds.append("null")
        if kinds:
            found[key] = kinds
        falsy = [k for k in kinds if k in FALSY_PROBES and not _refused(key, FALSY_PROBES[k])]
        if falsy:
            falsy_accepted[key] = falsy
    return found, falsy_accepted


def string_vocabulary(key: str) -> list[str]:
    """Candidate values for a top-level key that takes a string: every short word-like string constant of
    DeepSpeed's `runtime/constants.py` (where the accepted values of such keys are defined) and the key's
    default there (`<NAME>_DEFAULT` beside the constant `<NAME> = "<key>"`)."""
    constants = vars(_deepspeed("deepspeed.runtime.constants"))
    words = {v for n, v in constants.items() if n.isupper() and isinstance(v, str) and re.fullmatch(r"\w{1,40}", v)}
    for name, value in constants.items():
        default = constants.get(f"{name}_DEFAULT")
        if value == key and isinstance(default, str):
            words.add(default)
    return sorted(words)


def _accepts(key: str, value: Any) -> bool:
    return not _refused(key, value)


# Strings no sensible key takes as a value: refused by a key that takes only certain strings.
_OTHER_STRINGS = ("x", "8", "hello", "__dslint_probe__")


def accepted_strings(keys: list[str], sections: dict[str, str], removed: set[str]) -> dict[str, dict[str, Any]]:
    """The top-level keys (not validated sections, not removed) that refuse arbitrary strings but accept some
    of DeepSpeed's vocabulary: the accepted values, and whether case is ignored (every accepted value is also
    accepted upper-cased and capitalised: DeepSpeed lower()s the value before comparing)."""
    found: dict[str, dict[str, Any]] = {}
    for key in keys:
        if key in sections or key in removed or any(_accepts(key, s) for s in _OTHER_STRINGS):
            continue
        values = [word for word in string_vocabulary(key) if _accepts(key, word)]
        if not values:
            continue
        ignore_case = all(_accepts(key, v.upper()) and _accepts(key, v.capitalize()) for v in values)
        found[key] = {"values": values, "ignore_case": ignore_case}
    return found


def _model_at(model_name: str, path: list[str]) -> str:
    """The model reached from `model_name` through the fields named in `path` (the error's location)."""
    import pydantic

    cls: Any = _all_model_classes()[model_name]
    for name in path:
        annotation = cls.model_fields[name].annotation
        options = typing.get_args(annotation) or (annotation,)
        cls = next(o for o in options if isinstance(o, type) and issubclass(o, pydantic.BaseModel))
    return str(cls.__name__)


def describe_type(annotation: Any, models: dict[str, Any], classes: dict[str, type]) -> dict[str, Any]:
    """A small JSON description of a pydantic field annotation."""
    import pydantic

    origin = typing.get_origin(annotation)
    if annotation is type(None):
        return {"kind": "none"}
    if origin in (typing.Union, types.UnionType):
        return {"kind": "union", "options": [describe_type(a, models, classes) for a in typing.get_args(annotation)]}
    if origin is typing.Literal:
        return {"kind": "enum", "values": list(typing.get_args(annotation))}
    if origin in (list, tuple, set) or annotation in (list, tuple, set):
        return {"kind": "list"}
    if origin is dict or annotation is dict:
        return {"kind": "dict"}
    if annotation is bool:
        return {"kind": "bool"}
    if annotation is int:
        return {"kind": "int"}
    if annotation is float:
        return {"kind": "float"}
    if annotation is str:
        return {"kind": "str"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"kind": "enum", "values": [m.value for m in annotation if _jsonable(m.value)]}
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        describe_model(annotation, models, classes)
        return {"kind": "model", "model": annotation.__name__}
    return {"kind": "any"}


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True


def describe_model(cls: Any, models: dict[str, Any], classes: dict[str, type]) -> None:
    name = cls.__name__
    if name in models:
        return
    models[name] = {}  # reserve against recursion
    fields: dict[str, Any] = {}
    for field_name, info in cls.model_fields.items():
        entry: dict[str, Any] = {"type": describe_type(info.annotation, models, classes)}
        for meta in info.metadata:
            for bound in ("ge", "gt", "le", "lt"):
                value = getattr(meta, bound, None)
                if value is not None and _jsonable(value):
                    entry[bound] = value
        if info.alias and info.alias != field_name:
            entry["alias"] = info.alias
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("deprecated"):
            entry["deprecated"] = True
            if extra.get("new_param"):
                entry["new_param"] = extra["new_param"]
        fields[field_name] = entry
    models[name] = {"extra": cls.model_config.get("extra", "ignore"), "fields": fields}


def generate() -> dict[str, Any]:
    _single_process_env()
    deepspeed = _deepspeed("deepspeed")
    ds_config = _deepspeed("deepspeed.runtime.config")
    deepspeed.utils.logger.setLevel(logging.ERROR)  # the probes make DeepSpeed warn; that is expected

    read_by_config = top_level_keys()
    read_before = keys_read_before_config()
    keys = sorted(set(read_by_config) | set(read_before))
    sections = validated_sections(read_by_config)
    classes = _all_model_classes()
    removed = set(ds_config._REMOVED_TOP_LEVEL_CONFIG_KEYS)
    strings = accepted_strings(read_by_config, sections, removed)
    refused_kinds, falsy_accepted = refused_value_kinds(read_by_config, removed)
    models: dict[str, Any] = {}
    for model_name in sorted(set(sections.values())):
        describe_model(classes[model_name], models, classes)
    return {
        "deepspeed_version": deepspeed.__version__,
        "generated_by": "python -m dslint.config.generate_schema",
        "top_level_keys": keys,
        "keys_read_only_by_initialize": [k for k in read_before if k not in read_by_config],
        "validated_sections": dict(sorted(sections.items())),
        "refused_value_kinds": refused_kinds,
        "falsy_values_accepted": falsy_accepted,
        "accepted_strings": strings,
        "removed_top_level_keys": dict(ds_config._REMOVED_TOP_LEVEL_CONFIG_KEYS),
        "removed_zero_keys": dict(ds_config._REMOVED_ZERO_CONFIG_KEYS),
        "models": dict(sorted(models.items())),
    }


def main() -> None:
    schema = generate()
    text = json.dumps(schema, indent=1, sort_keys=False) + "\n"
    if "--check" in sys.argv:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
        sys.exit(0 if current == text else 1)
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH} (deepspeed {schema['deepspeed_version']}, {len(schema['models'])} models)")


if __name__ == "__main__":
    main()

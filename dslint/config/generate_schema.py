"""Generate `dslint/config/schemas/<version>.json` from DeepSpeed itself.

`python -m dslint.config.generate_schema --all` installs each supported release (`deepspeed_releases.RELEASES`)
into its own directory under the user cache and runs this generator there, in a child process with that
directory first on sys.path; without `--all` it snapshots the DeepSpeed that is importable (`--output PATH`
to write elsewhere, `--check` to compare with the committed file).

Everything in the snapshot comes from DeepSpeed itself, not from documentation:

- the top-level keys DeepSpeed reads: `DeepSpeedConfig` is run on configs whose dict records every key it is
  asked for (`get`, `[]`, `in`, `.keys()`), once empty and once with every section present;
- which top-level sections are validated by a pydantic model (`extra="forbid"`): a probe key is put into each
  section, and the model named by the resulting ValidationError is the section's model;
- the fields of those models (names, aliases, types, enum values, bounds, deprecation), walked from
  `model_fields`;
- for each section read as a plain dict, the keys `DeepSpeedConfig` asks for (`read_section_keys`; null when it
  reads the section whole);
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
import subprocess
import sys
import types
import typing
from collections.abc import KeysView
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dslint.config.deepspeed_releases import RELEASES, InstallError, install, python_path

SCHEMAS_DIR = Path(__file__).with_name("schemas")
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


class SectionRecorder(dict[str, Any]):
    """A section's dict that records the keys DeepSpeed reads from it one by one (`get`, `[]`, `in`; `keys()`
    for a membership test reads nothing); reading it whole (iteration, `items()`, a copy) makes it opaque: then
    no key set can be told. So does reading the probe key, which no release knows (`**section` reads all)."""

    def __init__(self, data: dict[str, Any], record: set[str], whole: list[bool]) -> None:
        super().__init__(data)
        self.record = record
        self.whole = whole

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

    def items(self) -> Any:
        self.whole[0] = True
        return super().items()

    def values(self) -> Any:
        self.whole[0] = True
        return super().values()

    def __iter__(self) -> Any:
        self.whole[0] = True
        return super().__iter__()

    def __len__(self) -> int:
        self.whole[0] = True
        return super().__len__()

    def __copy__(self) -> SectionRecorder:
        self.whole[0] = True
        return SectionRecorder(dict(self), self.record, self.whole)

    def __deepcopy__(self, memo: dict[int, Any]) -> SectionRecorder:
        self.whole[0] = True
        return SectionRecorder(copy.deepcopy(dict(self), memo), self.record, self.whole)


# What a section is probed with: empty, and switched on (a reader may read its other keys only when enabled);
# each with the probe key as well, which only a reader taking the section whole asks for.
SECTION_PROBES: tuple[dict[str, Any], ...] = ({PROBE: 1}, {"enabled": True, PROBE: 1}, {"enabled": False, PROBE: 1})


def read_section_keys(keys: list[str], sections: dict[str, str], removed: set[str]) -> dict[str, list[str] | None]:
    """For each top-level section DeepSpeed reads as a plain dict (no pydantic model validates it), the keys
    `DeepSpeedConfig` reads from it, over every probe of `SECTION_PROBES` (whether or not it then raises); None
    when it reads the section whole (a copy, an iteration: what it keeps cannot be told). Keys it never asks
    for are ignored silently at this release."""
    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig
    found: dict[str, list[str] | None] = {}
    for key in keys:
        if key in sections or key in removed:
            continue
        record: set[str] = set()
        whole = [False]
        base = {k: 1 for k in ("train_batch_size",) if k != key}
        probes = list(SECTION_PROBES)
        for _ in range(4):  # then with the keys read so far present: some are read only beside others
            seen = set(record)
            for probe in probes:
                with contextlib.suppress(Exception):
                    DeepSpeedConfig({**base, key: SectionRecorder(dict(probe), record, whole)})
            if record == seen or whole[0] or PROBE in record:
                break
            present = {k: 1 for k in sorted(record - {"enabled", PROBE})}
            probes = [{**present, "enabled": True, PROBE: 1}, {**present, PROBE: 1}]
        if whole[0] or PROBE in record:
            found[key] = None
        elif record:
            found[key] = sorted(record)
    return found


def _deepspeed(module: str) -> Any:
    """Import a DeepSpeed module (untyped; only this generator and the tests import deepspeed)."""
    return importlib.import_module(module)


def _single_process_env() -> None:
    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "DS_ACCELERATOR": "cpu"}.items():
        os.environ.setdefault(key, value)
    if os.environ["DS_ACCELERATOR"] == "auto":  # let DeepSpeed detect it (see generate_release)
        del os.environ["DS_ACCELERATOR"]
    _torch_names_old_releases_import()


def _torch_names_old_releases_import() -> None:
    """DeepSpeed before 0.14 imports `log` and `_get_socket_with_port` from torch's elastic agent (for its
    elastic agent, which the config never uses); torch 2.13 no longer has them. Stand-ins let the config
    module import; nothing the generator runs calls them."""
    try:
        api = importlib.import_module("torch.distributed.elastic.agent.server.api")
    except ImportError:
        return
    if not hasattr(api, "log"):
        setattr(api, "log", logging.getLogger("torch.distributed.elastic.agent.server.api"))  # noqa: B010
    if not hasattr(api, "_get_socket_with_port"):

        def _get_socket_with_port() -> Any:
            raise RuntimeError("not available in this torch (stand-in of dslint's schema generator)")

        setattr(api, "_get_socket_with_port", _get_socket_with_port)  # noqa: B010


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
    # DeepSpeed's own models first; then any pydantic model (0.14's CommsLoggerConfig is a plain BaseModel)
    for root in (DeepSpeedConfigModel, _base_model()):
        stack: list[type] = [root]
        while stack:
            cls = stack.pop()
            sub: type
            for sub in cls.__subclasses__():
                found.setdefault(sub.__name__, sub)
                stack.append(sub)
    return found


def validated_sections(keys: list[str]) -> dict[str, str]:
    """Top-level keys whose dict value is validated by a pydantic model that forbids extra keys."""
    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig
    sections: dict[str, str] = {}
    for key in keys:
        try:
            DeepSpeedConfig({"train_batch_size": 1, key: {PROBE: 1}})
        except Exception as error:
            if type(error).__name__ != "ValidationError":
                continue
            # pydantic 2 names the model in `title` and the error "extra_forbidden"; pydantic 1 in `model`
            title = getattr(error, "title", None) or error.model.__name__  # type: ignore[attr-defined]
            for detail in error.errors():  # type: ignore[attr-defined]
                if detail["type"] in EXTRA_FORBIDDEN and detail["loc"] and detail["loc"][-1] == PROBE:
                    sections[key] = _model_at(title, [str(p) for p in detail["loc"][:-1]])
    return sections


EXTRA_FORBIDDEN = ("extra_forbidden", "value_error.extra")


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
# An object is refused only when a block with `"enabled": false` is refused too (DeepSpeed 0.14 reads
# `amp["enabled"]` without a default: `"amp": {}` raises KeyError, `{"enabled": true}` passes).
KIND_PROBES: dict[str, tuple[Any, ...]] = {"number": (7, -3, 2.5, 1e9), "object": ({"enabled": False},)}
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
    cls: Any = _all_model_classes()[model_name]
    for name in path:
        annotation = next(f.annotation for f in model_fields(cls) if name in (f.name, f.alias))
        options = typing.get_args(annotation) or (annotation,)
        cls = next(o for o in options if _is_model(o))
    return str(cls.__name__)


def _base_model() -> type:
    """The pydantic `BaseModel` DeepSpeed's config models derive from: pydantic 2's, or pydantic 1's (DeepSpeed
    before 0.15, directly or through `deepspeed.pydantic_v1`)."""
    DeepSpeedConfigModel = _deepspeed("deepspeed.runtime.config_utils").DeepSpeedConfigModel
    base: type = next(c for c in DeepSpeedConfigModel.__mro__ if c.__name__ == "BaseModel")
    return base


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, _base_model())


@dataclass(frozen=True)
class ModelField:
    """One field of a DeepSpeed config model, read the same way from pydantic 2 and pydantic 1."""

    name: str
    annotation: Any
    alias: str | None
    bounds: dict[str, Any]
    extra: dict[str, Any]  # deprecated=..., new_param=...


def model_fields(cls: Any) -> list[ModelField]:
    found: list[ModelField] = []
    if hasattr(cls, "model_fields"):  # pydantic 2
        for name, info in cls.model_fields.items():
            bounds = {b: getattr(m, b) for m in info.metadata for b in BOUNDS if getattr(m, b, None) is not None}
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            found.append(ModelField(name, info.annotation, info.alias, bounds, extra))
        return found
    for name, field in cls.__fields__.items():  # pydantic 1: Optional[X] is X with allow_none
        annotation = field.annotation
        info = field.field_info
        bounds = {b: getattr(info, b) for b in BOUNDS if getattr(info, b, None) is not None}
        found.append(ModelField(name, annotation, field.alias, bounds, dict(info.extra)))
    return found


def forbids_extra(cls: Any) -> str:
    if hasattr(cls, "model_config"):
        return str(cls.model_config.get("extra", "ignore"))
    extra = cls.__config__.extra
    return str(getattr(extra, "value", extra))


BOUNDS = ("ge", "gt", "le", "lt")


def describe_type(annotation: Any, models: dict[str, Any], classes: dict[str, type]) -> dict[str, Any]:
    """A small JSON description of a pydantic field annotation."""
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
    if _is_model(annotation):
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
    for info in model_fields(cls):
        entry: dict[str, Any] = {"type": describe_type(info.annotation, models, classes)}
        entry.update({bound: value for bound, value in info.bounds.items() if _jsonable(value)})
        if info.alias and info.alias != info.name:
            entry["alias"] = info.alias
        if info.extra.get("deprecated"):
            entry["deprecated"] = True
            if info.extra.get("new_param"):
                entry["new_param"] = info.extra["new_param"]
        fields[info.name] = entry
    models[name] = {"extra": forbids_extra(cls), "fields": fields}


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
    # DeepSpeed lists the keys it removed and refuses since 0.19 (none before)
    removed_top = dict(getattr(ds_config, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {}))
    removed_zero = dict(getattr(ds_config, "_REMOVED_ZERO_CONFIG_KEYS", {}))
    removed = set(removed_top)
    strings = accepted_strings(read_by_config, sections, removed)
    refused_kinds, falsy_accepted = refused_value_kinds(read_by_config, removed)
    models: dict[str, Any] = {}
    for model_name in sorted(set(sections.values())):
        describe_model(classes[model_name], models, classes)
    return {
        "deepspeed_version": deepspeed.__version__,
        "pydantic": 2 if hasattr(_base_model(), "model_fields") else 1,  # the validation rules of its models
        "generated_by": "python -m dslint.config.generate_schema --all",
        "top_level_keys": keys,
        "keys_read_only_by_initialize": [k for k in read_before if k not in read_by_config],
        "validated_sections": dict(sorted(sections.items())),
        "refused_value_kinds": refused_kinds,
        "falsy_values_accepted": falsy_accepted,
        "accepted_strings": strings,
        "read_section_keys": read_section_keys(read_by_config, sections, removed),
        "removed_top_level_keys": removed_top,
        "removed_zero_keys": removed_zero,
        "models": dict(sorted(models.items())),
    }


def schema_text(schema: dict[str, Any]) -> str:
    """Compact JSON, one file per release (the schemas of 16 releases stay small)."""
    return json.dumps(schema, separators=(",", ":")) + "\n"


def generate_release(version: str, root: Path | None = None) -> tuple[Path, str]:
    """Install `version` into its own directory (dslint.config.deepspeed_releases) and run this generator there
    in a child process, with that directory first on sys.path; (the schema file written, a one-line summary)."""
    target = install(version, root)
    path = SCHEMAS_DIR / f"{version}.json"
    env = {**os.environ, "PYTHONPATH": python_path(target)}
    command = [sys.executable, "-m", "dslint.config.generate_schema", "--output", str(path)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0 and "intel_extension_for_pytorch" in result.stderr:
        # before 0.14 the CPU accelerator needs Intel's extension; the CUDA one, which DeepSpeed then detects,
        # imports without a GPU (0.12's explicit DS_ACCELERATOR=cuda recurses without end)
        env["DS_ACCELERATOR"] = "auto"
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-6:])
        raise InstallError(f"deepspeed {version} installed in {target} but the generator failed:\n{tail}")
    written = json.loads(path.read_text(encoding="utf-8"))["deepspeed_version"]
    if written != version:
        raise InstallError(f"{target}: expected deepspeed {version}, imported {written}")
    return path, result.stdout.strip()


def main() -> None:
    arguments = sys.argv[1:]
    if "--all" in arguments:
        failed = []
        for version in RELEASES:
            try:
                _, summary = generate_release(version)
            except InstallError as error:
                failed.append(version)
                print(f"deepspeed {version}: {error}", file=sys.stderr)
                continue
            print(summary)
        sys.exit(1 if failed else 0)
    schema = generate()
    text = schema_text(schema)
    output = SCHEMAS_DIR / f"{schema['deepspeed_version']}.json"
    if "--output" in arguments:
        output = Path(arguments[arguments.index("--output") + 1])
    if "--check" in arguments:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        sys.exit(0 if current == text else 1)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output} (deepspeed {schema['deepspeed_version']}, {len(schema['models'])} models)")


if __name__ == "__main__":
    main()

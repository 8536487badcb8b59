"""Differential test: dslint's verdict on a config against DeepSpeed's own `DeepSpeedConfig(config)`.

Hypothesis generates configs from dslint's schema snapshot (valid values of DeepSpeed's pydantic fields), then
mutates them: typos in top-level and section keys, wrong types and enum values, extra keys, removed keys,
fp16 + bf16, "auto" values, partial offload, random batch arithmetic, strings a key does not take
(`"communication_data_type": "fp61"`) beside the ones it does, in any case. For each config:

- "DeepSpeed refuses this" (a finding of a refusing rule) must agree with `DeepSpeedConfig(config)` raising
  (world size 1: without a process group DeepSpeedConfig uses 1, and dslint is told so);
- when DeepSpeed accepts the config, the top-level keys dslint reports as silently ignored must be exactly the
  keys DeepSpeed did not read (a dict that records every key asked for).

DeepSpeedConfig needs no process group, so it runs in-process (about 0.5 ms per config).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_profiles import DERANDOMIZE, examples

from dslint.config.deepspeed_releases import DONE_MARKER, install, python_path, target_dir
from dslint.config.facts import Origin, is_comment_key
from dslint.config.schema import Field, Model, Schema, load_release_schema, load_schema
from dslint.config.tree import Object, parse_text
from dslint.config.versions import Version, newest_known
from dslint.diagnostics import Diagnostic
from dslint.framework.config_rule import ConfigContext, ConfigRule
from dslint.framework.registry import all_rules
from dslint.lint.config import run_config_rules

for _key, _value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "DS_ACCELERATOR": "cpu"}.items():
    os.environ.setdefault(_key, _value)
pytest.importorskip("deepspeed")

from deepspeed.runtime.config import DeepSpeedConfig  # noqa: E402
from deepspeed.utils import logger as ds_logger  # noqa: E402

from dslint.config.generate_schema import RecordingDict  # noqa: E402

ds_logger.setLevel(logging.CRITICAL)
SCHEMA = load_schema()
RULES = [r for r in all_rules() if issubclass(r, ConfigRule)]
# 2,000 in CI (about 20 s of CPU); a fuzz run (tests/property_profiles.py) draws fresh ones, ten times as many, and
# DSLINT_DIFFERENTIAL_EXAMPLES sets the count.
EXAMPLES = int(os.environ.get("DSLINT_DIFFERENTIAL_EXAMPLES", str(examples(2000))))

# Rules whose finding means "DeepSpeedConfig raises" (DSL412 and DSL405 only for some placements).
REFUSING = {"DSL402", "DSL403", "DSL404", "DSL406", "DSL407", "DSL408", "DSL410"}

# Fields left out of generation, each for a reason dslint does not model (cross-field model validators or
# deprecated fields that rewrite others); dslint stays silent on them, which the test cannot judge.
SKIPPED_FIELDS = {
    "compute_grad_norm",  # false is refused unless stage is 1 or 2 (a model validator)
    "zenflow",
    "cpu_offload",
    "cpu_offload_param",
    "cpu_offload_use_pin_memory",
    "stage3_gather_fp16_weights_on_model_save",
    "offload_param",
    "offload_optimizer",
    "leaf_module",
    "log_trace_cache_warnings",
    "zero_quantized_nontrainable_weights",
    "bf16_master_weights_and_grads",
    "bf16_optimizer_states",
    "fp16_master_weights_and_grads",
    "nvme_path",
    "super_offload",
}
BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")


def _field_values(field: Field) -> st.SearchStrategy[Any] | None:
    return _type_values(field.type, field.bounds)


def _type_values(type_: dict[str, Any] | Any, bounds: Any) -> st.SearchStrategy[Any] | None:
    kind = type_["kind"]
    low = bounds.get("ge", bounds.get("gt", None))
    if kind == "bool":
        return st.booleans()
    if kind == "int":
        minimum = int(low) + (1 if "gt" in bounds else 0) if low is not None else -5
        maximum = int(bounds.get("le", 10**9))
        return st.integers(min_value=minimum, max_value=max(minimum, maximum))
    if kind == "float":
        minimum = float(low) if low is not None else -10.0
        maximum = float(bounds.get("le", 1e6))
        return st.floats(min_value=minimum, max_value=maximum, allow_nan=False, exclude_min="gt" in bounds)
    if kind == "enum":
        return st.sampled_from(type_["values"])
    if kind == "union":
        options = [_type_values(o, bounds) for o in type_["options"] if o["kind"] != "none"]
        usable = [o for o in options if o is not None]
        return st.one_of(usable) if usable else None
    return None


def _model_dict(model: Model, max_fields: int) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for key, field in sorted(model.fields.items()):
        if field.name in SKIPPED_FIELDS or field.deprecated or key in SKIPPED_FIELDS:
            continue
        values = _field_values(field)
        if values is not None:
            fields[key] = values
    names = sorted(fields)
    return st.lists(st.sampled_from(names), max_size=max_fields, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries({name: fields[name] for name in chosen})
    )


def _offload(model_name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"device": st.sampled_from(["none", "cpu", "nvme"])},
        optional={"pin_memory": st.booleans(), "buffer_count": st.integers(0, 8)}
        | ({"ratio": st.floats(0.0, 1.0)} if model_name == "DeepSpeedZeroOffloadOptimizerConfig" else {}),
    )


def _accepted_string(schema: Schema, key: str) -> st.SearchStrategy[str]:
    """A string DeepSpeed takes for `key` (`communication_data_type`), in the cases it accepts."""
    accepted = schema.accepted_strings[key]
    values = st.sampled_from(accepted.values)
    if not accepted.ignore_case:
        return values
    return values.flatmap(lambda v: st.sampled_from(sorted({v, v.upper(), v.capitalize()})))


def _wrong_string(schema: Schema, key: str) -> st.SearchStrategy[Any]:
    """A value DeepSpeed refuses for such a key: a near miss of an accepted string, another word, another kind."""
    values = schema.accepted_strings[key].values
    near = sorted({v[:-1] for v in values} | {v + "x" for v in values})
    return st.sampled_from([*near, "hello", "float16", "avg", "", "auto", "none"]) | WRONG_TOP_VALUES


@st.composite
def base_configs(draw: st.DrawFn, schema: Schema) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(BATCH_KEYS), max_size=3, unique=True)):
        config[key] = draw(st.integers(min_value=0, max_value=64))
    if draw(st.booleans()):
        zero = draw(_model_dict(schema.models["DeepSpeedZeroConfig"], 5))
        zero["stage"] = draw(st.sampled_from([0, 1, 2, 3]))
        if draw(st.booleans()):
            zero["offload_optimizer"] = draw(_offload("DeepSpeedZeroOffloadOptimizerConfig"))
        if draw(st.booleans()):
            zero["offload_param"] = draw(_offload("DeepSpeedZeroOffloadParamConfig"))
        config["zero_optimization"] = zero
    for section in ("fp16", "bf16"):
        if draw(st.booleans()):
            model = schema.section_model(section)  # plain dicts before DeepSpeed 0.15
            body = draw(_model_dict(model, 3)) if model is not None else {}
            body["enabled"] = draw(st.booleans())
            config[section] = body
    if schema.accepted_strings and draw(st.integers(0, 3)) == 0:  # a quarter: the other checks keep the budget
        key = draw(st.sampled_from(sorted(schema.accepted_strings)))
        config[key] = draw(_accepted_string(schema, key))
    for key, values in (
        ("gradient_clipping", st.floats(0, 10)),
        ("steps_per_print", st.integers(1, 100)),
        ("wall_clock_breakdown", st.booleans()),
    ):
        if draw(st.booleans()):
            config[key] = draw(values)
    return config


def _typo(draw: st.DrawFn, key: str, known: set[str]) -> str | None:
    for _ in range(5):
        i = draw(st.integers(0, max(len(key) - 1, 0)))
        kind = draw(st.sampled_from(["drop", "double", "swap", "suffix"]))
        if kind == "drop":
            candidate = key[:i] + key[i + 1 :]
        elif kind == "double":
            candidate = key[:i] + key[i] + key[i:]
        elif kind == "swap" and i + 1 < len(key):
            candidate = key[:i] + key[i + 1] + key[i] + key[i + 2 :]
        else:
            candidate = key + "s"
        if candidate and candidate not in known and not is_comment_key(candidate):
            return candidate
    return None


WRONG_VALUES = st.sampled_from(["abc", [1, 2], {"x": 1}, None, 5, -3, 1.5, "yes", "7"])
# Other values than the generator's probes ("x", "8", 1, true, [1], {}, null), to test how they generalise.
WRONG_TOP_VALUES = st.sampled_from(["hello", "16", 7, 2.5, False, [], [2, 3], {"enabled": False}, None])


@st.composite
def configs(draw: st.DrawFn, schema: Schema) -> dict[str, Any]:
    config = draw(base_configs(schema))
    mutation = draw(
        st.sampled_from(
            [
                m
                for m in [
                    "none",
                    "typo_top",
                    "typo_section",
                    "wrong_value",
                    "extra_top",
                    "conflict",
                    "auto_section",
                    "auto_batch",
                    "removed",
                    "partial_offload",
                    "wrong_top_value",
                    "wrong_string",
                    "allreduce_sum",
                ]
                if (m != "removed" or schema.removed_top_level) and (m != "wrong_string" or schema.accepted_strings)
            ]
        )
    )
    top_known = set(schema.top_level_keys)
    if mutation == "typo_top" and config:
        key = draw(st.sampled_from(sorted(config)))
        typo = _typo(draw, key, top_known)
        if typo is not None:
            config[typo] = config.pop(key)
    elif mutation in ("typo_section", "wrong_value", "auto_section"):
        sections = [k for k in sorted(config) if schema.section_model(k) is not None and config[k]]
        if sections:
            section = draw(st.sampled_from(sections))
            body = config[section]
            key = draw(st.sampled_from(sorted(body)))
            if mutation == "typo_section":
                typo = _typo(draw, key, set(schema.section_model(section).fields))  # type: ignore[union-attr]
                if typo is not None:
                    body[typo] = body.pop(key)
            elif mutation == "wrong_value":
                body[key] = draw(WRONG_VALUES)
            else:
                body[key] = "auto"
    elif mutation == "extra_top":
        config[draw(st.sampled_from(["my_setting", "cuda_visible_devices", "ignored_parameters", "_comment"]))] = 1
    elif mutation == "conflict":
        config["fp16"] = {"enabled": True}
        config[draw(st.sampled_from(["bf16", "bfloat16"]))] = {"enabled": True}
    elif mutation == "auto_batch":
        config[draw(st.sampled_from(BATCH_KEYS))] = "auto"
    elif mutation == "removed":
        config[draw(st.sampled_from(sorted(schema.removed_top_level)))] = {"enabled": False}
    elif mutation == "wrong_top_value":
        keys = sorted(schema.live_top_level_keys - set(schema.keys_read_only_by_initialize))
        config[draw(st.sampled_from(keys))] = draw(WRONG_TOP_VALUES)
    elif mutation == "wrong_string":
        key = draw(st.sampled_from(sorted(schema.accepted_strings)))
        config[key] = draw(_wrong_string(schema, key))
    elif mutation == "allreduce_sum":  # refused with ZeRO stage 3 (a cross-field check in _do_error_check)
        config["gradient_allreduce_op"] = draw(st.sampled_from(["sum", "SUM", "mean"]))
        config.setdefault("zero_optimization", {})["stage"] = draw(st.sampled_from([0, 1, 2, 3, "3"]))
    elif mutation == "partial_offload":
        config["zero_optimization"] = {
            "stage": draw(st.sampled_from([0, 1, 2, 3])),
            "offload_optimizer": {"device": "cpu", "ratio": draw(st.sampled_from([0.0, 0.5, 1.0]))},
        }
    return config


def deepspeed_verdict(config: dict[str, Any]) -> tuple[bool, set[str]]:
    record: set[str] = set()
    raised = False
    try:
        DeepSpeedConfig(RecordingDict(copy.deepcopy(config), record))
    except Exception:
        raised = True
    return raised, record


def dslint_findings(
    config: dict[str, Any], schema: Schema | None = None, version: Version | None = None
) -> tuple[Object, list[Diagnostic]]:
    """dslint's findings on `config` for a project on DeepSpeed `version` (default: the installed one)."""
    root = parse_text(json.dumps(config))
    assert isinstance(root, Object)
    context = ConfigContext(
        "ds_config.json",
        root,
        Origin.INITIALIZE,
        world_size=1,
        from_file=False,
        schema=schema or SCHEMA,
        deepspeed_version=version or Version.parse(SCHEMA.version) or newest_known(),
    )
    return root, run_config_rules(context, RULES)


def refuses(diagnostic: Diagnostic) -> bool:
    if diagnostic.code in REFUSING:
        return True
    if diagnostic.code == "DSL412":
        return "stops at start-up" in diagnostic.message
    if diagnostic.code == "DSL405":
        return "fails at start-up" in diagnostic.message
    if diagnostic.code == "DSL416":  # a newer release's key: refused inside a validated section
        return "stops at start-up" in diagnostic.message
    return False


def ignored_keys(root: Object, diagnostics: list[Diagnostic]) -> set[str]:
    at = {entry.key_start: entry.key for entry in root.last_entries()}
    return {at[d.start] for d in diagnostics if d.code in ("DSL401", "DSL412", "DSL416") and d.start in at}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=DERANDOMIZE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(configs(SCHEMA))
def test_dslint_agrees_with_deepspeed(config: dict[str, Any]) -> None:
    assert_agrees(config, *deepspeed_verdict(config))


def assert_agrees(
    config: dict[str, Any], raised: bool, read: set[str], schema: Schema | None = None, version: Version | None = None
) -> None:
    root, diagnostics = dslint_findings(config, schema, version)
    shown = json.dumps(config) + "\n" + "\n".join(d.concise() for d in diagnostics)
    assert any(refuses(d) for d in diagnostics) == raised, shown
    if not raised:
        not_read = {k for k in config if k not in read and not is_comment_key(k)}
        assert ignored_keys(root, diagnostics) == not_read, shown


def test_the_oracle_sees_both_verdicts() -> None:
    """The oracle itself: a typo'd section is accepted and never read, a wrong stage raises."""
    raised, read = deepspeed_verdict({"train_batch_size": 1, "zero_optimisation": {"stage": 3}})
    assert not raised and "zero_optimisation" not in read and "zero_optimization" in read
    assert deepspeed_verdict({"train_batch_size": 1, "zero_optimization": {"stage": 5}})[0]


# -- other releases, installed side by side ---------------------------------------------------------------------
# Each in its own directory under the user cache (dslint.config.deepspeed_releases), DeepSpeedConfig running in a
# child process with that directory first on sys.path; dslint judges with that release's schema. Fewer examples
# than for the installed release (DSLINT_DIFFERENTIAL_RELEASE_EXAMPLES).
OTHER_RELEASES = ("0.14.5", "0.17.6", "0.19.3")  # pydantic 1; pydantic 2 before the 0.19 changes; before removals
RELEASE_EXAMPLES = int(os.environ.get("DSLINT_DIFFERENTIAL_RELEASE_EXAMPLES", str(examples(300))))
ORACLE = Path(__file__).with_name("deepspeed_release_oracle.py")
ORACLE_MARK = "@dslint-oracle "


class ReleaseOracle:
    def __init__(self, version: str, target: Path) -> None:
        env = {**os.environ, "PYTHONPATH": python_path(target)}
        self.process = subprocess.Popen(
            [sys.executable, str(ORACLE)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        hello = self._read()
        assert hello.get("version") == version, f"{target}: expected deepspeed {version}, the oracle says {hello}"

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the oracle process died"
            if line.startswith(ORACLE_MARK):
                return dict(json.loads(line[len(ORACLE_MARK) :]))

    def verdict(self, config: dict[str, Any]) -> tuple[bool, set[str]]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(config) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        return bool(answer["raised"]), set(answer["read"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def _index_unreachable() -> str | None:
    """Why the package index cannot be reached (pip's own configuration), or None when it can."""
    command = [sys.executable, "-m", "pip", "index", "versions", "deepspeed", "--disable-pip-version-check"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return "pip index versions deepspeed timed out"
    if result.returncode != 0:
        return (result.stderr.strip().splitlines() or ["pip index versions deepspeed failed"])[-1]
    return None


@pytest.fixture(scope="module", params=OTHER_RELEASES)
def release_oracle(request: pytest.FixtureRequest) -> Iterator[tuple[str, ReleaseOracle]]:
    version: str = request.param
    if not (target_dir(version) / DONE_MARKER).exists():
        reason = _index_unreachable()
        if reason is not None:
            pytest.skip(f"cannot install deepspeed {version}: the package index is not reachable ({reason})")
    oracle = ReleaseOracle(version, install(version))
    yield version, oracle
    oracle.close()


def test_dslint_agrees_with_other_releases(release_oracle: tuple[str, ReleaseOracle]) -> None:
    version, oracle = release_oracle
    schema = load_release_schema(version)
    parsed = Version.parse(version)

    @settings(
        max_examples=RELEASE_EXAMPLES,
        deadline=None,
        derandomize=DERANDOMIZE,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )
    @given(configs(schema))
    def agrees(config: dict[str, Any]) -> None:
        assert_agrees(config, *oracle.verdict(config), schema, parsed)

    agrees()

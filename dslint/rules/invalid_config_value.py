"""DSL404: a value DeepSpeed's validation refuses (wrong type, not one of the allowed values, out of range)."""

from __future__ import annotations

import difflib
import json
import math
from typing import Any

from dslint.config.facts import autotuning_enabled, bfloat16_ignored, enabled, is_auto, lax_bool, zero_stage
from dslint.config.schema import AcceptedStrings, accepts, describe, within_bounds
from dslint.config.sections import validated_entries
from dslint.config.tree import UNKNOWN, Array, Node, Object, Scalar, node_at, scalar, to_python
from dslint.config.versions import Version
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# Field validators DeepSpeed adds beyond the field types (runtime/precision_config.py: DeepSpeedFP16Config).
FP16_INTEGER_FIELDS = ("loss_scale_window", "min_loss_scale")
# DeepSpeedFP16Config's validators, measured in the release schemas' sources: `loss_scale` (a number >= 0, not a
# bool) is checked in 0.18.9 and not in 0.18.3 (releases between them are not known here: silent there), and the
# dynamic-scaling check of loss_scale_window / min_loss_scale from 0.19.3.
LOSS_SCALE_CHECKED_SINCE = Version(0, 18, 9)
DYNAMIC_LOSS_SCALE_CHECKED_SINCE = Version(0, 19, 3)


class InvalidConfigValue(ConfigRule):
    code = "DSL404"
    slug = "invalid-config-value"
    message = "DeepSpeed refuses this value at start-up"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Checks the values of the sections DeepSpeed validates against the field types of DeepSpeed's own
            pydantic models: `"stage": 5` (ZeRO stages are 0 to 3), `"device": "gpu"` for an offload block
            (`none`, `cpu` or `nvme`), a list where a number is expected, a negative bucket size, a negative,
            bool or non-finite `fp16.loss_scale`. At the top level, a value of a kind DeepSpeed refuses for that
            key is flagged too: a section that is not an object (`"fp16": true`, `"optimizer": "Adam"`), a
            batch size written as a string (`"train_batch_size": "32"`); which kinds each key refuses is probed
            from DeepSpeed when the schema snapshot is generated. Keys that take only certain strings are
            checked against them: `communication_data_type` and `seq_parallel_communication_data_type` take
            `fp16`, `bf16` or `fp32`, `gradient_allreduce_op` `mean` or `sum`, in any case (DeepSpeed lower()s
            them; the values are probed from DeepSpeed too), and `"sum"` is refused with ZeRO stage 3, ZenFlow
            or DeepCompile. Values are checked with pydantic's lax rules,
            as DeepSpeed does: `"3"` is a valid stage, `5e8` a valid integer. With `"autotuning": {"enabled":
            true}` a list of values is the autotuner's
            search space and is not flagged.
        """,
        why="""
            DeepSpeed validates these sections when the engine is created and stops with a `ValidationError`
            (a `TypeError` for a section that is not an object, a `ValueError` for `"communication_data_type":
            "float16"`), on every rank, after the job got its GPUs.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 5}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3}
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": "3", "reduce_bucket_size": 5e8,'
            ' "offload_optimizer": {"device": "cpu", "ratio": 0.3}}, "fp16": {"enabled": "auto", "loss_scale": 0}}\n',
        ),
        Valid('{"train_batch_size": 8, "zero_optimization": true}\n'),
        Valid(
            '{"train_batch_size": 8, "communication_data_type": "BF16", "seq_parallel_communication_data_type":'
            ' "fp32", "gradient_allreduce_op": "Sum", "zero_optimization": {"stage": 2}}\n',
        ),
        Valid('{"train_batch_size": 8, "expert_parallel": false, "vocabulary_size": ""}\n'),
        # DeepSpeed reads `bf16` and never looks at the older `bfloat16` beside it (DSL401 says so).
        Valid('{"train_batch_size": 8, "bf16": {"enabled": true}, "bfloat16": "yes"}\n', path="ds_config.json"),
        # DeepSpeed 0.19.3 has no gradient_allreduce_op: it ignores the key (DSL416 says so), whatever the stage.
        Valid(
            '{"train_batch_size": 8, "gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}\n',
            path="ds_config.json",
            deepspeed_version="0.19.3",
        ),
    )
    invalid = (
        Invalid('{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 5}\n}\n', lines=(3,)),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "offload_param": {"device": "gpu"}\n  },\n  "fp16": {"enabled": true, "loss_scale": -1}\n}\n',
            lines=(5, 7),
        ),
        Invalid('{\n  "train_batch_size": 8,\n  "bf16": true\n}\n', lines=(3,)),
        Invalid(
            '{\n  "train_batch_size": "32",\n  "optimizer": "AdamW",\n  "gradient_clipping": "1.0"\n}\n',
            lines=(2, 3),
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "communication_data_type": "float16",\n'
            '  "seq_parallel_communication_data_type": "fp61",\n  "gradient_allreduce_op": "avg"\n}\n',
            lines=(3, 4, 5),
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "communication_data_type": 16,\n'
            '  "gradient_allreduce_op": "sum",\n  "zero_optimization": {"stage": 3}\n}\n',
            lines=(3, 4),
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "timers": 7,\n  "bf16": null,\n  "bfloat16": "yes",\n'
            '  "expert_parallel": true\n}\n',
            lines=(3, 5, 6),
        ),
    )

    def check(self) -> None:
        self._top_level_kinds()
        self._accepted_strings()
        self._allreduce_sum()
        tuning = autotuning_enabled(self.root)
        for item in validated_entries(self.root, self.schema):
            field = item.field
            if field is None:
                continue
            node = item.entry.value
            if tuning and isinstance(node, Array):
                continue  # the autotuner's search space: it tries each value
            value = to_python(node)
            where = ".".join(item.path)
            special = self._custom_validators(item.path, value, self.context.deepspeed_version)
            if special is not None:
                self.report_node(node, f"`{where}` {special}; DeepSpeed stops at start-up")
                continue
            if accepts(field.type, value, self.schema) is False:
                self.report_node(
                    node,
                    f"`{where}` must be {describe(field.type)}, not {_show(value)}; DeepSpeed refuses it",
                )
                continue
            if isinstance(node, Scalar) and within_bounds(field, value) is False:
                bounds = ", ".join(f"{k} {v}" for k, v in field.bounds.items())
                self.report_node(node, f"`{where}` is out of range ({bounds}); DeepSpeed stops at start-up")

        if not self.context.deepspeed_version < DYNAMIC_LOSS_SCALE_CHECKED_SINCE:
            self._dynamic_loss_scale()

    def _top_level_kinds(self) -> None:
        """Values of a kind DeepSpeedConfig refuses for that key (probed from DeepSpeed by the generator)."""
        for top in self.root.last_entries():
            refused = self.schema.refused_value_kinds.get(top.key)
            if not refused or is_auto(top.value) or (top.key == "bfloat16" and bfloat16_ignored(self.root)):
                continue  # DeepSpeed does not read `bfloat16` beside `bf16`
            kind = _kind(top.value)
            if kind is None or kind not in refused:
                continue
            if kind in self.schema.falsy_values_accepted.get(top.key, ()) and not to_python(top.value):
                continue  # DeepSpeed tests the value for truth: `"expert_parallel": false` is skipped
            accepted = self.schema.accepted_strings.get(top.key)
            if accepted is not None:
                wanted = f"must be {_one_of(accepted)}, not {_show(to_python(top.value))}"
            elif {"string", "number", "list"} <= set(refused) and "object" not in refused:
                wanted = "must be an object"
            elif {"string", "list", "object"} <= set(refused):
                wanted = "must be a number"
            else:
                wanted = f"cannot be {'null' if kind == 'null' else 'a ' + kind}"
            self.report_node(top.value, f"`{top.key}` {wanted}; DeepSpeed stops at start-up")

    def _accepted_strings(self) -> None:
        """Keys that take only certain strings (probed from DeepSpeed by the generator): `communication_data_type`
        fp16/bf16/fp32, `gradient_allreduce_op` mean/sum; DeepSpeed lower()s them and raises a ValueError on any
        other string. "auto" is DSL405's."""
        for top in self.root.last_entries():
            accepted = self.schema.accepted_strings.get(top.key)
            value = scalar(top.value)
            if accepted is None or not isinstance(value, str) or value == "auto" or accepted.accepts(value):
                continue
            close = difflib.get_close_matches(value.lower(), [v.lower() for v in accepted.values], n=1, cutoff=0.6)
            hint = f" (did you mean {json.dumps(close[0])}?)" if close else ""
            self.report_node(
                top.value,
                f"`{top.key}` must be {_one_of(accepted)}, not {_show(value)}{hint}",
            )

    def _allreduce_sum(self) -> None:
        """`gradient_allreduce_op: "sum"` is refused with ZeRO stage 3, ZenFlow or DeepCompile
        (runtime/config.py, `_do_error_check`)."""
        entry = self.root.entry("gradient_allreduce_op")
        value = scalar(entry.value) if entry is not None else None
        if "gradient_allreduce_op" not in self.schema.top_level_keys:
            return  # the project's DeepSpeed predates the key and ignores it (DSL416 says so)
        if entry is None or not isinstance(value, str) or value.lower() != "sum":
            return
        zenflow = node_at(self.root, "zero_optimization", "zenflow")
        deepcompile = node_at(self.root, "compile", "deepcompile")
        if zero_stage(self.root) == 3:
            other = "ZeRO stage 3"
        elif zenflow is not None and scalar(zenflow) is not None:
            other = "ZenFlow (`zero_optimization.zenflow`)"
        elif isinstance(deepcompile, Scalar) and lax_bool(deepcompile.value) is True:
            other = "DeepCompile (`compile.deepcompile`)"
        else:
            return
        self.report_node(
            entry.value,
            f'`gradient_allreduce_op` "sum" is refused with {other}; use "mean" (the default)',
        )

    def _dynamic_loss_scale(self) -> None:
        """DeepSpeedFP16Config's model validator: with dynamic loss scaling (fp16 on, loss_scale 0),
        loss_scale_window and min_loss_scale must be > 0."""
        section = self.section("fp16")
        if section is None or enabled(self.root, "fp16") is not True:
            return
        scale = section.get("loss_scale")
        scale_value = 0 if scale is None or is_auto(scale) else scalar(scale)
        if _number(scale_value) != 0:
            return
        for key in FP16_INTEGER_FIELDS:
            entry = section.entry(key)
            if entry is None or is_auto(entry.value):
                continue
            number = _number(scalar(entry.value))
            if number is not None and not isinstance(scalar(entry.value), bool) and number <= 0:
                self.report_node(
                    entry.value,
                    f"`fp16.{key}` must be > 0 with dynamic loss scaling (loss_scale 0); DeepSpeed refuses it",
                )

    @staticmethod
    def _custom_validators(path: tuple[str, ...], value: Any, version: Version) -> str | None:
        if len(path) != 2 or path[0] != "fp16" or value is UNKNOWN:
            return None
        key = path[1]
        if key == "loss_scale" and not version < LOSS_SCALE_CHECKED_SINCE:
            if isinstance(value, bool):
                return "must be a number, not a bool"
            try:
                number = float(value)
            except (TypeError, ValueError):
                return "must be a number"
            except OverflowError:  # an integer of hundreds of digits: no claim about it
                return None
            if not math.isfinite(number):
                return "must be finite"
            if number < 0:
                return "must be >= 0 (0 means dynamic loss scaling)"
        if key in FP16_INTEGER_FIELDS:
            if isinstance(value, bool):
                return "must be an integer, not a bool"
            if isinstance(value, float) and not math.isfinite(value):
                return "must be finite"
        return None


def _one_of(accepted: AcceptedStrings) -> str:
    values = ", ".join(json.dumps(v) for v in accepted.values)
    return f"one of {values}"  # `accepted.ignore_case`: the rule's docs say which keys take any case


def _kind(node: Node) -> str | None:
    if isinstance(node, Object):
        return None if node.opaque else "object"
    if isinstance(node, Array):
        return "list"
    value = scalar(node)
    if value is UNKNOWN:
        return None
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    if value is UNKNOWN or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return "this value"
    return text if len(text) <= 40 else text[:37] + "..."

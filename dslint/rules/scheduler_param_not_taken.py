"""DSL462: a `scheduler.params` key the DeepSpeed scheduler does not take, or a `warmup_type` it does not know."""

from __future__ import annotations

from dslint.config.tree import Object, Scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# The keyword arguments of DeepSpeed's schedulers (`runtime/lr_schedules.py`, 0.19.8: each `__init__` after
# `optimizer`), which `DeepSpeedEngine._configure_lr_scheduler` calls as `scheduler(optimizer, **params)`.
SCHEDULER_PARAMETERS = {
    "LRRangeTest": frozenset(
        {
            "lr_range_test_min_lr",
            "lr_range_test_step_size",
            "lr_range_test_step_rate",
            "lr_range_test_staircase",
            "last_batch_iteration",
        }
    ),
    "OneCycle": frozenset(
        {
            "cycle_min_lr",
            "cycle_max_lr",
            "decay_lr_rate",
            "cycle_first_step_size",
            "cycle_second_step_size",
            "cycle_first_stair_count",
            "cycle_second_stair_count",
            "decay_step_size",
            "cycle_momentum",
            "cycle_min_mom",
            "cycle_max_mom",
            "decay_mom_rate",
            "last_batch_iteration",
        }
    ),
    "WarmupLR": frozenset(
        {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"}
    ),
    "WarmupDecayLR": frozenset(
        {
            "total_num_steps",
            "warmup_min_lr",
            "warmup_max_lr",
            "warmup_num_steps",
            "warmup_type",
            "last_batch_iteration",
        }
    ),
    "WarmupCosineLR": frozenset(
        {
            "total_num_steps",
            "warmup_min_ratio",
            "warmup_num_steps",
            "cos_min_ratio",
            "warmup_type",
            "last_batch_iteration",
        }
    ),
}
# The parameters each takes with no default: a `params` without one fails the same way.
REQUIRED_PARAMETERS = {
    "WarmupDecayLR": ("total_num_steps",),
    "WarmupCosineLR": ("total_num_steps",),
    "OneCycle": ("cycle_min_lr", "cycle_max_lr"),
}
# The increasing functions `WarmupLR` (and the schedulers built on it) know; any other is replaced by "log".
WARMUP_TYPES = frozenset({"log", "linear"})


class SchedulerParamNotTaken(ConfigRule):
    code = "DSL462"
    slug = "scheduler-param-not-taken"
    message = "the scheduler DeepSpeed builds takes no such parameter: initialize fails (TypeError)"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a key of a `scheduler` section's `params` that the scheduler `type` names does not take, for
            DeepSpeed's own schedulers (`WarmupLR`, `WarmupDecayLR`, `WarmupCosineLR`, `OneCycle`,
            `LRRangeTest`): `warmup_max_lr` for `WarmupCosineLR` (which takes ratios, `warmup_min_ratio` and
            `cos_min_ratio`), `max_lr` for `WarmupLR`; and a `params` without a parameter the class requires
            (`total_num_steps` of `WarmupDecayLR` and `WarmupCosineLR`, `cycle_min_lr` and `cycle_max_lr` of
            `OneCycle`: nothing fills a key that is not written, not the Trainer's "auto" either). Also, as a
            warning, a `warmup_type` other than `log` or `linear`. Not where every script handing the config to
            `deepspeed.initialize` also hands it its own `lr_scheduler` (the section is then never built:
            DSL457), nor for another scheduler type.
        """,
        why="""
            `DeepSpeedEngine._configure_lr_scheduler` builds the section's scheduler as
            `scheduler(optimizer, **params)` (`runtime/engine.py`, 0.19.8), under `deepspeed.initialize` and
            under the Hugging Face Trainer or accelerate alike (their `DummyScheduler` defers to it): a key the
            class does not take raises `TypeError: __init__() got an unexpected keyword argument` when the
            engine is built, after the model was loaded, and a required one left out `missing 1 required
            positional argument`. An unknown `warmup_type` is only logged: `WarmupLR`
            falls back to the `log` warmup (`runtime/lr_schedules.py`), not the curve the config asks for.
        """,
        example="""
            {"scheduler": {"type": "WarmupCosineLR",
                           "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-5, "warmup_num_steps": 100,
                                      "total_num_steps": 1000}}}
        """,
        use_instead="""
            {"scheduler": {"type": "WarmupCosineLR",
                           "params": {"warmup_min_ratio": 0, "warmup_num_steps": 100, "total_num_steps": 1000}}}
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0,'
            ' "warmup_max_lr": "auto", "warmup_num_steps": 100, "warmup_type": "linear"}}}\n'
        ),
        # the required step count written ("auto": the Hugging Face Trainer fills it)
        Valid(
            '{"train_batch_size": 8, "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": "auto",'
            ' "warmup_num_steps": 100}}}\n'
        ),
        # a scheduler type that is not DeepSpeed's own: its parameters are not known here
        Valid('{"train_batch_size": 8, "scheduler": {"type": "CosineAnnealing", "params": {"t_max": 100}}}\n'),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "scheduler": {\n    "type": "WarmupCosineLR",\n    "params": {\n'
            '      "warmup_min_lr": 0,\n      "warmup_max_lr": 3e-5,\n      "total_num_steps": 1000\n    }\n  }\n}\n',
            lines=(6, 7),
        ),
        Invalid(
            '{"train_batch_size": 8,\n "scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}}\n',
            lines=(2,),
        ),
        # no total_num_steps: WarmupDecayLR(optimizer, **params) misses its one required argument
        Invalid(
            '{"train_batch_size": 8,\n "scheduler": {"type": "WarmupDecayLR",\n'
            '  "params": {"warmup_min_lr": 0, "warmup_max_lr": 1e-4, "warmup_num_steps": 100}}}\n',
            lines=(3,),
        ),
    )

    def check(self) -> None:
        section = self.section("scheduler")
        if section is None or "scheduler" in self.context.client_sections:
            return
        kind = section.get("type")
        params = section.entry("params")
        if not isinstance(kind, Scalar) or not isinstance(kind.value, str) or params is None:
            return
        taken = SCHEDULER_PARAMETERS.get(kind.value)
        if taken is None or not isinstance(params.value, Object) or params.value.opaque:
            return
        missing = [key for key in REQUIRED_PARAMETERS.get(kind.value, ()) if params.value.entry(key) is None]
        if missing:
            needed = " and ".join(f"`{key}`" for key in missing)
            self.report_key(params, f"{kind.value} needs {needed}: initialize fails (TypeError)")
        for entry in params.value.entries:
            if entry.key not in taken:
                self.report_key(entry, f"{kind.value} takes no `{entry.key}`: initialize fails (TypeError)")
            elif entry.key == "warmup_type" and _unknown_warmup(entry.value):
                assert isinstance(entry.value, Scalar)
                self.report_key(
                    entry,
                    f"warmup_type {entry.value.value!r} is unknown: DeepSpeed warns and warms up by `log`",
                    severity=Severity.WARNING,
                )


def _unknown_warmup(value: object) -> bool:
    return isinstance(value, Scalar) and isinstance(value.value, str) and value.value not in WARMUP_TYPES

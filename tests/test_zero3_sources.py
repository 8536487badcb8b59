"""Where a ZeRO-3 fact comes from when the script does not write it (issue #23, held-out misses): an accelerate
launch's DeepSpeed config (DSL207), a config a helper builds and returns, TrainingArguments created after the
load (DSL208), an accumulation count a generated config shares with the loss's divisor (DSL304). Each shape is a
fixture project under fixtures/projects/zero3_sources/, flagged and silent twins side by side."""

from __future__ import annotations

from test_generalize_shapes import _findings, _match

ACCELERATE_Z3 = "ZeRO-3 under accelerate ("


def _codes(*codes: str) -> list[tuple[str, int, str, str]]:
    return [f for f in _findings("zero3_sources") if f[2] in codes]


def test_device_map_under_an_accelerate_zero3_launch() -> None:
    """The scorer loaded with a device map and handed to `accelerator.prepare` under the ZeRO-3 YAML (its
    `deepspeed_config_file` says stage 3) is flagged; the frozen judge that never reaches prepare, and the same
    script launched with the ZeRO-2 YAML, are silent."""
    found = _codes("DSL207")
    _match(found, [("score_long_context.py", 14, "DSL207", ACCELERATE_Z3)])
    assert found[0][3].endswith("configs/accel_z3.yaml:3): from_pretrained must not get a device_map; remove it")

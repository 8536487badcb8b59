"""The training-loop fixes, checked against real DeepSpeed on the CPU.

`fixtures/fix/loop_manual_optimizer_step.in.py` steps and zeroes the optimizer by hand and divides the loss by
the accumulation steps; dslint's fixes (DSL302, DSL309, DSL304) turn it into the `.out.py` twin. Both run for two
micro-steps with `gradient_accumulation_steps: 2` (fp32, a client torch SGD, ZeRO off) in a child process.
The fixed loop must make exactly one optimizer update, at the second micro-step, equal to one SGD step with the
mean gradient of the two micro-batches (so the loss is divided by the accumulation steps once, not twice); the
original makes an update on every micro-step and never counts one. `loop_step_under_accumulation_test.in.py` steps the
engine under `(i + 1) % 2 == 0`: no update at all; its DSL303 fix gives exactly one. A last child
(`loop_claims_child.py`) shows the behaviour DSL301, DSL305, DSL307 and DSL308 describe.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from deepspeed_cpu import single_process_env
from fixture_support import FIXTURES, fix_file_text

CLAIMS = Path(__file__).resolve().parent / "loop_claims_child.py"


def _run(script: Path) -> dict[str, Any]:
    env = single_process_env()
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600, cwd=script.parent
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _run_pair(name: str, codes: set[str], folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fix `fixtures/fix/NAME.in.py` with dslint, then run the original and the fixed script."""
    path = FIXTURES / "fix" / f"{name}.in.py"
    original_text = path.read_text(encoding="utf-8")
    outcome = fix_file_text(str(path), original_text)
    assert outcome.error is None
    assert {d.code for d in outcome.applied} == codes
    original, fixed = folder / f"{name}_original.py", folder / f"{name}_fixed.py"
    original.write_text(original_text, encoding="utf-8")
    fixed.write_text(outcome.text, encoding="utf-8")
    return _run(original), _run(fixed)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    return _run_pair("loop_manual_optimizer_step", {"DSL302", "DSL304", "DSL309"}, tmp_path_factory.mktemp("loop"))


def _close(a: list[float], b: list[float]) -> bool:
    return all(abs(x - y) <= 1e-6 for x, y in zip(a, b, strict=True))


def test_fixed_loop_makes_exactly_one_update(runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    _, fixed = runs
    weights = fixed["weights"]
    assert fixed["global_steps"] == 1
    assert weights[1] == weights[0], "no update may happen before the accumulation boundary"
    assert weights[2] != weights[1]
    # One SGD step with the mean micro-batch gradient: not halved again (DSL304), not clipped (norm below 1.0).
    assert fixed["grad_norm"] < 1.0
    assert _close(weights[2], fixed["expected"]), "the update is one SGD step with the mean micro-batch gradient"


def test_original_loop_updates_on_every_micro_step(runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    original, fixed = runs
    weights = original["weights"]
    assert original["global_steps"] == 0, "the engine never counted an optimizer step"
    assert weights[1] != weights[0], "the hand-made optimizer.step() updated before the accumulation boundary"
    assert weights[2] != weights[1]
    assert not _close(weights[2], fixed["weights"][2])


def test_engine_step_moved_out_of_the_accumulation_test(tmp_path: Path) -> None:
    original, fixed = _run_pair("loop_step_under_accumulation_test", {"DSL303"}, tmp_path)
    # The original steps only under `(i + 1) % 2 == 0`: with gradient_accumulation_steps 2, no update at all.
    assert original["global_steps"] == 0
    assert original["weights"][0] == original["weights"][1] == original["weights"][2]
    # The fixed loop steps on every micro-step: exactly one update, at the accumulation boundary.
    assert fixed["global_steps"] == 1
    assert fixed["weights"][0] == fixed["weights"][1] != fixed["weights"][2]


def test_deepspeed_behaviour_behind_the_loop_rules() -> None:
    claims = _run(CLAIMS)
    # DSL301: without ZeRO, a direct loss.backward() raises.
    assert "Direct calls to tensor.backward() are not supported" in claims["direct_backward"]["error"]
    # DSL305: a config without "gradient_clipping" clips at 1.0.
    assert claims["direct_backward"]["default_gradient_clipping"] == 1.0
    # DSL307: under ZeRO-3 with accumulation, forwards through the raw model change the training result.
    assert claims["zero3_raw_forward_difference"] > 1e-4
    # DSL308: zero.Init under a stage-2 config leaves empty parameters, and the engine cannot run the model.
    assert claims["zero_init_stage_2"]["numel"] == 0
    assert claims["zero_init_stage_2"]["error"]
    # DSL305: under ZeRO-2 the gradients are gone from the parameters after engine.backward; clipping finds none.
    assert claims["clip_under_zero_2"] == {"grads_none": True, "norm": 0.0}

"""Acceptance: `dslint fix --unsafe-fixes` turns the common "resume after initialize" shapes into scripts that
really train from the loaded weights, under DeepSpeed on the CPU, at ZeRO-2 and ZeRO-3.

The variants live in `fixtures/fix/resume_after_initialize.in.py` (`test_fixtures.py` pins the fixed text):
the engine rebinding the model's name (`model, ... = deepspeed.initialize(model=model)` then
`model.load_state_dict(...)`), `engine.module.load_state_dict`, a load under `if resume:`, and
`self.model = deepspeed.initialize(...)[0]` / a tuple of `self.` attributes. One child process (one DeepSpeed
start-up, both stages) runs each variant twice: as `dslint fix` without `--unsafe-fixes` leaves it (only
`map_location="cpu"`), and as `--unsafe-fixes` fixes it. Each run trains two `engine.step()`s at lr 0, so
the weights in effect afterwards must be exactly the checkpoint's. Before the fix every variant fails (the
engine's keys carry `module.`; ZeRO-3's partitioned parameters are empty) or trains from the initial weights
(ZeRO-2 writes its fp32 copy back); after it every variant keeps the checkpoint's weights.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from deepspeed_cpu import single_process_env

from dslint.fix.loop import fix_source, lint_text

pytest.importorskip("deepspeed")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "fixtures" / "fix" / "resume_after_initialize.in.py"
STAGES = (2, 3)

CHILD = textwrap.dedent(
    """
    import importlib.util
    import json
    import sys

    import deepspeed
    import torch

    def load_module(name, path):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    ckpt = sys.argv[1]
    torch.manual_seed(7)
    source = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    torch.save(source.state_dict(), ckpt)
    wanted = [p.detach().clone() for p in source.parameters()]
    for label, path in (("safe", sys.argv[2]), ("unsafe", sys.argv[3])):
        module = load_module("script_" + label, path)
        for variant in module.VARIANTS:
            for stage in (2, 3):
                result = {"script": label, "variant": variant.__name__, "stage": stage}
                try:
                    engine = variant(ckpt, stage)
                    params = list(engine.module.parameters())
                    with deepspeed.zero.GatheredParameters(params):
                        kept = all(torch.equal(p.detach().cpu(), w) for p, w in zip(params, wanted))
                    result["outcome"] = "kept" if kept else "lost"
                except Exception as error:  # the originals fail: that is what is measured
                    result["outcome"] = "error"
                    result["error"] = f"{type(error).__name__}: {error}"[:400]
                print("RESULT " + json.dumps(result), flush=True)
    """
)


def test_fixed_resume_scripts_train_from_the_loaded_weights(tmp_path: Path) -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    safe = fix_source("train.py", text, unsafe=False)
    unsafe = fix_source("train.py", text, unsafe=True)
    assert safe.error is None and unsafe.error is None
    assert {d.code for d in safe.applied} == {"DSL201"}  # what `dslint fix` did before: map_location only
    assert not {d.code for d in lint_text("train.py", unsafe.text)} & {"DSL203", "DSL209"}

    (tmp_path / "safe.py").write_text(safe.text, encoding="utf-8")
    (tmp_path / "unsafe.py").write_text(unsafe.text, encoding="utf-8")
    child = tmp_path / "child.py"
    child.write_text(CHILD, encoding="utf-8")
    env = single_process_env(PYTHONHASHSEED="0")
    args = [str(tmp_path / "w.pt"), str(tmp_path / "safe.py"), str(tmp_path / "unsafe.py")]
    run = subprocess.run(
        [sys.executable, str(child), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = [json.loads(line[len("RESULT ") :]) for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    variants = ("resume_rebound", "resume_engine_module", "resume_guarded", "resume_trainer", "resume_tuple_trainer")
    assert len(results) == 2 * len(variants) * len(STAGES), run.stdout[-3000:]
    by_key = {(r["script"], r["variant"], r["stage"]): r for r in results}

    for variant in variants:
        for stage in STAGES:
            fixed = by_key["unsafe", variant, stage]
            assert fixed["outcome"] == "kept", fixed
            original = by_key["safe", variant, stage]
            assert original["outcome"] in ("error", "lost"), original

    # Loading a model's state dict into the engine object fails on the prefix, at both stages
    # (with strict=False it loads nothing instead).
    for variant in ("resume_rebound", "resume_trainer"):
        for stage in STAGES:
            error = by_key["safe", variant, stage].get("error", "")
            assert "Missing key(s)" in error and '"module.' in error, error
    for stage in STAGES:
        assert by_key["safe", "resume_tuple_trainer", stage]["outcome"] == "lost"
    # Into engine.module: ZeRO-2 accepts the load, and the next engine.step() silently undoes it;
    # ZeRO-3's partitioned parameters are empty, so the load fails.
    for variant in ("resume_engine_module", "resume_guarded"):
        assert by_key["safe", variant, 2]["outcome"] == "lost", by_key["safe", variant, 2]
        assert "size mismatch" in by_key["safe", variant, 3].get("error", ""), by_key["safe", variant, 3]

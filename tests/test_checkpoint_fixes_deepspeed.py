"""Acceptance: the two checkpoint codemods produce scripts that really load the weights and train under DeepSpeed.

A writer process (real DeepSpeed on the CPU, ZeRO-2) trains one step, then writes a DeepSpeed checkpoint
directory with `engine.save_checkpoint` and a plain state dict with `torch.save`. The fixed fixture scripts
(`fixtures/fix/load_state_dict_*.out.py`, which `test_fixtures.py` proves are what `dslint fix
--unsafe-fixes` makes of the `.in.py` scripts) then run in their own processes: each must print the sum of the
weights it loaded, equal to the writer's, and finish a training step.

Under ZeRO-3 the fixer's own output for the checkpoint-directory script (its config switched to stage 3) must
load the weights too: this is what `load_optimizer_states=False` in the rewrite is for (with
`load_module_only=True` alone, DeepSpeed 0.19.8 leaves ZeRO-3 weights as they were).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from deepspeed_cpu import single_process_env

from dslint.fix.loop import fix_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "fix"

pytest.importorskip("deepspeed")

WRITER = textwrap.dedent(
    """
    import sys
    import deepspeed
    import torch

    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    config = {
        "train_micro_batch_size_per_gpu": 4,
        "zero_optimization": {"stage": int(sys.argv[3])},
        "optimizer": {"type": "Adam", "params": {"lr": 0.1, "torch_adam": True}},
    }
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    loss = engine(torch.randn(4, 8)).pow(2).mean()
    engine.backward(loss)
    engine.step()
    engine.save_checkpoint(sys.argv[1], tag="step1")
    with deepspeed.zero.GatheredParameters(list(engine.module.parameters())):
        torch.save(engine.module.state_dict(), sys.argv[2])
        print("saved", float(sum(p.detach().double().sum() for p in engine.module.parameters())))
    """
)


def _start(script: Path, *args: str, cwd: Path) -> Callable[[], str]:
    """Start `python script ARGS` (one process of real DeepSpeed on the CPU); calling the result waits for it,
    asserts that it succeeded and returns its output. Independent runs overlap: the suite's machine has two cores
    and pytest uses one."""
    env = single_process_env(PYTHONHASHSEED="0")
    process = subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def finish() -> str:
        try:
            stdout, stderr = process.communicate(timeout=300)
        finally:
            process.kill()  # nothing once it has ended
        assert process.returncode == 0, stdout[-3000:] + stderr[-3000:]
        return stdout

    return finish


def _run(script: Path, *args: str, cwd: Path) -> str:
    return _start(script, *args, cwd=cwd)()


def _value(output: str, label: str) -> float:
    for line in output.splitlines():
        if line.startswith(label + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {label!r} line in:\n{output}")


@pytest.fixture(scope="module")
def writers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, tuple[Path, Callable[[], str]]]]:
    """The writer under ZeRO-2 and under ZeRO-3, both started at once (each test waits for its own): stage ->
    (its folder, the wait for its output)."""
    started: dict[int, tuple[Path, Callable[[], str]]] = {}
    for stage in (2, 3):
        folder = tmp_path_factory.mktemp(f"zero{stage}")
        writer = folder / "writer.py"
        writer.write_text(WRITER, encoding="utf-8")
        ckpt_dir, weights = folder / "checkpoints", folder / "weights.pt"
        started[stage] = folder, _once(_start(writer, str(ckpt_dir), str(weights), str(stage), cwd=folder))
    yield started
    for _, finish in started.values():
        with contextlib.suppress(AssertionError):  # reaped; a failure is its test's to report
            finish()


def _once(finish: Callable[[], str]) -> Callable[[], str]:
    """`finish`, waited for once; later calls give the same output (or raise the same failure)."""
    outcome: list[str | AssertionError] = []

    def cached() -> str:
        if not outcome:
            try:
                outcome.append(finish())
            except AssertionError as failure:
                outcome.append(failure)
        if isinstance(outcome[0], AssertionError):
            raise outcome[0]
        return outcome[0]

    return cached


def test_fixed_scripts_load_the_checkpoint_and_train(writers: dict[int, tuple[Path, Callable[[], str]]]) -> None:
    tmp_path, written = writers[2]
    ckpt_dir, weights = tmp_path / "checkpoints", tmp_path / "weights.pt"
    saved = _value(written(), "saved")
    assert (ckpt_dir / "latest").read_text().strip() == "step1"
    assert (ckpt_dir / "step1" / "mp_rank_00_model_states.pt").is_file()

    # the two readers are independent: both start before either is awaited
    reading_dir = _start(
        FIXTURES / "load_state_dict_checkpoint_dir.out.py", "--ckpt-dir", str(ckpt_dir), "--tag", "step1", cwd=tmp_path
    )
    reading_file = _start(FIXTURES / "load_state_dict_plain_file.out.py", "--weights", str(weights), cwd=tmp_path)
    from_dir, from_file = reading_dir(), reading_file()
    assert _value(from_dir, "loaded") == pytest.approx(saved, rel=1e-9, abs=1e-9)
    assert "step" in from_dir

    assert _value(from_file, "loaded") == pytest.approx(saved, rel=1e-9, abs=1e-9)
    assert "step" in from_file


def test_load_checkpoint_rewrite_loads_weights_under_zero3(writers: dict[int, tuple[Path, Callable[[], str]]]) -> None:
    tmp_path, written = writers[3]
    ckpt_dir = tmp_path / "checkpoints"
    saved = _value(written(), "saved")
    assert (ckpt_dir / "step1" / "zero_pp_rank_0_mp_rank_00_model_states.pt").is_file()

    source = (FIXTURES / "load_state_dict_checkpoint_dir.in.py").read_text(encoding="utf-8")
    zero3 = source.replace('"zero_optimization": {"stage": 2}', '"zero_optimization": {"stage": 3}')
    assert zero3 != source
    outcome = fix_source("train.py", zero3, unsafe=True)
    assert outcome.error is None and "load_optimizer_states=False" in outcome.text
    script = tmp_path / "train_zero3.py"
    script.write_text(outcome.text, encoding="utf-8")

    output = _run(script, "--ckpt-dir", str(ckpt_dir), "--tag", "step1", cwd=tmp_path)
    assert _value(output, "loaded") == pytest.approx(saved, rel=1e-6, abs=1e-6)
    assert "step" in output

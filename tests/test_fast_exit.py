"""The console entry ends with `os._exit` once the report is flushed (dslint.cli.run): the exit status, stdout,
stderr, the report file and the cache are all as an ordinary exit leaves them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """import deepspeed
import torch

model = torch.nn.Linear(4, 4)
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds.json")
for batch in range(3):
    loss = engine(torch.randn(2, 4)).sum()
    loss.backward()
    optimizer.step()
"""


def _dslint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_status_and_output_survive_the_fast_exit(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    found = _dslint("check", "--no-cache", "train.py", cwd=tmp_path)
    assert found.returncode == 1, found.stderr
    assert "train.py:" in found.stdout and "Found " in found.stderr
    zero = _dslint("check", "--no-cache", "--exit-zero", "train.py", cwd=tmp_path)
    assert zero.returncode == 0 and zero.stdout == found.stdout
    clean = _dslint("check", "--no-cache", "--select", "DSL001", "train.py", cwd=tmp_path)
    assert clean.returncode == 0 and clean.stdout == ""
    error = _dslint("check", "--no-cache", "missing.py", cwd=tmp_path)
    assert error.returncode == 2 and "missing.py" in error.stderr


def test_report_file_and_cache_are_complete(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    expected = _dslint("check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path).stdout
    report, cache = tmp_path / "report.json", tmp_path / "cache"
    first = _dslint(
        "check", "--cache-dir", str(cache), "-o", str(report), "--output-format", "json", "train.py", cwd=tmp_path
    )
    assert first.returncode == 1
    assert report.read_text(encoding="utf-8") == expected
    assert any(p.is_file() and p.stat().st_size > 0 for p in cache.rglob("*"))
    warm = _dslint("check", "--cache-dir", str(cache), "--output-format", "json", "train.py", cwd=tmp_path)
    assert warm.returncode == 1 and warm.stdout == expected


def test_large_output_is_flushed_through_a_pipe(tmp_path: Path) -> None:
    for n in range(40):
        (tmp_path / f"train_{n}.py").write_text(SCRIPT, encoding="utf-8")
    full = _dslint("check", "--no-cache", "-j", "1", "--output-format", "full", ".", cwd=tmp_path)
    assert full.returncode == 1
    assert full.stdout.count("train_") >= 40 and full.stdout.endswith("\n")

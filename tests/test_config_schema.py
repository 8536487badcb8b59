"""The committed schema snapshot is what the generator makes from the installed DeepSpeed, and linting never
imports deepspeed or torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dslint.config.schema import SCHEMA_PATH, load_schema

ROOT = Path(__file__).resolve().parent.parent


def test_snapshot_names_its_deepspeed_version() -> None:
    data = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert data["deepspeed_version"] == "0.19.8"
    schema = load_schema()
    assert "zero_optimization" in schema.top_level_keys and "zero_optimisation" not in schema.top_level_keys
    assert schema.sections["zero_optimization"] == "DeepSpeedZeroConfig"
    zero = schema.models["DeepSpeedZeroConfig"]
    assert zero.forbids_extra and zero.field("stage3_prefetch_bucket_size") is zero.field("prefetch_bucket_size")


def test_snapshot_is_up_to_date_with_installed_deepspeed() -> None:
    pytest.importorskip("deepspeed")
    result = subprocess.run(
        [sys.executable, "-m", "dslint.config.generate_schema", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, "run `python -m dslint.config.generate_schema`\n" + result.stderr[-2000:]


def test_linting_never_imports_deepspeed_or_torch(tmp_path: Path) -> None:
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "zero_optimisation": {"stage": 3}}')
    (tmp_path / "train.py").write_text(
        'import deepspeed\ne, _, _, _ = deepspeed.initialize(model=m, config="ds_config.json")\n'
    )
    probe = (
        "import sys\nfrom dslint.lint.batch import lint_files\nfrom dslint.lint.files import discover\n"
        "from dslint.selection import RuleSelection\n"
        f"results = lint_files([(p, RuleSelection()) for p in discover([{str(tmp_path)!r}]).files], jobs=1)\n"
        "assert sum(len(r.diagnostics) for r in results) == 2, results\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('deepspeed', 'torch', 'pydantic')))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"

"""Size limits on notebooks apply to what dslint parses, the code cells, not to the file with its outputs; a file
skipped by a limit is reported as skipped, and the run's exit status is that of the files it did check."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = [
    "import deepspeed\n",
    "engine, _, _, _ = deepspeed.initialize(\n",
    '    model=model, model_parameters=model.parameters(), config={"train_batch_size": 8}\n',
    ")\n",
    "loss = engine(batch)\n",
    "loss.backward()\n",
]
FINDING = "big.ipynb:cell 1:6:1: DSL301 "


def _notebook(path: Path, output_bytes: int, code: list[str] = CODE) -> None:
    image = base64.b64encode(os.urandom(output_bytes * 3 // 4)).decode()
    output = {"output_type": "display_data", "metadata": {}, "data": {"image/png": image, "text/plain": ["<Figure>"]}}
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": code, "outputs": [output]}
    kernel = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    document = {"cells": [cell], "metadata": kernel, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")


def _dslint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "dslint", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_a_notebook_of_one_and_a_half_mb_with_a_finding_in_its_code_exits_1(tmp_path: Path) -> None:
    _notebook(tmp_path / "big.ipynb", 1_500_000)
    assert (tmp_path / "big.ipynb").stat().st_size > 1_500_000  # over the default max-file-size (1 MB)
    for args in (("--no-cache",), ()):  # cold, and through the result cache
        result = _dslint(tmp_path, "check", *args, ".")
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stdout.startswith(FINDING) and len(result.stdout.splitlines()) == 1
        assert "skipped" not in result.stderr
    fixed = _dslint(tmp_path, "fix", "--diff", "big.ipynb")
    assert fixed.returncode == 1 and '+    "engine.backward(loss)\\n"' in fixed.stdout, fixed.stderr


def test_the_code_cells_are_held_to_max_file_size_not_the_outputs(tmp_path: Path) -> None:
    code_size = len("".join(CODE).encode("utf-8"))
    _notebook(tmp_path / "big.ipynb", 5_000)
    limit = f"[tool.dslint]\nmax-file-size = {code_size + 10}\n"
    (tmp_path / "pyproject.toml").write_text(limit, encoding="utf-8")
    assert (tmp_path / "big.ipynb").stat().st_size > 10 * code_size
    result = _dslint(tmp_path, "check", "--no-cache", ".")
    assert result.returncode == 1 and result.stdout.startswith(FINDING), result.stdout + result.stderr


def test_a_notebook_skipped_by_a_limit_is_reported_and_is_no_tool_error(tmp_path: Path) -> None:
    long_code = CODE + [f"x_{n} = {n}\n" for n in range(40)]
    _notebook(tmp_path / "big.ipynb", 5_000, long_code)
    (tmp_path / "good.py").write_text("print('no deepspeed here')\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.dslint]\nmax-file-size = 300\n", encoding="utf-8")
    result = _dslint(tmp_path, "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    size = len("".join(long_code).encode("utf-8"))
    skipped = f"dslint: skipped big.ipynb: its code cells are {size} bytes, over max-file-size (300 bytes)"
    assert skipped in result.stderr
    assert result.stderr.splitlines()[-1] == "All checks passed (1 file checked; 1 file skipped (see above))."
    fixed = _dslint(tmp_path, "fix", ".")
    assert fixed.returncode == 0 and "dslint: skipped big.ipynb: its code cells are" in fixed.stderr
    # the file with its outputs is held to 64 x max-file-size (19,200 bytes here)
    _notebook(tmp_path / "big.ipynb", 30_000)
    result = _dslint(tmp_path, "check", "--no-cache", ".")
    assert result.returncode == 0 and "over the notebook file limit, 64 x max-file-size (18.8 kB)" in result.stderr

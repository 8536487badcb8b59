"""One finding per key: a config checked on its own (reader unknown) and through the script that hands it to
deepspeed.initialize (reader known) is reported once, with the script's verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.lint.result import one_per_place

ROOT = Path(__file__).resolve().parent.parent
CONFIG = '{\n  "train_batch_size": 8,\n  "optimizer": {"type": "Adam", "params": {"lr": "auto"}}\n}\n'
SCRIPT = (
    "import deepspeed\n"
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(2, 2)\n"
    "engine, _, _, _ = deepspeed.initialize(\n"
    '    model=model, model_parameters=model.parameters(), config="ds_config.json"\n'
    ")\n"
)


def _dslint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "dslint", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_auto_lr_in_a_config_that_initialize_reads_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "ds_config.json").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    result = _dslint(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert result.returncode == 1, result.stderr
    found = [(d["code"], d["location"]["line"], d["severity"]) for d in json.loads(result.stdout)]
    assert found == [("DSL405", 3, "error")]
    # DeepSpeed hands optimizer params to the optimizer as they are: the string reaches it (GROUND_TRUTH #4/#6)
    message = json.loads(result.stdout)[0]["message"]
    assert message.startswith('write a value for `optimizer.params.lr`, not "auto"') and "fails where the" in message
    alone = _dslint(tmp_path, "check", "--no-cache", "--output-format", "json", "ds_config.json")
    assert json.loads(alone.stdout) == [], "on its own, the reader is unknown: nothing is reported"


def _finding(message: str, severity: Severity, line: int = 3) -> Diagnostic:
    return Diagnostic("DSL405", "auto-config-value", message, severity, "c.json", Location(line, 4), Location(line, 9))


def test_one_per_place_keeps_the_scripts_verdict_and_other_places() -> None:
    guess, known = _finding("guess", Severity.INFO), _finding("known", Severity.ERROR)
    elsewhere = _finding("guess", Severity.INFO, line=5)
    assert one_per_place([guess, elsewhere], [known, known]) == [elsewhere, known]
    assert one_per_place([guess, elsewhere], []) == [guess, elsewhere]


def test_one_per_place_knows_a_file_by_either_spelling_of_its_path() -> None:
    """`dslint check /abs/project` from its parent: the config is discovered as an absolute path, and a script's
    reading of it shows the path relative to the working directory; still one place."""
    guess = _finding("guess", Severity.INFO)
    known = replace(_finding("known", Severity.ERROR), path=os.path.abspath("c.json"))
    assert one_per_place([guess], [known]) == [known]

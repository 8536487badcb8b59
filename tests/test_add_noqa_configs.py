"""`--add-noqa` and noqa comments in config files: never a comment in strict JSON (the advice is per-file-ignores,
and following it silences the finding), comments in a config that has them (HJSON, JSON with comments) work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.lint.suppression import add_config_noqa, admits_comments, scan

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
    "for batch in range(3):\n"
    "    loss = engine(batch)\n"
    "    loss.backward()\n"
    "    engine.step()\n"
)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "dslint", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


def _project(tmp_path: Path, config: str, name: str = "ds_config.json") -> Path:
    (tmp_path / name).write_text(config, encoding="utf-8")
    (tmp_path / "train.py").write_text(SCRIPT.replace("ds_config.json", name), encoding="utf-8")
    return tmp_path


def test_strict_json_gets_no_comment_and_the_advice_works(tmp_path: Path) -> None:
    project = _project(tmp_path, CONFIG)
    before = _run("check", "--no-cache", ".", cwd=project)
    assert before.returncode == 1 and "ds_config.json:3:" in before.stdout and "train.py:10:" in before.stdout
    added = _run("check", "--add-noqa", ".", cwd=project)
    assert added.returncode == 0, added.stderr
    assert (project / "ds_config.json").read_text(encoding="utf-8") == CONFIG
    json.loads((project / "ds_config.json").read_text(encoding="utf-8"))
    # the script gets a comment for its own finding only, on its own line (not at the config's line 3)
    script = (project / "train.py").read_text(encoding="utf-8").splitlines()
    assert script[9] == "    loss.backward()  # noqa: DSL301"
    assert sum("noqa" in line for line in script) == 1
    assert "Added 1 noqa comment to 1 file." in added.stderr
    advice = [line for line in added.stderr.splitlines() if "ds_config.json" in line]
    assert len(advice) == 1 and "per-file-ignores" in advice[0] and "strict JSON" in advice[0]
    entry = advice[0].rsplit(": ", 1)[1]
    assert entry == '"ds_config.json" = ["DSL405"]'
    (project / "pyproject.toml").write_text(f"[tool.dslint.per-file-ignores]\n{entry}\n", encoding="utf-8")
    after = _run("check", "--no-cache", ".", cwd=project)
    assert after.returncode == 0, after.stdout  # also the finding reported through the script that reads it


def test_a_second_add_noqa_on_strict_json_changes_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, CONFIG)
    _run("check", "--add-noqa", ".", cwd=project)
    script = (project / "train.py").read_text(encoding="utf-8")
    again = _run("check", "--add-noqa", ".", cwd=project)
    assert "Added 0 noqa comments to 0 files." in again.stderr
    assert (project / "ds_config.json").read_text(encoding="utf-8") == CONFIG
    assert (project / "train.py").read_text(encoding="utf-8") == script


def test_a_config_with_comments_gets_a_working_noqa_comment(tmp_path: Path) -> None:
    config = "// read by DeepSpeed (hjson)\n" + CONFIG.replace('"auto"}}\n', '"auto"}},\n')
    project = _project(tmp_path, config)
    added = _run("check", "--add-noqa", ".", cwd=project)
    assert added.returncode == 0 and "Added 2 noqa comments to 2 files." in added.stderr, added.stderr
    line = (project / "ds_config.json").read_text(encoding="utf-8").splitlines()[3]
    assert line == '  "optimizer": {"type": "Adam", "params": {"lr": "auto"}},  # noqa: DSL405'
    after = _run("check", "--no-cache", ".", cwd=project)
    # silenced both on its own and where the script that reads it reports it
    assert after.returncode == 0, after.stdout
    assert "silenced by noqa" in after.stderr
    again = _run("check", "--add-noqa", ".", cwd=project)
    assert "Added 0 noqa comments to 0 files." in again.stderr


def test_an_hjson_file_may_get_comments_even_when_it_is_strict_json() -> None:
    assert admits_comments("ds_config.hjson", CONFIG)
    assert not admits_comments("ds_config.json", CONFIG)
    assert admits_comments("ds_config.json", "{\n  # a comment\n}\n")


def _finding(line: int, column: int = 3) -> Diagnostic:
    return Diagnostic(
        "DSL405", "slug", "m", Severity.ERROR, "c.hjson", Location(line, column), Location(line, column + 2)
    )


def test_no_comment_after_an_hjson_quoteless_string() -> None:
    """A quoteless HJSON value runs to the end of its line: a comment there would become part of the value."""
    text = "{\n  optimizer: {\n    type: Adam\n    params: {\n      lr: auto\n    }\n  }\n  train_batch_size: 8\n}\n"
    updated, changed = add_config_noqa(text, [_finding(5), _finding(8)])
    assert changed == 1
    assert updated == text.replace("train_batch_size: 8\n", "train_batch_size: 8  # noqa: DSL405\n")


def test_a_hash_inside_a_json_string_is_not_a_comment() -> None:
    text = '{\n  "name": "x # noqa: DSL405",  # noqa: DSL401\n  "a": 1 /* # noqa */\n}\n'
    index = scan(text, config=True)
    assert [(d.line, d.codes) for d in index.directives] == [(2, ("DSL401",))]


def test_a_config_only_a_named_script_points_into_gets_the_comment_or_the_advice(tmp_path: Path) -> None:
    config = "// read by DeepSpeed (hjson)\n" + CONFIG.replace('"auto"}}\n', '"auto"}},\n')
    project = _project(tmp_path, config)
    added = _run("check", "--add-noqa", "train.py", cwd=project)  # the config is not among the paths
    assert added.returncode == 0 and "Added 2 noqa comments to 2 files." in added.stderr, added.stderr
    assert "# noqa: DSL405" in (project / "ds_config.json").read_text(encoding="utf-8").splitlines()[3]
    assert _run("check", "--no-cache", "train.py", cwd=project).returncode == 0
    (project / "ds_config.json").write_text(CONFIG, encoding="utf-8")
    strict = _run("check", "--add-noqa", "train.py", cwd=project)
    assert (project / "ds_config.json").read_text(encoding="utf-8") == CONFIG
    assert "per-file-ignores] in " in strict.stderr and '"ds_config.json" = ["DSL405"]' in strict.stderr


def test_a_notebook_gets_the_advice_and_is_left_as_it_is(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": SCRIPT}
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    (tmp_path / "ds_config.json").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(notebook, encoding="utf-8")
    added = _run("check", "--add-noqa", "nb.ipynb", cwd=tmp_path)
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == notebook
    assert "no noqa comment written to nb.ipynb: add `# noqa: CODE` in the cell, or add it to" in added.stderr

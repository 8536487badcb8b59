"""`dslint graph`: launch commands that resolve to nothing are left for `-v`, and the model is drawn for Graphviz
(`--output-format dot`) and mermaid, with each link once and labels that cannot break the syntax."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES

from dslint.cli import main

LAUNCHERS = FIXTURES / "projects" / "launchers"


def _graph(*args: str) -> str:
    result = CliRunner().invoke(main, ["graph", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_unresolvable_launch_commands_are_shown_with_verbose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text("import deepspeed\nengine, *_ = deepspeed.initialize(model=m)\n", "utf-8")
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    (tmp_path / "setup.py").write_text("", encoding="utf-8")
    (tmp_path / "run.sh").write_text(
        "deepspeed train.py --deepspeed_config ds.json\n"
        "deepspeed ../elsewhere/pretrain.py --deepspeed_config ds.json\n"
        "python setup.py build_ext\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    quiet = _graph(".")
    assert "run.sh:1: deepspeed -> train.py" in quiet
    assert "pretrain.py" not in quiet and "setup.py" not in quiet.split("\n  (")[0]
    assert "(2 more launch commands whose script is not in the tree, or is a setup.py: -v shows them)" in quiet
    verbose = _graph("-v", ".")
    assert "pretrain.py (not found)" in verbose and "run.sh:3: python -> setup.py" in verbose
    assert "more launch commands" not in verbose


def test_dot_draws_each_link_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LAUNCHERS)
    dot = _graph("--output-format", "dot", ".")
    assert dot.startswith("digraph dslint {\n") and dot.endswith("}\n")
    edges = re.findall(r"^  (\w+) -> (\w+) \[label=\"([^\"]*)\"\];$", dot, flags=re.M)
    assert len(edges) == len(set(edges))
    labels = dict(re.findall(r"^  (\w+) \[label=\"((?:[^\"\\]|\\.)*)\"\];$", dot, flags=re.M))
    z3 = next(key for key, label in labels.items() if label.startswith(os.path.join("configs", "ds_z3.json")))
    assert labels[z3].endswith(r"\nZeRO 3, bf16")
    run_z3 = next(key for key, label in labels.items() if label == f"{os.path.join('scripts', 'run_z3.sh')}:6")
    train = next(key for key, label in labels.items() if label == "train.py")
    assert (run_z3, train, "deepspeed") in edges and (train, z3, "deepspeed_config") in edges


def test_mermaid_labels_are_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'tr"a<i>n.py').write_text("import deepspeed\nengine, *_ = deepspeed.initialize(model=m)\n", "utf-8")
    (tmp_path / "run.sh").write_text("deepspeed 'tr\"a<i>n.py'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    drawn = _graph("--output-format", "mermaid", ".")
    assert drawn.startswith("flowchart LR\n")
    assert '["tr#quot;a#lt;i#gt;n.py"]' in drawn and '"tr"a' not in drawn

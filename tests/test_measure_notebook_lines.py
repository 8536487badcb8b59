"""benchmarks/realcode/measure.py scores a notebook's finding (cell, line in the cell) against rows that carry the
.ipynb file's own line numbers."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _measure():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("measure", ROOT / "benchmarks" / "realcode" / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["measure"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_cell_line_maps_to_the_notebook_file_line(tmp_path: Path) -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["import torch\n", "x = 1\n", "y = 2"]},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "z = 3"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    text = json.dumps(notebook, indent=1)
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    line_of = {needle: lines.index(next(x for x in lines if needle in x)) + 1 for needle in ('"x = 1', '"z = 3')}
    measure = _measure()
    assert measure.notebook_line(path, 2, 2, None) == line_of['"x = 1']
    assert measure.notebook_line(path, 3, 1, None) == line_of['"z = 3']

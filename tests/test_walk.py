"""The read-only walk visits nodes in source order, so order indices compare like positions."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import libcst as cst
import pytest
from fixture_support import FIXTURES
from libcst.metadata import MetadataWrapper, PositionProvider

from dslint.script.walk import walk


def _sources() -> list[Path]:
    files = sorted(FIXTURES.rglob("*.py"))
    spec = importlib.util.find_spec("deepspeed")
    if spec and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
        files += list(itertools.islice(sorted(root.rglob("*.py")), 0, None, 12))
    return files


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.name)
def test_entry_order_is_source_order(path: Path) -> None:
    module = cst.parse_module(path.read_bytes())
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts: list[tuple[int, int]] = []

    def enter(node: cst.CSTNode) -> None:
        # A def/class (and a block starting with one) begins at `def`/`class`, after its decorators.
        if node in positions and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.IndentedBlock)):
            r = positions[node]
            starts.append((r.start.line, r.start.column))

    walk(module, enter, lambda node: None)
    assert starts == sorted(starts)
    assert starts or not module.body

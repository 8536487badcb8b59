"""`.to(torch.float32)` before `deepspeed.initialize` is a cast to full precision: neither a device move (DSL101)
nor a 16-bit cast (DSL104); a move or a half cast beside it still is."""

from __future__ import annotations

from dslint.lint.file import lint_text

_SCRIPT = """\
import deepspeed
import torch

model = Net().to(torch.float32)
other = Net().to({placement})
engine, *_ = deepspeed.initialize(model=model, config="ds.json")
engine2, *_ = deepspeed.initialize(model=other, config="ds.json")
"""


def _codes(placement: str) -> list[tuple[int, str]]:
    found = lint_text("train.py", _SCRIPT.format(placement=placement))
    return sorted((d.start.line, d.code) for d in found if d.code in ("DSL101", "DSL104"))


def test_a_full_precision_cast_is_neither_a_move_nor_a_half_cast() -> None:
    assert _codes("torch.float64") == []
    assert _codes('"cuda"') == [(5, "DSL101")]
    assert _codes("torch.float16") == [(5, "DSL104")]

"""A file valid only from Python 3.12 (PEP 701 f-strings) is no syntax error under an older interpreter: no
DSL001, the file left alone; an f-string broken in every Python still is one."""

from __future__ import annotations

import sys

import pytest

from dslint.lint.file import lint_file

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="the interpreter compiles PEP 701 itself")

_HEAD = "import deepspeed\nimport torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
_TAIL = 'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'


def _codes(source: str) -> list[str]:
    result = lint_file("train.py", source.encode())
    return [d.code for d in result.diagnostics]


def test_quotes_reused_inside_an_f_string_are_no_syntax_error() -> None:
    source = _HEAD + 'item = ["a\'b"]\nprint(f"set {item[0].split("\'")[1]}")\n' + _TAIL
    assert _codes(source) == []


def test_an_f_string_broken_in_every_python_is_one() -> None:
    assert _codes(_HEAD + 'print(f"set {item[0}")\n' + _TAIL) == ["DSL001"]
    assert _codes(_HEAD + 'print(f"set {item[0]}\n' + _TAIL) == ["DSL001"]


def test_the_same_file_without_the_newer_syntax_is_checked() -> None:
    assert _codes(_HEAD + _TAIL) == ["DSL101"]

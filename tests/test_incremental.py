"""The language server's fast re-lint: after an edit it must agree with a full lint, or decline (None)."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.lint.incremental import Snapshot, first_lint, relint, split_lines
from dslint.lint.script import lint_source
from dslint.selection import RuleSelection

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lsp_latency import make_script  # noqa: E402

EXTRA = """

class Trainer:
    def __init__(self, args, model):
        self.engine, _, _, _ = deepspeed.initialize(args=args, model=model)

    def run(self, batch):
        self.engine.cuda()
        return self.engine(batch)


def setup():
    torch.cuda.set_device(0)
"""
TEXT = make_script(150) + EXTRA
SELECTION = RuleSelection()
BASE = Snapshot.of(TEXT, lint_source("t.py", TEXT.encode(), SELECTION).diagnostics)
LINES = split_lines(TEXT)
VOCABULARY = [
    "    model.cuda()\n",
    "    engine.to('cuda')\n",
    "    x = torch.zeros(3).cuda()\n",
    "    torch.cuda.set_device(0)\n",
    "    model.half()\n",
    "    pass\n",
    "\n",
    "    y = 1  # noqa: DSL102, DSL999\n",
    "import os\n",
    "    global engine\n",
    "        self.engine.cuda()\n",
    "        self.engine = None\n",
    "    if (\n",
]


def _full(text: str) -> list:
    return lint_source("t.py", text.encode(), SELECTION).diagnostics


@settings(max_examples=examples(25))
@given(
    line=st.integers(min_value=0, max_value=len(LINES) - 1),
    operation=st.sampled_from(["insert", "delete", "replace"]),
    content=st.sampled_from(VOCABULARY),
)
def test_fast_relint_agrees_with_a_full_lint_or_declines(line: int, operation: str, content: str) -> None:
    lines = list(LINES)
    if operation == "insert":
        lines.insert(line, content)
    elif operation == "delete":
        del lines[line]
    else:
        lines[line] = content
    text = "".join(lines)
    fast = relint(BASE, text, "t.py", SELECTION)
    if fast is not None:
        assert fast == _full(text)


def _edit_inside(function: str, content: str) -> str:
    index = next(n for n, line in enumerate(LINES) if line.startswith(f"def {function}(")) + 3
    return "".join([*LINES[:index], content, *LINES[index:]])


def test_an_edit_inside_a_function_takes_the_fast_path() -> None:
    for function, content in [("helper_3", "    model.cuda()\n"), ("main", "    model.half()\n")]:
        text = _edit_inside(function, content)
        fast = relint(BASE, text, "t.py", SELECTION)
        assert fast is not None
        assert fast == _full(text)
    moved = relint(BASE, _edit_inside("helper_0", "    a = 1\n    b = 2\n"), "t.py", SELECTION)
    assert moved is not None
    assert [d.start.line for d in moved] == [d.start.line + (2 if d.start.line > 30 else 0) for d in BASE.diagnostics]


def test_syntax_errors_and_file_level_noqa_decline() -> None:
    assert relint(BASE, _edit_inside("helper_3", "    x = (\n"), "t.py", SELECTION) is None
    assert relint(BASE, "# dslint: noqa\n" + TEXT, "t.py", SELECTION) is None
    assert relint(BASE, TEXT, "t.py", SELECTION) == list(BASE.diagnostics)


def test_the_first_answer_on_open_is_the_full_lints_findings_in_context() -> None:
    """On open, the server publishes the findings of the statements that carry context first (`first_lint`):
    here every finding of the full lint lies in them, so the first answer is the full answer."""
    text = make_script(600) + EXTRA
    full = lint_source("t.py", text.encode(), SELECTION).diagnostics
    first = first_lint(text, "t.py", SELECTION)
    assert first is not None
    assert full
    assert first == [d for d in full if d.path == "t.py"]


def test_the_first_answer_declines_when_most_of_the_file_carries_context() -> None:
    text = "import deepspeed\n" + "".join(f"def f{i}():\n    deepspeed.comm.barrier()\n" for i in range(50))
    assert first_lint(text, "t.py", SELECTION) is None
    assert first_lint("def broken(:\n", "t.py", SELECTION) is None

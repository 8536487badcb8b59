"""Fixing a Jupyter notebook: the fixer runs on the code cells joined (`dslint.lint.notebook`), then each changed
cell's lines are written back into its `source` in the notebook file; the rest of the file (outputs, metadata,
execution counts, the JSON's own formatting) is kept byte for byte. A fix that would change a magic line or span
two cells is refused.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from dslint.diagnostics import Diagnostic
from dslint.fix.edits import FixOutcome, fix_text
from dslint.limits import Limits
from dslint.lint.notebook import Cell, Notebook, NotPythonNotebook, check_code_size, read_notebook
from dslint.lint.script import lint_source
from dslint.selection import RuleSelection


def _cell_source(cell: Cell, lines: Sequence[str], original: str, original_json: str) -> str:
    """The JSON of a cell's new `source`, in the shape the file had (a list of lines or one string)."""
    text = "".join(lines)
    if text.endswith("\n") and not original.endswith("\n"):
        text = text[:-1]  # Jupyter stores a cell without its final line break (read_notebook added one)
    if not cell.source_is_list:
        return json.dumps(text, ensure_ascii=False)
    parts = text.splitlines(keepends=True)
    if not parts:
        return "[]"
    indent = _indent_of(cell, original_json)
    inner = (",\n" + indent).join(json.dumps(part, ensure_ascii=False) for part in parts)
    unit = _unit(original_json)
    return f"[\n{indent}{inner}\n{indent[:-unit] if unit <= len(indent) else ''}]"


def _unit(original: str) -> int:
    """The file's indentation step (Jupyter writes 1 space)."""
    match = re.search(r"\n( +)\"", original)
    return len(match.group(1)) if match else 1


def _indent_of(cell: Cell, notebook_text: str) -> str:
    """The indentation of the items of the cell's `source` list, from the file, else from its key's line."""
    assert cell.source_span is not None  # read with its spans (`read_notebook`'s default)
    start, end = cell.source_span
    existing = re.search(r"\n([ \t]*)\S", notebook_text[start:end])
    if existing:
        return existing.group(1)
    line_start = notebook_text.rfind("\n", 0, start) + 1
    key_indent = re.match(r"[ \t]*", notebook_text[line_start:start])
    return (key_indent.group(0) if key_indent else "") + " " * _unit(notebook_text)


@dataclass
class CellsFix:
    text: str | None  # the new notebook file, or None when a fix had to be refused
    error: str | None = None


def write_fixed(notebook: Notebook, fixed_python: str) -> CellsFix:
    """The notebook file with `fixed_python` (the fixed joined text) written back into its cells."""
    old = [line for cell in notebook.cells for line in cell.python]
    new = fixed_python.splitlines(keepends=True)
    owner: list[int] = []  # the cell index of each old line
    for index, cell in enumerate(notebook.cells):
        owner.extend([index] * len(cell.lines))
    result: list[list[str]] = [[] for _ in notebook.cells]
    originals = [line for cell in notebook.cells for line in cell.lines]
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(a2 - a1):
                result[owner[a1 + offset]].append(originals[a1 + offset])
            continue
        cells = {owner[i] for i in range(a1, a2)}
        if any(old[i] != originals[i] for i in range(a1, a2)):
            return CellsFix(None, "a fix would change a magic or shell line, or a cell IPython dedents; not fixed")
        if len(cells) > 1:
            return CellsFix(None, "a fix would span two cells; not fixed")
        target = cells.pop() if cells else _insertion_cell(owner, a1)
        if notebook.cells[target].indent:
            return CellsFix(None, "a fix would change a cell IPython dedents; not fixed")
        result[target].extend(new[b1:b2])
    text = notebook.text
    for index in reversed(range(len(notebook.cells))):
        cell = notebook.cells[index]
        if list(cell.lines) == result[index]:
            continue
        assert cell.source_span is not None
        start, end = cell.source_span
        source = _cell_source(cell, result[index], _original_source(text[start:end]), notebook.text)
        text = text[:start] + source + text[end:]
    return CellsFix(text)


def _insertion_cell(owner: list[int], at: int) -> int:
    """Lines inserted before old line `at` go to that line's cell (at the very end: the last cell)."""
    if at < len(owner):
        return owner[at]
    return owner[-1] if owner else 0


def _original_source(json_value: str) -> str:
    value = json.loads(json_value)
    return "".join(value) if isinstance(value, list) else str(value)


def fix_notebook_text(
    path: str,
    text: str,
    *,
    unsafe: bool = False,
    selection: RuleSelection | None = None,
    limits: Limits | None = None,
) -> FixOutcome:
    """Fix a notebook's code cells (raises NotebookError when it cannot be read or is not a Python notebook, and
    TooLarge when its code cells are over `limits.max_file_size`, as `lint_notebook`). The outcome's texts are the
    whole notebook file; its findings are located in cells."""

    notebook = read_notebook(text)
    if notebook.language not in (None, "python"):
        raise NotPythonNotebook(f"a {notebook.language} notebook (dslint reads Python notebooks only)")
    check_code_size(notebook, limits or Limits())
    # the joined cells are a script: lint them as one (`fix_source` would read `path`'s suffix as a notebook)
    outcome = fix_text(
        notebook.python_text,
        lambda current: lint_source(path, current.encode("utf-8"), selection).diagnostics,
        unsafe=unsafe,
    )

    def in_cells(found: list[Diagnostic], layout: Notebook) -> list[Diagnostic]:
        return [layout.located(d) if d.path == path else d for d in found]

    if outcome.error is not None:
        return FixOutcome(text, text, remaining=in_cells(outcome.remaining, notebook), error=outcome.error)
    if not outcome.changed:
        return FixOutcome(text, text, remaining=in_cells(outcome.remaining, notebook))
    written = write_fixed(notebook, outcome.text)
    if written.text is None:
        before = lint_source(path, notebook.python_text.encode("utf-8"), selection).diagnostics
        return FixOutcome(text, text, remaining=in_cells(before, notebook), error=written.error)
    fixed = read_notebook(written.text)
    return FixOutcome(text, written.text, in_cells(outcome.applied, notebook), in_cells(outcome.remaining, fixed))

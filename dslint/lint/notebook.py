"""Jupyter notebooks: lint the code cells as one script, report positions as cell and line, fix in place.

The code cells are joined in order into one Python text (a later cell sees the engine an earlier one created),
each cell starting on a new line. IPython syntax that is not Python - line magics (`%time ...`), cell magics
(`%%bash`: the whole cell), shell lines (`!pip ...`, `files = !ls`), help lines (`obj?`) and a one-line cell that
IPython's automagic runs as a line magic (`pip install x`: `automagic_line`) - becomes `pass` at the same
indentation, so no line moves and no finding points at them. A cell indented as a whole is read as IPython compiles
it: its first non-blank line's indentation taken off every line that starts with it (`leading_indent`); findings
there keep the cell's own columns, and no fix is written into it. Findings are reported as
`proto.ipynb:cell 2:3:5: ...` (the cell's 1-based number among all cells, then the line within the cell), as ruff
reports notebooks.

Fixing notebooks (writing fixed cells back into the file) is `dslint.fix.notebook`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from dslint.config.tree import Array, Object, parse_text
from dslint.diagnostics import Diagnostic, Edit, Fix, Location
from dslint.limits import Limits, TooLarge, format_size
from dslint.lint.ipython_lines import automagic_line, bound_names, foreign_lines, python_lines
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

SUFFIX = ".ipynb"


class NotebookError(Exception):
    """A notebook that cannot be read as one (a one-line message naming the position)."""


class NotPythonNotebook(NotebookError):
    """A notebook of another language: not dslint's to read."""


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based among all cells
    lines: tuple[str, ...]  # the cell's source lines, each with its line break (the last may lack one)
    python: tuple[str, ...]  # the same lines with IPython syntax replaced by `pass`
    first_line: int  # the 1-based line of the joined text where the cell starts
    # offsets of the cell's `source` value in the notebook file; None when read without them (`read_notebook`)
    source_span: tuple[int, int] | None
    source_is_list: bool
    # the indentation IPython removes from the cell before it compiles it (its first non-blank line's, taken off
    # every line that starts with it: `leading_indent`), which the joined text leaves out too
    indent: str = ""


@dataclass
class Notebook:
    text: str
    cells: list[Cell] = field(default_factory=list)
    language: str | None = None

    @property
    def python_text(self) -> str:
        return "".join(line for cell in self.cells for line in cell.python)

    def cell_at(self, line: int) -> Cell | None:
        """The cell holding line `line` of the joined text (a line past the end: the last cell)."""
        found = None
        for cell in self.cells:
            if cell.first_line <= line:
                found = cell
        return found

    def located(self, diagnostic: Diagnostic) -> Diagnostic:
        """`diagnostic` of the joined text with its positions relative to its cell (and the cell's number)."""
        cell = self.cell_at(diagnostic.start.line)
        if cell is None:
            return diagnostic
        shift = cell.first_line - 1
        fix = diagnostic.fix
        if fix is not None and cell.indent:
            fix = None  # an edit of the dedented text is not one of the cell's own
        if fix is not None:
            edits = tuple(Edit(_up(e.start, shift), _up(e.end, shift), e.content) for e in fix.edits)
            fix = Fix(edits, fix.applicability, fix.message, fix.imports)
        start, end = _up(diagnostic.start, shift), _up(diagnostic.end, shift)
        if cell.indent:  # the columns of the cell's own lines, its removed indentation put back
            start, end = _indented(cell, start), _indented(cell, end)
        return replace(diagnostic, start=start, end=end, fix=fix, cell=cell.number)


def _indented(cell: Cell, location: Location) -> Location:
    line = cell.lines[location.line - 1] if location.line <= len(cell.lines) else ""
    return replace(location, column=location.column + len(cell.indent)) if line.startswith(cell.indent) else location


def leading_indent(lines: tuple[str, ...]) -> str:
    """The indentation IPython takes off a cell before compiling it (`inputtransformer2`: `leading_empty_lines`,
    then `leading_indent`): its first non-blank line's leading spaces and tabs."""
    first = next((line for line in lines if line.strip()), "")
    return first[: len(first) - len(first.lstrip(" \t"))]


def _up(location: Location, shift: int) -> Location:
    return Location(max(location.line - shift, 1), location.column)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, character in enumerate(text):
        if character == "\n":
            starts.append(index + 1)
    return starts


def _offset(starts: list[int], location: Location) -> int:
    return starts[location.line - 1] + location.column - 1


def read_notebook(text: str, spans: bool = True) -> Notebook:
    """The notebook's code cells; raises NotebookError for a file that is not an nbformat 4 notebook. `spans`:
    where each cell's `source` lies in the file (what a fix rewrites), from the positioned JSON parser; a lint
    reads without them, from `json.loads` alone (the positioned parser walks the outputs too, many times slower)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(
            f"not a notebook: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from error
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise NotebookError("not a notebook: no `cells` list at the top level (nbformat 4)")
    nodes = _cell_nodes(text) if spans else [None] * len(raw["cells"])
    notebook = Notebook(text, language=_language(raw))
    starts = _line_starts(text) if spans else []
    line = 1
    foreign: set[int] = set()  # cells in another language
    for number, (cell, node) in enumerate(zip(raw["cells"], nodes, strict=True), start=1):
        if not isinstance(cell, dict) or (spans and not isinstance(node, Object)):
            raise NotebookError(f"not a notebook: cell {number} is not an object (nbformat 4)")
        if cell.get("cell_type") != "code":
            continue
        joined = _cell_source(number, cell.get("source"))
        lines = tuple(joined.splitlines(keepends=True)) if joined else ()
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines = (*lines[:-1], lines[-1] + "\n")  # the next cell starts on a new line
        span = None
        if isinstance(node, Object):
            source_node = node.get("source")
            assert source_node is not None  # `_cell_source` refused a cell without one
            span = (_offset(starts, source_node.start), _offset(starts, source_node.end))
        if _foreign(cell):
            foreign.add(number)
        indent = "" if number in foreign else leading_indent(lines)
        code = tuple(part[len(indent) :] if part.startswith(indent) else part for part in lines) if indent else lines
        python = foreign_lines(lines) if number in foreign else python_lines(code)
        notebook.cells.append(Cell(number, lines, python, line, span, isinstance(cell["source"], list), indent))
        line += len(lines)
    if any(automagic_line(cell.lines) is not None for cell in notebook.cells):
        bound = bound_names([cell.python for cell in notebook.cells])
        notebook.cells = [
            cell if cell.number in foreign else replace(cell, python=python_lines(_dedented(cell), bound))
            for cell in notebook.cells
        ]
    return notebook


def _dedented(cell: Cell) -> tuple[str, ...]:
    return tuple(line[len(cell.indent) :] if line.startswith(cell.indent) else line for line in cell.lines)


def _cell_nodes(text: str) -> list[object]:
    """The positioned nodes of the notebook's cells (the file was already decoded as JSON holding a `cells` list)."""
    tree = parse_text(text)
    cells_node = tree.get("cells") if isinstance(tree, Object) else None
    if not isinstance(cells_node, Array):
        raise NotebookError("not a notebook: no `cells` list at the top level (nbformat 4)")
    return list(cells_node.items)


def _foreign(cell: dict[str, object]) -> bool:
    """A code cell its editor marks as another language (VS Code's `metadata.vscode.languageId`: "shellscript")."""
    metadata = cell.get("metadata")
    editor = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = editor.get("languageId") if isinstance(editor, dict) else None
    return isinstance(language, str) and language not in ("python", "python3")


def _cell_source(number: int, source: object) -> str:
    """A code cell's source as one text; NotebookError for what nbformat does not allow (no `source`, a number,
    a list holding something other than strings) or what is not text (a lone surrogate, `"\\ud800"`)."""
    if source is None:
        raise NotebookError(f"not a notebook: code cell {number} has no `source` (nbformat 4)")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        joined = "".join(source)
    elif isinstance(source, str):
        joined = source
    else:
        kind = (
            "a list that is not all strings"
            if isinstance(source, list)
            else "true or false"
            if isinstance(source, bool)
            else "a number"
            if isinstance(source, int | float)
            else "an object"
        )
        raise NotebookError(f"not a notebook: the `source` of code cell {number} is {kind}, not text (nbformat 4)")
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = joined[error.start]
        raise NotebookError(
            f"the `source` of code cell {number} holds a lone surrogate (\\u{ord(bad):04x}), which is not text"
        ) from None
    return joined


def _language(raw: dict[str, Any]) -> str | None:
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field_name), str):
            return str(section[field_name]).lower()
    return None


def check_code_size(notebook: Notebook, limits: Limits) -> bytes:
    """The notebook's code as the script dslint parses; raises TooLarge when it is over max-file-size (the limit
    is on what is parsed: outputs, however large, are never read as code)."""
    code = notebook.python_text.encode("utf-8")
    if len(code) > limits.max_file_size:
        size, limit = format_size(len(code)), format_size(limits.max_file_size)
        raise TooLarge(f"skipped: its code cells are {size}, over max-file-size ({limit})")
    return code


def lint_notebook(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    world_size: int | None = None,
    limits: Limits | None = None,
) -> FileResult:
    """Lint a notebook's code cells; raises NotebookError when it cannot be read or is not a Python notebook, and
    TooLarge when its code cells are over `limits.max_file_size` (what is parsed is the code, never the outputs)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(f"not UTF-8 text (byte {error.start})") from error
    notebook = read_notebook(text, spans=False)
    if notebook.language not in (None, "python"):
        raise NotPythonNotebook(f"a {notebook.language} notebook (dslint reads Python notebooks only)")
    from dslint.lint.script import lint_source  # libcst, only for a notebook that has code

    limits = limits or Limits()
    code = check_code_size(notebook, limits)
    result = lint_source(path, code, selection, world_size, limits=limits)
    result.diagnostics = [notebook.located(d) if d.path == path else d for d in result.diagnostics]
    result.text = None  # the positions are the cells', not the file's
    return result

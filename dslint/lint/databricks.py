"""Databricks notebook sources: a `.py` file whose first line is `# Databricks notebook source`.

Databricks exports a notebook as Python: cells are separated by `# COMMAND ----------` lines, Markdown and other
languages' cells are `# MAGIC` comments, and a Python cell may hold IPython syntax the notebook runs but Python
does not (`!deepspeed ...` shell lines with their `\\` continuations, `%pip install ...`, `%sh`). Such a file is not
a script with a syntax error: when CPython refuses it as written, each cell's IPython syntax becomes `pass` (or a
blank continuation line) as dslint's `.ipynb` reader does (`dslint.lint.ipython_lines.python_lines`), so no line moves
and its Python is checked like any script's.
"""

from __future__ import annotations

import re

from dslint.lint.ipython_lines import bound_names, python_lines

HEADER = "# Databricks notebook source"
CELL_SEPARATOR = re.compile(r"^# COMMAND -{4,}\s*$")


def is_notebook_source(data: bytes) -> bool:
    """Whether `data` starts with Databricks's notebook header (after an optional byte-order mark)."""
    first = data.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    return first.rstrip(b"\r \t") == HEADER.encode()


def python_source(data: bytes) -> bytes | None:
    """The notebook source with its cells' IPython syntax replaced (line numbers kept), or None when `data` is
    not a Databricks notebook source or not UTF-8 text."""
    if not is_notebook_source(data):
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    cells: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if CELL_SEPARATOR.match(line):
            cells[-1].append(line)
            cells.append([])
        else:
            cells[-1].append(line)
    bound = bound_names(cells)
    python = "".join("".join(python_lines(cell, bound)) for cell in cells)
    return python.encode("utf-8")

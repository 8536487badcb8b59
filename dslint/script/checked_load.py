"""The checked form of `engine.load_checkpoint(...)` that DSL203 and DSL205 write:

    load_path, _ = engine.load_checkpoint(...)
    if load_path is None:
        raise FileNotFoundError(f"no DeepSpeed checkpoint in {load_dir}")

`load_checkpoint` returns `(None, None)` and only logs a warning when it finds no `latest` file and was given
no tag (runtime/engine.py), so the result must be checked for a missing checkpoint to stop the script.
"""

from __future__ import annotations

import re

import libcst as cst

from dslint.diagnostics import Edit, Location
from dslint.script.context import ScriptContext

DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
NO_CHECKPOINT = '"no DeepSpeed checkpoint to load"'


def fresh_name(context: ScriptContext, base: str) -> str:
    """`base`, or `base_2`, `base_3`... whichever word the file does not use yet."""
    code = context.text
    candidate, number = base, 1
    while re.search(rf"\b{re.escape(candidate)}\b", code):
        number += 1
        candidate = f"{base}_{number}"
    return candidate


def checked_load_edit(context: ScriptContext, line: cst.SimpleStatementLine, call: str, directory: str) -> Edit:
    """Replace the statement `line` by the checked `load_checkpoint` call `call` (source text).

    The line's trailing comment stays on the line of the call; `directory` (source text) names the checkpoint
    directory in the error message when it is a plain (dotted) name.
    """
    start, end = context.span(line)
    source_line = context.text.splitlines(keepends=True)[end.line - 1]
    comment = source_line[end.column - 1 :].rstrip("\r\n")
    indent = context.text.splitlines(keepends=True)[start.line - 1][: start.column - 1]
    newline = context.module.default_newline
    result = fresh_name(context, "load_path")
    if DOTTED.fullmatch(directory):
        raise_text = f'raise FileNotFoundError(f"no DeepSpeed checkpoint in {{{directory}}}")'
    else:
        raise_text = f"raise FileNotFoundError({NO_CHECKPOINT})"
    text = (
        f"{result}, _ = {call}{comment}{newline}"
        f"{indent}if {result} is None:{newline}"
        f"{indent}{context.module.default_indent}{raise_text}"
    )
    return Edit(start, Location(end.line, end.column + len(comment)), text)

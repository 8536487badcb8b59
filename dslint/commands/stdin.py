"""`dslint check -` / `dslint fix -`: the text comes from stdin, as editor plugins (nvim-lint, ALE) send the
unsaved buffer; `--stdin-filename` says which file it is (for its settings, its kind - script, notebook or
config - the configs it points at, and the paths printed)."""

from __future__ import annotations

import sys
from pathlib import Path

from dslint.commands.summary import plural
from dslint.lint.batch import FileFailure, lint_bytes
from dslint.lint.file_kinds import NotAnalysed
from dslint.lint.result import FileResult
from dslint.settings import SettingsResolver

STDIN = "-"


def stdin_path(stdin_filename: str | None) -> Path:
    return Path(stdin_filename) if stdin_filename else Path(STDIN)


def read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def lint_stdin(
    resolver: SettingsResolver,
    stdin_filename: str | None,
    force_exclude: bool = False,
    world_size: int | None = None,
) -> FileResult | FileFailure | NotAnalysed | None:
    """The findings for the text on stdin; None when `--force-exclude` and the settings exclude the file."""
    path = stdin_path(stdin_filename)
    data = read_stdin()
    if stdin_filename and force_exclude and resolver.excluded(path):
        return None
    settings = resolver.for_path(path if stdin_filename else Path.cwd() / "stdin.py")
    return lint_bytes(path, data, settings.selection_for(path), world_size)


def fix_stdin(resolver: SettingsResolver, stdin_filename: str | None, *, diff: bool, quiet: bool) -> int:
    """`dslint fix -`: the fixed text (or with `--diff` the diff) on stdout, what remains on stderr, as ruff
    does; exit 0 nothing remains, 1 findings remain, 2 the text could not be fixed (it is echoed unchanged)."""
    import difflib

    from dslint.fix.loop import fix_source
    from dslint.fix.notebook import fix_notebook_text
    from dslint.fix.write import decode_source
    from dslint.lint.notebook import NotebookError

    path = stdin_path(stdin_filename)
    data = read_stdin()
    settings = resolver.for_path(path if stdin_filename else Path.cwd() / "stdin.py")
    selection = settings.selection_for(path)
    name = str(path)
    try:
        text = decode_source(data)[0]
        if path.suffix.lower() == ".ipynb":
            outcome = fix_notebook_text(name, text, unsafe=settings.unsafe_fixes, selection=selection)
            error, fixed, remaining = outcome.error, outcome.text, outcome.remaining
        else:
            result = fix_source(name, text, unsafe=settings.unsafe_fixes, selection=selection)
            error, fixed, remaining = result.error, result.text, result.remaining
    except (NotebookError, Exception) as failure:  # the editor must get its text back whatever happens
        sys.stdout.buffer.write(data)
        sys.stderr.write(f"dslint: error: {name}: {failure}\n")
        return 2
    if diff:
        sys.stdout.write(
            "".join(difflib.unified_diff(text.splitlines(True), fixed.splitlines(True), f"a/{name}", f"b/{name}"))
        )
    else:
        sys.stdout.write(fixed)
    sys.stdout.flush()
    for diagnostic in remaining:
        sys.stderr.write(diagnostic.concise() + "\n")
    if error is not None:
        sys.stderr.write(f"dslint: error: {name}: not fixed, left as it was: {error}\n")
        return 2
    if not quiet:
        left = f"{plural(len(remaining), 'finding')} {'remains' if len(remaining) == 1 else 'remain'}."
        sys.stderr.write(f"{left}\n" if remaining else "No findings remain.\n")
    return 1 if remaining else 0

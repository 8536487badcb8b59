"""`dslint check -` / `dslint fix -`: the text comes from stdin, as editor plugins (nvim-lint, ALE) send the
unsaved buffer; `--stdin-filename` says which file it is (for its settings, its kind - script, notebook or
config - the configs it points at, and the paths printed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from dslint.commands.summary import plural
from dslint.diagnostics import printable
from dslint.lint.batch import FileFailure, lint_bytes
from dslint.lint.file_kinds import NotAnalysed
from dslint.lint.result import FileResult
from dslint.settings import SettingsResolver

STDIN = "-"


def stdin_path(stdin_filename: str | None) -> Path:
    """The path the text on stdin is checked as; a `--stdin-filename` the system could not hold as a path (a
    name longer than its limit) is a usage error."""
    if not stdin_filename:
        return Path(STDIN)
    path = Path(stdin_filename)
    limit = _name_max()
    for part in path.parts:
        if len(os.fsencode(part)) > limit:
            raise click.UsageError(
                f"--stdin-filename: a name in it is {len(os.fsencode(part))} bytes long, over the system's limit"
                f" of {limit}"
            )
    return path


def _name_max() -> int:
    try:
        return os.pathconf(".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not known here (Windows): the common limit
        return 255


def read_stdin() -> bytes:
    """The text on stdin; a usage error when there is no stdin to read (`dslint check - <&-`)."""
    stream = sys.stdin
    if stream is None:
        raise click.UsageError("`-` reads the text from stdin, which is closed")
    try:
        return stream.buffer.read()
    except (OSError, ValueError) as error:  # a closed descriptor, a directory on stdin
        raise click.UsageError(f"`-` reads the text from stdin, which cannot be read: {error}") from error


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
    from dslint.lint.isolation import Crashed, run_guarded  # multiprocessing: only for a text on stdin

    # in a forked child (dslint.lint.isolation): a parser that aborts is this text's error, one line
    outcome = run_guarded(lint_bytes, path, data, settings.selection_for(path), world_size)
    return FileFailure(str(path), outcome.why) if isinstance(outcome, Crashed) else outcome


def fix_stdin(resolver: SettingsResolver, stdin_filename: str | None, *, diff: bool, quiet: bool) -> int:
    """`dslint fix -`: the fixed text (or with `--diff` the diff) on stdout, what remains on stderr, as ruff
    does; exit 0 nothing remains, 1 findings remain, 2 the text could not be fixed (it is echoed unchanged)."""
    import difflib

    from dslint.fix.loop import fix_source
    from dslint.fix.notebook import fix_notebook_text
    from dslint.fix.write import decode_source
    from dslint.lint.isolation import Crashed, run_guarded
    from dslint.lint.notebook import NotebookError

    path = stdin_path(stdin_filename)
    data = read_stdin()
    settings = resolver.for_path(path if stdin_filename else Path.cwd() / "stdin.py")
    selection = settings.selection_for(path)
    name = str(path)
    try:
        text = decode_source(data)[0]
        fixer = fix_notebook_text if path.suffix.lower() == ".ipynb" else fix_source
        outcome = run_guarded(lambda: fixer(name, text, unsafe=settings.unsafe_fixes, selection=selection))
        if isinstance(outcome, Crashed):
            raise RuntimeError(outcome.why)
        error, fixed, remaining = outcome.error, outcome.text, outcome.remaining
    except (NotebookError, Exception) as failure:  # the editor must get its text back whatever happens
        sys.stdout.buffer.write(data)
        sys.stderr.write(f"dslint: error: {printable(name)}: {printable(str(failure))}\n")
        return 2
    if diff:
        sys.stdout.write(
            "".join(
                difflib.unified_diff(
                    text.splitlines(True), fixed.splitlines(True), f"a/{printable(name)}", f"b/{printable(name)}"
                )
            )
        )
    else:
        sys.stdout.write(fixed)
    sys.stdout.flush()
    for diagnostic in remaining:
        sys.stderr.write(diagnostic.concise() + "\n")
    if error is not None:
        sys.stderr.write(f"dslint: error: {printable(name)}: not fixed, left as it was: {error}\n")
        return 2
    if not quiet:
        left = f"{plural(len(remaining), 'finding')} {'remains' if len(remaining) == 1 else 'remain'}."
        sys.stderr.write(f"{left}\n" if remaining else "No findings remain.\n")
    return 1 if remaining else 0

"""`dslint fix`: apply fixes to scripts in place (or print them as a diff), then report what remains.

Exit status describes the files as they are on disk when the command ends: 0 when no finding remains, 1 when
findings remain (with `--diff` nothing is written, so whatever the diff would fix still remains), 2 on an error
(a path that does not exist, a file that cannot be read, decoded or written, a fix the fixer refused).
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from dslint.commands.check import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from dslint.commands.options import force_exclude_option, make_resolver, settings_options
from dslint.diagnostics import Diagnostic
from dslint.fixing import fix_source
from dslint.selection import RuleSelection
from dslint.settings import SettingsError
from dslint.workspace import files_to_check
from dslint.write import SourceError, read_source, write_source


@dataclass
class FixReport:
    fixed: list[tuple[str, Diagnostic]] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    files_changed: int = 0


def fix_file(path: Path, selection: RuleSelection, *, unsafe: bool, diff: bool, report: FixReport) -> None:
    """Fix one file (or compute its diff), adding what happened to `report`."""
    try:
        source = read_source(path)
    except SourceError as error:
        report.errors.append(f"{path}: {error}")
        return
    name = str(path)
    try:
        outcome = fix_source(name, source.text, unsafe=unsafe, selection=selection)
    except RecursionError:
        report.errors.append(f"{path}: internal error: the file is nested too deeply to analyse; not fixed")
        return
    except Exception as error:  # one file's failure must not stop the others
        report.errors.append(f"{path}: internal error: {type(error).__name__}: {error}; not fixed")
        return
    report.remaining.extend(outcome.remaining)
    if outcome.error is not None:
        report.errors.append(f"{path}: not fixed, left as it was: {outcome.error}")
        return
    if not outcome.changed:
        return
    report.fixed.extend((name, d) for d in outcome.applied)
    if diff:
        report.diffs.append(_unified_diff(name, outcome.original, outcome.text))
        report.remaining.extend(d for d in outcome.applied)  # nothing is written: they stay in the file
        return
    try:
        write_source(source, outcome.text)
    except SourceError as error:
        report.errors.append(f"{path}: {error}")
        return
    report.files_changed += 1


def _unified_diff(name: str, before: str, after: str) -> str:
    relative = not Path(name).is_absolute()
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}" if relative else name,
        tofile=f"b/{name}" if relative else name,
    )
    text = ""
    for line in lines:
        text += line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
    return text


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@settings_options
@force_exclude_option
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes and write nothing.")
@click.option("-q", "--quiet", is_flag=True, help="Print remaining findings only, no summary.")
def fix(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    unsafe_fixes: bool | None,
    config_file: Path | None,
    isolated: bool,
    force_exclude: bool,
    diff: bool,
    quiet: bool,
) -> None:
    """Fix DeepSpeed training scripts in place (default: the current directory)."""
    resolver = make_resolver(select, ignore, extend_select, unsafe_fixes, config_file, isolated)
    try:
        jobs, errors = files_to_check(resolver, paths, force_exclude)
        unsafe = resolver.for_path(Path.cwd()).unsafe_fixes
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    report = FixReport(errors=errors)
    for job in jobs:
        if job.path.suffix == ".py":  # config files have findings but no fixes
            fix_file(job.path, job.selection, unsafe=job.settings.unsafe_fixes, diff=diff, report=report)
    out = sys.stdout
    if diff:
        for text in report.diffs:
            out.write(text)
    else:
        for name, diagnostic in report.fixed:
            message = diagnostic.fix.message if diagnostic.fix is not None else ""
            out.write(f"{name}: fixed {diagnostic.code} ({diagnostic.slug}){': ' + message if message else ''}\n")
        remaining = sorted(report.remaining, key=lambda d: d.sort_key)
        for diagnostic in remaining:
            out.write(diagnostic.concise() + "\n")
    out.flush()
    for message in report.errors:
        click.echo(f"dslint: error: {message}", err=True)
    if not quiet:
        click.echo(_summary(report, diff=diff, unsafe=unsafe), err=True)
    if report.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if report.remaining else EXIT_CLEAN)


def _summary(report: FixReport, *, diff: bool, unsafe: bool) -> str:
    count = len(report.fixed)
    noun = "finding" if count == 1 else "findings"
    lines = []
    if diff:
        lines.append(f"Would fix {count} {noun} ({len(report.diffs)} file(s) would change); nothing written.")
    else:
        lines.append(f"Fixed {count} {noun} in {report.files_changed} file(s).")
        remaining = report.remaining
        left = len(remaining)
        if left:
            lines.append(f"{left} finding(s) remain.")
            unsafe_left = sum(1 for d in remaining if d.fix is not None and not d.fix.is_safe)
            if unsafe_left and not unsafe:
                lines.append(f"{unsafe_left} fixable with `dslint fix --unsafe-fixes`.")
        else:
            lines.append("No findings remain.")
    return "\n".join(lines)

"""`dslint check`: lint scripts, report the findings, exit 0 clean / 1 findings / 2 errors."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from dslint.commands.options import force_exclude_option, make_resolver, settings_options
from dslint.diagnostics import Diagnostic
from dslint.linter import ScriptResult
from dslint.report import ReportContext, renderer
from dslint.runner import FileFailure, index_project, lint_files
from dslint.settings import OUTPUT_FORMATS, SettingsError, SettingsResolver
from dslint.suppression import add_noqa
from dslint.workspace import files_to_check

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@settings_options
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    envvar="DSLINT_OUTPUT_FORMAT",
    default=None,
    help="How findings are printed (default: the pyproject's `output-format`, else concise). "
    "Env: DSLINT_OUTPUT_FORMAT.",
)
@click.option(
    "-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path), help="Write the report to this file."
)
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments for every finding (for adopting dslint).")
@force_exclude_option
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: CPUs).")
@click.option(
    "--world-size",
    type=click.IntRange(min=1),
    default=None,
    help="Number of data-parallel ranks the configs run on; makes the batch-size check exact.",
)
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    unsafe_fixes: bool | None,
    config_file: Path | None,
    isolated: bool,
    output_format: str | None,
    output_file: Path | None,
    add_noqa: bool,
    force_exclude: bool,
    quiet: bool,
    exit_zero: bool,
    jobs: int | None,
    world_size: int | None,
) -> None:
    """Check DeepSpeed training scripts and config files (default: the current directory)."""
    resolver = make_resolver(select, ignore, extend_select, unsafe_fixes, config_file, isolated, output_format)
    try:
        results, errors, checked = run_check(resolver, paths, force_exclude, jobs, world_size)
        settings = resolver.for_path(Path.cwd())
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    # A config file is checked on its own and again through each script that points at it: report once.
    unique = dict.fromkeys(d for r in results for d in r.diagnostics)
    diagnostics = sorted(unique, key=lambda d: d.sort_key)
    if add_noqa:
        _add_noqa(results, errors, quiet)
        return
    context = ReportContext(
        sources={r.path: r.text for r in results if r.text is not None},
        unsafe_fixes=settings.unsafe_fixes,
        files_checked=checked,
    )
    report = renderer(settings.output_format)(diagnostics, context)
    if output_file is not None:
        output_file.write_text(report, encoding="utf-8")
    else:
        click.echo(report, nl=False)
    for message in errors:
        click.echo(f"dslint: error: {message}", err=True)
    if not quiet:
        click.echo(_summary(diagnostics, checked, sum(r.suppressed for r in results)), err=True)
    if errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if diagnostics and not exit_zero else EXIT_CLEAN)


def run_check(
    resolver: SettingsResolver,
    paths: tuple[str, ...],
    force_exclude: bool = False,
    jobs: int | None = None,
    world_size: int | None = None,
) -> tuple[list[ScriptResult], list[str], int]:
    """Discover and lint with each file's effective settings: (results, errors, number of files checked)."""
    files, errors = files_to_check(resolver, paths, force_exclude)
    project = index_project([job.path for job in files], paths or (".",))
    results: list[ScriptResult] = []
    for result in lint_files([(job.path, job.selection) for job in files], jobs, world_size, project):
        if isinstance(result, FileFailure):
            errors.append(f"{result.path}: {result.message}")
        else:
            results.append(result)
    return results, errors, len(files)


def write_atomically(path: Path, text: str, encoding: str) -> None:
    """Replace `path` with `text` through a temporary file in the same directory, keeping its mode."""
    mode = path.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".dslint")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode(encoding))
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _add_noqa(results: list[ScriptResult], errors: list[str], quiet: bool) -> None:
    lines = files = 0
    for result in results:
        if result.text is None or not result.diagnostics:
            continue
        updated, changed = add_noqa(result.text, result.diagnostics)
        if changed:
            write_atomically(Path(result.path), updated, result.encoding)
            lines += changed
            files += 1
    for error in errors:
        click.echo(f"dslint: error: {error}", err=True)
    if not quiet:
        noun = "comment" if lines == 1 else "comments"
        click.echo(f"Added {lines} noqa {noun} to {files} {'file' if files == 1 else 'files'}.", err=True)
    sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)


def _summary(diagnostics: list[Diagnostic], checked: int, suppressed: int = 0) -> str:
    files = "file" if checked == 1 else "files"
    silenced = f" ({suppressed} silenced by noqa)" if suppressed else ""
    if not diagnostics:
        return f"All checks passed ({checked} {files} checked){silenced}."
    with_findings = len({d.path for d in diagnostics})
    noun = "finding" if len(diagnostics) == 1 else "findings"
    lines = [f"Found {len(diagnostics)} {noun} in {with_findings} of {checked} {files}{silenced}."]
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.is_safe)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and not d.fix.is_safe)
    if safe:
        lines.append(f"{safe} fixable with `dslint fix`.")
    if unsafe:
        lines.append(f"{unsafe} more fixable with `dslint fix --unsafe-fixes`.")
    return "\n".join(lines)

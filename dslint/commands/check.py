"""`dslint check`: lint scripts, print one finding per line, exit 0 clean / 1 findings / 2 errors."""

from __future__ import annotations

import sys

import click

from dslint.commands.options import selection_options, split_codes
from dslint.diagnostics import Diagnostic
from dslint.registry import all_rules
from dslint.runner import FileFailure, discover, lint_paths
from dslint.selection import RuleSelection

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@selection_options
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
    quiet: bool,
    exit_zero: bool,
    jobs: int | None,
    world_size: int | None,
) -> None:
    """Check DeepSpeed training scripts and config files (default: the current directory)."""
    selection = RuleSelection.from_options(split_codes(select), split_codes(ignore), split_codes(extend_select))
    _validate_codes(selection)
    discovery = discover(paths or (".",))
    results = lint_paths(discovery.files, selection, jobs, world_size=world_size)
    diagnostics: list[Diagnostic] = []
    errors = list(discovery.errors)
    for result in results:
        if isinstance(result, FileFailure):
            errors.append(f"{result.path}: {result.message}")
        else:
            diagnostics.extend(result.diagnostics)
    # A config file is checked on its own and again through each script that points at it: report once.
    diagnostics = list(dict.fromkeys(diagnostics))
    diagnostics.sort(key=lambda d: d.sort_key)
    out = click.get_text_stream("stdout")
    for diagnostic in diagnostics:
        out.write(diagnostic.concise() + "\n")
    out.flush()
    for error in errors:
        click.echo(f"dslint: error: {error}", err=True)
    if not quiet:
        click.echo(_summary(diagnostics, len(discovery.files)), err=True)
    if errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if diagnostics and not exit_zero else EXIT_CLEAN)


def _validate_codes(selection: RuleSelection) -> None:
    codes = [rule.code for rule in all_rules()]
    for prefix in (*selection.select, *selection.ignore):
        if not any(code.startswith(prefix) for code in codes):
            raise click.BadParameter(f"{prefix!r} matches no rule code", param_hint="--select/--ignore")


def _summary(diagnostics: list[Diagnostic], checked: int) -> str:
    files = "file" if checked == 1 else "files"
    if not diagnostics:
        return f"All checks passed ({checked} {files} checked)."
    with_findings = len({d.path for d in diagnostics})
    noun = "finding" if len(diagnostics) == 1 else "findings"
    lines = [f"Found {len(diagnostics)} {noun} in {with_findings} of {checked} {files}."]
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.is_safe)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and not d.fix.is_safe)
    if safe:
        lines.append(f"{safe} fixable with `dslint fix`.")
    if unsafe:
        lines.append(f"{unsafe} more fixable with `dslint fix --unsafe-fixes`.")
    return "\n".join(lines)

"""`dslint fix`: apply fixes to scripts and DeepSpeed configs in place (or print them as a diff), then report what
remains.

What remains is what `dslint check` reports for the same files as they are on disk when the command ends (the
same findings, each counted once, config findings included), and so is the exit status: 0 when no finding
remains, 1 when findings remain (with `--diff` nothing is written, so whatever the diff would fix still remains),
2 on an error (a path that does not exist, a file that cannot be read, decoded or written, a fix the fixer
refused).

Scripts are fixed with the project index `check` uses (launchers, engines and models across functions and
modules), so a finding that needs another file's fact is fixed where it has a fix; the index is built again over
what the fixes wrote before the remaining findings are counted.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from dslint.commands.check import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    apply_config_ignores,
    document_findings,
    launcher_findings,
)
from dslint.commands.fix_configs import config_targets, fix_config_file
from dslint.commands.fix_report import FixReport
from dslint.commands.options import force_exclude_option, make_resolver, settings_options
from dslint.commands.stdin import STDIN, fix_stdin
from dslint.commands.summary import plural
from dslint.diagnostics import Diagnostic, printable
from dslint.fix.edits import FixOutcome, applicable
from dslint.fix.loop import fix_source
from dslint.fix.notebook import fix_notebook_text
from dslint.fix.write import SourceError, read_source
from dslint.limits import Limits, TooLarge
from dslint.lint.batch import FileFailure, Result, index_project, lint_files, lint_path
from dslint.lint.file_kinds import NOT_READ, NotAnalysed
from dslint.lint.files import FileJob, files_to_check
from dslint.lint.isolation import Crashed, run_guarded
from dslint.lint.notebook import SUFFIX as NOTEBOOK
from dslint.lint.notebook import NotebookError, NotPythonNotebook
from dslint.lint.result import FileResult, one_per_place
from dslint.lint.uncalled import uncalled, without_uncalled
from dslint.project.project_index import ProjectIndex
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection
from dslint.settings import SettingsError, SettingsResolver
from dslint.settings_options import redirect_warnings


def fix_file(
    path: Path,
    selection: RuleSelection,
    *,
    unsafe: bool,
    diff: bool,
    report: FixReport,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
    uncalled: frozenset[tuple[bytes, bytes]] = frozenset(),
) -> None:
    """Fix one file (or compute its diff), adding what happened to `report`. `project`: what the project index
    knows about the file (as `dslint check` uses it); `uncalled`: its definitions nothing in the project calls
    (`dslint.lint.uncalled`), whose findings `check` drops and no fix touches."""
    limits = limits or Limits()
    notebook = path.suffix.lower() == NOTEBOOK
    try:
        source = read_source(path, limits.max_notebook_file_size if notebook else limits.max_file_size)
    except SourceError:
        # Not readable, too large, or not decodable: nothing to fix, and the same verdict as `dslint check`
        # (an error line, DSL001 for a file dslint would analyse, or nothing for a file that is not its own).
        checked = lint_path(path, selection, limits=limits)
        if isinstance(checked, FileFailure):
            report.errors.append(f"{checked.path}: {checked.message}")
        return
    name = str(path)
    try:  # in a forked child: a parser that aborts is this file's error (dslint.lint.isolation)
        outcome = run_guarded(_fixed, name, source.text, unsafe, selection, limits, project, uncalled)
    except (NotPythonNotebook, TooLarge):  # reported as skipped by `remaining_findings`, as `check` does
        return
    except NotebookError as error:
        report.errors.append(f"{path}: {error}")
        return
    except RecursionError:
        report.errors.append(f"{path}: internal error: the file is nested too deeply to analyse; not fixed")
        return
    except Exception as error:  # one file's failure must not stop the others
        report.errors.append(f"{path}: internal error: {type(error).__name__}: {error}; not fixed")
        return
    if isinstance(outcome, Crashed):
        report.errors.append(f"{path}: {outcome.why}; not fixed")
        return
    report.record(name, source, outcome, diff=diff)


def _fixed(
    name: str,
    text: str,
    unsafe: bool,
    selection: RuleSelection,
    limits: Limits,
    project: ProjectFacts | None,
    uncalled: frozenset[tuple[bytes, bytes]] = frozenset(),
) -> FixOutcome:
    if name.lower().endswith(NOTEBOOK):
        return fix_notebook_text(name, text, unsafe=unsafe, selection=selection, limits=limits)
    return fix_source(name, text, unsafe=unsafe, selection=selection, limits=limits, project=project, uncalled=uncalled)


def remaining_findings(
    jobs: list[FileJob],
    errors: list[str],
    project: ProjectIndex,
    skipped: list[NotAnalysed] | None = None,
    resolver: SettingsResolver | None = None,
    results: list[Result] | None = None,
    paths: Sequence[str] = (".",),
    dead: Mapping[str, frozenset[tuple[bytes, bytes]]] | None = None,
) -> list[Diagnostic]:
    """What `check` reports for the same files as they are now on disk (with `--diff`, as they were): the same
    findings, counted once, so the two commands agree on findings and exit status. `project`: the project index
    of the files as they are now; `results`: `checked(jobs, project)` when nothing changed since it ran, and `dead`
    what `uncalled` answered for them (not asked again)."""
    failed = {message.split(": ", 1)[0] for message in errors}
    if results is None:
        results, dead = checked(jobs, project), None
    without_uncalled(results, paths, known=dead)  # as `check` drops them (`paths`: as named on the command line)
    if resolver is not None:
        # the launch rules' findings in launchers and the configs written out in documents: no fix writes them, and
        # `check` reports them with the files' own
        results = [*results, *launcher_findings(resolver, project.launch_issues)]
        results += document_findings(resolver, project, None)
        # the config's own settings decide on its findings found through a script
        apply_config_ignores(resolver, [r for r in results if isinstance(r, FileResult)])
    own: list[Diagnostic] = []
    linked: list[Diagnostic] = []
    for result in results:
        if isinstance(result, FileFailure):
            if result.path not in failed:
                errors.append(f"{result.path}: {result.message}")
            continue
        if isinstance(result, NotAnalysed):  # a file dslint does not read, or one over a size limit
            if skipped is not None:
                skipped.append(result)
            continue
        own.extend(d for d in result.diagnostics if d.path == result.path)
        linked.extend(d for d in result.diagnostics if d.path != result.path)
    return one_per_place(own, linked)


def checked(jobs: list[FileJob], project: ProjectIndex) -> list[Result]:
    """What `check` finds in each file as it is on disk (in the worker pool)."""
    return lint_files(
        [(job.path, job.selection) for job in jobs], limits=[job.settings.limits for job in jobs], project=project
    )


def nothing_to_fix(result: Result, unsafe: bool) -> bool:
    """Whether `check`'s result for a script says that `fix_source` would leave it as it is: its first round lints
    the same text with the same project facts, and stops when no finding has an applicable fix."""
    return isinstance(result, FileResult) and not any(applicable(d, unsafe) for d in result.diagnostics)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@settings_options
@force_exclude_option
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes and write nothing.")
@click.option("-q", "--quiet", is_flag=True, help="Print remaining findings only, no summary.")
@click.option(
    "--write-through-links",
    is_flag=True,
    help="Write fixes through symbolic links to files outside the project (refused by default).",
)
@click.option(
    "--stdin-filename",
    default=None,
    help="With the path `-`: the name of the file whose text comes on stdin; the fixed text goes to stdout.",
)
def fix(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    unsafe_fixes: bool | None,
    config_file: tuple[str, ...],
    isolated: bool,
    force_exclude: bool,
    diff: bool,
    quiet: bool,
    write_through_links: bool = False,
    stdin_filename: str | None = None,
) -> None:
    """Fix DeepSpeed training scripts, notebooks and configs in place (default: the current directory)."""
    resolver = make_resolver(select, ignore, extend_select, unsafe_fixes, config_file, isolated)
    if paths == (STDIN,):
        sys.exit(fix_stdin(resolver, stdin_filename, diff=diff, quiet=quiet))
    warnings: list[str] = []
    try:
        jobs, errors = files_to_check(resolver, paths, force_exclude, warnings)
        unsafe = resolver.for_path(Path.cwd()).unsafe_fixes
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    warnings[:0] = redirect_warnings()
    for warning in warnings:
        click.echo(f"dslint: warning: {printable(warning)}", err=True)
    report = FixReport(errors=errors, write_outside=write_through_links)
    named = paths or (".",)
    # The project index as `check` builds it: who reads each config, engines and models across modules.
    project = index_project([job.path for job in jobs], named)
    for target in config_targets(jobs, project):  # configs first: script rules read them
        fix_config_file(target, diff=diff, report=report)
    if report.files_changed and not diff:
        project = index_project([job.path for job in jobs], named)  # the stages the fixed configs now give
    # One pass of `check` in the worker pool first: a script with no applicable fix there is left alone (no forked
    # fixer for it), and when no fix writes anything these are also the findings that remain.
    before = checked(jobs, project)
    dead = uncalled(before, named)  # definitions nothing calls: `check` drops their findings, so no fix touches them
    changed_before = report.files_changed
    for job, result in zip(jobs, before, strict=True):
        if job.path.suffix == ".py" and nothing_to_fix(result, job.settings.unsafe_fixes):
            continue
        if job.path.suffix in (".py", NOTEBOOK):
            fix_file(
                job.path,
                job.selection,
                unsafe=job.settings.unsafe_fixes,
                diff=diff,
                report=report,
                limits=job.settings.limits,
                project=project.facts_for(job.path),
                uncalled=dead.get(str(job.path), frozenset()),
            )
    rewritten = report.files_changed > changed_before and not diff
    if rewritten:
        project = index_project([job.path for job in jobs], named)  # what the fixes wrote can change its facts
    skipped: list[NotAnalysed] = []
    report.remaining = remaining_findings(
        jobs, report.errors, project, skipped, resolver, results=None if rewritten else before, paths=named, dead=dead
    )
    out = sys.stdout
    if diff:
        for text in report.diffs:
            out.write(text)
    else:
        for name, diagnostic in report.fixed:
            message = diagnostic.fix.message if diagnostic.fix is not None else ""
            out.write(
                f"{printable(name)}: fixed {diagnostic.code} ({diagnostic.slug}){': ' + message if message else ''}\n"
            )
        remaining = sorted(report.remaining, key=lambda d: d.sort_key)
        for diagnostic in remaining:
            out.write(diagnostic.concise() + "\n")
    out.flush()
    for message in report.errors:
        click.echo(f"dslint: error: {printable(message)}", err=True)
    for file in skipped:
        if Path(file.path).suffix.lower() not in NOT_READ:  # a file of another tool, given by name, is no news
            click.echo(f"dslint: skipped {printable(file.path)}: {file.reason}", err=True)
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
        lines.append(f"Would fix {count} {noun} ({plural(len(report.diffs), 'file')} would change); nothing written.")
    else:
        lines.append(f"Fixed {count} {noun} in {plural(report.files_changed, 'file')}.")
        remaining = report.remaining
        left = len(remaining)
        if left:
            lines.append(f"{plural(left, 'finding')} {'remains' if left == 1 else 'remain'}.")
            unsafe_left = sum(1 for d in remaining if d.fix is not None and not d.fix.is_safe)
            if unsafe_left and not unsafe:
                lines.append(f"{unsafe_left} fixable with `dslint fix --unsafe-fixes`.")
        elif report.errors:  # the files in error may hold findings: not "No findings remain"
            lines.append(f"{len(report.errors)} error(s) above; the other files have no findings left.")
        else:
            lines.append("No findings remain.")
    return "\n".join(lines)

"""`dslint check`: lint scripts, report the findings, exit 0 clean / 1 findings / 2 errors."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import click

from dslint.collector import uncollected
from dslint.commands.options import cache_dir_option, force_exclude_option, make_resolver, settings_options
from dslint.commands.progress import Progress
from dslint.commands.stdin import STDIN, lint_stdin
from dslint.commands.summary import Tally
from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.config.yaml_config import YAML_CONFIG_SUFFIXES as YAML_SUFFIXES
from dslint.config.yaml_config import is_json_text
from dslint.diagnostics import Diagnostic, Severity, printable
from dslint.fix.write import SourceError, read_source, write_source
from dslint.lint.batch import FileFailure, index_project, lint_ahead, lint_files
from dslint.lint.cache import ResultCache, default_directory
from dslint.lint.cache import clean as clean_cache
from dslint.lint.file import NOTEBOOK
from dslint.lint.file_kinds import NotAnalysed, not_analysed
from dslint.lint.files import files_to_check, named_configs_left_out
from dslint.lint.launcher import COMMENTED, launcher_results
from dslint.lint.result import FileResult, one_per_place
from dslint.lint.uncalled import without_uncalled
from dslint.project.config_access import set_checked_roots
from dslint.project.project_index import LaunchIssue, ProjectIndex
from dslint.report import renderer
from dslint.report.colour import coloured_concise, wants_colour
from dslint.report.context import ReportContext
from dslint.report.statistics import render as render_statistics
from dslint.selection import RuleSelection
from dslint.settings import OUTPUT_FORMATS, SettingsError, SettingsResolver
from dslint.settings_options import redirect_warnings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FAIL_ON = ("error", "warning", "info")  # `--fail-on`: the mildest severity that makes the exit status 1
SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


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
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default="info",
    show_default=True,
    help="Exit 1 only for findings of this severity or worse (error: only errors fail; info: any finding).",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: CPUs).")
@click.option(
    "--world-size",
    type=click.IntRange(min=1),
    default=None,
    help="Number of data-parallel ranks the configs run on; makes the batch-size check exact.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    envvar="DSLINT_NO_CACHE",
    help="Neither read nor write the result cache. Env: DSLINT_NO_CACHE.",
)
@cache_dir_option("Where the result cache lives")
@click.option("--fix", "apply_fixes", is_flag=True, help="Apply fixes, as `dslint fix` does (its alias).")
@click.option(
    "--diff", "show_diff", is_flag=True, help="Print the fixes as a diff and write nothing (`dslint fix --diff`)."
)
@click.option("--statistics", is_flag=True, help="Print the number of findings of each rule instead of the findings.")
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a checked file changes (Ctrl-C stops).")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, and check nothing.")
@click.option(
    "--show-fixes", is_flag=True, help="After the findings, list every fix `dslint fix` would apply (to stderr)."
)
@click.option(
    "--stdin-filename",
    default=None,
    help="With the path `-`: the name of the file whose text comes on stdin (for its settings and kind).",
)
@click.pass_context
def check(
    ctx: click.Context,
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    unsafe_fixes: bool | None,
    config_file: tuple[str, ...],
    isolated: bool,
    output_format: str | None,
    output_file: Path | None,
    add_noqa: bool,
    force_exclude: bool,
    quiet: bool,
    exit_zero: bool,
    fail_on: str,
    jobs: int | None,
    world_size: int | None,
    no_cache: bool,
    cache_dir: Path | None,
    apply_fixes: bool,
    show_diff: bool,
    statistics: bool,
    watch: bool,
    show_files: bool,
    stdin_filename: str | None,
    show_fixes: bool = False,
) -> None:
    """Check DeepSpeed training scripts, notebooks and config files (default: the current directory)."""
    if apply_fixes or show_diff:
        # `dslint fix` itself, found through the command group (it imports this module's exit codes)
        group = ctx.parent.command if ctx.parent is not None else None
        fix_command = group.get_command(ctx, "fix") if isinstance(group, click.Group) else None
        if fix_command is None:
            raise click.UsageError("--fix/--diff: run as `dslint check --fix` (or `dslint fix`)")
        options = {"select": select, "ignore": ignore, "extend_select": extend_select, "isolated": isolated}
        options.update(unsafe_fixes=unsafe_fixes, config_file=config_file, force_exclude=force_exclude)
        ctx.invoke(fix_command, paths=paths, diff=show_diff, quiet=quiet, stdin_filename=stdin_filename, **options)
        return
    if watch:
        params = {**ctx.params, "watch": False}
        watch_files(lambda: _run_once(ctx, params), lambda: _watched(paths, force_exclude, ctx.params))
        return
    resolver = make_resolver(select, ignore, extend_select, unsafe_fixes, config_file, isolated, output_format)
    if show_files:
        _show_files(resolver, paths, force_exclude)
        return
    warnings: list[str] = []
    try:
        cache = None if no_cache or add_noqa else ResultCache(cache_dir or default_directory())
        outcome = run_check(resolver, paths, force_exclude, jobs, world_size, stdin_filename, warnings, cache)
        if cache is not None:
            cache.keep_states()  # the content hashes read, for the next run to stat instead of read
        settings = resolver.for_path(Path.cwd())
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    warnings[:0] = redirect_warnings()
    for warning in warnings:
        click.echo(f"dslint: warning: {printable(warning)}", err=True)
    results, errors = outcome.results, outcome.errors
    # A config file is checked on its own and again through each script that points at it: report once.
    own = [d for r in results for d in r.diagnostics if d.path == r.path]
    diagnostics = sorted(
        one_per_place(own, [d for r in results for d in r.diagnostics if d.path != r.path]), key=lambda d: d.sort_key
    )
    if add_noqa:
        _add_noqa(results, errors, quiet, resolver)
        return
    context = ReportContext(
        sources={r.path: r.text for r in results if r.text is not None},
        unsafe_fixes=settings.unsafe_fixes,
        files_checked=len(results),
        failures=[_failure(message) for message in errors],
    )
    colour = output_file is None and not statistics and settings.output_format == "concise" and wants_colour(sys.stdout)
    if statistics:
        report = render_statistics(diagnostics)
    elif colour:
        report = "".join(coloured_concise(d) + "\n" for d in diagnostics)
    else:
        report = renderer(settings.output_format)(diagnostics, context)
    if output_file is not None:
        try:
            output_file.write_text(report, encoding="utf-8", errors="backslashreplace")
        except OSError as error:
            errors.append(f"{output_file}: cannot write the report: {error.strerror or error}")
            click.echo(report, nl=False)  # nothing is lost: the findings go to stdout instead
    else:
        click.echo(report, nl=False, color=colour)  # click drops colour codes off a terminal unless told
    if show_fixes:
        click.echo(_fixes_listing(diagnostics, settings.unsafe_fixes), err=True, nl=False)
    for message in errors:
        click.echo(f"dslint: error: {printable(message)}", err=True)
    for skipped in outcome.skipped:
        click.echo(f"dslint: skipped {printable(str(skipped.path))}: {skipped.reason}", err=True)
    if not quiet:
        tally = Tally(
            diagnostics,
            [r.path for r in results],
            errors=len(errors),
            skipped=len(outcome.skipped),
            suppressed=sum(r.suppressed for r in results),
        )
        click.echo(_summary(tally), err=True)
    if errors:
        sys.exit(EXIT_ERROR)
    failing = [d for d in diagnostics if SEVERITY_RANK[d.severity] <= FAIL_ON.index(fail_on)]
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN)


def _run_once(ctx: click.Context, params: dict[str, object]) -> None:
    try:
        ctx.invoke(check, **params)
    except SystemExit:  # each run's exit status is shown by its summary; the watch goes on
        pass
    except click.UsageError as error:
        click.echo(f"dslint: error: {error.format_message()}", err=True)


def _watched(paths: tuple[str, ...], force_exclude: bool, params: dict[str, object]) -> dict[str, float]:
    """The files a check reads, with their modification times (and the pyproject.toml files that govern them)."""
    try:
        resolver = make_resolver(*(params[k] for k in _RESOLVER_PARAMS))  # type: ignore[arg-type]
        files, _ = files_to_check(resolver, tuple(p for p in paths if p != STDIN), force_exclude)
    except (SettingsError, click.UsageError):
        files = []
    times: dict[str, float] = {}
    for path in [*(job.path for job in files), *Path.cwd().glob("pyproject.toml")]:
        try:
            times[str(path)] = path.stat().st_mtime
        except OSError:
            continue
    return times


_RESOLVER_PARAMS = ("select", "ignore", "extend_select", "unsafe_fixes", "config_file", "isolated", "output_format")


STOP_GRACE = 5.0  # seconds Ctrl-C leaves `--watch` to unwind before the process ends regardless


def _stop_watching(signum: int, frame: object) -> None:
    """Ctrl-C in `--watch`: unwind as usual, and end the process after STOP_GRACE seconds whatever is still
    running (a forked parser, a worker pool joining): watching reads files and writes nothing a user waits for."""
    timer = threading.Timer(STOP_GRACE, os._exit, args=(EXIT_CLEAN,))
    timer.daemon = True
    timer.start()
    raise KeyboardInterrupt


def watch_files(run: Callable[[], None], snapshot: Callable[[], dict[str, float]], interval: float = 0.5) -> None:
    """`run`, then again each time `snapshot` (files and their modification times) changes; Ctrl-C stops."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _stop_watching)
    try:
        while True:
            before = snapshot()
            run()
            click.echo("[watching for changes; Ctrl-C stops]", err=True)
            while snapshot() == before:
                time.sleep(interval)
            click.echo("", err=True)
    except KeyboardInterrupt:
        sys.exit(EXIT_CLEAN)


@dataclass
class CheckOutcome:
    results: list[FileResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "path: message", one per file that could not be checked
    skipped: list[NotAnalysed] = field(default_factory=list)  # files given that dslint does not read


def _failure(message: str) -> tuple[str, str]:
    path, _, reason = message.partition(": ")
    return path, reason


def run_check(
    resolver: SettingsResolver,
    paths: tuple[str, ...],
    force_exclude: bool = False,
    jobs: int | None = None,
    world_size: int | None = None,
    stdin_filename: str | None = None,
    warnings: list[str] | None = None,
    cache: ResultCache | None = None,
) -> CheckOutcome:
    """Discover and lint with each file's effective settings (`-` among the paths: the text on stdin); with
    `cache`, results (and the project index) are served from it and stored in it (`dslint.lint.cache`)."""
    outcome = CheckOutcome()
    named = [path for path in paths if path != STDIN]
    if STDIN in paths:
        found = lint_stdin(resolver, stdin_filename, force_exclude, world_size)
        _collect(outcome, [found] if found is not None else [])
        if not named:
            return outcome
    set_checked_roots(named or ["."])  # what configs the files may name (`config_access`)
    files, errors = files_to_check(resolver, tuple(named), force_exclude, warnings)
    outcome.errors.extend(errors)
    progress = Progress(len(files))
    with uncollected():  # what the index makes lives until the run ends: no collection walks it meanwhile
        try:
            items = [(job.path, job.selection) for job in files]
            limits = [job.settings.limits for job in files]
            workers = jobs if jobs is not None else (os.cpu_count() or 1)
            # without a cache, the files are linted ahead in a child while the index is built (`lint_ahead`)
            ahead = lint_ahead(items, workers, world_size, limits) if cache is None else None
            try:
                project = index_project([job.path for job in files], tuple(named) or (".",), cache, workers)
                # configs the run reads that a .gitignore kept from the walk (committed all the same)
                left_out = named_configs_left_out(resolver, files, project.config_readers, tuple(named))
                items += [(job.path, job.selection) for job in left_out]
                limits += [job.settings.limits for job in left_out]
                linted = lint_files(items, jobs, world_size, progress.advance, limits, project, cache, ahead)
            finally:
                if ahead is not None:
                    ahead.close()
        finally:
            progress.finish()
        without_uncalled([r for r in linted if isinstance(r, FileResult)], tuple(named) or (".",), cache)
        _collect(outcome, linted)
        launched = _by_document(
            [*launcher_findings(resolver, project.launch_issues), *document_findings(resolver, project, world_size)]
        )
        outcome.results.extend(_into_own_results(outcome.results, launched))
        linted_launchers = {os.path.abspath(result.path) for result in launched}
        outcome.skipped = [s for s in outcome.skipped if os.path.abspath(s.path) not in linted_launchers]
        apply_config_ignores(resolver, outcome.results)
    return outcome


def launcher_findings(resolver: SettingsResolver, issues: dict[str, list[LaunchIssue]]) -> list[FileResult]:
    """The launch rules' findings in the launchers the index read (shown relative to the current directory when
    below it); a launcher its settings exclude gets none."""

    def selection(path: Path) -> RuleSelection | None:
        return None if resolver.excluded(path) else resolver.for_path(path).selection_for(path)

    def read(path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    shown = {_relative(path): found for path, found in issues.items()}
    return launcher_results(shown, selection, read)


def document_findings(resolver: SettingsResolver, project: ProjectIndex, world_size: int | None) -> list[FileResult]:
    """The config rules' findings on the DeepSpeed configs written out in documents (shown as launchers are)."""
    if not project.document_configs:
        return []

    def selection(path: Path) -> RuleSelection | None:
        return None if resolver.excluded(path) else resolver.for_path(path).selection_for(path)

    def read(path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    from dslint.lint.document_configs import document_results  # the config rules (libcst): only when there are some

    shown = {_relative(path): configs for path, configs in project.document_configs.items()}
    return document_results(shown, project.document_reading, selection, read, world_size)


def _by_document(results: list[FileResult]) -> list[FileResult]:
    """One result per launcher or document: a document's launch findings and its configs' findings together."""
    merged: dict[str, FileResult] = {}
    for result in results:
        kept = merged.setdefault(result.path, result)
        if kept is not result:
            kept.diagnostics = sorted([*kept.diagnostics, *result.diagnostics], key=lambda d: d.sort_key)
            kept.suppressed += result.suppressed
            kept.text = kept.text if kept.text is not None else result.text
    return list(merged.values())


def _into_own_results(results: list[FileResult], launched: list[FileResult]) -> list[FileResult]:
    """The launch findings of a file that has a result of its own (a notebook's `!` commands) joined to that
    result; the others, to be added."""
    own = {os.path.abspath(result.path): result for result in results}
    added: list[FileResult] = []
    for result in launched:
        kept = own.get(os.path.abspath(result.path))
        if kept is None:
            added.append(result)
            continue
        found = [replace(d, path=kept.path) for d in result.diagnostics]
        kept.diagnostics = sorted([*kept.diagnostics, *found], key=lambda d: d.sort_key)
        kept.suppressed += result.suppressed
    return added


def result_is_launcher(path: str) -> bool:
    return path.endswith((*COMMENTED, ".md", ".rst"))


def _relative(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def apply_config_ignores(resolver: SettingsResolver, results: list[FileResult]) -> None:
    """A script's result also holds findings inside the config files it points at: the config's own settings
    (`per-file-ignores` for the config's path, `ignore`) decide whether they are reported, as when the config is
    checked on its own."""
    for result in results:
        if all(d.path == result.path for d in result.diagnostics):
            continue
        result.diagnostics = [
            d
            for d in result.diagnostics
            if d.path == result.path or resolver.for_path(Path(d.path)).selection_for(Path(d.path)).enabled(d.code)
        ]


def _collect(outcome: CheckOutcome, linted: list[FileResult | FileFailure | NotAnalysed]) -> None:
    for result in linted:
        if isinstance(result, FileFailure):
            outcome.errors.append(f"{result.path}: {result.message}")
        elif isinstance(result, NotAnalysed):
            outcome.skipped.append(result)
        else:
            outcome.results.append(result)


def _show_files(resolver: SettingsResolver, paths: tuple[str, ...], force_exclude: bool) -> None:
    """The files a check would read, one a line (as `ruff check --show-files`); errors and exit 2 as a check."""
    try:
        files, errors = files_to_check(resolver, paths, force_exclude)
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    for job in sorted(files, key=lambda j: str(j.path)):
        skipped = not_analysed(job.path)
        click.echo(printable(str(job.path)) + (f"  (skipped: {skipped.reason})" if skipped else ""))
    for message in errors:
        click.echo(f"dslint: error: {printable(message)}", err=True)
    sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)


def _add_noqa(results: list[FileResult], errors: list[str], quiet: bool, resolver: SettingsResolver) -> None:
    """Write `# noqa: CODES` comments into the scripts, and into the configs whose format has comments; a strict
    JSON config (read by `json.load` too) and a notebook get none: the user is told what to do instead."""
    from dslint.lint.suppression import add_config_noqa, add_noqa, admits_comments

    lines = files = 0
    left: list[tuple[str, list[str], str]] = []  # path, codes, what to do instead
    texts = {r.path: r.text for r in results if r.text is not None}
    # Each file's findings, wherever they were found: a script's result also holds findings inside the configs
    # it points at (with the config's own line numbers), which belong in the config, never in the script.
    by_path: dict[str, dict[Diagnostic, None]] = {}
    for result in results:
        for diagnostic in result.diagnostics:
            by_path.setdefault(diagnostic.path, {})[diagnostic] = None
    for path, found in by_path.items():
        own = list(found)
        suffix = Path(path).suffix.lower()
        if suffix == NOTEBOOK:
            left.append((path, _codes(own), "add `# noqa: CODE` in the cell, or"))
            continue
        if result_is_launcher(path):  # a comment inside a continued command would cut the command
            how = (
                "put `# dslint: noqa: CODE` on a line of its own (a comment inside a command cuts it), or"
                if path.endswith(COMMENTED)
                else "a document has no comment dslint reads:"
            )
            left.append((path, _codes(own), how))
            continue
        text = texts.get(path)
        # a config file; JSON text in a YAML file is one too (accelerate and DeepSpeed read it with `json.load`)
        config = suffix in CONFIG_SUFFIXES or (suffix in YAML_SUFFIXES and text is not None and is_json_text(text))
        if text is None and config:  # a config only a script's findings point into
            try:
                text = read_source(Path(path)).text
            except SourceError as problem:
                errors.append(f"{path}: {problem}")
                continue
        if text is None:
            continue
        if config and not admits_comments(path, text):
            left.append((path, _codes(own), "strict JSON has no comments:"))
            continue
        updated, changed = (add_config_noqa if config else add_noqa)(text, own)
        if changed:
            try:  # the fixer's writer: atomic, keeps encoding, BOM and mode, writes through a symlink
                write_source(read_source(Path(path)), updated)
            except SourceError as problem:
                errors.append(f"{path}: {problem}")
                continue
            lines += changed
            files += 1
    for error in errors:
        click.echo(f"dslint: error: {printable(error)}", err=True)
    for path, codes, why in left:
        settings = resolver.for_path(Path(path))
        pattern = json.dumps(_relative_to(Path(path), settings.root))
        pyproject = settings.project.path or settings.root / "pyproject.toml"
        listed = ", ".join(json.dumps(code) for code in codes)
        click.echo(
            f"dslint: no noqa comment written to {printable(path)}: {why} add it to [tool.dslint.per-file-ignores] "
            f"in {pyproject}: {pattern} = [{listed}]",
            err=True,
        )
    if not quiet:
        noun = "comment" if lines == 1 else "comments"
        click.echo(f"Added {lines} noqa {noun} to {files} {'file' if files == 1 else 'files'}.", err=True)
    sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)


def _codes(diagnostics: list[Diagnostic]) -> list[str]:
    return sorted({d.code for d in diagnostics})


def _relative_to(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix()


@click.command()
@cache_dir_option("The cache to remove")
def clean(cache_dir: Path | None) -> None:
    """Remove the result cache."""
    directory = cache_dir or default_directory()
    try:
        removed = clean_cache(directory)
    except (ValueError, OSError) as error:
        click.echo(f"dslint: error: {printable(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"Removed {directory}." if removed else f"No cache at {directory}.", err=True)


def _summary(tally: Tally) -> str:
    lines = tally.lines()
    diagnostics = tally.diagnostics
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.is_safe)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and not d.fix.is_safe)
    if safe:
        lines.append(f"{safe} fixable with `dslint fix`.")
    if unsafe:
        lines.append(f"{unsafe} more fixable with `dslint fix --unsafe-fixes`.")
    return "\n".join(lines)


def _fixes_listing(diagnostics: list[Diagnostic], unsafe_fixes: bool) -> str:
    """`--show-fixes`: each finding's fix, safe or unsafe, and whether `dslint fix` applies it with these settings
    (ruff's `--show-fixes`, for a check that writes nothing)."""
    fixable = [d for d in diagnostics if d.fix is not None]
    lines = []
    for diagnostic in fixable:
        assert diagnostic.fix is not None
        kind = "safe" if diagnostic.fix.is_safe else "unsafe"
        lines.append(f"  {diagnostic.where}: {diagnostic.code} ({kind}) {printable(diagnostic.fix.message)}\n")
    safe = sum(1 for d in fixable if d.fix is not None and d.fix.is_safe)
    applied = len(fixable) if unsafe_fixes else safe
    head = f"{len(fixable)} fixable ({safe} safe, {len(fixable) - safe} unsafe); `dslint fix` applies {applied}"
    hint = "" if unsafe_fixes or safe == len(fixable) else ", `dslint fix --unsafe-fixes` all"
    return "".join(lines) + head + hint + "\n"

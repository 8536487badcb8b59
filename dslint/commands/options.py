"""Options shared by the commands that select rules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from dslint.settings import Overrides, SettingsError, SettingsResolver, split_config_arguments

F = TypeVar("F", bound=Callable[..., Any])


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def selection_options(function: F) -> F:
    function = click.option(
        "--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated; default: all)."
    )(function)
    function = click.option(
        "--ignore",
        "--extend-ignore",
        "ignore",
        multiple=True,
        help="Rule codes or prefixes to disable, on top of the pyproject's (`--extend-ignore`: the same, as ruff).",
    )(function)
    function = click.option("--extend-select", multiple=True, help="Codes or prefixes to add to the selection.")(
        function
    )
    return function


def split_codes(values: tuple[str, ...]) -> list[str]:
    return _split(values)


def settings_options(function: F) -> F:
    """Rule selection plus the options every command that reads `[tool.dslint]` shares."""
    function = selection_options(function)
    function = click.option(
        "--unsafe-fixes/--no-unsafe-fixes",
        "unsafe_fixes",
        default=None,
        help="Offer (and with `fix`, apply) unsafe fixes too (default: the pyproject's `unsafe-fixes`, else no).",
    )(function)
    function = click.option(
        "--config",
        "config_file",
        multiple=True,
        metavar="PATH | KEY=VALUE",
        help="A settings file to use instead of the nearest pyproject.toml, or one `[tool.dslint]` key to "
        "override, as TOML (`--config 'ignore = [\"DSL103\"]'`, `--config preview=true`); repeatable.",
    )(function)
    function = click.option("--isolated", is_flag=True, help="Ignore every pyproject.toml.")(function)
    return function


def make_resolver(
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    unsafe_fixes: bool | None = None,
    config_file: Sequence[str] | Path | None = None,
    isolated: bool = False,
    output_format: str | None = None,
) -> SettingsResolver:
    """The effective-settings resolver for a command's options; a bad value is a usage error (exit 2), and so
    is a `--select` that names no code (`--select ''`: it would silently check nothing)."""
    if select and not split_codes(select):
        raise click.UsageError("--select names no rule code; give codes or prefixes (DSL202, DSL2, DSL)")
    try:
        file, keys = split_config_arguments(config_file)
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    overrides = Overrides(
        select=tuple(split_codes(select)) if select else None,
        extend_select=tuple(split_codes(extend_select)),
        ignore=tuple(split_codes(ignore)),
        unsafe_fixes=unsafe_fixes,
        output_format=output_format,
        config_file=file,
        config_keys=keys,
        isolated=isolated,
    )
    try:
        return SettingsResolver(overrides)
    except SettingsError as error:
        raise click.UsageError(str(error)) from error


def force_exclude_option(function: F) -> F:
    return click.option(
        "--force-exclude",
        is_flag=True,
        help="Apply `exclude` to files named on the command line too (pre-commit names every file).",
    )(function)


def cache_dir_option(purpose: str) -> Callable[[F], F]:
    """`--cache-dir` (env `DSLINT_CACHE_DIR`) for the commands that use or remove the result cache; `purpose`
    begins the help text ("Where the result cache lives", "The cache to remove")."""
    return click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="DSLINT_CACHE_DIR",
        default=None,
        help=f"{purpose} (default: .dslint_cache in the project root). Env: DSLINT_CACHE_DIR.",
    )

"""`dslint settings PATH`: the effective settings for a path, and where each came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from dslint.commands.options import make_resolver, settings_options
from dslint.settings import SettingsError
from dslint.settings_options import redirect_warnings


@click.command("settings")
@click.argument("path", type=click.Path(path_type=Path), default=Path("."))
@settings_options
@click.option(
    "--output-format",
    "--format",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    help="Output format (`--format` is an alias).",
)
def settings_command(
    path: Path,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    unsafe_fixes: bool | None,
    config_file: tuple[str, ...],
    isolated: bool,
    output: str,
) -> None:
    """Show the effective settings for PATH: the pyproject.toml they come from, the command-line overrides,
    and the rules that run on it."""
    resolver = make_resolver(select, ignore, extend_select, unsafe_fixes, config_file, isolated)
    try:
        described = resolver.for_path(path).describe(path)
    except SettingsError as error:
        raise click.UsageError(str(error)) from error
    for warning in redirect_warnings():
        click.echo(f"dslint: warning: {warning}", err=True)
    if output == "json":
        click.echo(json.dumps(described, indent=2))
        return
    for key, value in described.items():
        click.echo(f"{key}: {_text(value)}")


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "(none)"
    if isinstance(value, dict):
        if not value:
            return "(none)"
        return "".join(f"\n  {k}: {_text(v)}" for k, v in value.items())
    return str(value)

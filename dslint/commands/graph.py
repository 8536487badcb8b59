"""`dslint graph`: what dslint believes about a project (launchers, configs, engines), text or JSON."""

from __future__ import annotations

import json

import click

from dslint.diagnostics import printable
from dslint.lint.batch import index_project
from dslint.lint.files import discover
from dslint.project.describe import describe, render_text


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--output-format",
    "--format",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    help="Output format (`--format` is an alias).",
)
def graph(paths: tuple[str, ...], output: str) -> None:
    """Show the project model: launchers -> scripts -> configs -> ZeRO stage and precision; where engines are
    created and where they go (default: the current directory)."""
    roots = paths or (".",)
    found = discover(roots)
    for error in found.errors:
        click.echo(f"dslint: error: {printable(error)}", err=True)
    data = describe(index_project(found.files, roots))
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_text(data), nl=False)
    if found.errors:
        raise SystemExit(2)

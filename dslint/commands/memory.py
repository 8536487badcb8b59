"""`dslint memory`: the memory forecast per rank of every launch the project index finds, text or JSON."""

from __future__ import annotations

import json

import click

from dslint.memory.forecast import Overrides
from dslint.memory.params import parse_size
from dslint.memory.plot import forecast_panels, write
from dslint.memory.project import forecast_project
from dslint.memory.render import render


def _params(_: click.Context, __: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "output", type=click.Choice(["text", "json"]), default="text", help="Output format.")
@click.option(
    "--params", callback=_params, help="The model's parameter count (7B, 125M, 940640256): overrides the project's."
)
@click.option("--world-size", type=click.IntRange(min=1), help="Ranks in all: overrides the launchers'.")
@click.option(
    "--gpus-per-node", type=click.IntRange(min=1), help="Ranks a node (with --world-size; default: all on one)."
)
@click.option(
    "--plot",
    "plot",
    type=click.Path(dir_okay=False),
    help="Also draw the forecast per launch (.svg; .png needs matplotlib).",
)
def memory(
    paths: tuple[str, ...], output: str, params: int | None, world_size: int | None, gpus_per_node: int | None,
    plot: str | None,
) -> None:  # fmt: skip
    """Forecast GPU and host memory per rank for every launch found (launcher -> script -> config): model
    states by ZeRO stage, offload, precision and optimizer (DeepSpeed's own formulas as the baseline), and per
    phase (init, load, step) what the project's findings add. Activations are not included."""
    launches, errors = forecast_project(paths or (".",), Overrides(params, world_size, gpus_per_node))
    for error in errors:
        click.echo(f"dslint: error: {error}", err=True)
    if output == "json":
        click.echo(json.dumps(launches, indent=2))
    else:
        click.echo(render(launches), nl=False)
    if plot is not None:
        try:
            write(plot, forecast_panels(launches))
        except (ValueError, OSError) as error:
            raise click.UsageError(f"--plot: {error}") from None
    if errors:
        raise SystemExit(2)

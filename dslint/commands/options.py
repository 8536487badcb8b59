"""Options shared by the commands that select rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def selection_options(function: F) -> F:
    function = click.option(
        "--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated; default: all)."
    )(function)
    function = click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")(function)
    function = click.option("--extend-select", multiple=True, help="Codes or prefixes to add to the selection.")(
        function
    )
    return function


def split_codes(values: tuple[str, ...]) -> list[str]:
    return _split(values)

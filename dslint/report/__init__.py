"""Output formats: one module per format, each a `render(diagnostics, context) -> str` over `Diagnostic`
(`dslint.report.context`); `renderer` names them."""

from __future__ import annotations

import importlib

from dslint.report.context import Renderer

FORMATS = (
    "concise",
    "full",
    "json",
    "json-lines",
    "github",
    "sarif",
    "junit",
    "pylint",
    "gitlab",
    "azure",
    "markdown",
    "grouped",
    "rdjson",
)


def renderer(name: str) -> Renderer:
    """The `render` function of the output format `name` (one of `dslint.settings.OUTPUT_FORMATS`)."""
    if name not in FORMATS:
        raise KeyError(name)
    # only the format used is imported (sarif reads every rule); `json-lines` lives in json_lines.py
    module = importlib.import_module(f"dslint.report.{name.replace('-', '_')}")
    render: Renderer = module.render
    return render

"""Output formats: one module per format, each a `render(diagnostics, context) -> str` over `Diagnostic`
(`dslint.report.context`); `renderer` names them."""

from __future__ import annotations

import importlib

from dslint.report.context import Renderer

FORMATS = ("concise", "full", "json", "github", "sarif")


def renderer(name: str) -> Renderer:
    """The `render` function of the output format `name` (one of `dslint.settings.OUTPUT_FORMATS`)."""
    if name not in FORMATS:
        raise KeyError(name)
    module = importlib.import_module(f"dslint.report.{name}")  # only the format used (sarif reads every rule)
    render: Renderer = module.render
    return render

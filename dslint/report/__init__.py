"""Output formats: one module per format, each a `render(diagnostics, context) -> str` over `Diagnostic`
(`dslint.report.context`); `renderer` names them."""

from __future__ import annotations

from dslint.report import concise, full, github, json, sarif
from dslint.report.context import Renderer


def renderer(name: str) -> Renderer:
    """The `render` function of the output format `name` (one of `dslint.settings.OUTPUT_FORMATS`)."""
    formats: dict[str, Renderer] = {
        "concise": concise.render,
        "full": full.render,
        "json": json.render,
        "github": github.render,
        "sarif": sarif.render,
    }
    return formats[name]

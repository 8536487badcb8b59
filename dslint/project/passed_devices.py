"""The project's `torch.load(..., map_location=<parameter>)` calls whose parameter every caller fills with a CUDA
device (`model.device_parameters`), as the facts each file receives: function -> parameter -> where the device
is written."""

from __future__ import annotations

import os

from dslint.diagnostics import Related
from dslint.model.device_parameters import loaded_onto_cuda_parameters
from dslint.model.summary import SummaryStore


def cuda_parameters(store: SummaryStore) -> dict[str, dict[str, dict[str, Related]]]:
    """path -> function qualname -> parameter -> the CUDA device a caller passes (its line, 1-based column)."""
    found: dict[str, dict[str, dict[str, Related]]] = {}
    for path, qualname, param, origin in loaded_onto_cuda_parameters(store):
        lines = store.sources.get(origin.path, b"").splitlines()
        before = lines[origin.line - 1][: origin.column] if 0 < origin.line <= len(lines) else b""
        column = len(before.decode("utf-8", errors="replace")) + 1
        shown = os.path.relpath(origin.path)
        where = Related(
            origin.path if shown.startswith("..") else shown,
            origin.line,
            column,
            f"every caller passes {param} a CUDA device: {origin.text}",
        )
        found.setdefault(path, {}).setdefault(qualname, {})[param] = where
    return found

"""Devices the callers pass (`model.device_parameters`), as the facts each file receives: function -> parameter ->
where the device is written. The project's `torch.load(..., map_location=<parameter>)` calls whose parameter
every caller fills with a CUDA device (`cuda_parameters`); model builders' `.to(<parameter>)` whose parameter
every caller fills with the CPU (`cpu_parameters`)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from dslint.diagnostics import Related
from dslint.model.device_parameters import DeviceOrigin, cpu_placed_parameters, loaded_onto_cuda_parameters
from dslint.model.resolution import Callee
from dslint.model.summary import SummaryStore


def cuda_parameters(store: SummaryStore) -> dict[str, dict[str, dict[str, Related]]]:
    """path -> function qualname -> parameter -> the CUDA device a caller passes (its line, 1-based column)."""
    return _by_function(store, loaded_onto_cuda_parameters(store), "a CUDA device")


def cpu_parameters(store: SummaryStore, builders: Iterable[Callee]) -> dict[str, dict[str, dict[str, Related]]]:
    """path -> function qualname -> parameter -> the CPU a caller passes, for the model builders `builders`."""
    return _by_function(store, cpu_placed_parameters(store, builders), "the CPU")


def _by_function(
    store: SummaryStore, answers: list[tuple[str, str, str, DeviceOrigin]], kind: str
) -> dict[str, dict[str, dict[str, Related]]]:
    found: dict[str, dict[str, dict[str, Related]]] = {}
    for path, qualname, param, origin in answers:
        lines = store.sources.get(origin.path, b"").splitlines()
        before = lines[origin.line - 1][: origin.column] if 0 < origin.line <= len(lines) else b""
        column = len(before.decode("utf-8", errors="replace")) + 1
        shown = os.path.relpath(origin.path)
        where = Related(
            origin.path if shown.startswith("..") else shown,
            origin.line,
            column,
            f"every caller passes {param} {kind}: {origin.text}",
        )
        found.setdefault(path, {}).setdefault(qualname, {})[param] = where
    return found

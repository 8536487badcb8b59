"""Shared test set-up: no test writes dslint's result cache into the repository or fixtures/; Hypothesis runs
derandomized unless a fuzz run asks for fresh randomness (`property_profiles`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import property_profiles  # noqa: F401  (registers and loads the Hypothesis profile first)
import pytest


@pytest.fixture(autouse=True, scope="session")
def _cache_outside_the_repository(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every CLI run (in-process or a subprocess, which inherits the environment) caches under a temporary
    folder; tests of the cache itself pass their own `--cache-dir`."""
    patch = pytest.MonkeyPatch()
    patch.setenv("DSLINT_CACHE_DIR", str(Path(tmp_path_factory.mktemp("dslint-cache"))))
    yield
    patch.undo()

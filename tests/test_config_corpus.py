"""The 130 real DeepSpeed configs of ../shared/corpus/ds_configs: no crash on any, and the findings pinned.

The pinned list (tests/data/corpus_expected.txt) is reviewed: every finding in it was judged real against
DeepSpeed 0.19.8 (see the notes in the file's header). Regenerate after an intended change with
`DSLINT_UPDATE_EXPECTED=1 python -m pytest tests/test_config_corpus.py` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dslint.lint.batch import FileFailure, lint_files
from dslint.lint.config import lint_config_source
from dslint.lint.files import discover
from dslint.selection import RuleSelection

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "ds_configs"
EXPECTED = Path(__file__).resolve().parent / "data" / "corpus_expected.txt"
FILES = sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []

pytestmark = pytest.mark.skipif(not FILES, reason="the shared corpus is not beside the checkout")


def _header() -> list[str]:
    return [line for line in EXPECTED.read_text(encoding="utf-8").splitlines() if line.startswith("#")]


def _pinned() -> list[str]:
    return [line for line in EXPECTED.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def test_no_crash_on_any_corpus_file_even_as_a_known_config() -> None:
    for path in FILES:
        lint_config_source(str(path), path.read_bytes(), RuleSelection(), known_config=True)


def test_every_corpus_file_is_discovered_as_a_config() -> None:
    assert {p.name for p in discover([str(CORPUS)]).files} == {p.name for p in FILES}


def test_corpus_findings_are_pinned() -> None:
    found: list[str] = []
    for result in lint_files([(path, RuleSelection()) for path in discover([str(CORPUS)]).files], jobs=1):
        assert not isinstance(result, FileFailure), result.message
        found.extend(
            f"{Path(d.path).name}:{d.start.line}:{d.start.column}: {d.code} {d.message}" for d in result.diagnostics
        )
    found.sort()
    if os.environ.get("DSLINT_UPDATE_EXPECTED"):
        EXPECTED.write_text("\n".join([*_header(), *found]) + "\n", encoding="utf-8")
    assert found == _pinned()


def test_mixed_files_do_not_flood() -> None:
    per_file: dict[str, int] = {}
    for line in _pinned():
        name = line.split(":", 1)[0]
        per_file[name] = per_file.get(name, 0) + 1
    # GPT-NeoX argument files (hyphenated NeoX options beside DeepSpeed sections) are NeoX's to read: no finding
    neox = [path.name for path in FILES if path.name.startswith("EleutherAI__gpt-neox")]
    assert neox and not [name for name in neox if name in per_file]
    assert max(per_file.values()) <= 3

"""A derandomized slice of the language server's fuzzer (benchmarks/fuzz_lsp.py): one seeded session of random
and malformed JSON-RPC, random edits, huge and binary documents. Every request is answered, the server lives,
and `exit` after `shutdown` ends it with status 0."""

from __future__ import annotations

from pathlib import Path

from benchmarks.fuzz_lsp import check_session


def test_every_request_is_answered_in_a_random_session(tmp_path: Path) -> None:
    outcome = check_session(seed=3, actions=120, directory=tmp_path, time_limit=60)
    assert outcome["requests"] >= 20 and outcome["answered"] == outcome["requests"], outcome

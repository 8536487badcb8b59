"""README sections generated from code (the rule table, the settings table): the text between a begin and an end
marker is replaced by what the code renders, and `python -m MODULE --write` writes it (without `--write`, a stale
README is reported and exits 1)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    """`text` with what stands between the markers `begin` and `end` replaced by `body`."""
    start = text.index(begin) + len(begin)
    return text[:start] + "\n" + body + "\n" + text[text.index(end) :]


def write_or_check(replace: Callable[[str], str], what: str, command: str) -> None:
    """Write the README with `replace` applied (`--write` on the command line), or exit 1 if it would change."""
    text = README.read_text(encoding="utf-8")
    updated = replace(text)
    if "--write" in sys.argv:
        README.write_text(updated, encoding="utf-8")
    elif updated != text:
        print(f"README.md's {what} is out of date: run `{command}`")
        sys.exit(1)

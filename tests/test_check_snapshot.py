"""A snapshot of `dslint check fixtures/ --output-format json`: every finding's code, span (line and column, start
and end), severity, message, related locations and fix (applicability, message, every edit), and the summary line.
The fixture tests pin only (line, code); this fails on any change to a message, a column or a fix.

When a change to the findings is intended, regenerate the snapshot with one command and review its diff:

    DSLINT_UPDATE_SNAPSHOT=1 python -m pytest tests/test_check_snapshot.py -q

(or `python tests/test_check_snapshot.py`), then commit tests/snapshots/check_fixtures.txt with the change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests" / "snapshots" / "check_fixtures.txt"
UPDATE = "DSLINT_UPDATE_SNAPSHOT"
COMMAND = ["check", "fixtures", "--output-format", "json", "--no-cache"]


def _span(item: dict[str, Any]) -> str:
    start, end = item["location"], item["end_location"]
    return f"{start['line']}:{start['column']}-{end['line']}:{end['column']}"


def render(findings: list[dict[str, Any]], summary: str) -> str:
    """One block per finding, in the report's order; strings as JSON so that each edit stays on one line."""
    lines = [f"# dslint {' '.join(COMMAND)}  (regenerate: {UPDATE}=1 python -m pytest tests/{Path(__file__).name})"]
    for item in findings:
        lines.append(f"{item['filename']}:{_span(item)} {item['code']} {item['severity']} {item['message']}")
        for related in item.get("related") or []:
            lines.append(f"  related {json.dumps(related, sort_keys=True)}")
        fix = item.get("fix")
        if fix:
            lines.append(f"  fix {fix['applicability']}: {fix['message']}")
            for edit in fix["edits"]:
                lines.append(f"    {_span(edit)} {json.dumps(edit['content'])}")
    lines.append(f"# {summary}")
    return "\n".join(lines) + "\n"


def current() -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "dslint", *COMMAND], cwd=ROOT, capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode in (0, 1), result.stderr
    summary = " ".join(line.strip() for line in result.stderr.splitlines() if line.strip())
    return render(json.loads(result.stdout), summary)


def test_check_output_over_fixtures_matches_the_snapshot() -> None:
    text = current()
    if os.environ.get(UPDATE):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(text, encoding="utf-8")
    expected = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    assert text == expected, (
        f"findings over fixtures/ changed: review, then `{UPDATE}=1 python -m pytest tests/{Path(__file__).name}`"
    )


if __name__ == "__main__":
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(current(), encoding="utf-8")
    print(f"wrote {SNAPSHOT.relative_to(ROOT)}")

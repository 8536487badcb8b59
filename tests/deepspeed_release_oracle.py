"""The oracle of the differential test for a DeepSpeed release installed in a directory of its own: run as a
child process with that directory first on sys.path (`deepspeed_releases.python_path`). It reads one JSON
config per line and answers one JSON line (after a mark): whether `DeepSpeedConfig(config)` raised, and the
top-level keys it read."""

from __future__ import annotations

import json
import logging
import sys

from dslint.config.generate_schema import RecordingDict, _deepspeed, _single_process_env

MARK = "@dslint-oracle "  # DeepSpeed logs to stdout too: answers are the lines with this mark


def answer(text: str) -> None:
    print(MARK + text, flush=True)


def main() -> None:
    _single_process_env()
    DeepSpeedConfig = _deepspeed("deepspeed.runtime.config").DeepSpeedConfig
    _deepspeed("deepspeed.utils").logger.setLevel(logging.CRITICAL)
    answer(json.dumps({"version": _deepspeed("deepspeed").__version__}))
    for line in sys.stdin:
        record: set[str] = set()
        raised = False
        try:
            DeepSpeedConfig(RecordingDict(json.loads(line), record))
        except Exception:
            raised = True
        answer(json.dumps({"raised": raised, "read": sorted(record)}))


if __name__ == "__main__":
    main()

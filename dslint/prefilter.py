"""The cheap text test that decides whether a file needs parsing at all.

Every script rule needs DeepSpeed in the file: an engine comes from `deepspeed.initialize`, which needs
`deepspeed` imported by that name (`import deepspeed`, `from deepspeed import ...`), and the config link reads
`deepspeed=` / `deepspeed_config`. A file without the bytes `deepspeed` therefore cannot produce a finding.
`tests/test_prefilter.py` checks that claim against every rule's cases and generated scripts.
"""

from __future__ import annotations

MARKER = b"deepspeed"


def needs_parsing(data: bytes) -> bool:
    return MARKER in data

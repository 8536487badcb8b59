"""Cheap tests that decide whether a file needs the full libcst analysis at all.

1. Tokens: each script rule declares the byte strings a file must contain for it to possibly fire
   (`ScriptRule.required_tokens`). An engine comes only from `deepspeed.initialize`, which needs both `deepspeed`
   (the import) and `initialize` (the attribute or the imported name) in the text, so engine rules need both.
   Configs in scripts reach DeepSpeed through initialize or `*TrainingArguments(deepspeed=...)`.
2. The engine probe: a regular expression looks for text that can be a call of `deepspeed.initialize` (any call
   of something named `initialize`, or of a name imported `as` an alias of it). It over-approximates, so it
   never hides an engine that libcst's facts would find.

Suppression runs after this (`dslint.lint.suppression`): DSL010, an unused `# noqa: DSL...` comment, is read from
comments and can appear in any file.

`tests/test_prefilter.py` checks both claims against every rule's cases, the fixtures and generated scripts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ENGINE_TOKENS = (b"deepspeed", b"initialize")
INFERENCE_TOKENS = (b"deepspeed", b"init_inference")
TRAINER_CONFIG_TOKENS = (b"deepspeed", b"TrainingArguments")


def has_tokens(data: bytes, tokens: Iterable[bytes]) -> bool:
    return all(token in data for token in tokens)


def may_create_engine(data: bytes) -> bool:
    """False only when the file certainly has no `deepspeed.initialize(...)` call.

    Such a call is written `<anything>.initialize(` or `initialize(`, or through a name imported with
    `from deepspeed import initialize as NAME`; whitespace and line continuations may stand before `(`.
    """
    if not has_tokens(data, ENGINE_TOKENS):
        return False
    if _CALLED_INITIALIZE.search(data):
        return True
    return any(re.search(rb"\b" + re.escape(alias) + rb"[\s\\]*\(", data) for alias in _INITIALIZE_ALIAS.findall(data))


def may_create_inference_engine(data: bytes) -> bool:
    """False only when the file certainly has no `deepspeed.init_inference(...)` call (for the rules that
    declare `inference_engine`)."""
    return has_tokens(data, INFERENCE_TOKENS)


_CALLED_INITIALIZE = re.compile(rb"\binitialize[\s\\]*\(")
_INITIALIZE_ALIAS = re.compile(rb"\binitialize\s+as\s+([A-Za-z_][A-Za-z0-9_]*)")

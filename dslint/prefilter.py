"""Cheap tests that decide whether a file needs the full libcst analysis at all.

1. Tokens: each script rule declares the byte strings a file must contain for it to possibly fire
   (`ScriptRule.required_tokens`). An engine comes only from `deepspeed.initialize`, which needs both `deepspeed`
   (the import) and `initialize` (the attribute or the imported name) in the text, so engine rules need both.
   Configs in scripts reach DeepSpeed through initialize or `*TrainingArguments(deepspeed=...)`.
2. The engine probe: CPython's `ast` (C-implemented, several times faster than libcst) looks for a call that can
   be `deepspeed.initialize`. It over-approximates (any call of something named `initialize`, any alias of it
   imported from deepspeed), so it never hides an engine that libcst's facts would find.

`tests/test_prefilter.py` checks both claims against every rule's cases, the fixtures and generated scripts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

DEEPSPEED = b"deepspeed"
ENGINE_TOKENS = (b"deepspeed", b"initialize")
TRAINER_CONFIG_TOKENS = (b"deepspeed", b"TrainingArguments")


def needs_parsing(data: bytes) -> bool:
    """Whether any rule at all could fire: every script rule needs the word `deepspeed`."""
    return DEEPSPEED in data


def has_tokens(data: bytes, tokens: Iterable[bytes]) -> bool:
    return all(token in data for token in tokens)


def may_create_engine(data: bytes) -> bool:
    """False only when the file certainly has no `deepspeed.initialize(...)` call. Unparsable -> True."""
    if not has_tokens(data, ENGINE_TOKENS):
        return False
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return True  # let the full parser report it
    initialize_names = {"initialize"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "deepspeed":
            initialize_names.update(a.asname for a in node.names if a.name == "initialize" and a.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "initialize":
                return True
            if isinstance(func, ast.Name) and func.id in initialize_names:
                return True
    return False

"""Cheap tests that decide whether a file needs the full libcst analysis at all.

1. Tokens: each script rule declares the byte strings a file must contain for it to possibly fire
   (`ScriptRule.required_tokens`, or all of one of its `alternative_tokens` sets). An engine comes only from
   `deepspeed.initialize`, which needs both `deepspeed` (the import) and `initialize` (the attribute or the
   imported name) in the text, so engine rules need both.
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

from dslint.model.source_words import matches_from

ENGINE_TOKENS = (b"deepspeed", b"initialize")
INFERENCE_TOKENS = (b"deepspeed", b"init_inference")
TRAINER_CONFIG_TOKENS = (b"deepspeed", b"TrainingArguments")


def has_tokens(data: bytes, tokens: Iterable[bytes]) -> bool:
    """Every token is in `data`."""
    return has_token_set(data, (tokens,))


def has_token_set(data: bytes, token_sets: Iterable[Iterable[bytes]]) -> bool:
    """True when `data` has every token of at least one of `token_sets` (a rule's `Needs.token_sets`). The rules
    ask the same few texts (a file's text, its code's words) about the same tokens again and again: each token's
    search is kept for the last few texts asked (held, so compared by identity; the memo is replaced whole, so a
    thread never reads another's half-made one)."""
    global _MEMO
    memo = _MEMO
    found = None
    for text, answers in memo:  # a loop, not a generator: this runs for every rule at every level
        if text is data:
            found = answers
            break
    if found is None:
        found = {}
        _MEMO = [(data, found), *memo[: _MEMO_TEXTS - 1]]
    for tokens in token_sets:
        for token in tokens:
            hit = found.get(token)
            if hit is None:
                hit = found[token] = _search(data, token, found)
            if not hit:
                break
        else:
            return True
    return False


def _search(data: bytes, token: bytes, found: dict[bytes, bool]) -> bool:
    """`token in data`, its stem (`STEMS`) first: a text without `Config` holds none of the dozen `*Config`
    classes the rules ask about, and that is one scan of the text instead of a dozen."""
    stem = _STEM_OF.get(token)
    if stem is None:
        stem = _STEM_OF[token] = next((s for s in STEMS if s in token and s != token), b"")
    if stem:
        present = found.get(stem)
        if present is None:
            present = found[stem] = stem in data
        if not present:
            return False
    return token in data


# Byte strings that several of the rules' tokens contain (`Needs.token_sets`); only the speed of the token test
# depends on this list, never its answers.
STEMS = (b"Config", b"save_")
_STEM_OF: dict[bytes, bytes] = {}
_MEMO_TEXTS = 4
_MEMO: list[tuple[bytes, dict[bytes, bool]]] = []


def may_create_engine(data: bytes) -> bool:
    """False only when the file certainly has no `deepspeed.initialize(...)` call that the script facts would see.

    The facts resolve a call through the file's imports (`dslint.script.names.ImportTable`): `deepspeed.initialize`
    (after `import deepspeed`, `import deepspeed.x`), `ALIAS.initialize` (after `import deepspeed as ALIAS`), or a
    name bound by `from deepspeed import initialize [as NAME]`. So the text must hold `NAME . initialize` for
    `deepspeed` or an alias of it (spaces, newlines and line continuations allowed around the dot), or a
    `from deepspeed import` whose names include `initialize`; and something must call `initialize` or a name
    imported as it. Strings and comments are not told apart: it over-approximates, so it never hides an engine
    that the facts would find.
    """
    global _ENGINE_MEMO
    for text, answer in _ENGINE_MEMO:  # the driver asks it of the same text at each level
        if text is data:
            return answer
    answer = _may_create_engine(data)
    _ENGINE_MEMO = [(data, answer), *_ENGINE_MEMO[: _MEMO_TEXTS - 1]]
    return answer


_ENGINE_MEMO: list[tuple[bytes, bool]] = []


def _may_create_engine(data: bytes) -> bool:
    # The patterns lead with `\b`, which `re` tries at every byte: `matches_from` tries them where their first
    # literal occurs (the same matches).
    if not has_tokens(data, ENGINE_TOKENS) or not _calls_initialize(data):
        return False
    aliases = [m.group(1) for m in matches_from(_DEEPSPEED_ALIAS, data, (b"deepspeed",))] if b"as" in data else []
    names = [b"deepspeed", *aliases]
    attribute = rb"\b(?:" + b"|".join(re.escape(name) for name in names) + rb")[\s\\]*\.[\s\\]*initialize\b"
    if _first(re.compile(attribute), data, names):
        return True
    return b"from" in data and _first(_FROM_DEEPSPEED_INITIALIZE, data, (b"from",))


def _first(pattern: re.Pattern[bytes], data: bytes, starts: Iterable[bytes]) -> bool:
    """`pattern.search(data) is not None`, for a pattern whose matches begin with one of `starts`."""
    return next(matches_from(pattern, data, starts), None) is not None


def _calls_initialize(data: bytes) -> bool:
    """Text that can be a call of `initialize`, or of a name imported `as` an alias of it."""
    if _first(_CALLED_INITIALIZE, data, (b"initialize",)):
        return True
    return any(
        _first(re.compile(rb"\b" + re.escape(alias) + rb"[\s\\]*\("), data, (alias,))
        for alias in (m.group(1) for m in matches_from(_INITIALIZE_ALIAS, data, (b"initialize",)))
    )


def may_create_inference_engine(data: bytes) -> bool:
    """False only when the file certainly has no `deepspeed.init_inference(...)` call (for the rules that
    declare `inference_engine`)."""
    return has_tokens(data, INFERENCE_TOKENS)


_DEEPSPEED_ALIAS = re.compile(rb"\bdeepspeed[\s\\]+as[\s\\]+([A-Za-z_][A-Za-z0-9_]*)")
# `from deepspeed import initialize`, `from deepspeed import (comm, initialize as make)`, with continuations
_FROM_DEEPSPEED_INITIALIZE = re.compile(
    rb"\bfrom[\s\\]+deepspeed[\s\\]+import[\s\\]*(?:\([^)]*|(?:[^\n\\]|\\[\s\S])*)\binitialize\b"
)
_CALLED_INITIALIZE = re.compile(rb"\binitialize[\s\\]*\(")
_INITIALIZE_ALIAS = re.compile(rb"\binitialize\s+as\s+([A-Za-z_][A-Za-z0-9_]*)")

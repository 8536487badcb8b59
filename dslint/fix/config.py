"""Fixing one DeepSpeed config file's text with the config rules (DSL4xx): the config side of `dslint fix`.

    outcome = fix_config_source("ds_config.json", text, unsafe=True, origin=Origin.INITIALIZE)

The fixes are text edits at the positions the config tree records (`dslint.config.key_edits`), applied in rounds
by the same loop as script fixes (`dslint.fix.edits.fix_text`). A result is accepted only when it parses as a DeepSpeed
config again, and, when the original was strict JSON, as strict JSON too (the Hugging Face Trainer reads it with
`json.load`). Who reads the config matters for `"auto"` (DSL405): `config_readers` finds it from the scripts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import libcst as cst

from dslint.config.facts import Origin
from dslint.config.tree import ParseError, parse_text
from dslint.diagnostics import Diagnostic
from dslint.fix.edits import FixOutcome, fix_text
from dslint.limits import Limits
from dslint.lint.config import lint_config_source
from dslint.lint.parse_guard import parse_module, refusal
from dslint.lint.prefilter import TRAINER_CONFIG_TOKENS, has_tokens, may_create_engine
from dslint.project.script_configs import script_configs
from dslint.script.collect import collect_facts
from dslint.script.context import ScriptContext
from dslint.selection import RuleSelection


def lint_config_text(
    path: str,
    text: str,
    selection: RuleSelection | None = None,
    *,
    origin: Origin,
    known_config: bool,
    replaced_keys: frozenset[str] = frozenset(),
) -> list[Diagnostic]:
    return lint_config_source(
        path, text.encode("utf-8"), selection, origin=origin, known_config=known_config, replaced_keys=replaced_keys
    ).diagnostics


def _strict_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def config_check(original: str) -> Callable[[str], str | None]:
    """The acceptance test of a fixed config: it parses, and stays strict JSON when `original` was."""
    strict = _strict_json(original)

    def check(candidate: str) -> str | None:
        try:
            parse_text(candidate)
        except ParseError as error:
            return f"{error.message} (line {error.line})"
        if strict and not _strict_json(candidate):
            return "the result is no longer strict JSON"
        return None

    return check


def fix_config_source(
    path: str,
    text: str,
    *,
    unsafe: bool = False,
    selection: RuleSelection | None = None,
    origin: Origin = Origin.FILE,
    known_config: bool = False,
    replaced_keys: frozenset[str] = frozenset(),
) -> FixOutcome:
    """Fix the config `text` (the content of `path`, read by `origin`; `replaced_keys`: top-level keys its
    readers replace in code first); safe fixes only unless `unsafe`."""
    return fix_text(
        text,
        lambda current: lint_config_text(
            path, current, selection, origin=origin, known_config=known_config, replaced_keys=replaced_keys
        ),
        unsafe=unsafe,
        verify=config_check(text),
    )


def config_readers(path: Path, data: bytes, max_nesting: int | None = None) -> list[tuple[Path, Origin]]:
    """The config files the script `path` hands to DeepSpeed, each with who reads it (`deepspeed.initialize` or
    the Hugging Face Trainer), as the script's own lint resolves them (`dslint.project.script_configs`). A script
    the parse guard refuses (CPython cannot compile it, or it is nested too deeply) names none."""
    if not (may_create_engine(data) or has_tokens(data, TRAINER_CONFIG_TOKENS)):
        return []
    if refusal(str(path), data, max_nesting if max_nesting is not None else Limits().max_nesting) is not None:
        return []
    try:
        module = parse_module(data)
    except (cst.ParserSyntaxError, ValueError, UnicodeDecodeError):
        return []
    context = ScriptContext(str(path), module, collect_facts(module))
    return [(Path(config.key), config.origin) for config in script_configs(context) if config.key is not None]


def reader_origin(origins: list[Origin]) -> Origin:
    """Who a config is fixed for: `deepspeed.initialize` when only it reads the file; the Trainer when the
    Trainer reads it at all (its "auto" values are fine there); a file no script reads: unknown."""
    if not origins:
        return Origin.FILE
    if Origin.TRAINER in origins:
        return Origin.TRAINER
    return Origin.INITIALIZE

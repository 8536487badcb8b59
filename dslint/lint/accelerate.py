"""Lint an accelerate config file (YAML) that runs DeepSpeed: read it (`dslint.config.accelerate`), run the
accelerate rules, apply its `# noqa` comments. A YAML file that is not such a config gets no finding."""

from __future__ import annotations

import functools

from dslint.config.accelerate import ParseError, read_accelerate_config
from dslint.framework.accelerate_rule import AccelerateContext, AccelerateRule
from dslint.lint.result import FileResult
from dslint.lint.suppression import apply_noqa, might_have_noqa
from dslint.selection import RuleSelection


def lint_accelerate_source(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    precision_on_command_line: bool = False,
    given_in_code: frozenset[str] = frozenset(),
) -> FileResult:
    """`precision_on_command_line`: every launch passing the file gives `--mixed_precision`; `given_in_code`: the
    fields the script of every launch passing it gives its own DeepSpeedPlugin (both from the project index)."""
    selection = selection or RuleSelection()
    result = FileResult(path)
    try:
        text = data.decode("utf-8-sig")
        config = read_accelerate_config(text)
    except (UnicodeDecodeError, ParseError):
        # YAML beyond what dslint reads (or not text): accelerate's own reader decides; no finding either way
        result.skipped = True
        return result
    if config is None:
        result.skipped = True
        return result
    result.parsed = True
    result.text = text
    context = AccelerateContext(path, config, precision_on_command_line, given_in_code)
    for rule in accelerate_rules(selection):
        rule(context).check()
    result.diagnostics = sorted(context.diagnostics, key=lambda d: d.sort_key)
    if might_have_noqa(text):
        suppressed = apply_noqa(path, text, result.diagnostics, selection, config=True)
        result.diagnostics, result.suppressed = suppressed.diagnostics, suppressed.suppressed
    return result


@functools.lru_cache(maxsize=64)
def accelerate_rules(selection: RuleSelection) -> tuple[type[AccelerateRule], ...]:
    from dslint.framework.registry import all_rules

    return tuple(r for r in all_rules() if issubclass(r, AccelerateRule) and selection.enabled(r.code))

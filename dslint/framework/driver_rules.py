"""The findings a driver meets rather than a rule's traversal: a script that does not parse (DSL001) or is too
deeply nested to parse (DSL002), a config that does not parse (DSL400), a noqa comment that silences nothing
(DSL010).

The framework declares each as a contract; the rule module that implements it builds the finding itself
(message, position, fix), and drivers reach it through `dslint.framework.registry.implementation(...)`, never by
importing a particular rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from dslint.config.tree import ParseError
from dslint.diagnostics import Diagnostic, Edit
from dslint.framework.rule_base import Rule


class ScriptSyntaxError(Rule):
    """A Python file dslint would analyse cannot be parsed."""

    @classmethod
    def from_error(cls, path: str, data: bytes, error: Exception) -> Diagnostic:
        raise NotImplementedError


class ConfigSyntaxError(Rule):
    """A DeepSpeed config (a file, or one a script points at) cannot be parsed."""

    @classmethod
    def from_error(cls, path: str, error: ParseError) -> Diagnostic:
        raise NotImplementedError

    @classmethod
    def not_read(cls, path: str, reason: ParseError) -> Diagnostic:
        """A config dslint did not read (`reason.message`), reported where the script `path` names it."""
        raise NotImplementedError


class UnusedNoqaCodes(Rule):
    """DSL codes in one noqa comment silence nothing."""

    @classmethod
    def from_codes(
        cls, path: str, line: int, start: int, end: int, unused: Sequence[tuple[str, str]], edits: Sequence[Edit]
    ) -> Diagnostic:
        """`unused`: (code, why it is unused) pairs; `start`/`end`: the comment's columns; `edits` remove them."""
        raise NotImplementedError


class ScriptTooDeep(Rule):
    """A Python file dslint would analyse is valid Python but nested too deeply for dslint's parser."""

    @classmethod
    def from_refusal(cls, path: str, line: int, message: str) -> Diagnostic:
        raise NotImplementedError

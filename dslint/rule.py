"""The rule framework: what every rule declares, and the base classes script rules build on.

A rule is one module in `dslint.rules`. It declares its code, slug, severity, a default message, its docs and
its own valid/invalid cases; `tests/test_rule_cases.py` runs the cases of every registered rule, so a rule
without cases cannot exist.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Related, Severity

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext

CODE_PATTERN = re.compile(r"^DSL[0-4]\d\d$")
SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

FAMILIES = {
    "0": "meta",
    "1": "device placement",
    "2": "checkpoints",
    "3": "training loop",
    "4": "config",
}


@dataclass(frozen=True)
class RuleDocs:
    """The user-facing documentation of a rule, in ruff's shape."""

    what: str
    why: str
    example: str
    use_instead: str
    fix_safety: str = "This rule has no fix."

    def render(self, code: str, slug: str) -> str:
        parts = [
            f"{code} ({slug})",
            "",
            "## What it does",
            textwrap.dedent(self.what).strip(),
            "",
            "## Why is this bad?",
            textwrap.dedent(self.why).strip(),
            "",
            "## Example",
            "```python",
            textwrap.dedent(self.example).strip(),
            "```",
            "",
            "## Use instead",
            "```python",
            textwrap.dedent(self.use_instead).strip(),
            "```",
            "",
            "## Fix safety",
            textwrap.dedent(self.fix_safety).strip(),
        ]
        return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class Valid:
    """A case on which the rule must report nothing."""

    code: str
    path: str = "train.py"


@dataclass(frozen=True)
class Invalid:
    """A case on which the rule must report exactly at `lines` (1-based, after dedent).

    `fixed`, when given, is the expected text after applying this rule's fixes (safe and unsafe) until none
    remains applicable.
    """

    code: str
    lines: tuple[int, ...]
    fixed: str | None = None
    path: str = "train.py"


class Rule:
    """What every rule declares. Subclasses set the class variables; the registry checks them."""

    code: ClassVar[str]
    slug: ClassVar[str]
    message: ClassVar[str]
    severity: ClassVar[Severity]
    docs: ClassVar[RuleDocs]
    valid: ClassVar[Sequence[Valid]] = ()
    invalid: ClassVar[Sequence[Invalid]] = ()
    fixable: ClassVar[bool] = False  # whether the rule can offer a fix (some findings may still have none)

    @classmethod
    def family(cls) -> str:
        return FAMILIES[cls.code[3]]


_VISITOR_NAMES: dict[type, tuple[str, ...]] = {}


class ScriptRule(Rule, cst.BatchableCSTVisitor):
    """A rule over a Python script. All script rules of a file run in ONE batched traversal.

    Rules read the shared, precomputed facts (`self.facts`) rather than re-deriving them, and report with
    `self.report(node, ...)`. A script rule only runs on files that create a DeepSpeed engine unless it sets
    `needs_engine = False`.
    """

    needs_engine: ClassVar[bool] = True
    # Byte strings a file must contain for this rule to possibly fire (see dslint.prefilter).
    required_tokens: ClassVar[tuple[bytes, ...]] = (b"deepspeed", b"initialize")

    def __init__(self, context: ScriptContext) -> None:
        super().__init__()
        self.context = context
        self.facts = context.facts

    def get_visitors(self) -> Mapping[str, Callable[[cst.CSTNode], None]]:
        """libcst's version runs `inspect.getmembers` for every rule instance of every file (several ms each);
        a class's visitor method names never change, so they are looked up once per class."""
        cls = type(self)
        names = _VISITOR_NAMES.get(cls)
        if names is None:
            names = tuple(super().get_visitors())
            _VISITOR_NAMES[cls] = names
        return {name: getattr(self, name) for name in names}

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        edits: Sequence[Edit] = (),
        applicability: Applicability = Applicability.SAFE,
        fix_message: str = "",
        severity: Severity | None = None,
        imports: Sequence[str] = (),
        related: Sequence[Related] = (),
    ) -> None:
        """Report `node`; an empty `edits` means no fix. Nodes in a plain-PyTorch branch are never reported.

        `severity` overrides the rule's own for this finding (a rule may be sure of an error in one case and
        only warn in another, e.g. when the ZeRO stage cannot be read). `imports` are statements the fix's code
        needs (`"import os"`); the fixer adds the missing ones once."""
        if self.facts.in_plain_branch(node):
            return
        fix = Fix(tuple(edits), applicability, fix_message, tuple(imports)) if edits else None
        message = message or self.message
        if not related and self.facts.project is not None:
            origin = self._elsewhere(node)
            if origin is not None:  # the engine (or what initialize returned) comes from another function/module
                message, related = f"{message} ({origin.message}, {origin.path}:{origin.line})", (origin,)
        start, end = self.context.span(node)
        self.context.diagnostics.append(
            Diagnostic(
                code=self.code,
                slug=self.slug,
                message=message,
                severity=severity or self.severity,
                path=self.context.path,
                start=start,
                end=end,
                fix=fix,
                related=tuple(related),
            )
        )

    def _elsewhere(self, node: cst.CSTNode) -> Related | None:
        """Where the engine (or scheduler, optimizer) a reported method call acts on was created or passed in,
        when that is in another function or module."""
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return None
        answer = self.facts.role_of(node.func.value, at=node)
        return answer.init.origin if answer is not None and answer.init is not None else None

    def location(self, node: cst.CSTNode) -> tuple[Location, Location]:
        return self.context.span(node)

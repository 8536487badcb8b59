"""What every rule declares (`Rule`: code, slug, severity, message, docs, its own valid/invalid cases), apart from
the base class script rules build on (`dslint.framework.rule.ScriptRule`, a libcst visitor): config, launch and
driver rules import this module alone, so that linting a config file never imports libcst."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from dslint.diagnostics import Diagnostic, Fix, Location, Severity

CODE_PATTERN = re.compile(r"^DSL[0-4]\d\d$")
SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

FAMILIES = {
    "0": "meta",
    "1": "device placement",
    "2": "checkpoints",
    "3": "training loop",
    "4": "config",
}


def family_of(code: str) -> str:
    """The family of a rule code (`DSL3xx`: "training loop"), by its hundreds digit."""
    return FAMILIES[code[3]]


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
            *_fenced(self.example),
            "",
            "## Use instead",
            *_fenced(self.use_instead),
            "",
            "## Fix safety",
            textwrap.dedent(self.fix_safety).strip(),
        ]
        return "\n".join(parts) + "\n"


def _fenced(example: str) -> list[str]:
    """A code block for `example`: fenced as JSON when it is a JSON text (a config rule's), as YAML when it is an
    accelerate config (an accelerate rule's), else as Python."""
    text = textwrap.dedent(example).strip()
    try:
        json.loads(text)
    except ValueError:
        language = "yaml" if text.startswith("distributed_type:") else "python"
    else:
        language = "json"
    return [f"```{language}", text, "```"]


@dataclass(frozen=True)
class Valid:
    """A case on which the rule must report nothing."""

    code: str
    path: str | None = None  # None: the rule's `case_path` (train.py; ds_config.json for a config rule)
    deepspeed_version: str | None = None  # the DeepSpeed the project runs (None: the newest known)
    files: tuple[tuple[str, str], ...] = ()  # a launch rule's case: the other files of its project (path, text)


@dataclass(frozen=True)
class Invalid:
    """A case on which the rule must report exactly at `lines` (1-based, after dedent).

    `fixed`, when given, is the expected text after applying this rule's fixes (safe and unsafe) until none
    remains applicable.
    """

    code: str
    lines: tuple[int, ...]
    fixed: str | None = None
    path: str | None = None  # None: the rule's `case_path` (train.py; ds_config.json for a config rule)
    deepspeed_version: str | None = None  # the DeepSpeed the project runs (None: the newest known)
    files: tuple[tuple[str, str], ...] = ()  # a launch rule's case: the other files of its project (path, text)


class Rule:
    """What every rule declares. Subclasses set the class variables; the registry checks them."""

    code: ClassVar[str]
    slug: ClassVar[str]
    message: ClassVar[str]
    severity: ClassVar[Severity]
    docs: ClassVar[RuleDocs]
    valid: ClassVar[Sequence[Valid]] = ()
    invalid: ClassVar[Sequence[Invalid]] = ()
    # Whether the rule can offer a fix (some findings may still have none): derived from its cases, true when an
    # invalid case shows the fixed text.
    fixable: ClassVar[bool] = False

    case_path: ClassVar[str] = "train.py"  # the file a case is linted as, unless the case names one

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.valid = tuple(dataclasses.replace(case, path=case.path or cls.case_path) for case in cls.valid)
        cls.invalid = tuple(dataclasses.replace(case, path=case.path or cls.case_path) for case in cls.invalid)
        cls.fixable = any(case.fixed is not None for case in cls.invalid)

    # The DeepSpeed releases the rule's premise holds for, as `dslint explain` says ("0.19.0 and later");
    # on other releases it stays silent. Empty: every release.
    deepspeed_versions: ClassVar[str] = ""

    @classmethod
    def family(cls) -> str:
        return family_of(cls.code)

    @classmethod
    def diagnostic(
        cls,
        path: str,
        start: Location,
        end: Location | None = None,
        message: str | None = None,
        *,
        severity: Severity | None = None,
        fix: Fix | None = None,
    ) -> Diagnostic:
        """A finding of this rule in `path` (a point when `end` is None), with the rule's own message unless
        `message` is given."""
        return Diagnostic(
            code=cls.code,
            slug=cls.slug,
            message=message or cls.message,
            severity=severity or cls.severity,
            path=path,
            start=start,
            end=end or start,
            fix=fix,
        )

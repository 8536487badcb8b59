"""The base of the rules over accelerate config files (`accelerate launch --config_file X.yaml` with
`distributed_type: DEEPSPEED`), and the context they run in: the file read by `dslint.config.accelerate`, findings
at the key's line and column in the YAML file. A case is a YAML text, linted as `accelerate_config.yaml`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from dslint.config.accelerate import AccelerateDeepSpeed
from dslint.config.tree import Entry
from dslint.diagnostics import Diagnostic, Related, Severity
from dslint.framework.rule import Rule


@dataclass
class AccelerateContext:
    path: str
    config: AccelerateDeepSpeed
    diagnostics: list[Diagnostic] = field(default_factory=list)


class AccelerateRule(Rule):
    """A rule over one accelerate config that runs DeepSpeed. Subclasses implement `check()`."""

    case_path: ClassVar[str] = "accelerate_config.yaml"

    def __init__(self, context: AccelerateContext) -> None:
        self.context = context
        self.config = context.config

    def check(self) -> None:
        raise NotImplementedError

    def report_key(
        self,
        entry: Entry,
        message: str | None = None,
        severity: Severity | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        diagnostic = self.diagnostic(self.context.path, entry.key_start, entry.key_end, message, severity=severity)
        self.context.diagnostics.append(replace(diagnostic, related=related))

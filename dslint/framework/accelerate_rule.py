"""The base of the rules over accelerate config files (`accelerate launch --config_file X.yaml` with
`distributed_type: DEEPSPEED`), and the context they run in: the file read by `dslint.config.accelerate`, findings
at the key's line and column in the YAML file. A case is a YAML text, linted as `accelerate_config.yaml`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from dslint.config.accelerate import DEFAULT_STAGE, AccelerateDeepSpeed
from dslint.config.tree import Entry
from dslint.diagnostics import Diagnostic, Related, Severity
from dslint.framework.rule_base import Rule


@dataclass
class AccelerateContext:
    path: str
    config: AccelerateDeepSpeed
    # every launch passing the file gives `--mixed_precision` itself (the project index says so)
    precision_on_command_line: bool = False
    # the `deepspeed_config:` fields the script of every launch passing the file gives its own DeepSpeedPlugin in
    # code (`project.plugin_fields`): the plugin reads the YAML's only for a field left None
    given_in_code: frozenset[str] = frozenset()
    diagnostics: list[Diagnostic] = field(default_factory=list)


class AccelerateRule(Rule):
    """A rule over one accelerate config that runs DeepSpeed. Subclasses implement `check()`."""

    case_path: ClassVar[str] = "accelerate_config.yaml"

    def __init__(self, context: AccelerateContext) -> None:
        self.context = context
        self.config = context.config

    def check(self) -> None:
        raise NotImplementedError

    def overridden(self, key: str, stage_dependent: bool = True) -> bool:
        """Whether the run never takes the section's `key` (or, for a finding that depends on the ZeRO stage, the
        section's stage) from this file: the launched scripts' own DeepSpeedPlugin gives it in code."""
        given = self.context.given_in_code
        return key in given or (stage_dependent and "zero_stage" in given)

    def stage_source(self, stage: int) -> tuple[str, tuple[Related, ...]]:
        """Where the section's ZeRO stage comes from, for a message ("stage 2", or accelerate's default when no
        `zero_stage` is written) and as the related location of the `zero_stage` key."""
        entry = self.config.entry("zero_stage")
        if entry is None:
            return f"accelerate's default stage {DEFAULT_STAGE} (no zero_stage)", ()
        where = Related(self.context.path, entry.key_start.line, entry.key_start.column, f"zero_stage: {stage}")
        return f"stage {stage}", (where,)

    def report_key(
        self,
        entry: Entry,
        message: str | None = None,
        severity: Severity | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        diagnostic = self.diagnostic(self.context.path, entry.key_start, entry.key_end, message, severity=severity)
        self.context.diagnostics.append(replace(diagnostic, related=related))

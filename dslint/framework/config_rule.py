"""The base of config rules (DSL4xx) and the context they run in.

A config rule checks one DeepSpeed config, given as a positioned tree (`dslint.config.tree`): a JSON file, or a
dict literal in a script (positions then point into the script). Its cases are JSON texts: `Valid(text,
path="ds_config.json")`; a case whose path ends in `.py` is a script, linted with the config link.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from dslint.config.facts import Origin
from dslint.config.schema import Schema, load_schema
from dslint.config.tree import Entry, Node, Object
from dslint.config.versions import Version, newest_known
from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.framework.rule import Rule


@dataclass
class ConfigContext:
    path: str  # where findings are reported (the JSON file, or the script holding the dict)
    root: Object
    origin: Origin = Origin.FILE
    world_size: int | None = None
    from_file: bool = True  # read from a file (DeepSpeed then refuses duplicate keys), not a dict literal
    schema: Schema = field(default_factory=load_schema)  # the schema of `deepspeed_version` (config_schema)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    deepspeed_version: Version = field(default_factory=newest_known)  # the DeepSpeed the project runs


class ConfigRule(Rule):
    """A rule over one DeepSpeed config. Subclasses implement `check()` and report with `report_*`.

    On a file that mixes another tool's settings into its DeepSpeed config (`mixed_file`), only rules with
    `runs_on_mixed_files` run: such a file gets one finding, or none, never one per foreign key.
    """

    needs_engine: ClassVar[bool] = False
    runs_on_mixed_files: ClassVar[bool] = False

    def __init__(self, context: ConfigContext) -> None:
        self.context = context
        self.root = context.root
        self.schema = context.schema

    def check(self) -> None:
        raise NotImplementedError

    def report_at(
        self, start: Location, end: Location, message: str | None = None, severity: Severity | None = None
    ) -> None:
        self.context.diagnostics.append(
            Diagnostic(
                code=self.code,
                slug=self.slug,
                message=message or self.message,
                severity=severity or self.severity,
                path=self.context.path,
                start=start,
                end=end,
            )
        )

    def report_key(self, entry: Entry, message: str | None = None, severity: Severity | None = None) -> None:
        self.report_at(entry.key_start, entry.key_end, message, severity)

    def report_node(self, node: Node, message: str | None = None, severity: Severity | None = None) -> None:
        self.report_at(node.start, node.end, message, severity)

    def section(self, key: str) -> Object | None:
        node = self.root.get(key)
        return node if isinstance(node, Object) else None

    def entries(self, node: Object | None) -> Iterator[Entry]:
        return node.last_entries() if node is not None else iter(())

"""The base of config rules (DSL4xx) and the context they run in.

A config rule checks one DeepSpeed config, given as a positioned tree (`dslint.config.tree`): a JSON file, or a
dict literal in a script (positions then point into the script). Its cases are JSON texts: `Valid(text,
path="ds_config.json")`; a case whose path ends in `.py` is a script, linted with the config link.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from dslint.config.schema import Schema, did_you_mean, load_schema
from dslint.config.tree import Entry, Node, Object, Scalar
from dslint.deepspeed_version import Version, newest_known
from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.rule import Rule


class Origin(str, enum.Enum):
    """Who reads the config, which decides what some values mean."""

    FILE = "file"  # a JSON file on its own: the reader is not known
    INITIALIZE = "initialize"  # goes straight to deepspeed.initialize
    TRAINER = "trainer"  # the Hugging Face Trainer fills "auto" values before DeepSpeed sees them


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


MIXED_THRESHOLD = 3  # more unknown top-level keys than this, none a near miss: another tool's file


def is_comment_key(key: str) -> bool:
    return key.startswith(("_", "//", "#")) or key.lower() in {"comment", "comments", "description", "note"}


def foreign_keys(root: Object, schema: Schema) -> list[Entry]:
    """Top-level entries that are neither DeepSpeed keys, near misses of one, comments, nor handled by a
    dedicated rule."""
    return [
        e
        for e in root.last_entries()
        if e.key not in schema.top_level_keys
        and e.key != "ignored_parameters"
        and not is_comment_key(e.key)
        and did_you_mean(e.key, schema.live_top_level_keys) is None
    ]


def mixed_file(root: Object, schema: Schema) -> bool:
    return len(foreign_keys(root, schema)) > MIXED_THRESHOLD


def autotuning_enabled(root: Object) -> bool:
    """DeepSpeed's autotuner expands lists of values (the tuning space) and fills "auto" values."""
    section = root.get("autotuning")
    flag = section.get("enabled") if isinstance(section, Object) else None
    return isinstance(flag, Scalar) and flag.value is True


def is_auto(node: Node | None) -> bool:
    return isinstance(node, Scalar) and node.value == "auto"

"""The base of config rules (DSL4xx) and the context they run in.

A config rule checks one DeepSpeed config, given as a positioned tree (`dslint.config.tree`): a JSON file, or a
dict literal in a script (positions then point into the script). Its cases are JSON texts, linted as
`ds_config.json` (`case_path`); a case with `path="train.py"` is a script, linted with the config link.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from dslint.config.facts import Origin
from dslint.config.schema import Schema, load_schema
from dslint.config.tree import Entry, Node, Object
from dslint.config.versions import Version, newest_known
from dslint.diagnostics import Diagnostic, Fix, Location, Related, Severity
from dslint.framework.rule_base import Rule
from dslint.script.project_facts import LaunchWorldSize


@dataclass
class ConfigContext:
    path: str  # where findings are reported (the JSON file, or the script holding the dict)
    root: Object
    origin: Origin = Origin.FILE
    world_size: int | None = None
    from_file: bool = True  # read from a file (DeepSpeed then refuses duplicate keys), not a dict literal
    schema: Schema = field(default_factory=load_schema)  # the schema of `deepspeed_version` (config_schema)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Reads the text the positions point into, when fixes may edit it: the config file's own text, or the script
    # that holds the dict literal. None (a file reached through a script): findings there carry no fix, since the
    # fixer of the script must not edit another file (`dslint fix` fixes that file on its own).
    load_source: Callable[[], str] | None = field(default=None, repr=False)

    @functools.cached_property
    def source(self) -> str | None:
        """The text fixes edit (read once, when the first fix is built), or None: no fixes."""
        return self.load_source() if self.load_source is not None else None

    deepspeed_version: Version = field(default_factory=newest_known)  # the DeepSpeed the project runs
    # Top-level keys the script(s) reading this file replace in code before deepspeed.initialize sees the dict
    # (their value in the file does not reach DeepSpeed).
    replaced_keys: frozenset[str] = frozenset()
    # The world sizes of the launches that pass this file (from the project index), each with where it was read;
    # `world_size` (the command line's) takes precedence.
    launch_world_sizes: tuple[LaunchWorldSize, ...] = ()
    # A config file: a launch whose world size its batch values fail is reported at the launch
    # (`project/launch_batches.py`), not in the file.
    batch_at_launches: bool = False
    # Where the script a launcher starts hands this file to initialize when that is in another module it imports
    # (`ConfigReading.read_in`): a finding about what initialize does with it names that place.
    read_in: tuple[Related, ...] = ()
    # Some code of the project may apply the `activation_checkpointing` section (`ConfigReading`); True when the
    # project is not known (a config linted alone).
    checkpointing_configured: bool = True
    # The sections (`optimizer`, `scheduler`) every initialize reading this config replaces with a client object
    # (`optimizer=`, `lr_scheduler=`): never built (`ConfigReading.client_sections`).
    client_sections: frozenset[str] = frozenset()


class ConfigRule(Rule):
    """A rule over one DeepSpeed config. Subclasses implement `check()` and report with `report_*`.

    On a file that mixes another tool's settings into its DeepSpeed config (`mixed_file`), only rules with
    `runs_on_mixed_files` run: such a file gets one finding, or none, never one per foreign key.
    """

    needs_engine: ClassVar[bool] = False
    case_path: ClassVar[str] = "ds_config.json"
    runs_on_mixed_files: ClassVar[bool] = False
    # Under a pin that admits newer releases (`lint.config.run_at_both_ends`): the codes whose finding at the same
    # place at the newest admitted release says this one better (a key the lowest ignores and the newest refuses).
    superseded_at_newest: ClassVar[tuple[str, ...]] = ()
    # Under such a pin: a finding of the lowest release stands only where the newest admitted one reports it too (a
    # key "only a newer release reads" is read by the release a fresh install of the pin gets).
    newest_must_agree: ClassVar[bool] = False

    def __init__(self, context: ConfigContext) -> None:
        self.context = context
        self.root = context.root
        self.schema = context.schema

    def check(self) -> None:
        raise NotImplementedError

    def report_at(
        self,
        start: Location,
        end: Location,
        message: str | None = None,
        severity: Severity | None = None,
        fix: Fix | None = None,
        related: tuple[Related, ...] = (),
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
                fix=fix,
                related=related,
            )
        )

    def report_key(
        self,
        entry: Entry,
        message: str | None = None,
        severity: Severity | None = None,
        fix: Fix | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        self.report_at(entry.key_start, entry.key_end, message, severity, fix, related)

    def report_node(self, node: Node, message: str | None = None, severity: Severity | None = None) -> None:
        self.report_at(node.start, node.end, message, severity)

    def section(self, key: str) -> Object | None:
        node = self.root.get(key)
        return node if isinstance(node, Object) else None

    def entries(self, node: Object | None) -> Iterator[Entry]:
        return node.last_entries() if node is not None else iter(())

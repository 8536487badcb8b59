"""DSL414: a key written twice in one object of a config."""

from __future__ import annotations

from collections.abc import Iterator

from dslint.config.facts import Origin
from dslint.config.tree import Array, Entry, Node, Object
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule import Invalid, RuleDocs, Valid


def duplicates(node: Node) -> Iterator[Entry]:
    """Every entry whose key already appeared earlier in the same object."""
    if isinstance(node, Object):
        seen: set[str] = set()
        for entry in node.entries:
            if entry.key in seen:
                yield entry
            seen.add(entry.key)
            yield from duplicates(entry.value)
    elif isinstance(node, Array):
        for item in node.items:
            yield from duplicates(item)


class DuplicateConfigKey(ConfigRule):
    code = "DSL414"
    slug = "duplicate-config-key"
    message = "this key is written twice; DeepSpeed refuses a config file with duplicate keys: keep one"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="Flags the second (and later) occurrence of a key within one object of a config.",
        why="""
            DeepSpeed reads a config file with `dict_raise_error_on_duplicate_keys` and stops at start-up. In a
            config given as a dict (a dict literal in a script, or a file the Hugging Face Trainer loads) the
            last value silently wins, and the first one, which is the one a reader sees first, does nothing.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 2},
              "zero_optimization": {"stage": 3}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3}
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "fp16": {"enabled": true}, "bf16": {"enabled": false}}\n', path="ds_config.json"
        ),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "stage": 3}\n}\n',
            lines=(3,),
            path="ds_config.json",
        ),
    )

    def check(self) -> None:
        refused = self.context.from_file and self.context.origin is not Origin.TRAINER
        for entry in duplicates(self.root):
            if refused:
                self.report_key(
                    entry,
                    f"`{entry.key}` is written twice; DeepSpeed refuses a config file with duplicate keys: keep one",
                )
            else:
                self.report_key(
                    entry,
                    f"`{entry.key}` is written twice; the last one silently wins: keep one",
                    Severity.WARNING,
                )

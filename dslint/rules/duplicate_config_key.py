"""DSL414: a key written twice in one object of a config."""

from __future__ import annotations

from collections.abc import Iterator

from dslint.config.facts import Origin, is_comment_key
from dslint.config.tree import UNKNOWN, Array, Entry, Node, Object, Scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


def duplicates(node: Node) -> Iterator[tuple[Entry, Entry]]:
    """Every entry whose key already appeared earlier in the same object, with the entry just before it."""
    if isinstance(node, Object):
        seen: dict[str, Entry] = {}
        for entry in node.entries:
            if entry.key in seen:
                yield entry, seen[entry.key]
            seen[entry.key] = entry
            yield from duplicates(entry.value)
    elif isinstance(node, Array):
        for item in node.items:
            yield from duplicates(item)


def same_value(first: Node, second: Node) -> bool:
    """Whether two values are surely the same (same types too: `1` is not `true`); unknown parts are not."""
    if isinstance(first, Scalar) and isinstance(second, Scalar):
        return first.value is not UNKNOWN and type(first.value) is type(second.value) and first.value == second.value
    if isinstance(first, Array) and isinstance(second, Array):
        return len(first.items) == len(second.items) and all(
            same_value(a, b) for a, b in zip(first.items, second.items, strict=True)
        )
    if isinstance(first, Object) and isinstance(second, Object):
        if first.opaque or second.opaque:
            return False
        mine, theirs = (
            dict((e.key, e.value) for e in first.last_entries()),
            dict((e.key, e.value) for e in second.last_entries()),
        )
        return mine.keys() == theirs.keys() and all(same_value(mine[k], theirs[k]) for k in mine)
    return False


class DuplicateConfigKey(ConfigRule):
    code = "DSL414"
    slug = "duplicate-config-key"
    message = "this key is written twice; DeepSpeed refuses a config file with duplicate keys: keep one"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags the second (and later) occurrence of a key within one object of a config. In a config that
            reaches DeepSpeed as a dict (a dict literal, YAML read with `yaml.safe_load` or OmegaConf, a file
            the Hugging Face Trainer or Lightning's strategy loads), a repeat that writes the same value as the
            one before it is not flagged: the last one wins and nothing changes.
        """,
        why="""
            DeepSpeed reads a config file with `dict_raise_error_on_duplicate_keys` and stops at start-up. In a
            config given as a dict (a dict literal in a script, YAML, or a file the Hugging Face Trainer,
            accelerate or PyTorch Lightning's `DeepSpeedStrategy` opens with `json.load` and hands on) the last
            value silently wins, and the first one, which is the one a reader sees first, does nothing.
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
        Valid('{"train_batch_size": 8, "fp16": {"enabled": true}, "bf16": {"enabled": false}}\n'),
        # YAML reaches DeepSpeed as the dict PyYAML builds: a repeat of the same value changes nothing
        Valid(
            "deepspeed:\n  train_batch_size: 8\n  zero_optimization:\n    stage: 3\n"
            "    overlap_comm: true\n    overlap_comm: true\n",
            path="ds_config.yaml",
        ),
        # comment keys in YAML (a dict to DeepSpeed): nothing reads them, so which one wins changes nothing
        Valid(
            "deepspeed:\n  _comment: batch\n  train_batch_size: 8\n  _comment: precision\n  bf16:\n    enabled: true\n",
            path="ds_config.yaml",
        ),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "stage": 3}\n}\n',
            lines=(3,),
        ),
        # comment keys repeated in a file DeepSpeed opens itself: its reader refuses any repeat
        Invalid(
            '{\n  "//": "batch",\n  "train_batch_size": 8,\n  "//": "precision",\n  "bf16": {"enabled": true}\n}\n',
            path="ds_config.json",
            lines=(4,),
        ),
        # a repeat with another value: PyYAML keeps the last one, without a word
        Invalid(
            "deepspeed:\n  train_batch_size: 8\n  zero_optimization:\n    stage: 3\n"
            "    overlap_comm: true\n    overlap_comm: false\n",
            path="ds_config.yaml",
            lines=(6,),
        ),
    )

    def check(self) -> None:
        # the HF Trainer, accelerate and Lightning's strategy read the file with `json.load` (the last one wins)
        refused = self.context.from_file and self.context.origin not in (Origin.TRAINER, Origin.LIGHTNING)
        for entry, earlier in duplicates(self.root):
            if refused:
                self.report_key(
                    entry,
                    f"`{entry.key}` is written twice; DeepSpeed refuses a config file with duplicate keys: keep one",
                )
            elif not same_value(earlier.value, entry.value) and not is_comment_key(entry.key):
                self.report_key(
                    entry,
                    f"`{entry.key}` is written twice; the last one silently wins: keep one",
                    Severity.WARNING,
                )

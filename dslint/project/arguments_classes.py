"""The project's own Trainer argument classes: a class deriving, to any depth within the project, from transformers'
`*TrainingArguments` or one of TRL's trainer configs (`@dataclass class SimPOConfig(TrainingArguments)`), found by name
in every source's `class` statements. Building one builds the Trainer's arguments: its `deepspeed=` is the config
the Trainer runs with, as `is_training_arguments_name` says of the library's own classes."""

from __future__ import annotations

import re
from collections.abc import Mapping

from dslint.model.library import is_training_arguments_name

_CLASS = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)
_BASE = re.compile(rb"[\w.]+")


def arguments_classes(sources: Mapping[str, bytes]) -> frozenset[str]:
    """The last names of the project's classes deriving from a Trainer argument class (not those whose own name
    already says so: `*TrainingArguments`)."""
    bases: dict[str, set[str]] = {}
    for data in sources.values():
        if b"class" not in data or (b"Arguments" not in data and b"Config" not in data):
            continue
        for name, written in _CLASS.findall(data):
            names = {word.decode().rsplit(".", 1)[-1] for word in _BASE.findall(written)}
            bases.setdefault(name.decode(), set()).update(names)
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name in found or is_training_arguments_name(name):
                continue
            if any(is_training_arguments_name(parent) or parent in found for parent in parents):
                found.add(name)
                changed = True
    return frozenset(found)

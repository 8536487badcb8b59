"""The project's own Trainer argument classes: a class deriving, to any depth within the project, from transformers'
`*TrainingArguments` or one of TRL's trainer configs (`@dataclass class SimPOConfig(TrainingArguments)`), found by name
in every source's `class` statements. Building one builds the Trainer's arguments: its `deepspeed=` is the config
the Trainer runs with, as `is_training_arguments_name` says of the library's own classes."""

from __future__ import annotations

import re
from collections.abc import Mapping

from dslint.model.library import is_training_arguments_name

# `class Name(bases)`: the literal leads (`re` skips to each `class`); the line start is checked by hand (`_classes`)
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*)\)")
# the same, only where a base's text names `...Arguments` or `...Config` (every library argument class does)
_LIBRARY_BASED = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*?(?:Arguments|Config)[^)]*)\)")
_BASE = re.compile(rb"[\w.]+")


def arguments_classes(sources: Mapping[str, bytes]) -> frozenset[str]:
    """The last names of the project's classes deriving from a Trainer argument class (not those whose own name
    already says so: `*TrainingArguments`). Read level by level: the classes whose bases name a library argument
    class, then those whose bases name a class found, so that a large tree's classes are read only where they
    may matter."""
    found: set[str] = set()
    frontier: set[str] = set()
    first = True
    while first or frontier:
        names = frontier
        frontier = set()
        for data in sources.values():
            if b"class" not in data or (not first and not any(name.encode() in data for name in names)):
                continue
            for name, written in _classes(data, _LIBRARY_BASED if first else _CLASS):
                own = name.decode()
                if own in found or is_training_arguments_name(own):
                    continue
                parents = {word.decode().rsplit(".", 1)[-1] for word in _BASE.findall(written)}
                if any(is_training_arguments_name(parent) or parent in found for parent in parents):
                    found.add(own)
                    frontier.add(own)
        first = False
    return frozenset(found)


def _classes(data: bytes, pattern: re.Pattern[bytes]) -> list[tuple[bytes, bytes]]:
    """(name, bases as written) of each `class` statement the pattern matches: `class` first on its line but for
    indentation."""
    found: list[tuple[bytes, bytes]] = []
    for match in pattern.finditer(data):
        start = match.start()
        line = data.rfind(b"\n", 0, start) + 1
        if not data[line:start].strip(b" \t"):
            found.append((match.group(1), match.group(2)))
    return found

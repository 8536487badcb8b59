"""The project's own Trainer argument classes: a class deriving, to any depth within the project, from transformers'
`*TrainingArguments` or one of TRL's trainer configs (`@dataclass class SimPOConfig(TrainingArguments)`), found by name
in every source's `class` statements. Building one builds the Trainer's arguments: its `deepspeed=` is the config
the Trainer runs with, as `is_training_arguments_name` says of the library's own classes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from dslint.model.library import is_training_arguments_name
from dslint.model.summary import SummaryStore

# `class Name(bases)`: the literal leads (`re` skips to each `class`); the line start is checked by hand (`_classes`)
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*)\)")
# the same, only where a base's text names `...Arguments` or `...Config` (every library argument class does)
_LIBRARY_BASED = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*?(?:Arguments|Config)[^)]*)\)")
_BASE = re.compile(rb"[\w.]+")


def arguments_classes(sources: Mapping[str, bytes]) -> frozenset[str]:
    """The last names of the project's classes deriving from a Trainer argument class, those named as the library's
    own too (`class TrainingArguments(transformers.TrainingArguments)`: a call of it is no call of transformers'
    class, which `hf_class_name` knows by its import). First the classes whose bases name a library argument class (one
    regex over the sources, in C); only when some are found, every class statement, read once, for the classes
    deriving from those, level by level."""
    found: set[str] = set()
    for data in sources.values():
        if b"class" in data:
            _take(_classes(data, _LIBRARY_BASED), found)
    if not found:
        return frozenset()
    every = [entry for data in sources.values() if b"class" in data for entry in _classes(data, _CLASS)]
    while _take(every, found):
        pass
    return frozenset(found)


def _take(classes: list[tuple[bytes, bytes]], found: set[str]) -> bool:
    """Add to `found` the classes deriving from a library argument class or from one found; whether any was."""
    before = len(found)
    for name, written in classes:
        own = name.decode()
        if own in found:
            continue
        parents = {word.decode().rsplit(".", 1)[-1] for word in _BASE.findall(written)}
        if any(is_training_arguments_name(parent) or parent in found for parent in parents):
            found.add(own)
    return len(found) > before


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


def named_by(names: Iterable[str], sources: Mapping[str, bytes], store: SummaryStore) -> dict[str, set[str]]:
    """For each file, which of `names` (classes of the project) it calls: the sources' index of calls, else their
    text."""
    found: dict[str, set[str]] = {}
    for name in names:
        callers = store.words.calling(name)
        for path in callers if callers is not None else [p for p, d in sources.items() if name.encode() in d]:
            found.setdefault(path, set()).add(name)
    return found

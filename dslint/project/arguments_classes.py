"""The project's own Trainer argument classes: a class deriving, to any depth within the project, from transformers'
`*TrainingArguments` or one of TRL's trainer configs (`@dataclass class SimPOConfig(TrainingArguments)`), found by name
in every source's `class` statements. Building one builds the Trainer's arguments: its `deepspeed=` is the config
the Trainer runs with, as `is_training_arguments_name` says of the library's own classes."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping

from dslint.model.library import TRANSFORMERS_MODEL_CLASS, is_training_arguments_name
from dslint.model.summary import SummaryStore

# `class Name(bases)`: the literal leads (`re` skips to each `class`); the line start is checked by hand (`_classes`)
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*)\)")
# the same, only where a base's text names `...Arguments` or `...Config` (every library argument class does)
_LIBRARY_BASED = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*?(?:Arguments|Config)[^)]*)\)")
_BASE = re.compile(rb"[\w.]+")
# the same, where a base's text may name a transformers model class (`PreTrainedModel`, `LlamaForCausalLM`)
_MODEL_BASED = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*?(?:Model|For[A-Z])[^)]*)\)")
# what a file imports from transformers (`from transformers import PreTrainedModel, LlamaForCausalLM`)
_TRANSFORMERS_IMPORT = re.compile(rb"^[ \t]*from[ \t]+transformers[\w.]*[ \t]+import[ \t]+\(?([^)\n]*)", re.M)


def arguments_classes(sources: Mapping[str, bytes]) -> frozenset[str]:
    """The last names of the project's classes deriving from a Trainer argument class (not those whose own name
    already says so: `*TrainingArguments`). First the classes whose bases name a library argument class (one
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


def model_classes(sources: Mapping[str, bytes]) -> frozenset[str]:
    """The last names of the project's model classes: deriving from a transformers model class the defining file
    imports from transformers (`class CcubedPreTrainedModel(PreTrainedModel)`), then, to any depth, from those
    (`class CcubedForConditionalGeneration(CcubedPreTrainedModel)`): their `from_pretrained` is transformers'.
    Not one defining `from_pretrained` or `from_config` itself."""
    found: set[str] = set()
    for data in sources.values():
        if b"class" in data and b"transformers" in data:
            imported = {w.decode() for line in _TRANSFORMERS_IMPORT.findall(data) for w in _BASE.findall(line)}
            for name, written in _classes(data, _MODEL_BASED):
                parents = {word.decode().rsplit(".", 1)[-1] for word in _BASE.findall(written)}
                bases = [word.decode() for word in _BASE.findall(written)]
                if any(_is_model(p) and (p in imported or f"transformers.{p}" in bases) for p in parents):
                    found.add(name.decode())
    if not found:
        return frozenset()
    every = [entry for data in sources.values() if b"class" in data for entry in _classes(data, _CLASS)]
    while _take(every, found, _is_model):
        pass
    return frozenset(found - _own_builders(sources))


def _own_builders(sources: Mapping[str, bytes]) -> set[str]:
    """Classes that define `from_pretrained` or `from_config` themselves (`return cls(config)`: no `zero.Init`)."""
    found: set[str] = set()
    for data in sources.values():
        if b"def from_pretrained" not in data and b"def from_config" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in ("from_pretrained", "from_config")
                for f in node.body
            ):
                found.add(node.name)
    return found


def _is_model(name: str) -> bool:
    return TRANSFORMERS_MODEL_CLASS.match(name) is not None


def _take(
    classes: list[tuple[bytes, bytes]], found: set[str], library: Callable[[str], bool] = is_training_arguments_name
) -> bool:
    """Add to `found` the classes deriving from a library class (`library` says by name) or from one found;
    whether any was."""
    before = len(found)
    for name, written in classes:
        own = name.decode()
        if own in found or (library is is_training_arguments_name and library(own)):
            continue
        parents = {word.decode().rsplit(".", 1)[-1] for word in _BASE.findall(written)}
        if any((library is is_training_arguments_name and library(parent)) or parent in found for parent in parents):
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


def named_by(
    names: Iterable[str], sources: Mapping[str, bytes], store: SummaryStore, called: bool = True
) -> dict[str, set[str]]:
    """For each file, which of `names` (classes of the project) it calls (`called`: the sources' index of calls,
    else their text), or names at all (`ModelClass.from_pretrained(...)` calls a method of it)."""
    found: dict[str, set[str]] = {}
    for name in names:
        callers = store.words.calling(name) if called else None
        for path in callers if callers is not None else [p for p, d in sources.items() if name.encode() in d]:
            found.setdefault(path, set()).add(name)
    return found

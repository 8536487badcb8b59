"""The project's own transformers model classes, where a DeepSpeed-minded file loads one:

    # modeling/tiny.py
    from transformers import PreTrainedModel
    class TinyPreTrainedModel(PreTrainedModel): ...
    class TinyForCausalLM(TinyPreTrainedModel): ...

    # train.py
    model = TinyForCausalLM.from_pretrained(path)      # transformers' from_pretrained: zero.Init under ZeRO-3

Asked on demand: the names a file that may hand transformers a DeepSpeed config loads (`Name.from_pretrained(`,
`Name.from_config(`), each followed to its `class Name(...)` statements in the project (one pass over the
sources) and up its bases (a few levels), until a base the defining file imports from transformers (`from
transformers import ...`, `transformers.X`) and named like a model class (`library.TRANSFORMERS_MODEL_CLASS`). A
class that defines `from_pretrained` or `from_config` itself (`return cls(config)`: no `zero.Init`) is not one, nor
is any class derived from it. Read from the text: the class statements and import lines, no parse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from dslint.model.library import TRANSFORMERS_MODEL_CLASS

# where DSL208 asks: a file handing DeepSpeed a config transformers reads, or a Trainer's arguments
_GIVEN = re.compile(rb"deepspeed\s*=")  # the literal leads
_LOAD = re.compile(rb"\.(?:from_pretrained|from_config)\s*\(")  # the literal leads: `re` skips to each `.`
_WORD_BEFORE = re.compile(rb"(\w+)\s*$")
_BASE = re.compile(rb"[\w.]+")
_IMPORTED = re.compile(rb"^[ \t]*from[ \t]+transformers[\w.]*[ \t]+import[ \t]+\(?([^)\n]*)", re.M)
_CLASS_STATEMENT = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:")  # the literal leads
_OWN_BUILDER = re.compile(rb"^[ \t]+def[ \t]+(?:from_pretrained|from_config)[ \t]*\(", re.M)
MAX_LEVELS = 6


def loaded_model_classes(sources: Mapping[str, bytes]) -> dict[str, set[str]]:
    """For each file that may hand transformers a DeepSpeed config (`TrainingArguments`, TRL's `*Config(output_dir=`,
    `deepspeed=`, `HfDeepSpeedConfig(`, `deepspeed.initialize`) and loads a class of the project deriving from a
    transformers model class: the names of those classes."""
    wanted: dict[str, set[str]] = {}
    for path, data in sources.items():
        if (b"from_pretrained" not in data and b"from_config" not in data) or not _configures(data):
            continue
        names = set()
        for match in _LOAD.finditer(data):
            word = _WORD_BEFORE.search(data, max(0, match.start() - 80), match.start())
            if word is not None and word.group(1)[:1].isupper():  # a class, not `cls` or a module
                names.add(word.group(1).decode())
        # the library's own classes, imported from transformers here, need no search
        names -= {w.decode() for line in _IMPORTED.findall(data) for w in _BASE.findall(line)}
        if names:
            wanted[path] = names
    if not wanted:
        return {}
    memo: dict[str, bool] = {}
    found: dict[str, set[str]] = {}
    defined = _class_statements(sources)
    for path, names in wanted.items():
        own = {name for name in names if _model_class(name, defined, memo, 0)}
        if own:
            found[path] = own
    return found


def _configures(data: bytes) -> bool:
    return (
        b"TrainingArguments" in data
        or b"HfDeepSpeedConfig" in data
        or b"deepspeed.initialize" in data
        or b"output_dir" in data
        or (b"deepspeed" in data and _GIVEN.search(data) is not None)
    )


def _class_statements(sources: Mapping[str, bytes]) -> dict[str, list[tuple[bytes, re.Match[bytes]]]]:
    """Every `class Name(bases):` statement of the project, by name, with its file's text (one pass)."""
    found: dict[str, list[tuple[bytes, re.Match[bytes]]]] = {}
    for data in sources.values():
        if b"class " not in data:
            continue
        for match in _CLASS_STATEMENT.finditer(data):
            line = data.rfind(b"\n", 0, match.start()) + 1
            if not data[line : match.start()].strip(b" \t"):
                found.setdefault(match.group(1).decode(), []).append((data, match))
    return found


def _model_class(
    name: str, defined: dict[str, list[tuple[bytes, re.Match[bytes]]]], memo: dict[str, bool], level: int
) -> bool:
    if name in memo:
        return memo[name]
    memo[name] = False  # a cycle of bases ends here
    if level > MAX_LEVELS:
        return False
    answer = False
    for data, match in defined.get(name, ()):
        if _defines_builder(data, match.end()):
            memo[name] = False
            return False  # its own from_pretrained / from_config: not transformers'
        imported = {w.decode() for line in _IMPORTED.findall(data) for w in _BASE.findall(line)}
        for written in _BASE.findall(match.group(2)):
            base = written.decode()
            last = base.rsplit(".", 1)[-1]
            library = base == f"transformers.{last}" or (base == last and last in imported)
            if (library and TRANSFORMERS_MODEL_CLASS.match(last)) or (
                not library and base == last and _model_class(last, defined, memo, level + 1)
            ):
                answer = True
    memo[name] = answer
    return answer


def _defines_builder(data: bytes, start: int) -> bool:
    """The class body starting at `start` defines `from_pretrained` or `from_config` (up to the next statement at
    the class's own indentation or less: the next top-level line)."""
    end = re.compile(rb"^\S", re.M).search(data, start + 1)
    body = data[start : end.start() if end is not None else len(data)]
    return _OWN_BUILDER.search(body) is not None

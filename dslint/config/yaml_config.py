"""DeepSpeed configs kept in YAML files: a file that is the config itself (`ds_config.yaml`, `zero2.yml`; JSON
text in a `.yaml` file included, which `json.load` and `yaml.safe_load` both read), or a project's YAML whose
top-level `deepspeed:` mapping is handed to `deepspeed.initialize` (SAT-style experiment files, read with
OmegaConf or `yaml.safe_load` and passed on as a dict).

What is read: JSON/HJSON text (`config.tree`), else the YAML subset of `config.yaml_subset` (block mappings and
sequences, plain and quoted scalars, comments; a flow collection with content, an anchor, an alias, a tag or a
block scalar is kept as a value of unknown content). A line beyond that subset is a ParseError with its line and
column. A scalar written like `1e-8` or `5e8` is UNKNOWN here: `yaml.safe_load` reads it as a string but
OmegaConf's loader as a number, so its type depends on a reader the file does not name. So is a scalar holding an
OmegaConf interpolation (`${learning_rate}`, `${oc.env:LR}`, Hydra's configs under `conf/deepspeed/`): OmegaConf
puts the value it names there before the dict reaches DeepSpeed.

A YAML file is taken for a DeepSpeed config only by its shape, never for one DeepSpeed-like key: the mapping
(the whole file, or its `deepspeed:` section) must hold a key only DeepSpeed reads at the top level
(`recognition.STRONG_KEYS`) and mostly DeepSpeed's top-level keys; a YAML-syntax file must also be named like
a DeepSpeed config; a file code or a launcher names (`known`) is one whatever its shape. An application config
that happens to have a `train_batch_size` key is none of these, nor another tool's argument file that carries
DeepSpeed's keys among its own (GPT-NeoX's JSON-style `.yml` files: its parser picks DeepSpeed's keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dslint.config.recognition import NAME_PATTERN, STRONG_KEYS
from dslint.config.schema import Schema, load_schema
from dslint.config.tree import UNKNOWN, Array, Node, Object, ParseError, Scalar, parse_text
from dslint.config.yaml_subset import parse_yaml_subset

YAML_CONFIG_SUFFIXES = (".yaml", ".yml")
SECTION = "deepspeed"  # the top-level key of a project's YAML that holds the DeepSpeed config
_LEADING = re.compile(r"\A(?:\ufeff|\s+|#[^\n]*)*")
_EXPONENT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+")
_INTERPOLATION = re.compile(r"\$\{[^}]*\}")
_STRONG_LINE = re.compile(
    rb"""(?:^|[{,])[ \t]*["']?(?:""" + b"|".join(k.encode() for k in STRONG_KEYS) + rb""")["']?[ \t]*:""", re.MULTILINE
)


@dataclass(frozen=True)
class YamlConfig:
    """The DeepSpeed config a YAML file holds: `tree` (the whole file, or its `deepspeed:` section)."""

    tree: Object
    section: str | None  # SECTION when the config is that section of a larger file
    json_text: bool  # the file is JSON text (a fix in JSON syntax fits it)


def is_config_yaml_name(path: Path) -> bool:
    return path.suffix.lower() in YAML_CONFIG_SUFFIXES and bool(NAME_PATTERN.search(path.stem))


def is_yaml_config_candidate(data: bytes) -> bool:
    """A text test on a YAML file met by the walk: a key only DeepSpeed reads is written as a mapping key (the
    file is decided once parsed, `read_yaml_config`, with what the project index knows of who reads it)."""
    return _STRONG_LINE.search(data) is not None


def is_json_text(text: str) -> bool:
    return text[_LEADING.match(text).end() :].startswith("{")  # type: ignore[union-attr]  # always matches


def read_yaml_config(path: Path, text: str, known: bool = False, schema: Schema | None = None) -> YamlConfig | None:
    """The DeepSpeed config in the YAML file `path` (its `text`), or None when the file is not one (see the
    module's docs); `known`: code or a launcher names the file as a DeepSpeed config. ParseError (message, line,
    column) for text beyond what is read."""
    schema = schema or load_schema()
    named = known or is_config_yaml_name(path)
    if is_json_text(text):
        root = parse_text(text)
        if isinstance(root, Object) and (known or has_config_shape(root, schema)):
            return YamlConfig(root, None, True)
        return None  # another tool's argument file in JSON style (GPT-NeoX's), DeepSpeed keys among its own
    root = parse_yaml_subset(text)
    _unread_scalars(root)
    section = root.get(SECTION)
    if isinstance(section, Object) and has_config_shape(section, schema):
        return YamlConfig(section, SECTION, False)
    if known or (named and has_config_shape(root, schema)):
        return YamlConfig(root, None, False)
    return None


def has_config_shape(node: Object, schema: Schema) -> bool:
    """A key only DeepSpeed reads, and at least half of the keys DeepSpeed's top-level keys."""
    keys = node.keys()
    if not any(key in STRONG_KEYS for key in keys):
        return False
    return sum(1 for key in keys if key in schema.top_level_keys) * 2 >= len(keys)


def _unread_scalars(node: Node) -> None:
    """`1e-8`, `5e8`: a string to `yaml.safe_load`, a number to OmegaConf; `${name}`: the value OmegaConf
    resolves it to; unknown here."""
    if isinstance(node, Object):
        for entry in node.entries:
            _unread_scalars(entry.value)
    elif isinstance(node, Array):
        for item in node.items:
            _unread_scalars(item)
    elif (
        isinstance(node, Scalar)
        and isinstance(node.value, str)
        and (_EXPONENT.fullmatch(node.value) or _INTERPOLATION.search(node.value))
    ):
        node.value = UNKNOWN


__all__ = ["ParseError", "YamlConfig", "is_yaml_config_candidate", "read_yaml_config"]

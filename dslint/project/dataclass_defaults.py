"""The literal string defaults of the project's dataclass fields, as a script names the classes.

    @dataclass
    class TrainerConfig:                       # config/training_config.py
        ds_config_path: str = "config/ds_config.json"

    train_cfg = TrainerConfig()                # train.py
    ds_config_path = os.path.join(here, train_cfg.ds_config_path)

`train_cfg.ds_config_path` is "config/ds_config.json" when the object is built with no argument for the field and
the script never assigns the attribute; a default written `field(default="config/ds_config.json")` counts the same.
A class handed to `HfArgumentParser` is built from the command line by `parse_args_into_dataclasses()`: its field
holds the default where no launch of the script gives the field's option (`script.path_values` asks,
`ProjectFacts.class_defaults`). Classes of the script itself count too; a class is found as the project model's
`Hierarchy.resolve_class` finds a base (imports, re-exports, star imports), and must be decorated `@dataclass`
(`dataclasses.dataclass`, with or without arguments).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, MutableMapping
from dataclasses import replace

from dslint.model.classes import Hierarchy
from dslint.model.library import is_arguments_parser
from dslint.model.summary import ModuleSummary, SummaryStore, dotted, nodes_of
from dslint.script.project_facts import ProjectFacts


def record_class_defaults(files: MutableMapping[str, ProjectFacts], paths: Iterable[str], store: SummaryStore) -> None:
    """`ProjectFacts.class_defaults` of each module of `paths` that builds a dataclass of the project."""
    hierarchy = Hierarchy(store)
    for path in paths:
        data = store.sources.get(path, b"")
        if b"(" not in data or (b"_path" not in data and b"config" not in data.lower()):
            continue
        summary = store.get(path)
        if summary is None:
            continue
        found: dict[str, dict[str, str]] = {}
        for name in _called_names(summary.tree):
            defaults = _defaults_of(hierarchy, summary, name)
            if defaults:
                found[name] = defaults
        if found:
            files[path] = replace(files.get(path, ProjectFacts()), class_defaults=found)


def _called_names(tree: ast.Module) -> set[str]:
    """The plain names the module calls with no positional argument (`TrainerConfig()`, `Cfg(lr=1e-4)`), and the
    classes it hands `HfArgumentParser` (`_parsed_names`)."""
    found = _parsed_names(tree)
    for node in nodes_of(tree, ast.Call):
        if isinstance(node.func, ast.Name) and not node.args and node.func.id[:1].isupper():
            found.add(node.func.id)
    return found


def _defaults_of(hierarchy: Hierarchy, summary: ModuleSummary, name: str) -> dict[str, str]:
    """The literal string defaults of the dataclass `name` names in the module (its own, or imported)."""
    node = _dataclass(hierarchy, summary, name)
    defaults: dict[str, str] = {}
    for statement in node.body if node is not None else ():
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            default = _literal_default(statement.value)
            if default is not None:
                defaults[statement.target.id] = default
    return defaults


def _dataclass(hierarchy: Hierarchy, summary: ModuleSummary, name: str) -> ast.ClassDef | None:
    """The `@dataclass` class `name` names in the module (its own, or imported)."""
    found = hierarchy.resolve_class(summary, name)
    holder = hierarchy.store.get(found[0]) if found is not None else None
    if holder is None or found is None:
        return None
    node = next((n for n in holder.tree.body if isinstance(n, ast.ClassDef) and n.name == found[1]), None)
    return node if node is not None and any(_is_dataclass(d) for d in node.decorator_list) else None


def _literal_default(value: ast.expr | None) -> str | None:
    """A field's literal string default: `= "ds.json"`, or `= field(default="ds.json", ...)`."""
    if isinstance(value, ast.Call) and (
        (isinstance(value.func, ast.Name) and value.func.id == "field")
        or (isinstance(value.func, ast.Attribute) and value.func.attr == "field")
    ):
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None


def _is_dataclass(decorator: ast.expr) -> bool:
    called = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(called, ast.Name) and called.id == "dataclass") or (
        isinstance(called, ast.Attribute) and called.attr == "dataclass"
    )


def parsed_switches(tree: ast.Module, summary: ModuleSummary, hierarchy: Hierarchy) -> dict[str, bool]:
    """The boolean fields (`use_peft: bool = True`, `field(default=False)`) of the dataclasses the module hands
    a parser of the Trainer's arguments (`HfArgumentParser`), with their defaults; a field two classes declare is
    left out."""
    found: dict[str, bool] = {}
    twice: set[str] = set()
    for name in _parsed_names(tree):
        for field_name, default in _bool_defaults(hierarchy, summary, name).items():
            if field_name in found:
                twice.add(field_name)
            found[field_name] = default
    return {name: default for name, default in found.items() if name not in twice}


def _parsed_names(tree: ast.Module) -> set[str]:
    """The classes the module hands a parser of the Trainer's arguments (`HfArgumentParser((ModelArgs, TrainArgs))`,
    whose `parse_args_into_dataclasses()` builds them from the command line, defaults where no option is given)."""
    found: set[str] = set()
    for node in nodes_of(tree, ast.Call):
        handed = parser_classes(node)
        found.update(name for name in handed or () if "." not in name)
    return found


def parser_classes(call: ast.Call) -> list[str] | None:
    """The dotted names of the classes `call` hands a parser of the Trainer's arguments (`library.
    is_arguments_parser`); None where `call` is no such parser."""
    name = dotted(call.func)
    if name is None or not name.endswith("Parser"):
        return None
    first = call.args[0] if call.args else None
    elements = first.elts if isinstance(first, (ast.Tuple, ast.List)) else [first] if first is not None else []
    handed = [found for element in elements if (found := dotted(element)) is not None]
    return handed if is_arguments_parser(name, handed) else None


def _bool_defaults(hierarchy: Hierarchy, summary: ModuleSummary, name: str) -> dict[str, bool]:
    node = _dataclass(hierarchy, summary, name)
    defaults: dict[str, bool] = {}
    for statement in node.body if node is not None else ():
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        if not (isinstance(statement.annotation, ast.Name) and statement.annotation.id == "bool"):
            continue
        value = statement.value
        if isinstance(value, ast.Call):
            value = next((k.value for k in value.keywords if k.arg == "default"), None)
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            defaults[statement.target.id] = value.value
    return defaults

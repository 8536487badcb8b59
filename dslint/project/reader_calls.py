"""Calls that hand a DeepSpeed config to its reader, and the helpers behind the names they are given, read with
`ast`: what `config_readers` (config files a framework reads through a loader helper) and `config_builders`
(helpers whose returned dict reaches a reader) share.

Readers: `deepspeed.initialize(config=...)`, PyTorch Lightning's `DeepSpeedStrategy(config=...)` (which fills
`train_micro_batch_size_per_gpu` from the data loader when the config lacks it, then calls
`deepspeed.initialize`), and the Hugging Face `*TrainingArguments(deepspeed=...)` and
`DeepSpeedPlugin(hf_ds_config=...)` (which fill "auto" first). A helper is found by its name: a module-level
function defined in the calling module, or imported (`from m import name`, through `from m import *` re-exports).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from dslint.model.library import READERS_BY_LAST_NAME, TRAINING_ARGUMENTS, is_training_arguments_name
from dslint.model.summary import SummaryStore, walk
from dslint.project.inputs import exists

_MAX_DEPTH = 4
_Found = TypeVar("_Found")


@dataclass(frozen=True)
class ReaderCall:
    name: str  # "DeepSpeedStrategy", "TrainingArguments", "initialize", ...
    keyword: str  # the keyword that takes the config
    reader: str  # "initialize", "lightning" or "trainer"
    keywords: tuple[str, ...] = ()  # every keyword that takes it (initialize: `config`, `config_params`)

    def config_argument(self, call: ast.Call) -> ast.expr | None:
        """The expression `call` gives the config, by any of its keywords (the first one given wins)."""
        for keyword in self.keywords or (self.keyword,):
            value = next((k.value for k in call.keywords if k.arg == keyword), None)
            if value is not None:
                return value
        return None


def reader_call(call: ast.Call, *, initialize: bool = True) -> ReaderCall | None:
    """The config reader `call` calls, if any; `initialize`: count `deepspeed.initialize` too."""
    func = call.func
    if isinstance(func, ast.Attribute):
        name = func.attr
        if name == "initialize" and not (isinstance(func.value, ast.Name) and func.value.id == "deepspeed"):
            return None
    elif isinstance(func, ast.Name) and func.id != "initialize":
        name = func.id
    else:
        return None
    if is_training_arguments_name(name):
        found = TRAINING_ARGUMENTS
    elif name == "initialize" and not initialize:
        return None
    else:
        entry = READERS_BY_LAST_NAME.get(name)
        if entry is None:
            return None
        found = entry
    assert found.reader is not None
    return ReaderCall(name, found.config[0], found.reader, found.config)


def scopes(tree: ast.Module) -> Iterator[ast.AST]:
    """The module and every function in it."""
    yield tree
    for node in walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@dataclass
class ParsedModules:
    """The project's modules, as the model's summaries hold them (one `ast` parse each, shared with the
    engine fixpoint when the index passes its store)."""

    sources: dict[str, bytes]
    store: SummaryStore | None = None

    def __post_init__(self) -> None:
        if self.store is None:
            self.store = SummaryStore(self.sources, exists)

    def tree(self, path: str) -> ast.Module | None:
        assert self.store is not None
        summary = self.store.get(path)
        return summary.tree if summary is not None else None

    def constant(self, path: str, name: str, depth: int = 0) -> str | None:
        """The module defining the module-level dict `name` means in module `path` (`DS_CONFIG = {...}`, assigned
        there once), through its imports as `function` follows them."""
        assert self.store is not None
        module = self.store.get(path)
        if module is None or depth > _MAX_DEPTH:
            return None
        assigned = [
            node.value
            for node in module.tree.body
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ]
        if assigned:
            return path if len(assigned) == 1 and isinstance(assigned[0], ast.Dict) else None
        return self._imported(path, name, lambda target, imported: self.constant(target, imported, depth + 1))

    def function(
        self, path: str, name: str, depth: int = 0
    ) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """The module-level `def name` that `name` means in module `path`, with the module defining it: defined
        there, or imported (`from m import name`, `from .m import name`, through `from m import *`), as the
        module's summary resolves its imports."""
        assert self.store is not None
        module = self.store.get(path)
        if module is None or depth > _MAX_DEPTH:
            return None
        defined = module.functions.get(name)
        if defined is not None and not defined.owner and "." not in name:
            return path, defined.node
        return self._imported(path, name, lambda target, imported: self.function(target, imported, depth + 1))

    def _imported(self, path: str, name: str, lookup: Callable[[str, str], _Found | None]) -> _Found | None:
        """`lookup(module, name there)` in the project module `name` is imported from in module `path` (`from m
        import name`, `from .m import name`, or through `from m import *`), the first that answers."""
        assert self.store is not None
        module = self.store.get(path)
        if module is None:
            return None
        for dotted_name in [module.imports.get(name), *(f"{star}.{name}" for star in module.stars)]:
            source, _, imported = (dotted_name or "").rpartition(".")
            target = self.store.finder.find(source, path) if source else None
            found = lookup(target, imported) if target is not None and target != path else None
            if found is not None:
                return found
        return None

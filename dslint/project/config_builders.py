"""Functions whose returned dict reaches a DeepSpeed config reader in another function or module.

`cfg = get_ds_config(precision)` then `DeepSpeedStrategy(config=cfg)` (PyTorch Lightning hands it to
`deepspeed.initialize`), `deepspeed.initialize(config=cfg)`, `TrainingArguments(deepspeed=cfg)` or
`DeepSpeedPlugin(hf_ds_config=cfg)` (Hugging Face, which hands it on after filling "auto"): the dict the helper
returns is a DeepSpeed config, so the keys the helper writes into it are checked as DeepSpeed's
(`config_link.returned_configs`). The helper is found by its name: defined in the reader's module, or imported
(`from m import name`, through `from m import *` re-exports). The name must be bound once in the reader's
function, to the helper's call; anything else stays unknown. Read with `ast`, only in files that name a reader.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from dslint.project.engine_flow import ModuleFinder

# A reader's last name -> (the keyword that takes the config, who reads it: "initialize" or "trainer")
READERS = {
    "DeepSpeedStrategy": ("config", "initialize"),  # Lightning calls deepspeed.initialize(config=...) itself
    "initialize": ("config", "initialize"),  # only as `deepspeed.initialize`
    "DeepSpeedPlugin": ("hf_ds_config", "trainer"),
}
# A text test before parsing: a reader's call, with its config keyword given a name soon after.
_READER_NAMES = (b"DeepSpeedStrategy", b"TrainingArguments", b"DeepSpeedPlugin", b"initialize")
_CONFIG_KEYWORD = re.compile(rb"\b(?:config|deepspeed|hf_ds_config)\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\s*[,)]")
_WINDOW = 4000
_MAX_DEPTH = 4


@dataclass(frozen=True)
class ConfigBuilder:
    path: str  # the module defining the helper
    name: str  # the helper's name (a module-level function)
    reader_path: str
    line: int
    column: int
    reader: str  # "DeepSpeedStrategy", "TrainingArguments", ...
    origin: str  # "initialize" or "trainer"


def _reader(call: ast.Call) -> tuple[str, str, str] | None:
    """(reader name, config keyword, who reads) for a call of a config reader."""
    func = call.func
    if isinstance(func, ast.Attribute):
        name = func.attr
        if name == "initialize" and not (isinstance(func.value, ast.Name) and func.value.id == "deepspeed"):
            return None
    elif isinstance(func, ast.Name) and func.id != "initialize":
        name = func.id
    else:
        return None
    if name.endswith("TrainingArguments"):
        return name, "deepspeed", "trainer"
    found = READERS.get(name)
    return (name, *found) if found is not None else None


def _scopes(tree: ast.Module) -> Iterator[ast.AST]:
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


class _Modules:
    def __init__(self, sources: dict[str, bytes]) -> None:
        self.sources = sources
        self.finder = ModuleFinder(sources)
        self.parsed: dict[str, ast.Module | None] = {}

    def tree(self, path: str) -> ast.Module | None:
        if path not in self.parsed:
            data = self.sources.get(path)
            try:
                self.parsed[path] = ast.parse(data) if data is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.parsed[path] = None
        return self.parsed[path]

    def function(self, path: str, name: str, depth: int = 0) -> str | None:
        """The module defining the module-level `def name` that `name` means in module `path`."""
        tree = self.tree(path)
        if tree is None or depth > _MAX_DEPTH:
            return None
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in tree.body):
            return path
        for node in tree.body:
            if not isinstance(node, ast.ImportFrom) or node.module is None or node.level:
                continue
            for alias in node.names:
                if alias.name != "*" and (alias.asname or alias.name) != name:
                    continue
                module = self.finder.find(node.module, path)
                if module is None or module == path:
                    continue
                found = self.function(module, name if alias.name == "*" else alias.name, depth + 1)
                if found is not None:
                    return found
        return None


def _may_call_reader(data: bytes) -> bool:
    """`Reader(... keyword=name ...)` may be written in `data` (plain `bytes.find`: this runs on every file).
    Every reader's name or module says DeepSpeed (`DeepSpeedStrategy`, `deepspeed.initialize`...)."""
    if b"eepspeed" not in data and b"eepSpeed" not in data:
        return False
    for name in _READER_NAMES:
        at = data.find(name)
        while at != -1:
            end = at + len(name)
            while data[end : end + 1] in (b" ", b"\t"):
                end += 1
            before = data[at - 1 : at] if at else b" "
            if data[end : end + 1] == b"(" and not (before.isalnum() or before == b"_"):
                for keyword in _CONFIG_KEYWORD.finditer(data, end, end + _WINDOW):
                    # the name given is bound somewhere to a call of a plain function
                    bound = rb"\b" + re.escape(keyword.group(1)) + rb"\s*=\s*[A-Za-z_][A-Za-z0-9_]*\s*\("
                    if re.search(bound, data):
                        return True
            at = data.find(name, end)
    return False


def config_builders(sources: dict[str, bytes]) -> list[ConfigBuilder]:
    """Every helper whose returned dict a config reader of the project receives."""
    candidates = [path for path, data in sources.items() if _may_call_reader(data)]
    if not candidates:
        return []
    modules = _Modules(sources)
    found: list[ConfigBuilder] = []
    for path in candidates:
        tree = modules.tree(path)
        if tree is None:
            continue
        for scope in _scopes(tree):
            found.extend(_builders_in(modules, path, scope))
    return found


def _builders_in(modules: _Modules, path: str, scope: ast.AST) -> Iterator[ConfigBuilder]:
    bound: dict[str, list[ast.AST]] = {}  # name -> every value it is bound to in this scope
    readers: list[tuple[ast.Call, str, str, str]] = []
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bound.setdefault(name.id, []).append(node.value if target is name else target)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            targets: list[ast.expr | None] = (
                [i.optional_vars for i in node.items] if isinstance(node, ast.With) else [node.target]
            )
            for written in targets:
                for name in ast.walk(written) if written is not None else ():
                    if isinstance(name, ast.Name):
                        bound.setdefault(name.id, []).append(node)
        elif isinstance(node, ast.Call):
            found = _reader(node)
            if found is not None:
                readers.append((node, *found))
    for call, reader, keyword, origin in readers:
        value = next((k.value for k in call.keywords if k.arg == keyword), None)
        if not isinstance(value, ast.Name):
            continue
        values = bound.get(value.id, [])
        if len(values) != 1 or not isinstance(values[0], ast.Call) or not isinstance(values[0].func, ast.Name):
            continue  # bound more than once, or not to a plain function call: unknown
        helper = values[0].func.id
        where = modules.function(path, helper)
        if where is not None:
            yield ConfigBuilder(where, helper, path, call.lineno, call.col_offset + 1, reader, origin)

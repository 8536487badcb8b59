"""Functions whose returned dict reaches a DeepSpeed config reader in another function or module.

`cfg = get_ds_config(precision)` then `DeepSpeedStrategy(config=cfg)` (PyTorch Lightning hands it to
`deepspeed.initialize`), `deepspeed.initialize(config=cfg)`, `TrainingArguments(deepspeed=cfg)` or
`DeepSpeedPlugin(hf_ds_config=cfg)` (Hugging Face, which hands it on after filling "auto"): the dict the helper
returns is a DeepSpeed config, so the keys the helper writes into it are checked as DeepSpeed's
(`config_link.returned_configs`). The helper is found by its name: defined in the reader's module, or imported
(`from m import name`, through `from m import *` re-exports). The reader may be given the helper's call itself
(`config=get_ds_config(args)`); a name must be bound once in the reader's function before the reader's call
(bindings after it are other dicts), to the helper's call, or be a parameter of that function (not a method) whose
callers in the same module pass a name bound once to the helper's call (`cfg = get_ds_config(args); start(model,
cfg)`), or be bound once to a call through a module-level dict of plain functions (`cfg =
BUILDERS[args.stage](args)`: each of them); anything else stays unknown. In a method, a name bound on some path
before the reader to `self.method(...)` of the same class is that method's dict (`Class.method`). Another module's
module-level dict the reader is given, whole or copied (`cfg = DS_CONFIG.copy()`), is a builder too (`constant`).
Read with `ast`, only in files that name a reader.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from dslint.model.bindings import BindingKind, Bindings, module_bindings
from dslint.model.summary import SummaryStore, own_nodes
from dslint.project.config_readers import written_paths
from dslint.project.reader_calls import ParsedModules, ReaderCall, reader_call, scopes

# A text test before parsing: a reader's call, with its config keyword given a name soon after.
_READER_NAMES = (b"DeepSpeedStrategy", b"TrainingArguments", b"DeepSpeedPlugin", b"initialize")
_CONFIG_KEYWORD = re.compile(
    rb"\b(?:config|config_params|deepspeed|hf_ds_config)\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\s*([,)(])"
)
_WINDOW = 4000


@dataclass(frozen=True)
class ConfigBuilder:
    path: str  # the module defining the helper
    name: str  # the helper's name (a module-level function)
    reader_path: str
    line: int
    column: int
    reader: str  # "DeepSpeedStrategy", "TrainingArguments", ...
    origin: str  # who reads the dict: "initialize", "lightning" or "trainer" (model/library.py)
    # Keys the reader's function writes into the returned dict before the reader (`cfg["train_batch_size"] = n`:
    # paths joined by config_readers.PATH_SEPARATOR; UNREAD_WRITE for a write whose keys are not literal).
    written: frozenset[str] = frozenset()
    constant: bool = False  # a module-level dict (`DS_CONFIG = {...}`), not a function returning one


UNREAD_WRITE = "*"  # `cfg.update(other)`, `cfg[key] = v`: a write into the dict whose keys are not known
_CHANGING_METHODS = frozenset({"update", "setdefault", "pop", "clear", "popitem"})


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
                    if keyword.group(2) == b"(":  # the reader is given a plain function's call itself
                        return True
                    # the name given is bound somewhere to a call of a plain function (or of a table's)
                    called = (
                        rb"\s*=\s*(?:self\.)?[A-Za-z_][A-Za-z0-9_]*\s*(\[[^\]\n]*\]\s*)?\("  # `f(`, `self.f(`, `T[k](`
                    )
                    bound = rb"\b" + re.escape(keyword.group(1)) + called
                    if re.search(bound, data):
                        return True
                    if _names_constant(data, keyword.group(1)):
                        return True
            at = data.find(name, end)
    return False


def _names_constant(data: bytes, name: bytes) -> bool:
    """`name` may stand for another module's dict: imported under that name, or bound to a copy of a name
    (`cfg = DS_CONFIG.copy()`, `cfg = DS_CONFIG`)."""
    escaped = re.escape(name)
    if re.search(rb"import[^\n]*\b" + escaped + rb"\b", data):
        return True
    return re.search(rb"\b" + escaped + rb"\s*=\s*[A-Za-z_]\w*(?:\.copy\(\))?\s*(?:#[^\n]*)?$", data, re.M) is not None


def config_builders(sources: dict[str, bytes], store: SummaryStore | None = None) -> list[ConfigBuilder]:
    """Every helper whose returned dict a config reader of the project receives."""
    candidates = [path for path, data in sources.items() if _may_call_reader(data)]
    if not candidates:
        return []
    modules = ParsedModules(sources, store)
    found: list[ConfigBuilder] = []
    for path in candidates:
        tree = modules.tree(path)
        if tree is None:
            continue
        table = module_bindings(tree)
        for scope in scopes(tree):
            found.extend(_builders_in(modules, path, scope, table))
    return found


def _builders_in(modules: ParsedModules, path: str, scope: ast.AST, table: Bindings) -> Iterator[ConfigBuilder]:
    bound, readers = _bindings(table, scope)
    for call, reader in readers:
        value = reader.config_argument(call)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):  # `config=get_ds_config(args)`
            helpers = [value.func.id]
        elif not isinstance(value, ast.Name):
            continue
        else:
            helpers = [helper] if (helper := _helper(bound, value.id, call.lineno)) is not None else []
            helpers = helpers or _dispatched(table, bound, value.id)
        if (
            not helpers
            and isinstance(value, ast.Name)
            and value.id not in bound
            and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            helpers = _helpers_of_callers(modules.tree(path), table, scope, value.id)
        if isinstance(value, ast.Name) and not helpers and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            method = _own_method_builder(modules.tree(path), scope, bound.get(value.id, []), call.lineno)
            if method is not None:  # `cfg = self._ds_config(n)` in a method: the class's method builds it
                written = _written_before(scope, value.id, bound, call.lineno)
                column = call.col_offset + 1
                yield ConfigBuilder(path, method, path, call.lineno, column, reader.name, reader.reader, written)
                continue
        written = _written_before(scope, value.id, bound, call.lineno) if isinstance(value, ast.Name) else frozenset()
        constant = _copied_constant(bound, value.id, call.lineno) if isinstance(value, ast.Name) else None
        defined = modules.constant(path, constant) if constant is not None and not helpers else None
        if constant is not None and defined is not None and defined != path:  # another module's dict: checked there
            column = call.col_offset + 1
            yield ConfigBuilder(
                defined, constant, path, call.lineno, column, reader.name, reader.reader, written, constant=True
            )
        for helper in helpers:
            where = modules.function(path, helper)
            if where is not None:
                column = call.col_offset + 1
                yield ConfigBuilder(where[0], helper, path, call.lineno, column, reader.name, reader.reader, written)


def _written_before(scope: ast.AST, name: str, bound: dict[str, list[ast.AST]], line: int) -> frozenset[str]:
    """The keys `scope` writes into the dict `name` after its binding and before `line` (the reader's call)."""
    starts = [getattr(v, "lineno", line) for v in bound.get(name, ()) if getattr(v, "lineno", line) < line]
    after = max(starts, default=0)
    found: set[str] = set()
    for node in own_nodes(scope):
        if not after < getattr(node, "lineno", 0) < line:
            continue
        paths = written_paths(node, name)
        found |= paths
        changing = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _CHANGING_METHODS
            and _rooted_at(node.func.value, name)
        )
        target_keys = isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)) and any(
            isinstance(t, ast.Subscript) and _rooted_at(t, name) for t in _targets(node)
        )
        if (changing or target_keys) and not paths:
            found.add(UNREAD_WRITE)
    return frozenset(found)


def _targets(node: ast.Assign | ast.AugAssign | ast.Delete) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]


def _rooted_at(node: ast.expr, name: str) -> bool:
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id == name


def _bindings(table: Bindings, scope: ast.AST) -> tuple[dict[str, list[ast.AST]], list[tuple[ast.Call, ReaderCall]]]:
    """The names bound in `scope` (name -> every value it is bound to: the value of a whole target, else the
    statement binding it), read from the module's one binding model (parameters are not bound here: their values
    come from the callers), and the reader calls written there. `cfg["x"] = n` writes into the dict: no binding."""
    bound: dict[str, list[ast.AST]] = {}
    for binding in table.every:
        if binding.scope.node is scope and binding.kind is not BindingKind.PARAMETER and "." not in binding.key:
            bound.setdefault(binding.key, []).append(binding.value if binding.value is not None else binding.statement)
    readers = [
        (node, found) for node in own_nodes(scope) if isinstance(node, ast.Call) and (found := reader_call(node))
    ]
    return bound, readers


def _helper(bound: dict[str, list[ast.AST]], name: str, before: int | None = None) -> str | None:
    """The plain function whose call `name` is bound to, when it is bound once, to that call; with `before` (the
    reader call's line), once before that line (a binding after the reader, `cfg, ref = get_eval_config()`, is
    another dict)."""
    values = bound.get(name, [])
    if before is not None:
        values = [v for v in values if getattr(v, "lineno", before) < before]
    if len(values) != 1 or not isinstance(values[0], ast.Call) or not isinstance(values[0].func, ast.Name):
        return None  # bound more than once, or not to a plain function call: unknown
    return values[0].func.id


def _own_method_builder(
    tree: ast.Module | None, scope: ast.FunctionDef | ast.AsyncFunctionDef, values: list[ast.AST], before: int
) -> str | None:
    """`Class.method` when the name handed to the reader is bound, before the reader and on some path (`if path:
    cfg = json.load(...) else: cfg = self._ds_config(n)`), to a call `self.method(...)` of a method of the class
    defining `scope` (its first parameter is `self`): that method's returned dict reaches the reader there."""
    if tree is None or not scope.args.args:
        return None
    owner = next((n for n in tree.body if isinstance(n, ast.ClassDef) and scope in n.body), None)
    receiver = scope.args.args[0].arg
    for value in values:
        if getattr(value, "lineno", before) >= before or not isinstance(value, ast.Call):
            continue
        func = value.func
        if owner is None or not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            continue
        if func.value.id == receiver and any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func.attr for n in owner.body
        ):
            return f"{owner.name}.{func.attr}"
    return None


def _copied_constant(bound: dict[str, list[ast.AST]], name: str, before: int) -> str | None:
    """The module-level dict `name` stands for at the reader: itself when the scope does not bind it, or the one
    it is bound to once before the reader, whole or copied (`cfg = DS_CONFIG`, `DS_CONFIG.copy()`,
    `dict(DS_CONFIG)`, `copy.deepcopy(DS_CONFIG)`)."""
    values = [v for v in bound.get(name, []) if getattr(v, "lineno", before) < before]
    if name not in bound:
        return name
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        called = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", None)
        value = value.args[0] if called in ("dict", "deepcopy", "copy") else value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "copy":
        value = value.func.value  # `DS_CONFIG.copy()`
    return value.id if isinstance(value, ast.Name) else None


def _dispatched(table: Bindings, bound: dict[str, list[ast.AST]], name: str) -> list[str]:
    """`cfg = BUILDERS[args.stage](args)` with `BUILDERS = {"2": zero2_config, "3": zero3_config}` bound once at
    module level: any of the table's plain functions may build the dict (`name` bound once, to that call)."""
    values = bound.get(name, [])
    if len(values) != 1 or not isinstance(values[0], ast.Call) or not isinstance(values[0].func, ast.Subscript):
        return []
    table_name = values[0].func.value
    if not isinstance(table_name, ast.Name):
        return []
    found = [
        b.value
        for b in table.every
        if b.scope is table.module_scope and b.key == table_name.id and b.kind is not BindingKind.PARAMETER
    ]
    if len(found) != 1 or not isinstance(found[0], ast.Dict):
        return []
    functions = [v.id for v in found[0].values if isinstance(v, ast.Name)]
    return functions if len(functions) == len(found[0].values) else []


def _helpers_of_callers(
    tree: ast.Module | None, table: Bindings, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> list[str]:
    """`def setup(model, cfg): deepspeed.initialize(..., config=cfg)`, called in the same module as
    `cfg = get_ds_config(args); setup(model, cfg)`: the helpers whose result the callers pass as `parameter`
    (each caller's argument a name bound once, in its own scope, to a plain function's call). A method is not
    followed (its callers reach it through an instance)."""
    if tree is None or any(isinstance(node, ast.ClassDef) and function in node.body for node in ast.walk(tree)):
        return []
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if parameter not in positional and parameter not in (a.arg for a in function.args.kwonlyargs):
        return []
    index = positional.index(parameter) if parameter in positional else None
    found: list[str] = []
    for scope in scopes(tree):
        calls = [
            node
            for node in own_nodes(scope)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name
        ]
        if not calls:
            continue
        bound, _ = _bindings(table, scope)
        for call in calls:
            argument = next((k.value for k in call.keywords if k.arg == parameter), None)
            starred = any(isinstance(a, ast.Starred) for a in call.args[: (index or 0) + 1])
            if argument is None and index is not None and index < len(call.args) and not starred:
                argument = call.args[index]
            helper = _helper(bound, argument.id) if isinstance(argument, ast.Name) else None
            if helper is not None and helper not in found:
                found.append(helper)
    return found

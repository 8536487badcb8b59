"""`torch.load` calls of files that hold no GPU tensor, found across the project (DSL202 asks, through
`ProjectFacts.cpu_loads`, and stays silent there: without a `map_location` nothing goes back to a GPU).

A file holds no GPU tensor when every `torch.save` of the project that writes its name saves CPU data only:
tensors moved to the CPU (`.cpu()`, `.to("cpu")`), Python values taken out of tensors (`.item()`, `.tolist()`,
`.numpy()`), a learning-rate scheduler's `state_dict()` (a name with `sched` in it), `time.time()`, numbers,
strings, either arm of a conditional value, and the containers of them (a dict, list or tuple literal, a comprehension,
`dict(zip(...))`), or a name or attribute every value stored in which is such data (`stats[k] = loss.item()` in the
function; `self.fisher[n] = grad.pow(2).mean().item()` anywhere in the module, where `fisher` is the attribute's
name), what a function of the module returns (`return {"loss": loss.item()}`), and a parameter of a private
function (or of a script's helper it calls at its top level) that every call in the module fills so. A value read
back from the same file (`fisher = torch.load("fisher.pt")`) adds nothing. Loads and saves are
matched by the file name their paths end with, as `gpu_saves.py` matches them; a name the project also writes from
an engine's state, or one with no save in the project (a publisher's checkpoint), is not such a file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dslint.model.gpu_saves import INITIALIZE_CALLED, bound_values, calls_named, file_name, has_map_location, may_call
from dslint.model.summary import ModuleSummary, SummaryStore, dotted

# Methods whose result is CPU data whatever the tensor was on.
_TO_CPU_METHODS = frozenset({"cpu", "item", "tolist", "numpy", "keys", "to_dict"})
# Builtins whose result is CPU data when their arguments are.
_PLAIN_BUILDERS = frozenset({"float", "int", "str", "bool", "len", "round", "dict", "list", "tuple", "zip", "sorted"})
_EMPTY = frozenset({"dict", "list", "OrderedDict", "defaultdict"})
# A tensor's attributes that are plain metadata (`list(param.shape)`).
_METADATA = frozenset({"shape", "dtype", "ndim", "requires_grad"})
_DEPTH = 4  # names and attributes followed through one another at most this deep
# Library calls whose result is a Python number or string.
_CPU_FUNCTIONS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "os.getpid", "socket.gethostname"})


def _names_scheduler(value: ast.expr) -> bool:
    """`lr_scheduler`, `self.scheduler`, `sched`: a learning-rate scheduler by its name."""
    name = dotted(value)
    return name is not None and "sched" in name.rsplit(".", 1)[-1].lower()


@dataclass(frozen=True)
class CpuFile:
    """A file name the project writes only from CPU data, and where (module and line of one such `torch.save`)."""

    name: str
    path: str
    line: int


def cpu_loads(store: SummaryStore, paths: list[str]) -> dict[str, dict[int, CpuFile]]:
    """For each module: the lines of its `torch.load` calls without a map location that read a file the project
    writes only from CPU data, with where it is written."""
    loads: list[tuple[str, int, str]] = []  # module, line, file name
    for path in paths:
        data = store.sources.get(path, b"")
        # DSL202 reads every load of a module that creates an engine: only those are asked about (a text test)
        if b"load(" not in data or INITIALIZE_CALLED.search(data) is None or not may_call(data, "torch", "load", path):
            continue
        summary = store.get(path)
        for call, function in calls_named(summary, "torch.load") if summary is not None else ():
            if call.args and not has_map_location(call) and not any(isinstance(a, ast.Starred) for a in call.args):
                name = _loaded_name(call.args[0], function)
                if name is not None:
                    loads.append((path, call.lineno, name))
    if not loads:
        return {}
    names = {name for _, _, name in loads}
    pieces = {name: [piece.encode() for piece in name.split("*") if piece] for name in names}
    verdicts: dict[str, CpuFile | None] = {}  # None: some save of the name may hold GPU tensors
    for path in paths:
        data = store.sources.get(path, b"")
        if b"save" not in data or not any(all(p in data for p in parts) for parts in pieces.values()):
            continue
        summary = store.get(path)
        for call, function in calls_named(summary, "torch.save") if summary is not None else ():
            name = file_name(call.args[1]) if len(call.args) >= 2 else None
            if name not in names or (name in verdicts and verdicts[name] is None):
                continue
            assert summary is not None and name is not None
            cpu = _cpu_data(call.args[0], function, summary, name, _DEPTH)
            verdicts[name] = verdicts.get(name) or CpuFile(name, path, call.lineno) if cpu else None
    answers: dict[str, dict[int, CpuFile]] = {}
    for path, line, name in loads:
        found = verdicts.get(name)
        if found is not None:
            answers.setdefault(path, {})[line] = found
    return answers


def _loaded_name(target: ast.expr, function: ast.AST) -> str | None:
    """The file name a load's path ends with, through a name bound once before the load in its function."""
    if isinstance(target, ast.Name):
        values = bound_values(function, target.id, target.lineno)
        return file_name(values[0]) if len(values) == 1 else None
    return file_name(target)


def _cpu_data(node: ast.expr, function: ast.AST, summary: ModuleSummary, file: str, depth: int) -> bool:
    """Whether the value `node` (in `function`) can only be CPU data (see the module's docstring)."""
    if depth < 0:
        return False
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_cpu_data(e, function, summary, file, depth) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(v is not None and _cpu_data(v, function, summary, file, depth) for v in node.values)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return _cpu_data(node.elt, function, summary, file, depth)
    if isinstance(node, ast.DictComp):
        return _cpu_data(node.value, function, summary, file, depth)
    if isinstance(node, ast.BinOp):
        return _cpu_data(node.left, function, summary, file, depth) and _cpu_data(
            node.right, function, summary, file, depth
        )
    if isinstance(node, ast.Subscript):  # an item of CPU data (`x.cpu()[0]`)
        return _cpu_data(node.value, function, summary, file, depth)
    if isinstance(node, ast.UnaryOp):
        return _cpu_data(node.operand, function, summary, file, depth)
    if isinstance(node, ast.IfExp):  # `s.state_dict() if s is not None else None`: each arm
        return _cpu_data(node.body, function, summary, file, depth) and _cpu_data(
            node.orelse, function, summary, file, depth
        )
    if isinstance(node, ast.Call):
        return _cpu_call(node, function, summary, file, depth)
    if isinstance(node, ast.Name):
        values = list(_name_values(function, node.id, node.lineno))
        if not values:
            return _passed_cpu(function, node.id, summary, file, depth - 1)
        return all(_stored_cpu(v, function, summary, file, depth - 1) for v in values)
    if isinstance(node, ast.Attribute):
        if node.attr in _METADATA:
            return True
        values = list(_attribute_values(summary.tree, node.attr))
        return bool(values) and all(_stored_cpu(v, function, summary, file, depth - 1) for v in values)
    return False


def _cpu_call(node: ast.Call, function: ast.AST, summary: ModuleSummary, file: str, depth: int) -> bool:
    if summary.qualified(node.func) in _CPU_FUNCTIONS:
        return True
    if isinstance(node.func, ast.Attribute):
        method = node.func.attr
        if method in _TO_CPU_METHODS:
            return True
        if method == "state_dict" and not node.args and _names_scheduler(node.func.value):
            return True  # a learning-rate scheduler's state: its step counts and rates, Python numbers
        if method == "to":
            device = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
            return isinstance(device, ast.Constant) and device.value == "cpu"
        return False
    builder = dotted(node.func)
    if builder in _PLAIN_BUILDERS:
        return all(_cpu_data(a, function, summary, file, depth) for a in node.args) and not node.keywords
    callee = summary.functions.get(builder) if builder is not None else None
    if callee is None or callee.is_method:
        return False
    # a function of the module (`td = collect(batch)`): what each of its own `return`s gives back
    returned = [r.value for r in ast.walk(callee.node) if isinstance(r, ast.Return)]
    return bool(returned) and all(
        value is not None and _cpu_data(value, callee.node, summary, file, depth - 1) for value in returned
    )


def _passed_cpu(function: ast.AST, name: str, summary: ModuleSummary, file: str, depth: int) -> bool:
    """A parameter `name` of a function of the module that stores nothing else in it (`def _write(record): torch.
    save(record, "r.pt")`): what every call of the function in the module passes for it (at least one)."""
    if depth < 0 or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    info = summary.functions.get(function.name)
    if info is None or info.node is not function or info.is_method or name not in info.params:
        return False
    index = info.positional.index(name) if name in info.positional else None
    calls = [c for c in ast.walk(summary.tree) if isinstance(c, ast.Call) and dotted(c.func) == function.name]
    # other modules may call it too, with other data: only a private function, or a script's own helper (called
    # at its top level), is judged by the calls here
    if not function.name.startswith("_") and all(summary.function_at(c.lineno) is not None for c in calls):
        return False
    passed: list[tuple[ast.expr, ast.AST]] = []
    for call in calls:
        given = next((k.value for k in call.keywords if k.arg == name), None)
        if given is None and index is not None and index < len(call.args):
            given = call.args[index]
        if given is None or any(isinstance(a, ast.Starred) for a in call.args):
            return False
        holder = summary.function_at(call.lineno)
        passed.append((given, summary.functions[holder].node if holder else summary.tree))
    return bool(passed) and all(_cpu_data(value, holder, summary, file, depth) for value, holder in passed)


def _stored_cpu(value: ast.expr, function: ast.AST, summary: ModuleSummary, file: str, depth: int) -> bool:
    """A value stored in the saved name or attribute: CPU data, an empty container to be filled (its fills are
    stores too), or what a load of the same file reads back."""
    if isinstance(value, (ast.Dict, ast.List)) and not (value.keys if isinstance(value, ast.Dict) else value.elts):
        return True
    if isinstance(value, ast.Call) and not value.args and dotted(value.func) in _EMPTY:
        return True
    if isinstance(value, ast.Call) and summary.qualified(value.func) == "torch.load" and value.args:
        return file_name(value.args[0]) == file
    return _cpu_data(value, function, summary, file, depth)


def _name_values(function: ast.AST, name: str, before: int) -> Iterator[ast.expr]:
    """What `function` stores in `name` before line `before`: its assignments, and `name[k] = v`, `name[k] += v`,
    `name.append(v)` values."""
    yield from bound_values(function, name, before)
    for node in ast.walk(function):
        if getattr(node, "lineno", before) >= before:
            continue
        yield from _item_stores(node, lambda target: isinstance(target, ast.Name) and target.id == name)


def _attribute_values(tree: ast.Module, attribute: str) -> Iterator[ast.expr]:
    """What the module stores in any `X.<attribute>`: assignments, and item stores and appends."""

    def named(target: ast.expr) -> bool:
        return isinstance(target, ast.Attribute) and target.attr == attribute

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(named(t) for t in targets):
                yield node.value
        yield from _item_stores(node, named)


def _item_stores(node: ast.AST, holds: Callable[[ast.expr], bool]) -> Iterator[ast.expr]:
    """`H[k] = v`, `H[k] += v` and `H.append(v)` where `holds(H)`: the values `v`."""
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Subscript) and holds(t.value) for t in targets):
            yield node.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and holds(node.func.value)
        and node.args
    ):
        yield node.args[0]

"""Devices that callers pass: parameters that receive a CUDA device at EVERY call the project makes of their
function, through any number of functions that hand their own parameter on, and from `self.<attr>` that every
method of the class sets to a CUDA device.

    class Worker:
        def setup(self):
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device(self.local_rank)      # a CUDA device (its index also set as current)
            restore(model, path, device=self.device)

    def restore(model, path, device):                       # `device` is a CUDA device at every call
        state = torch.load(path, map_location=device)

The same question for the CPU (`cpu_placed_parameters`): a model builder's `.to(device)` whose every caller passes
`"cpu"` or `torch.device("cpu")` (a name bound to one) moves nothing to a GPU.

What is a CUDA device, written in code: `"cuda"`, `"cuda:N"`, `f"cuda:{rank}"`, `"cuda:{}".format(rank)`,
`"cuda:%d" % rank`, `torch.device("cuda", ...)`, `torch.device(<an integer>)`, where an integer is a literal,
`int(...)`, a parameter annotated `int`, or the very expression the same function hands to a current-device setter
(`torch.cuda.set_device(x)`: what names a CUDA device there does here too). One call that passes anything else, a
value that cannot be read, or `*args`/`**kwargs`, and the parameter stays unknown. Names found in too many files
are not followed (their calls cannot all be seen).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.gpu_saves import may_call
from dslint.model.library import SET_DEVICE_CALLS
from dslint.model.resolution import Callee, scope_of
from dslint.model.summary import ModuleSummary, SummaryStore, calls, dotted, statements

MAX_DEPTH = 6
MAX_NAME_FILES = 24
TORCH_LOAD = "torch.load"
TORCH_DEVICE = "torch.device"
# a `map_location` given a bare name, what `_map_location_parameters` reads: by keyword (`map_location=device,`), or
# as the second argument after a first one without brackets or commas (`torch.load(path, device)`)
_NAME_AS_MAP_LOCATION = re.compile(
    rb"map_location\s*=\s*[A-Za-z_]\w*\s*[,)#]|load\s*\([^(),\[\]{}]+,\s*[A-Za-z_]\w*\s*[,)#]"
)


@dataclass(frozen=True)
class DeviceOrigin:
    """Where a CUDA device a parameter receives is written: path, line, column (as `ast` gives them) and the
    expression's text."""

    path: str
    line: int
    column: int
    text: str


class DeviceParameters:
    """Answers "is this parameter a CUDA device at every call?" (or, with `cpu`, "the CPU at every call?": a
    builder's `model.to(device)` that its callers all give `torch.device("cpu")` is no move to a GPU), on demand,
    cached."""

    def __init__(self, store: SummaryStore, cpu: bool = False) -> None:
        self.store = store
        self._matches = _is_cpu_expression if cpu else _is_cuda_expression
        self.evaluator = Evaluator(store)
        self._answers: dict[tuple[str, str, str], DeviceOrigin | None] = {}
        self._busy: set[tuple[str, str, str]] = set()

    def loaded_onto_parameters(self) -> Iterator[tuple[str, str, str, DeviceOrigin]]:
        """(path, function, parameter, where the device is written) for every `torch.load(...,
        map_location=<parameter>)` of the project whose parameter is a CUDA device at every call."""
        for path, data in sorted(self.store.sources.items()):
            if _NAME_AS_MAP_LOCATION.search(data) is None or not may_call(data, "torch", "load", path):
                continue
            module = self.store.get(path)
            if module is None:
                continue
            for qualname, function in module.functions.items():
                for param in _map_location_parameters(module, function.node, function.params):
                    found = self.answer(path, qualname, param)
                    if found is not None:
                        yield path, qualname, param, found

    def answer(self, path: str, qualname: str, param: str, depth: int = 0) -> DeviceOrigin | None:
        key = (path, qualname, param)
        if key in self._answers:
            return self._answers[key]
        if key in self._busy or depth > MAX_DEPTH:
            return None  # a cycle, or too deep: unknown (not cached, another path may know)
        self._busy.add(key)
        try:
            found = self._every_call(path, qualname, param, depth)
        finally:
            self._busy.discard(key)
        self._answers[key] = found
        return found

    def _every_call(self, path: str, qualname: str, param: str, depth: int) -> DeviceOrigin | None:
        target = self.store.get(path)
        function = target.functions.get(qualname) if target is not None else None
        if target is None or function is None:
            return None
        name = qualname.rpartition(".")[2]
        if name == "__init__":
            return None  # an instance built from a class: its calls are written with the class's name
        needle = name.encode() + b"("
        matched = [p for p, data in self.store.sources.items() if needle in data]
        if len(matched) > MAX_NAME_FILES:
            return None
        first: DeviceOrigin | None = None
        for caller_path in sorted(matched):
            module = self.store.get(caller_path)
            if module is None:
                continue
            for holder in module.callers_of(name):
                scope = scope_of(module, holder)
                for call in _calls_in(module, holder):
                    written = dotted(call.func)
                    if written is None or written.rpartition(".")[2] != name:
                        continue
                    if self.evaluator.resolve(module, scope, call.func) != (path, qualname):
                        continue
                    argument = _argument(call, function.positional, param)
                    if argument is _UNKNOWN:
                        return None
                    if argument is None:  # the parameter's default
                        default = _default(function.node, param)
                        found = None if default is None else self._device(target, qualname, default, depth)
                    else:
                        found = self._device(module, holder, argument, depth)
                    if found is None:
                        return None
                    first = first or found
        return first

    def _device(self, module: ModuleSummary, holder: str, expr: ast.expr, depth: int) -> DeviceOrigin | None:
        """Whether `expr`, read in `holder` of `module`, is a device of the kind asked (where it is written) or not
        (None)."""
        if self._matches(module, holder, expr):
            return DeviceOrigin(module.path, expr.lineno, expr.col_offset, ast.unparse(expr))
        function = module.functions.get(holder) if holder else None
        if function is None:
            return None
        if isinstance(expr, ast.Name) and expr.id in function.params and not _rebound(function.node, expr.id):
            return self.answer(module.path, holder, expr.id, depth + 1)
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and function.is_method
            and function.params
            and expr.value.id == function.params[0]
        ):
            return self._attribute(module, function.owner, expr.attr, depth)
        if isinstance(expr, ast.Name):
            assigned = _only_assignment(function.node, expr.id)
            if assigned is not None:
                return self._device(module, holder, assigned, depth + 1)
        return None

    def _attribute(self, module: ModuleSummary, owner: str, attribute: str, depth: int) -> DeviceOrigin | None:
        """`self.<attribute>`: a CUDA device when every assignment of it in the methods of the class and of its
        subclasses (any module) is one, and there is at least one; `None` placeholders aside."""
        first: DeviceOrigin | None = None
        classes = [(module.path, owner), *self.evaluator.hierarchy.subclasses((module.path, owner))]
        methods = [
            (holder, qualname, function)
            for path, cls in classes
            if (holder := self.store.get(path)) is not None
            for qualname, function in holder.functions.items()
            if function.owner == cls
        ]
        for reader, qualname, function in methods:
            if not function.is_method or not function.params:
                continue
            receiver = function.params[0]
            for node in ast.walk(function.node):
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets, value = [node.target], node.value
                for target in targets:
                    if not (
                        isinstance(target, ast.Attribute)
                        and target.attr == attribute
                        and isinstance(target.value, ast.Name)
                        and target.value.id == receiver
                    ):
                        if _holds_attribute_store(target, receiver, attribute):
                            return None  # `self.a, self.b = ...`: not read here
                        continue
                    if value is None or isinstance(node, ast.AugAssign):
                        return None
                    if isinstance(value, ast.Constant) and value.value is None:
                        continue  # a placeholder before the real value
                    found = self._device(reader, qualname, value, depth + 1)
                    if found is None:
                        return None
                    first = first or found
        return first


_UNKNOWN = ast.Constant(value=None)  # marks an argument that cannot be known (after *args, with **kwargs)


def _argument(call: ast.Call, positional: list[str], param: str) -> ast.expr | None:
    """The expression a call passes to `param`; None when it passes nothing (the default applies); `_UNKNOWN`
    when `*args` or `**kwargs` may carry it."""
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
        if keyword.arg is None:
            return _UNKNOWN
    index = positional.index(param) if param in positional else None
    for position, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return _UNKNOWN
        if position == index:
            return argument
    return None


def _default(function: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> ast.expr | None:
    args = function.args
    ordered = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in ordered[len(ordered) - len(args.defaults) :]], args.defaults, strict=True))
    for argument, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is not None:
            defaults[argument.arg] = default
    return defaults.get(param)


def _calls_in(module: ModuleSummary, holder: str) -> list[ast.Call]:
    for qualname, found in module.body_calls():
        if qualname == holder:
            return found
    return []


def _map_location_parameters(
    module: ModuleSummary, node: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]
) -> list[str]:
    """The parameters a function's own `torch.load` calls receive as `map_location` (by keyword or second)."""
    found: list[str] = []
    for statement in statements(node.body):
        for call in calls(statement):
            if module.qualified(call.func) != TORCH_LOAD:
                continue
            given = next((k.value for k in call.keywords if k.arg == "map_location"), None)
            if given is None and len(call.args) > 1 and not isinstance(call.args[0], ast.Starred):
                given = call.args[1]
            if isinstance(given, ast.Name) and given.id in params and not _rebound(node, given.id):
                found.append(given.id)
    return found


def _rebound(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether a function assigns its parameter `name` anew (then its value is not only the caller's)."""
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        for statement in function.body
        for node in ast.walk(statement)
    )


def _only_assignment(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.expr | None:
    """The value of a local name assigned exactly once in the function (`device = torch.device(...)`)."""
    values: list[ast.expr] = []
    for statement in function.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                values.append(node)
    if len(values) != 1:
        return None
    for statement in function.body:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0] is values[0]
            ):
                return node.value
    return None


def _holds_attribute_store(target: ast.expr, receiver: str, attribute: str) -> bool:
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == receiver
        for node in ast.walk(target)
    )


def _names_cuda(text: object) -> bool:
    return isinstance(text, str) and (text == "cuda" or text.startswith("cuda:"))


def _is_cpu_expression(module: ModuleSummary, holder: str, expr: ast.expr) -> bool:
    """`"cpu"`, `torch.device("cpu")`."""
    if isinstance(expr, ast.Constant):
        return expr.value == "cpu"
    return (
        isinstance(expr, ast.Call)
        and module.qualified(expr.func) == TORCH_DEVICE
        and len(expr.args) == 1
        and not expr.keywords
        and isinstance(expr.args[0], ast.Constant)
        and expr.args[0].value == "cpu"
    )


def _is_cuda_expression(module: ModuleSummary, holder: str, expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return _names_cuda(expr.value)
    if isinstance(expr, ast.JoinedStr):
        first = expr.values[0] if expr.values else None
        return isinstance(first, ast.Constant) and _names_cuda(first.value)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        return isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str) and _names_cuda(expr.left.value)
    if not isinstance(expr, ast.Call):
        return False
    if isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
        template = expr.func.value
        return isinstance(template, ast.Constant) and _names_cuda(template.value)
    if module.qualified(expr.func) != TORCH_DEVICE or not expr.args or isinstance(expr.args[0], ast.Starred):
        return False
    kind = expr.args[0]
    if isinstance(kind, ast.Constant):
        return _names_cuda(kind.value) or (type(kind.value) is int and len(expr.args) == 1)
    if _is_cuda_expression(module, holder, kind):
        return True  # torch.device(f"cuda:{rank}")
    if len(expr.args) == 1 and not expr.keywords:
        return _is_integer(module, holder, kind)  # torch.device(<index>): a CUDA device
    return False


def _is_integer(module: ModuleSummary, holder: str, expr: ast.expr) -> bool:
    """An integer by its writing: `int(...)`, a parameter annotated `int`, or the expression the same function
    hands to a current-device setter (`torch.cuda.set_device(expr)`)."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int":
        return "int" not in module.imports
    function = module.functions.get(holder) if holder else None
    if function is None:
        return False
    if isinstance(expr, ast.Name):
        arguments = function.node.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            if argument.arg == expr.id and isinstance(argument.annotation, ast.Name):
                return argument.annotation.id == "int" and not _rebound(function.node, expr.id)
    text = dotted(expr)
    if text is None:
        return False
    for statement in statements(function.node.body):
        for call in calls(statement):
            if is_device_setter(module, call) and len(call.args) == 1 and dotted(call.args[0]) == text:
                return True
    return False


def is_device_setter(module: ModuleSummary, call: ast.Call) -> bool:
    """`torch.cuda.set_device(...)`, `get_accelerator().set_device(...)` (the library's current-device setters)."""
    if module.qualified(call.func) in SET_DEVICE_CALLS:
        return True
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        inner = module.qualified(func.value.func)
        return inner is not None and f"{inner}().{func.attr}" in SET_DEVICE_CALLS
    return False


def cpu_placed_parameters(store: SummaryStore, functions: Iterable[Callee]) -> list[tuple[str, str, str, DeviceOrigin]]:
    """(path, function, parameter, where the CPU is written) for each parameter that one of `functions` hands to a
    `.to(...)` (first or `device=`) and every caller fills with the CPU: those moves place nothing on a GPU."""
    found: list[tuple[str, str, str, DeviceOrigin]] = []
    answers = DeviceParameters(store, cpu=True)
    for path, qualname in functions:
        module = store.get(path)
        function = module.functions.get(qualname) if module is not None else None
        if function is None:
            continue
        for param in _placement_parameters(function.node, function.params):
            origin = answers.answer(path, qualname, param)
            if origin is not None:
                found.append((path, qualname, param, origin))
    return found


def _placement_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> list[str]:
    """The parameters a function's own `.to(<parameter>)` / `.to(device=<parameter>)` calls receive."""
    found: list[str] = []
    for statement in statements(node.body):
        for call in calls(statement):
            if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
                continue
            given = next((k.value for k in call.keywords if k.arg == "device"), None)
            if given is None and call.args and not isinstance(call.args[0], ast.Starred):
                given = call.args[0]
            named = isinstance(given, ast.Name) and given.id in params and given.id not in found
            if named and isinstance(given, ast.Name) and not _rebound(node, given.id):
                found.append(given.id)
    return found


def loaded_onto_cuda_parameters(store: SummaryStore) -> list[tuple[str, str, str, DeviceOrigin]]:
    """(path, function, parameter, where the device is written) for the project's `torch.load` calls whose
    `map_location` is a parameter every caller fills with a CUDA device."""
    return list(DeviceParameters(store).loaded_onto_parameters())


__all__ = ["Callee", "DeviceOrigin", "DeviceParameters", "cpu_placed_parameters", "loaded_onto_cuda_parameters"]

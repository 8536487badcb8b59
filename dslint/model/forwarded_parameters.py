"""Calls that hand a module (`x.module`: what `engine.module` is) to a project function that runs it forward:

    def log_probs(self, model, batch):
        return model(**batch).logits          # the parameter is called: a forward pass

    scores = self.log_probs(self.engine.module, batch)

Whether `x.module` is an engine's module is the rules' question (the script facts know the engine); this answers,
for every call of a project function with an argument written `<something>.module`, whether the function calls
the parameter receiving it (`model(...)` or `model.forward(...)`) in its own body. The callee is found as the
project model resolves calls (same module, imports, `self.method` along the bases).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import handed_arguments
from dslint.model.library import INITIALIZE
from dslint.model.summary import FunctionInfo, ModuleSummary, nodes_of, own_nodes

MAX_BASES = 6


@dataclass(frozen=True)
class ForwardingCall:
    """A call at `line`/`column` (1-based; the column in characters) in `path` whose argument number `index`
    (positional) or keyword `name` is run forward by the callee `callee` (path, qualname), defined at `def_line`."""

    path: str
    line: int
    column: int
    index: int | None
    name: str
    callee: tuple[str, str]
    def_line: int


def forwarding_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[ForwardingCall]:
    """`x.module` handed to a function that runs it forward, where `x` is back-propagated through; and, in a
    function that calls `initialize(model=m)` (its results bound to other names) and back-propagates, `m` itself
    handed so (`losses(m, batch)` running `m(...)`: the raw module's forward, not the engine's)."""
    paths = list(paths)
    raw = _raw_model_names(model, paths)
    for handed in handed_arguments(model, paths, lambda a: _unwrapped(a) or (isinstance(a, ast.Name) and a.id in raw)):
        if not _forwards(handed.function, handed.param):
            continue
        call, index, module = handed.call, handed.index, model.module(handed.path)
        argument = call.args[index] if index is not None else _keyword(call, handed.keyword)
        if module is None:
            continue
        if isinstance(argument, ast.Name):
            if not _raw_model_trained(module, handed.qualname, argument.id):
                continue
        elif not _trained(model, module, handed.qualname, argument):
            continue
        if _only_run_without_grad(model, module, handed.qualname):
            continue
        yield ForwardingCall(
            handed.path, handed.line, handed.column, index, handed.param, handed.callee, handed.function.start
        )


def _raw_model_names(model: Evaluator, paths: list[str]) -> set[str]:
    """The names handed to `deepspeed.initialize` as its model in the modules `paths` (a first filter)."""
    names: set[str] = set()
    for path in paths:
        module = model.module(path)
        for node in nodes_of(module.tree, ast.Call) if module is not None else ():
            given = _initialize_model(module, node) if module is not None else None
            if given is not None:
                names.add(given)
    return names


def _initialize_model(module: ModuleSummary, node: ast.AST) -> str | None:
    """The name `node`, a `deepspeed.initialize(...)` call, is handed as its model, if a plain name."""
    if not isinstance(node, ast.Call) or module.qualified(node.func) != INITIALIZE.name:
        return None
    given = next((k.value for k in node.keywords if k.arg == INITIALIZE.model), None)
    position = INITIALIZE.positional.index("model")
    if given is None and len(node.args) > position:
        given = node.args[position]
    return given.id if isinstance(given, ast.Name) else None


def _raw_model_trained(module: ModuleSummary, qualname: str, name: str) -> bool:
    """The caller's own body hands `name` to `initialize` as its model, binds none of initialize's results to
    that name (it stays the raw module), and calls some `.backward(...)`: a training function."""
    function = module.functions.get(qualname) if qualname else None
    scope: ast.AST = function.node if function is not None else module.tree
    handed = backward = False
    for node in own_nodes(scope):
        if isinstance(node, ast.Assign) and _initialize_model(module, node.value) == name:
            stored = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if name in stored:
                return False  # `model, *_ = deepspeed.initialize(model=model)`: the name is the engine
            handed = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            backward = True
    return handed and backward


def _unwrapped(argument: ast.expr) -> bool:
    """An argument written `<something>.module`."""
    return isinstance(argument, ast.Attribute) and argument.attr == "module"


def _keyword(call: ast.Call, name: str | None) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _trained(model: Evaluator, module: ModuleSummary, qualname: str, argument: ast.expr | None) -> bool:
    """Whether what `<x>.module` unwraps is trained: `x.backward(...)` is called on it in the caller's own body,
    or, for `self.<attr>.module` in a method, `self.<attr>.backward(...)` in a method of the class, of a base or
    of a subclass (a reference model that only scores is never back-propagated through)."""
    if not isinstance(argument, ast.Attribute) or not isinstance(argument.value, (ast.Name, ast.Attribute)):
        return False
    holder = argument.value
    function = module.functions.get(qualname) if qualname else None
    if function is None:
        return False
    if isinstance(holder, ast.Name):
        return _backwards(function, lambda receiver: isinstance(receiver, ast.Name) and receiver.id == holder.id)
    if not (
        function.is_method
        and function.params
        and isinstance(holder.value, ast.Name)
        and holder.value.id == function.params[0]
    ):
        return False
    attribute = holder.attr
    cls = (module.path, function.owner)
    classes = [cls, *model.hierarchy.subclasses(cls), *_bases(model, cls)]
    for path, owner in classes:
        target = model.module(path)
        for method in target.functions.values() if target is not None else ():
            if method.owner != owner or not method.is_method or not method.params:
                continue
            me = method.params[0]

            def is_attribute(receiver: ast.expr, me: str = me) -> bool:
                return (
                    isinstance(receiver, ast.Attribute)
                    and receiver.attr == attribute
                    and isinstance(receiver.value, ast.Name)
                    and receiver.value.id == me
                )

            if _backwards(method, is_attribute):
                return True
    return False


def _bases(model: Evaluator, cls: tuple[str, str], depth: int = 0) -> list[tuple[str, str]]:
    module = model.module(cls[0])
    if module is None or depth > MAX_BASES:
        return []
    found: list[tuple[str, str]] = []
    for written in module.classes.get(cls[1], ()):
        base = model.hierarchy.resolve_class(module, written)
        if base is not None and base not in found:
            found.extend([base, *_bases(model, base, depth + 1)])
    return found


def _backwards(function: FunctionInfo, is_receiver: Callable[[ast.expr], bool]) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        and is_receiver(node.func.value)
        for node in own_nodes(function.node)
    )


NO_GRAD = frozenset({"no_grad", "inference_mode"})


def _forwards(function: FunctionInfo, param: str) -> bool:
    """Whether the function calls its parameter `param` (`param(...)`, `param.forward(...)`) with gradients on
    (not under a `no_grad`/`inference_mode` decorator or `with`), and never rebinds it."""
    if any(_names_no_grad(decorator) for decorator in function.node.decorator_list):
        return False
    for node in own_nodes(function.node):
        if isinstance(node, ast.Name) and node.id == param and isinstance(node.ctx, ast.Store):
            return False
    return _called(function.node.body, param)


def _called(body: list[ast.stmt], param: str) -> bool:
    def forward(node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        return isinstance(func, ast.Name) and func.id == param

    return _called_with_grad(body, forward)


def _called_with_grad(body: list[ast.stmt], matches: Callable[[ast.Call], bool]) -> bool:
    """Whether a call that `matches` runs in `body` outside any `with no_grad()` / `inference_mode()`."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            if any(_names_no_grad(item.context_expr) for item in statement.items):
                continue
            if _called_with_grad(statement.body, matches):
                return True
            continue
        inner: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            inner.extend(getattr(statement, name, []) or [])
        for handler in getattr(statement, "handlers", []) or []:
            inner.extend(handler.body)
        if inner and _called_with_grad(inner, matches):
            return True
        shallow = [child for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)]
        for child in shallow:
            if any(isinstance(node, ast.Call) and matches(node) for node in (child, *own_nodes(child))):
                return True
    return False


def _only_run_without_grad(model: Evaluator, module: ModuleSummary, qualname: str) -> bool:
    """A method every `self.<name>(...)` call of which, in its class, bases and subclasses, runs under `no_grad`
    (at least one call seen): what it runs forward trains nothing."""
    function = module.functions.get(qualname) if qualname else None
    if function is None or not function.is_method or not function.owner:
        return False
    name = qualname.rpartition(".")[2]
    cls = (module.path, function.owner)
    seen = False
    for path, owner in [cls, *model.hierarchy.subclasses(cls), *_bases(model, cls)]:
        target = model.module(path)
        for method in target.functions.values() if target is not None else ():
            if method.owner != owner or not method.is_method or not method.params:
                continue
            me = method.params[0]

            def calls_it(node: ast.Call, me: str = me) -> bool:
                func = node.func
                return (
                    isinstance(func, ast.Attribute)
                    and func.attr == name
                    and isinstance(func.value, ast.Name)
                    and func.value.id == me
                )

            if not any(isinstance(n, ast.Call) and calls_it(n) for n in own_nodes(method.node)):
                continue
            seen = True
            no_grad_method = any(_names_no_grad(d) for d in method.node.decorator_list)
            if not no_grad_method and _called_with_grad(method.node.body, calls_it):
                return False
    return seen


def _names_no_grad(expr: ast.expr) -> bool:
    """`torch.no_grad()`, `@torch.inference_mode()`, `no_grad` as written (its last name)."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    if isinstance(target, ast.Attribute):
        return target.attr in NO_GRAD
    return isinstance(target, ast.Name) and target.id in NO_GRAD

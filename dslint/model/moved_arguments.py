"""Calls that move their argument to a GPU inside the project function they call (and calls that load a state
dict into it there, `loading_calls`: the same question for another effect on the parameter):

    def place(model, device):
        model.to(device)                       # the parameter itself is moved

    class Base:
        def __init__(self, net):
            self.net = net.float().cuda()      # moved, and kept as `self.net`

    place(model, device)                       # a move of `model`, written in another function
    super().__init__(net)                      # a move of `net`, now `self.net` of this instance

Whether the argument is the model a `deepspeed.initialize` receives afterwards is the rules' question (DSL101 asks
the script facts); this answers, for every call of a project function with a plain name as an argument, whether
the callee moves the parameter receiving it in its own body: `.cuda(...)` or `.to(<not a dtype, not the CPU>)` on
the parameter, or on a name or `self.<attribute>` the body binds to it first (its method chain too:
`.float().cuda()`). The callee is found as the project model resolves calls (same module, imports, `self.method`
and `super().method` along the bases).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import arguments_where, handed_arguments, positional, resolved_calls
from dslint.model.resolution import Callee, scope_of
from dslint.model.summary import FunctionInfo, dotted

# `x.to(torch.float16)`: a cast (DSL104's), not a move
DTYPES = frozenset(
    {"float", "float16", "half", "bfloat16", "float32", "float64", "double", "int8", "uint8", "int32", "int64"}
)


# the 16-bit dtypes, as `torch.<name>`
HALF_DTYPES = frozenset({"float16", "half", "bfloat16"})


# `nn.Module` methods that return the module itself: a chain of them is still the parameter
RETURN_SELF = frozenset(
    {"cuda", "to", "cpu", "float", "half", "bfloat16", "double", "type", "train", "eval", "requires_grad_"}
)


@dataclass(frozen=True)
class MovingCall:
    """The call at `line`/`column` (1-based, the column in characters) in `path` hands its argument number `index`
    (positional) or keyword `keyword` to a callee that moves it to a GPU at `move_line` of `move_path`
    (`move_text`, the move as written); `stored`: the attribute of `self` the callee keeps it in, when the callee
    is a method of the caller's own instance (`super().__init__(net)`, `self.setup(net)`)."""

    path: str
    line: int
    column: int
    index: int | None
    keyword: str | None
    stored: str | None
    callee: str  # the callee's qualname
    move_path: str
    move_line: int
    move_column: int
    move_text: str
    callee_path: str = ""  # the module defining the callee (`state_saving_helper_calls` fills it)
    param: str = ""  # the callee's parameter receiving the argument (the same)


def moving_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every call in the modules `paths` whose plain-name argument the callee moves to a GPU."""
    return _effect_calls(model, paths, _move_in_chain, keep_stored=True)


def casting_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every call in the modules `paths` whose plain-name argument the callee casts to 16 bits (`.half()`,
    `.bfloat16()`, `.to(torch.float16)`, kept as `self.<attribute>` or not); the `move_*` fields give the cast."""
    return _effect_calls(model, paths, _cast_in_chain, keep_stored=True)


def loading_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every call in the modules `paths` whose plain-name argument the callee loads a state dict into
    (`def restore(model, path): model.load_state_dict(torch.load(path))`); the `move_*` fields give the load."""
    return _effect_calls(model, paths, _load_on, keep_stored=False)


def dict_saving_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every call in the modules `paths` handing `x.state_dict()` to a project function that writes that
    parameter with `torch.save` (`save_process(engine.state_dict(), path)`); the `move_*` fields give the save."""
    return _effect_calls(model, paths, _saved_whole, keep_stored=False, selected=_is_state_dict_call)


def state_saving_helper_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every call in the modules `paths` handing an object (a name, `self.optimizer`) to a project function that
    writes the object's `state_dict()` with `torch.save` (`save_optimizer(optimizer, path)` with
    `torch.save({"optimizer": opt.state_dict()}, path)`; `model.module` or an `if hasattr(model, "module")`
    unwrapping of it too; or hands the state on to a project function that saves what it gets, one call deeper);
    a save to a path that names the rank (a file per rank) is not one. The `move_*` fields give the save; which
    object it is, and whether its state is one rank's, are the rules' questions."""
    seen: dict[tuple[str, str, str], tuple[ast.Call, tuple[Guard, ...], str, str] | None] = {}
    for handed in handed_arguments(model, paths, _is_named):
        key = (*handed.callee, handed.param)
        if key not in seen:
            done = _state_saved(model, handed.callee, handed.function, handed.param)
            seen[key] = (*done, _line_text(model, done[2], done[0].lineno)) if done is not None else None
        found = seen[key]
        if found is None or _ruled_out(found[1], handed.function, handed.call):
            continue
        save, _, where, text = found
        yield MovingCall(
            handed.path, handed.line, handed.column, handed.index, handed.keyword, None,
            handed.callee[1], where, save.lineno, save.col_offset + 1, text, handed.callee[0], handed.param,
        )  # fmt: skip


def _is_named(argument: ast.expr) -> bool:
    return isinstance(argument, (ast.Name, ast.Attribute)) and dotted(argument) is not None


def _state_saved(
    model: Evaluator, callee: Callee, function: FunctionInfo, param: str
) -> tuple[ast.Call, tuple[Guard, ...], str] | None:
    """The first `torch.save` of the parameter's `state_dict()` (in a dict or list, or through a name bound to it)
    in the function's own body, the `if` tests around it and the module holding the save; names bound to the
    parameter, its `.module`, or either of the two by a conditional (`m = model.module if hasattr(model,
    "module") else model`) hold it too; a state handed to a project function that saves its parameter whole
    (`save_ckpt.save(state, out)`) is saved there."""
    holders, states = {param}, set[str]()
    for statement, guards in _guarded_statements(function.node.body, ()):
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr, ast.Return)) else None
        if value is None:
            continue
        if isinstance(value, ast.Call) and dotted(value.func) == "torch.save" and value.args:
            path = (
                value.args[1] if len(value.args) > 1 else next((k.value for k in value.keywords if k.arg == "f"), None)
            )
            per_rank = path is not None and "rank" in ast.unparse(path).lower()  # a file per rank
            if _holds_state(value.args[0], holders, states) and not per_rank:
                return value, guards, callee[0]
        elif isinstance(value, ast.Call):
            handed = _handed_state(model, callee, value, lambda a: _holds_state(a, holders, states))
            if handed is not None:
                return handed[0], guards, handed[1]
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = dotted(statement.targets[0])
            if target is None:
                continue
            holders.discard(target)
            states.discard(target)
            if _holds_object(value, holders):
                holders.add(target)
            elif _holds_state(value, holders, states):
                states.add(target)
    return None


def _handed_state(
    model: Evaluator, callee: Callee, call: ast.Call, holds: Callable[[ast.expr], bool]
) -> tuple[ast.Call, str] | None:
    """The `torch.save` of the project function `call` calls, of the parameter receiving an argument `holds`
    accepts (a state dict), and the module holding it."""
    passed = arguments_where(call, holds)
    module = model.module(callee[0]) if passed else None
    scope = scope_of(module, callee[1]) if module is not None else None
    inner = model.resolve(module, scope, call.func) if module is not None and scope is not None else None
    function = model.function(inner) if inner is not None else None
    if inner is None or function is None:
        return None
    for index, keyword in passed:
        param = keyword if keyword is not None else positional(function, index)
        done = _first_effect(function, param, _saved_whole) if param is not None else None
        if done is not None:
            return done[0], inner[0]
    return None


def _holds_object(value: ast.expr, holders: set[str]) -> bool:
    """A holder, its `.module`, a chain of methods returning it, or a conditional whose arms are all one of these."""
    if isinstance(value, ast.IfExp):
        return _holds_object(value.body, holders) and _holds_object(value.orelse, holders)
    root = _chain_root(value)
    if isinstance(root, ast.Attribute) and root.attr == "module":
        root = root.value
    return root is not None and dotted(root) in holders


def _holds_state(value: ast.expr, holders: set[str], states: set[str]) -> bool:
    """`h.state_dict()` of a holder, a name bound to one, or a dict, list or tuple holding one."""
    if isinstance(value, ast.Name):
        return value.id in states
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "state_dict":
        return _holds_object(value.func.value, holders)
    if isinstance(value, ast.Dict):
        return any(_holds_state(v, holders, states) for v in value.values)
    if isinstance(value, (ast.List, ast.Tuple)):
        return any(_holds_state(v, holders, states) for v in value.elts)
    return False


def _effect_calls(
    model: Evaluator,
    paths: Iterable[str],
    find: Callable[[ast.expr, set[str]], ast.Call | None],
    keep_stored: bool,
    selected: Callable[[ast.expr], bool] = lambda argument: isinstance(argument, ast.Name),
) -> Iterator[MovingCall]:
    """Every call in the modules `paths` whose argument (a plain name, or what `selected` takes) the callee does
    `find`'s effect on (the first such call in its body, not ruled out by an `if` over the literals the call
    passes); `keep_stored`: name the attribute of `self` the callee keeps it in, when the callee is a method of the
    caller's own instance."""
    # (callee, parameter) -> the effect, the attribute keeping it, the `if` tests around it, its line as written
    seen: dict[tuple[str, str, str], tuple[ast.Call, str | None, tuple[Guard, ...], str] | None] = {}
    for handed in handed_arguments(model, paths, selected):
        key = (*handed.callee, handed.param)
        if key not in seen:
            done = _first_effect(handed.function, handed.param, find)
            seen[key] = (*done, _line_text(model, handed.callee[0], done[0].lineno)) if done is not None else None
        found = seen[key]
        if found is None or _ruled_out(found[2], handed.function, handed.call):
            continue
        effect, stored, _, text = found
        own_instance = keep_stored and _on_own_instance(handed.call)
        yield MovingCall(
            handed.path, handed.line, handed.column, handed.index, handed.keyword, stored if own_instance else None,
            handed.callee[1], handed.callee[0], effect.lineno, effect.col_offset + 1, text,
        )  # fmt: skip


def own_moving_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every `super().method(...)` or `self.method(...)` in the modules `paths` whose callee moves an attribute of
    its own instance (`self.model.to(device)`), which is the caller's: a move of the caller's `self.model`."""
    return _own_effect_calls(model, paths, _move_in_chain)


def own_casting_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[MovingCall]:
    """Every `self.method(...)` or `super().method(...)` in the modules `paths` whose callee casts an attribute
    of its own instance to 16 bits (`self.model.half()`): a cast of the caller's `self.model`."""
    return _own_effect_calls(model, paths, _cast_in_chain)


def _own_effect_calls(
    model: Evaluator, paths: Iterable[str], find: Callable[[ast.expr, set[str]], ast.Call | None]
) -> Iterator[MovingCall]:
    for found in resolved_calls(model, paths, lambda _, call: _on_own_instance(call)):
        function = model.function(found.callee)
        done = _own_attribute_effect(model, found.callee, 0, find) if function is not None else None
        if function is None or done is None or _ruled_out(done[2], function, found.call):
            continue
        effect, attribute, _, where = done
        text = _line_text(model, where, effect.lineno)
        yield MovingCall(
            found.path, found.line, found.column, None, None, attribute, found.callee[1], where,
            effect.lineno, effect.col_offset + 1, text,
        )  # fmt: skip


def _own_attribute_effect(
    model: Evaluator, callee: Callee, depth: int, find: Callable[[ast.expr, set[str]], ast.Call | None]
) -> tuple[ast.Call, str, tuple[Guard, ...], str] | None:
    """The first call `find` finds on `self.<attribute>` in a method's body (a move to a GPU:
    `self.model.float().cuda()`), or in a method of the same instance it calls first (`super().to(device)`, up
    the bases), with the `if` tests around it in this method and the path of the module holding it."""
    function = model.function(callee)
    me = function.params[0] if function is not None and function.is_method and function.params else None
    module = model.module(callee[0]) if me is not None else None
    if function is None or me is None or module is None or depth > 3:
        return None
    for statement, guards in _guarded_statements(function.node.body, ()):
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr, ast.Return)) else None
        root = _chain_root(value) if value is not None else None
        head, _, attribute = ((dotted(root) or "") if root is not None else "").partition(".")
        move = find(value, {f"{me}.{attribute}"}) if value is not None and head == me else None
        if move is not None and attribute and "." not in attribute:
            return move, attribute, guards, callee[0]
        if isinstance(statement, ast.Expr) and isinstance(value, ast.Call) and _on_own_instance(value):
            inner = model.resolve(module, scope_of(module, callee[1]), value.func)
            found = _own_attribute_effect(model, inner, depth + 1, find) if inner is not None else None
            if found is not None:
                return found[0], found[1], guards + found[2], found[3]
    return None


def _line_text(model: Evaluator, path: str, line: int) -> str:
    lines = model.store.sources.get(path, b"").splitlines()
    return lines[line - 1].decode("utf-8", errors="replace").strip() if 0 < line <= len(lines) else ""


def _on_own_instance(call: ast.Call) -> bool:
    """`super().method(...)` or `self.method(...)`: the callee's `self` is the caller's."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value
    if isinstance(receiver, ast.Call):
        return isinstance(receiver.func, ast.Name) and receiver.func.id == "super"
    return isinstance(receiver, ast.Name) and receiver.id == "self"


Guard = tuple[ast.expr, bool]  # an `if` test around the move, and whether the move is in its body (not `else`)


def _is_state_dict_call(argument: ast.expr) -> bool:
    """`x.state_dict()`."""
    return (
        isinstance(argument, ast.Call)
        and isinstance(argument.func, ast.Attribute)
        and argument.func.attr == "state_dict"
        and not argument.args
    )


def _saved_whole(value: ast.expr, holders: set[str]) -> ast.Call | None:
    """`torch.save(h, path)` on a holder of the parameter."""
    if isinstance(value, ast.Call) and dotted(value.func) == "torch.save" and value.args:
        return value if dotted(value.args[0]) in holders else None
    return None


def _load_on(value: ast.expr, holders: set[str]) -> ast.Call | None:
    """`h.load_state_dict(...)` on a holder of the parameter (its result kept or not)."""
    node = value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load_state_dict":
        return node if dotted(node.func.value) in holders else None
    return None


def _first_effect(
    function: FunctionInfo, param: str, find: Callable[[ast.expr, set[str]], ast.Call | None]
) -> tuple[ast.Call, str | None, tuple[Guard, ...]] | None:
    """The first call `find` finds on the parameter `param` (or on a name or `self.<attribute>` bound to it) in
    the function's own body, the attribute of `self` holding it then, and the `if` tests around the call."""
    me = function.params[0] if function.is_method and function.params else None
    holders = {param}
    stored: str | None = None
    for statement, guards in _guarded_statements(function.node.body, ()):
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr, ast.Return)) else None
        if value is None:
            continue
        move = find(value, holders)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = dotted(statement.targets[0])
            root = _chain_root(value)
            if target is not None and root is not None and dotted(root) in holders:
                holders.add(target)
                head, _, attribute = target.partition(".")
                if me is not None and head == me and attribute and "." not in attribute:
                    stored = attribute
        if move is not None:
            return move, stored, guards
    return None


def _guarded_statements(
    body: list[ast.stmt], guards: tuple[Guard, ...]
) -> Iterator[tuple[ast.stmt, tuple[Guard, ...]]]:
    """The statements of a body in source order with the `if` tests around each (not into nested definitions)."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield statement, guards
        if isinstance(statement, ast.If):
            yield from _guarded_statements(statement.body, (*guards, (statement.test, True)))
            yield from _guarded_statements(statement.orelse, (*guards, (statement.test, False)))
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _guarded_statements(inner, guards)
        for handler in statement.handlers if isinstance(statement, ast.Try) else ():
            yield from _guarded_statements(handler.body, guards)


def _ruled_out(guards: tuple[Guard, ...], function: FunctionInfo, call: ast.Call) -> bool:
    """Whether an `if` test around the move is false for this call: the test reads only parameters the call
    gives a literal (or leaves at a literal default), and evaluates to the other branch (`device == "cuda"` for
    `device="cpu"`)."""
    known = _literal_arguments(function, call)
    for test, in_body in guards:
        value = _evaluate(test, known)
        if value is not None and value != in_body:
            return True
    return False


def _literal_arguments(function: FunctionInfo, call: ast.Call) -> dict[str, object]:
    """Each parameter the call fills with a literal, or leaves at a literal default."""
    arguments = function.node.args
    params = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    defaults = dict(zip(params[len(params) - len(arguments.defaults) :], arguments.defaults, strict=True))
    defaults.update((a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d)
    given: dict[str, ast.expr] = {}
    positional = params[1:] if function.is_method else params
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return {}  # `*args`: which parameter gets what is unknown
        if index < len(positional):
            given[positional[index]] = argument
    given.update((k.arg, k.value) for k in call.keywords if k.arg is not None)
    if any(k.arg is None for k in call.keywords):
        return {}
    known: dict[str, object] = {}
    for name in {*params, *(a.arg for a in arguments.kwonlyargs)}:
        node = given.get(name, defaults.get(name))
        if isinstance(node, ast.Constant):
            known[name] = node.value
    return known


def _evaluate(test: ast.expr, known: dict[str, object]) -> bool | None:
    """A test over literal parameters (`p == "cuda"`, `p != c`, `p is None`, `p`, `not p`, `p in (...)`, `and`,
    `or`); None when it reads anything else."""
    if isinstance(test, ast.Name):
        return bool(known[test.id]) if test.id in known else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _evaluate(test.operand, known)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_evaluate(v, known) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in values else (None if None in values else True)
        return True if True in values else (None if None in values else False)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
        if test.left.id not in known:
            return None
        left, op, right = known[test.left.id], test.ops[0], test.comparators[0]
        if isinstance(right, (ast.Tuple, ast.List, ast.Set)) and isinstance(op, (ast.In, ast.NotIn)):
            if not all(isinstance(e, ast.Constant) for e in right.elts):
                return None
            inside = left in [e.value for e in right.elts if isinstance(e, ast.Constant)]
            return inside if isinstance(op, ast.In) else not inside
        if not isinstance(right, ast.Constant):
            return None
        if isinstance(op, (ast.Eq, ast.Is)):
            return left == right.value
        if isinstance(op, (ast.NotEq, ast.IsNot)):
            return left != right.value
    return None


def _move_in_chain(value: ast.expr, holders: set[str]) -> ast.Call | None:
    """`h.cuda()`, `h.float().to(device)`: the move in a chain of methods returning the module itself, on a holder
    of the parameter (`h.get_encoder().cuda()` moves a part of it: not this)."""
    return _in_chain(value, holders, _is_device_move)


def _cast_in_chain(value: ast.expr, holders: set[str]) -> ast.Call | None:
    """`h.half()`, `h.to(torch.bfloat16)`, `h.cuda().half()`: a cast to 16 bits in a chain of methods returning
    the module itself, on a holder of the parameter (a dtype the code computes, `h.to(dtype)`, is not known)."""
    return _in_chain(value, holders, _is_half_cast)


def _in_chain(value: ast.expr, holders: set[str], effect: Callable[[ast.Call], bool]) -> ast.Call | None:
    """The last call of a chain of methods returning the module itself that has `effect`, when the chain starts
    at a holder of the parameter."""
    node: ast.expr = value
    found: ast.Call | None = None
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RETURN_SELF:
        if effect(node):
            found = node
        node = node.func.value
    return found if found is not None and dotted(node) in holders else None


def _is_half_cast(call: ast.Call) -> bool:
    """`.half()`, `.bfloat16()`, `.to(torch.float16)`, `.to(device, dtype=torch.bfloat16)`, `.type(torch.half)`."""
    assert isinstance(call.func, ast.Attribute)
    if call.func.attr in ("half", "bfloat16"):
        return True
    if call.func.attr not in ("to", "type"):
        return False
    given = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    return any(isinstance(g, ast.Attribute) and g.attr in HALF_DTYPES for g in given)


def _chain_root(value: ast.expr) -> ast.expr | None:
    """What a chain of methods returning the module itself (`net.float().cuda()`) is called on."""
    node: ast.expr = value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RETURN_SELF:
        node = node.func.value
    return node if isinstance(node, (ast.Name, ast.Attribute)) else None


def _is_device_move(call: ast.Call) -> bool:
    """`.cuda(...)`, or `.to(x)` where `x` is not a dtype (`torch.float16`) nor the CPU (`"cpu"`)."""
    assert isinstance(call.func, ast.Attribute)
    if call.func.attr == "cuda":
        return True
    if call.func.attr != "to":
        return False
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
    if first is None:
        return False
    if isinstance(first, ast.Constant):
        return isinstance(first.value, (int, str)) and not (isinstance(first.value, str) and first.value == "cpu")
    if isinstance(first, ast.Attribute) and first.attr in DTYPES:
        return False
    return not (isinstance(first, ast.Name) and "dtype" in first.id.lower())

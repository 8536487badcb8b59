"""`torch.load(...)` calls: where their `map_location` is, whether it names a CUDA device, and the edits that
make it `"cpu"`. Shared by the checkpoint rules (DSL201, DSL202, DSL203)."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Edit
from dslint.script.context import ScriptContext
from dslint.script.facts import BindingKind, ScriptFacts
from dslint.script.names import dotted_name

TORCH_LOAD = "torch.load"
TORCH_DEVICE = "torch.device"
CPU = '"cpu"'
# torch.load(f, map_location=None, pickle_module=..., *, weights_only=..., mmap=..., **pickle_load_args)
MAP_LOCATION_POSITION = 1


def is_torch_load(facts: ScriptFacts, call: cst.Call) -> bool:
    return facts.qualified(call.func) == TORCH_LOAD


def has_star_arguments(call: cst.Call) -> bool:
    """`*args` / `**kwargs`: what they hold (a map_location, perhaps) cannot be known."""
    return any(arg.star for arg in call.args)


def map_location_argument(call: cst.Call) -> cst.Arg | None:
    """The argument that gives `map_location` (by keyword, or the second positional one)."""
    positional = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            if arg.keyword.value == "map_location":
                return arg
            continue
        if positional == MAP_LOCATION_POSITION:
            return arg
        positional += 1
    return None


def is_cuda_device(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
    """`"cuda"`, `"cuda:1"`, `f"cuda:{rank}"`, `torch.device("cuda", rank)`, or a name bound to one of them."""
    if depth > 4:
        return False
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))
    if isinstance(expr, cst.FormattedString):
        first = expr.parts[0] if expr.parts else None
        return isinstance(first, cst.FormattedStringText) and (first.value == "cuda" or first.value.startswith("cuda:"))
    if isinstance(expr, cst.IfExp):
        return is_cuda_device(facts, expr.body, at, depth + 1) or is_cuda_device(facts, expr.orelse, at, depth + 1)
    if isinstance(expr, cst.Call):
        if facts.qualified(expr.func) != TORCH_DEVICE or not expr.args:
            return False
        device_type = expr.args[0]
        if device_type.star or (device_type.keyword is not None and device_type.keyword.value != "type"):
            return False
        return is_cuda_device(facts, device_type.value, at, depth + 1)
    key = dotted_name(expr)
    if key is None:
        return False
    binding = facts.binding_at(key, facts.scope_at(at), facts.start(at))
    if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
        return False
    return is_cuda_device(facts, binding.value, binding.value, depth + 1)


def cpu_map_location_edit(context: ScriptContext, call: cst.Call) -> Edit | None:
    """The edit that makes `call` load to the CPU: replace the map_location value, or add `map_location="cpu"`."""
    if has_star_arguments(call) or not call.args:
        return None
    existing = map_location_argument(call)
    if existing is not None:
        start, end = context.span(existing.value)
        return Edit(start, end, CPU)
    _, end = context.span(call.args[-1].value)
    return Edit.insertion(end, f", map_location={CPU}")


def with_cpu_map_location(call: cst.Call) -> cst.Call:
    """A copy of the `torch.load(...)` call that loads to the CPU (for code that a fix writes anew)."""
    existing = map_location_argument(call)
    if existing is not None:
        args = [arg.with_changes(value=cst.SimpleString(CPU)) if arg is existing else arg for arg in call.args]
        return call.with_changes(args=args)
    last = call.args[-1]
    keyword = cst.Arg(
        value=cst.SimpleString(CPU),
        keyword=cst.Name("map_location"),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    if isinstance(last.comma, cst.Comma):
        return call.with_changes(args=[*call.args, keyword])
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return call.with_changes(args=[*call.args[:-1], last.with_changes(comma=comma), keyword])

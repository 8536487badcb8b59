"""`torch.load(...)` calls: where their `map_location` is, whether it names a CUDA device, and the edits that
make it `"cpu"`. Shared by the checkpoint rules (DSL201, DSL202, DSL203)."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Edit
from dslint.script.context import ScriptContext
from dslint.script.facts import ScriptFacts
from dslint.script.value_flow import value_flow

TORCH_LOAD = "torch.load"
CPU = '"cpu"'
# torch.load(f, map_location=None, pickle_module=..., *, weights_only=..., mmap=..., **pickle_load_args)
MAP_LOCATION_POSITION = 1


# Functions that take back a saved random-generator state: torch's (CPU tensors by construction), Python's, NumPy's.
RNG_RESTORERS = frozenset({"set_rng_state", "set_rng_state_all", "setstate", "set_state"})


def is_torch_load(facts: ScriptFacts, call: cst.Call) -> bool:
    return facts.qualified(call.func) == TORCH_LOAD


def only_restores_rng_state(facts: ScriptFacts, call: cst.Call) -> bool:
    """`states = torch.load(f)` whose every read is handed (whole or by key) to an RNG-state setter
    (`torch.cuda.set_rng_state(states["cuda"])`, `random.setstate(states["python"])`): random-generator states
    are saved as CPU tensors (`torch.cuda.get_rng_state()` returns a CPU ByteTensor), so the load places nothing
    on a GPU whatever its map_location."""
    bound = facts.bound_to_name(call)
    if bound is None:
        return False
    small, name = bound
    scope_node = facts.scope_at(call).node
    reads = value_flow(facts, scope_node).reads_reached_by(small, name)
    if not reads:
        return False
    restored = _rng_restorer_arguments(scope_node, name)
    return all(id(read) in restored for read in reads)


def _rng_restorer_arguments(scope_node: cst.CSTNode, name: str) -> set[int]:
    """Ids of the reads of `name` that are an argument of an RNG-state setter, whole or subscripted once."""
    found: set[int] = set()
    stack: list[cst.CSTNode] = [scope_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        if node.func.attr.value not in RNG_RESTORERS:
            continue
        for arg in node.args:
            value = arg.value
            if isinstance(value, cst.Subscript):
                value = value.value
            if isinstance(value, cst.Name) and value.value == name:
                found.add(id(value))
    return found


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

"""`torch.load(...)` calls: where their `map_location` is, whether it names a CUDA device, and the edits that
make it `"cpu"`. Shared by the checkpoint rules (DSL201, DSL202, DSL203)."""

from __future__ import annotations

import re

import libcst as cst

from dslint.diagnostics import Edit, Related
from dslint.script.context import ScriptContext
from dslint.script.facts import ScriptFacts, method_name
from dslint.script.names import dotted_name
from dslint.script.value_flow import value_flow
from dslint.script.walk import children, visit_tree

TORCH_LOAD = "torch.load"
CPU = '"cpu"'
# torch.load(f, map_location=None, pickle_module=..., *, weights_only=..., mmap=..., **pickle_load_args)
MAP_LOCATION_POSITION = 1


# Functions that take back a saved random-generator state: torch's (CPU tensors by construction), Python's, NumPy's.
RNG_RESTORERS = frozenset({"set_rng_state", "set_rng_state_all", "setstate", "set_state"})


def is_torch_load(facts: ScriptFacts, call: cst.Call) -> bool:
    return facts.qualified(call.func) == TORCH_LOAD


# What a sampler or data loader saves of itself (`sampler.state_dict()`: epoch, offsets, seeds as Python values; a
# generator state as a CPU tensor): names of the loaded state, and of the object that takes it back. Likewise
# objects whose state holds numbers, never a GPU tensor: a sampler's or loader's (epochs, offsets, seeds), an LR
# scheduler's (`last_epoch`, `base_lrs`), a GradScaler's (`scale` as a float, `_growth_tracker` as an int)
_DATA_STATE_NAME = re.compile(r"(sampler|loader|scheduler|scaler)_state", re.IGNORECASE)
_DATA_OBJECT = re.compile(r"(sampler|dataloader|data_loader|loader|scheduler|scaler)$", re.IGNORECASE)


def loads_data_state(facts: ScriptFacts, call: cst.Call) -> bool:
    """The load reads a sampler's, a data loader's, an LR scheduler's or a GradScaler's own state, which holds no
    GPU tensor: its result is bound to a name like `sampler_state_dict` (`scheduler_state`), or handed straight
    to `<sampler, loader, scheduler or scaler>.load_state_dict(...)`."""
    bound = facts.bound_to_name(call)
    if bound is not None:
        return _DATA_STATE_NAME.search(bound[1]) is not None
    parent = _call_taking(facts.small_statement_of_call.get(call), call)
    if parent is None or method_name(parent) != "load_state_dict" or len(parent.args) != 1:
        return False
    receiver = parent.func.value if isinstance(parent.func, cst.Attribute) else None
    name = dotted_name(receiver) if receiver is not None else None
    return name is not None and _DATA_OBJECT.search(name.rpartition(".")[2]) is not None


def _call_taking(statement: cst.CSTNode | None, argument: cst.Call) -> cst.Call | None:
    """The call in `statement` that receives `argument` as one of its arguments."""

    class _Find(cst.CSTVisitor):
        found: cst.Call | None = None

        def visit_Call(self, node: cst.Call) -> None:
            if any(arg.value is argument for arg in node.args):
                self.found = node

    if statement is None:
        return None
    finder = _Find()
    visit_tree(statement, finder)
    return finder.found


def only_restores_rng_state(facts: ScriptFacts, call: cst.Call) -> bool:
    """`states = torch.load(f)` whose every read is handed (whole or by key) to an RNG-state setter
    (`torch.cuda.set_rng_state(states["cuda"])`, `random.setstate(states["python"])`): random-generator states
    are saved as CPU tensors (`torch.cuda.get_rng_state()` returns a CPU ByteTensor), so the load places nothing
    on a GPU whatever its map_location."""
    bound = facts.bound_to_name(call)
    if bound is None:
        return _attribute_only_restores_rng_state(facts, call)
    small, name = bound
    scope_node = facts.scope_at(call).node
    reads = value_flow(facts, scope_node).reads_reached_by(small, name)
    if not reads:
        return False
    restored = _rng_restorer_arguments(scope_node, name)
    return all(id(read) in restored for read in reads)


def _attribute_only_restores_rng_state(facts: ScriptFacts, call: cst.Call) -> bool:
    """`self.saved = torch.load(f)` in a method, whose every read `<first parameter>.saved` in any method of the
    module's classes (the same class's other methods, a subclass's) is handed, whole or by key, to an RNG-state
    setter. A read anywhere else (passed on, returned, loaded into a model) and the load is a real one."""
    small = facts.small_statement_of_call.get(call)
    if not (
        isinstance(small, cst.Assign)
        and small.value is call
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Attribute)
        and isinstance(small.targets[0].target.value, cst.Name)
    ):
        return False
    target = small.targets[0].target
    holder = facts.scope_at(call).node
    if not (isinstance(holder, cst.FunctionDef) and holder in _methods(facts.module)):
        return False
    if not isinstance(target, cst.Attribute) or not isinstance(target.value, cst.Name):
        return False
    if _first_parameter(holder) != target.value.value:
        return False  # `other.saved = ...`: not this instance's attribute
    attribute = target.attr.value
    reads = 0
    for method in _methods(facts.module):
        receiver = _first_parameter(method)
        if receiver is None:
            continue
        restored = _rng_restorer_arguments(method, attribute, receiver)
        harmless = _stores_and_tests(method)
        for node in _attribute_reads(method, receiver, attribute):
            if id(node) in harmless:
                continue
            if id(node) not in restored:
                return False
            reads += 1
    return reads > 0


def _stores_and_tests(scope_node: cst.CSTNode) -> set[int]:
    """Ids of the expressions of a function that do not hand a value on: assignment targets (a store reads
    nothing), the subject of `x is None` / `x is not None`, the test of an `if`/`while` and the operand of `not`."""
    found: set[int] = set()
    stack: list[cst.CSTNode] = [scope_node]
    while stack:
        node = stack.pop()
        stack.extend(children(node))
        if isinstance(node, cst.Assign):
            found.update(id(target.target) for target in node.targets)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            found.add(id(node.target))
        elif isinstance(node, (cst.If, cst.While)):
            found.add(id(node.test))
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            found.add(id(node.expression))
        elif (
            isinstance(node, cst.Comparison)
            and len(node.comparisons) == 1
            and isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot))
            and isinstance(node.comparisons[0].comparator, cst.Name)
            and node.comparisons[0].comparator.value == "None"
        ):
            found.add(id(node.left))
    return found


def _methods(module: cst.Module) -> list[cst.FunctionDef]:
    """Every function defined directly in a class body, at any depth of the module."""
    found: list[cst.FunctionDef] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
            found.extend(item for item in node.body.body if isinstance(item, cst.FunctionDef))
        stack.extend(children(node))
    return found


def _first_parameter(method: cst.FunctionDef) -> str | None:
    params = method.params
    first = (*params.posonly_params, *params.params)
    return first[0].name.value if first else None


def _attribute_reads(scope_node: cst.CSTNode, receiver: str, attribute: str) -> list[cst.Attribute]:
    """Every `receiver.attribute` in a function (stores included: the caller skips its own target; any other
    store rebinds the attribute to something unknown, which counts as a read that is not a restore)."""
    found: list[cst.Attribute] = []
    stack: list[cst.CSTNode] = [scope_node]
    while stack:
        node = stack.pop()
        stack.extend(children(node))
        if (
            isinstance(node, cst.Attribute)
            and node.attr.value == attribute
            and isinstance(node.value, cst.Name)
            and node.value.value == receiver
        ):
            found.append(node)
    return found


def _rng_restorer_arguments(scope_node: cst.CSTNode, name: str, receiver: str | None = None) -> set[int]:
    """Ids of the reads of `name` (of `receiver.name` when a receiver is given) that are an argument of an
    RNG-state setter, whole or subscripted once."""
    found: set[int] = set()
    stack: list[cst.CSTNode] = [scope_node]
    while stack:
        node = stack.pop()
        stack.extend(children(node))
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        if node.func.attr.value not in RNG_RESTORERS:
            continue
        for arg in node.args:
            value = arg.value
            if isinstance(value, cst.Subscript):
                value = value.value
            if (receiver is None and isinstance(value, cst.Name) and value.value == name) or (
                receiver is not None
                and isinstance(value, cst.Attribute)
                and value.attr.value == name
                and isinstance(value.value, cst.Name)
                and value.value.value == receiver
            ):
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


def passed_cuda_device(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> Related | None:
    """A parameter of the enclosing function that every caller in the project fills with a CUDA device
    (`def restore(path, dev): torch.load(path, map_location=dev)`, called with `torch.device(f"cuda:{rank}")`):
    where that device is written (`ProjectFacts.cuda_parameters`); None otherwise."""
    project = facts.project
    if project is None or not project.cuda_parameters or not isinstance(expr, cst.Name):
        return None
    binding = facts.binding_at(expr.value, facts.scope_at(at), facts.start(at))
    return facts.parameter_entry(project.cuda_parameters, binding)


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

"""The device an expression names (`dslint.model.values.Device`), read once for every rule that asks: DSL101 and
DSL002's moves of a model or engine (`model_moves`: to the CPU or not), DSL103 (the un-indexed CUDA device before
the device is set), DSL201 (`torch.load` to a CUDA device).

Read: `"cpu"`, `"cuda"`, `"cuda:1"`, f-strings and templates (`f"cuda:{rank}"`, `"cuda:{}".format(rank)`,
`"cuda:%d" % rank`), `torch.device(...)` (a type and an index, or a bare index), `get_accelerator().device_name()`,
both arms of `a if test else b`, a name or attribute through its assignment in the same scope, `self.<attr>` through
every assignment of it in the class's other methods, and a model
builder's parameter that every caller fills with the CPU (`ProjectFacts.cpu_parameters`). An index is
classified as a constant, the local rank (`LOCAL_RANK`, `args.local_rank`), the global rank (`dist.get_rank()`,
`rank`) or another index.
"""

from __future__ import annotations

import libcst as cst

from dslint.model.library import DEVICE_NAME_CALLS, GLOBAL_RANK_CALLS, LOCAL_RANK_ENV, TORCH_DEVICE
from dslint.model.values import CPU, CURRENT_CUDA, Device, DeviceIndex
from dslint.script.facts import BindingKind, Scope, ScriptFacts
from dslint.script.names import dotted_name
from dslint.script.value_flow import value_flow

MAX_DEPTH = 4
NONE: frozenset[Device] = frozenset()


def devices_of(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> frozenset[Device]:
    """Every device `expr` may name where `at` reads it (both arms of a conditional); empty when it names no
    device that can be known."""
    if depth > MAX_DEPTH:
        return NONE
    text = _literal_text(expr)
    if text is not None:
        named = _named(text)
        return frozenset({named}) if named is not None else NONE
    if isinstance(expr, cst.IfExp):
        return devices_of(facts, expr.body, at, depth + 1) | devices_of(facts, expr.orelse, at, depth + 1)
    template = _template(expr)
    if template is not None:
        index = _index(facts, template, at, depth) if not isinstance(template, str) else DeviceIndex.OTHER
        return frozenset({Device(True, index)})
    if isinstance(expr, cst.FormattedString):
        return _formatted(facts, expr, at, depth)
    if isinstance(expr, cst.Call):
        return _called(facts, expr, at, depth)
    reaching = reaching_values(facts, expr) if isinstance(expr, cst.Name) else None
    if reaching:  # every assignment that may be the value here (`if cuda: device = ... else: device = "cpu"`)
        found = NONE
        for value in reaching:
            found |= devices_of(facts, value, value, depth + 1)
        return found
    key = dotted_name(expr)
    if key is None:
        return NONE
    scope = facts.scope_at(at)
    binding = facts.binding_at(key, scope, facts.start(at))
    if binding is None and scope.self_name is not None and key.startswith(scope.self_name + "."):
        return _attribute_devices(facts, scope, "self" + key[len(scope.self_name) :], depth)
    project = facts.project
    if project is not None and facts.parameter_entry(project.cpu_parameters, binding) is not None:
        return frozenset({CPU})  # a builder's parameter that every caller fills with the CPU
    if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
        return NONE
    return devices_of(facts, binding.value, binding.value, depth + 1)


def _attribute_devices(facts: ScriptFacts, scope: Scope, key: str, depth: int) -> frozenset[Device]:
    """`self.device` read in a method, bound in other methods of the class (`__init__`: `torch.device(f"cuda:
    {rank}")` if CUDA is there, else the CPU): every device its plain assignments there may name; empty when one
    of them binds it otherwise (an unpacking, a parameter) or names no device that can be known."""
    found = NONE
    for binding in scope.bindings_in_other_methods(key):
        if binding.kind is not BindingKind.OTHER or binding.value is None:
            return NONE
        named = devices_of(facts, binding.value, binding.value, depth + 1)
        if not named:
            return NONE
        found |= named
    return found


def reaching_values(facts: ScriptFacts, read: cst.Name) -> list[cst.BaseExpression] | None:
    """The values of the plain assignments `name = value` whose binding may reach `read` in its scope; None when
    one of them binds otherwise (a loop target, an unpacking) or the scope's flow does not follow the name."""
    scope = facts.scope_at(read)
    if scope.node is None:
        return None
    definitions = value_flow(facts, scope.node).definitions_reaching(read)
    if definitions is None:
        return None
    values: list[cst.BaseExpression] = []
    for definition in definitions:
        if not (
            isinstance(definition, cst.Assign)
            and len(definition.targets) == 1
            and isinstance(definition.targets[0].target, cst.Name)
        ):
            return None
        values.append(definition.value)
    return values


def is_unindexed_cuda(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """The current CUDA device (`"cuda"`, `torch.device("cuda")`, `get_accelerator().device_name()`), on some
    path: cuda:0 in every process until the device is set."""
    return CURRENT_CUDA in devices_of(facts, expr, at)


def is_cuda_device(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """A CUDA device, indexed or not, on some path."""
    return any(device.cuda for device in devices_of(facts, expr, at))


def is_cpu(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """The CPU on every path (`"cpu"`, `torch.device("cpu")`, a name bound to one)."""
    return devices_of(facts, expr, at) == frozenset({CPU})


def _literal_text(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _named(text: str) -> Device | None:
    if text == "cpu":
        return CPU
    if text == "cuda":
        return CURRENT_CUDA
    if text.startswith("cuda:"):
        number = text[len("cuda:") :]
        return Device(True, DeviceIndex.CONSTANT, int(number)) if number.isdigit() else Device(True, DeviceIndex.OTHER)
    return None


def _template(expr: cst.BaseExpression) -> cst.BaseExpression | str | None:
    """`"cuda:{}".format(index)` and `"cuda:%d" % index`: the index expression (a string when there is none to
    read); None when `expr` is no such template."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        text = _literal_text(expr.func.value)
        if text is None or not text.startswith("cuda:"):
            return None
        return expr.args[0].value if len(expr.args) == 1 and expr.args[0].keyword is None else "?"
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        text = _literal_text(expr.left)
        if text is None or not text.startswith("cuda:"):
            return None
        return expr.right if not isinstance(expr.right, cst.Tuple) else "?"
    return None


def _formatted(facts: ScriptFacts, expr: cst.FormattedString, at: cst.CSTNode, depth: int) -> frozenset[Device]:
    """`f"cuda:{rank}"`; `f"cuda"` alone is the current device."""
    parts = expr.parts
    first = parts[0] if parts else None
    if not isinstance(first, cst.FormattedStringText):
        return NONE
    if first.value == "cuda" and len(parts) == 1:
        return frozenset({CURRENT_CUDA})
    if first.value != "cuda" and not first.value.startswith("cuda:"):
        return NONE
    following = parts[1] if len(parts) == 2 and first.value == "cuda:" else None
    if isinstance(following, cst.FormattedStringExpression):
        return frozenset({Device(True, _index(facts, following.expression, at, depth))})
    named = _named(first.value) if len(parts) == 1 else None
    return frozenset({named if named is not None else Device(True, DeviceIndex.OTHER)})


def _called(facts: ScriptFacts, call: cst.Call, at: cst.CSTNode, depth: int) -> frozenset[Device]:
    qualified = facts.qualified(call.func)
    if qualified in DEVICE_NAME_CALLS:
        if not call.args:
            return frozenset({CURRENT_CUDA})
        return frozenset({Device(True, _index(facts, call.args[0].value, at, depth))})
    if qualified != TORCH_DEVICE or not call.args:
        return NONE
    # torch.device(type, index=None) or torch.device(index)
    kind = call.args[0]
    if kind.star or (kind.keyword is not None and kind.keyword.value != "type"):
        return NONE
    if len(call.args) == 1 and _is_device_index(facts, kind.value, at):
        index = _index(facts, kind.value, at, depth)
        return frozenset({Device(True, index, _number(kind.value))})  # torch.device(0): a CUDA device
    named = devices_of(facts, kind.value, at, depth + 1)
    given = call.args[1] if len(call.args) == 2 else None
    if given is None or given.star or (given.keyword is not None and given.keyword.value != "index"):
        if len(call.args) == 1:
            return named
        return frozenset(Device(True, DeviceIndex.OTHER) if d.cuda else d for d in named)
    index = _index(facts, given.value, at, depth)
    return frozenset(Device(True, index, _number(given.value)) if d == CURRENT_CUDA else d for d in named)


def _is_device_index(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """An integer literal, or a name bound to one or to `int(...)` (`local_rank = int(os.environ["LOCAL_RANK"])`)."""
    if isinstance(expr, cst.Integer):
        return True
    if not isinstance(expr, cst.Name):
        return False
    binding = facts.binding_at(expr.value, facts.scope_at(at), facts.start(at))
    if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
        return False
    value = binding.value
    if isinstance(value, cst.Integer):
        return True
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "int"
        and facts.qualified(value.func) is None  # the builtin, not an imported `int`
    )


def _number(expr: cst.BaseExpression) -> int | None:
    return int(expr.value, 0) if isinstance(expr, cst.Integer) else None


def device_index(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> DeviceIndex:
    """Where a device index `expr` comes from (`.to(local_rank)`, `.cuda(args.local_rank)`)."""
    return _index(facts, expr, at)


def _index(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> DeviceIndex:
    """Where a device index comes from: a constant, the local rank, the global rank, or something else."""
    if depth > MAX_DEPTH:
        return DeviceIndex.OTHER
    if isinstance(expr, cst.Integer):
        return DeviceIndex.CONSTANT
    if isinstance(expr, cst.Call):
        qualified = facts.qualified(expr.func)
        if qualified in GLOBAL_RANK_CALLS:
            return DeviceIndex.GLOBAL_RANK
        if isinstance(expr.func, cst.Name) and expr.func.value == "int" and len(expr.args) == 1:
            return _index(facts, expr.args[0].value, at, depth + 1)
        if qualified in ("os.getenv", "os.environ.get") and expr.args:
            return _environment(expr.args[0].value)
        return DeviceIndex.OTHER
    if isinstance(expr, cst.Subscript) and facts.qualified(expr.value) == "os.environ" and len(expr.slice) == 1:
        element = expr.slice[0].slice
        return _environment(element.value) if isinstance(element, cst.Index) else DeviceIndex.OTHER
    key = dotted_name(expr)
    if key is None:
        return DeviceIndex.OTHER
    last = key.rpartition(".")[2].lower()
    if "local_rank" in last:
        return DeviceIndex.LOCAL_RANK
    if last in ("rank", "global_rank"):
        return DeviceIndex.GLOBAL_RANK
    binding = facts.binding_at(key, facts.scope_at(at), facts.start(at))
    if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
        return DeviceIndex.OTHER
    return _index(facts, binding.value, binding.value, depth + 1)


def _environment(name: cst.BaseExpression) -> DeviceIndex:
    text = _literal_text(name)
    if text == LOCAL_RANK_ENV:
        return DeviceIndex.LOCAL_RANK
    return DeviceIndex.GLOBAL_RANK if text == "RANK" else DeviceIndex.OTHER

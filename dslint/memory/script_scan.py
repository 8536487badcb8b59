"""What a training script's text says that moves memory, read with `ast` (never imported): where
`deepspeed.initialize` is called, each `torch.load` (its `map_location`, its path when literal), whether the model
is built under `deepspeed.zero.Init`, and the client optimizer it builds."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from dslint.memory.model_states import OPTIMIZER_STATE_BYTES

# Client optimizers whose state size is known (OPTIMIZER_STATE_BYTES), as classes are spelt.
_SGD = "SGD"


@dataclass(frozen=True)
class TorchLoad:
    line: int
    map_location: str | None  # the literal ("cpu", "cuda", "cuda:0"), "<absent>", or None when not literal
    path: str | None  # the first argument when a literal string
    conditional: bool = False  # inside an `if` (it may not run)
    kept: bool = False  # bound to a name (`state = torch.load(...)`) never `del`eted: it lives on after the load


@dataclass(frozen=True)
class ScriptMemoryFacts:
    initialize_lines: tuple[int, ...] = ()
    torch_loads: tuple[TorchLoad, ...] = ()
    zero_init: bool = False
    optimizer: str | None = None  # the client optimizer class built in the script
    optimizer_line: int = 0
    parsed: bool = True
    config_literal: str | None = None  # `deepspeed.initialize(..., config="ds.json")`

    def before_initialize(self, line: int) -> bool | None:
        """Whether a line runs before the first initialize (by line order; None when no initialize is seen)."""
        if not self.initialize_lines:
            return None
        return line < min(self.initialize_lines)


ABSENT = "<absent>"


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def scan(source: bytes | str) -> ScriptMemoryFacts:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ScriptMemoryFacts(parsed=False)
    initialize: list[int] = []
    loads: list[TorchLoad] = []
    zero_init = False
    optimizer: tuple[str, int] | None = None
    config_literal: str | None = None
    known = {name.lower() for name in OPTIMIZER_STATE_BYTES} | {_SGD.lower()}
    conditional_lines = _conditional_lines(tree)
    bound, deleted = _bound_loads(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = _name(function)
        owner = _name(function.value) if isinstance(function, ast.Attribute) else None
        if name == "initialize" and (owner in ("deepspeed", None) or owner == "ds"):
            initialize.append(node.lineno)
            for keyword in node.keywords:
                value = keyword.value
                literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
                if keyword.arg in ("config", "config_params") and literal and config_literal is None:
                    config_literal = str(getattr(value, "value", ""))
        elif name == "load" and owner == "torch":
            name_bound = bound.get(id(node))
            kept = name_bound is not None and not any(line > node.lineno for line in deleted.get(name_bound, ()))
            loads.append(_torch_load(node, node.lineno in conditional_lines, kept))
        elif name == "Init" and owner == "zero":
            zero_init = True
        elif (
            name is not None
            and name.lower() in known
            and name[0].isupper()
            and (optimizer is None or node.lineno < optimizer[1])
        ):
            optimizer = (name, node.lineno)
    return ScriptMemoryFacts(
        tuple(sorted(initialize)),
        tuple(sorted(loads, key=lambda load: load.line)),
        zero_init,
        optimizer[0] if optimizer else None,
        optimizer[1] if optimizer else 0,
        config_literal=config_literal,
    )


def _conditional_lines(tree: ast.Module) -> set[int]:
    """Lines of the statements inside an `if` body or branch."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            for statement in [*node.body, *node.orelse]:
                end = getattr(statement, "end_lineno", None) or statement.lineno
                lines.update(range(statement.lineno, end + 1))
    return lines


def _bound_loads(tree: ast.Module) -> tuple[dict[int, str], dict[str, list[int]]]:
    """`name = torch.load(...)`: the call's id -> the name; and the lines where each name is `del`eted."""
    bound: dict[int, str] = {}
    deleted: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            bound[id(node.value)] = node.targets[0].id
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    deleted.setdefault(target.id, []).append(node.lineno)
    return bound, deleted


def _torch_load(call: ast.Call, conditional: bool, kept: bool) -> TorchLoad:
    location: ast.expr | None = None
    for keyword in call.keywords:
        if keyword.arg == "map_location":
            location = keyword.value
    if location is None and len(call.args) >= 2:
        location = call.args[1]
    value: str | None
    if location is None:
        value = ABSENT
    elif isinstance(location, ast.Constant) and isinstance(location.value, str):
        value = location.value
    elif (
        isinstance(location, ast.Call)
        and _name(location.func) == "device"
        and location.args
        and isinstance(location.args[0], ast.Constant)
        and isinstance(location.args[0].value, str)
    ):
        value = location.args[0].value
    else:
        value = None
    path = None
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        path = call.args[0].value
    return TorchLoad(call.lineno, value, path, conditional, kept)

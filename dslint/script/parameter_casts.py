"""A model cast to 16 bits one parameter at a time: `for p in model.parameters(): p.data = p.data.half()` (or
`.to(torch.bfloat16)`, `named_parameters()` with `for _, p in ...`), written in the function itself or in a function
of the same module that receives the model (`set_parameter_bf16(model)`). DSL104 asks, as for `model.half()`."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import method_name
from dslint.script.model_moves import is_cast
from dslint.script.names import dotted_name
from dslint.script.walk import visit_tree

_PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})


def parameter_loops(module: cst.Module) -> dict[cst.Call, cst.BaseExpression]:
    """Every 16-bit cast of a loop's parameter (`p.data.half()` in `p.data = p.data.half()` under `for p in
    M.parameters():`) -> the expression `M` whose parameters the loop walks."""
    finder = _LoopCasts()
    visit_tree(module, finder)
    return finder.casts


def cast_loops(module: cst.Module) -> dict[cst.Call, cst.For]:
    """Every such cast -> the innermost `for` loop walking the parameters it casts."""
    finder = _LoopCasts()
    visit_tree(module, finder)
    return finder.loop_of


def casting_helpers(module: cst.Module) -> dict[str, tuple[int, str]]:
    """The module's top-level functions that cast every parameter of one of their own parameters to 16 bits in
    such a loop: name -> (the parameter's position, its name)."""
    found: dict[str, tuple[int, str]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        params = [p.name.value for p in (*statement.params.posonly_params, *statement.params.params)]
        finder = _LoopCasts()
        visit_tree(statement.body, finder)
        walked = {dotted_name(expr) for expr in finder.casts.values()}
        for position, name in enumerate(params):
            if name in walked:
                found[statement.name.value] = (position, name)
                break
    return found


def helper_argument(call: cst.Call, helpers: dict[str, tuple[int, str]]) -> cst.BaseExpression | None:
    """The argument that `call` of a casting helper hands it as the model to cast."""
    if not isinstance(call.func, cst.Name) or call.func.value not in helpers:
        return None
    position, name = helpers[call.func.value]
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is not None and arg.keyword.value == name) or (arg.keyword is None and index == position):
            return arg.value
    return None


class _LoopCasts(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.casts: dict[cst.Call, cst.BaseExpression] = {}
        self.loop_of: dict[cst.Call, cst.For] = {}
        self.loops: list[tuple[str, cst.BaseExpression]] = []  # (loop variable, the model it walks)
        self.fors: list[cst.For] = []

    def visit_For(self, node: cst.For) -> None:
        walked = _walked_model(node)
        if walked is not None:
            self.loops.append(walked)
            self.fors.append(node)

    def leave_For(self, original_node: cst.For) -> None:
        if _walked_model(original_node) is not None:
            self.loops.pop()
            self.fors.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.loops or len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target = node.targets[0].target
        variable, model = self.loops[-1]
        if (
            dotted_name(target) == f"{variable}.data"
            and is_cast(node.value)
            and _casts_to_16_bits(node.value)
            and isinstance(node.value.func, cst.Attribute)
            and dotted_name(node.value.func.value) == f"{variable}.data"
        ):
            self.casts[node.value] = model
            self.loop_of[node.value] = self.fors[-1]


def _walked_model(node: cst.For) -> tuple[str, cst.BaseExpression] | None:
    """`for p in M.parameters()` / `for _, p in M.named_parameters()`: (p, M)."""
    iterated = node.iter
    if not (
        isinstance(iterated, cst.Call)
        and method_name(iterated) in _PARAMETER_ITERATORS
        and isinstance(iterated.func, cst.Attribute)
    ):
        return None
    target: cst.BaseExpression = node.target
    if isinstance(target, cst.Tuple) and method_name(iterated) == "named_parameters" and len(target.elements) == 2:
        target = target.elements[1].value
    if not isinstance(target, cst.Name):
        return None
    return target.value, iterated.func.value


def _casts_to_16_bits(call: cst.Call) -> bool:
    """`.half()`, `.bfloat16()`, `.to(torch.float16 | torch.half | torch.bfloat16)` (also by `dtype=`)."""
    name = method_name(call)
    if name in ("half", "bfloat16"):
        return True
    return any((dotted_name(arg.value) or "").split(".")[-1] in ("float16", "half", "bfloat16") for arg in call.args)

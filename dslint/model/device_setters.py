"""Project functions that set the current CUDA device (`library.SET_DEVICE_CALLS`: `torch.cuda.set_device`,
`get_accelerator().set_device`...), themselves or through project functions they call, up to `DEPTH` calls deep:
`utils.init_distributed_mode(args)` in the timm-style scripts sets the rank's device before the script's own
`model.to("cuda")`. A call of one, where a file makes it, sets the device as a `set_device` of its own would
(`ProjectFacts.device_setting_calls`, read by `script/collect.py`).

Asked from the files that may move a model before DeepSpeed gets it (the callers given), down the calls they make:
only the functions those calls reach are read, never the whole project.
"""

from __future__ import annotations

from collections.abc import Iterable

from dslint.model.device_parameters import is_device_setter
from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import resolved_calls
from dslint.model.resolution import Callee, scope_of

DEPTH = 4  # calls between the file's call and the function calling set_device


def device_setting_calls(model: Evaluator, callers: Iterable[str]) -> dict[str, set[tuple[int, int]]]:
    """For each module of `callers`, where (line, column: 1-based, in characters) it calls a project function that
    sets the current device."""
    memo: dict[Callee, bool] = {}
    found: dict[str, set[tuple[int, int]]] = {}
    for call in resolved_calls(model, callers, lambda _, node: True):
        if _sets_device(model, call.callee, 1, memo):
            found.setdefault(call.path, set()).add((call.line, call.column))
    return found


def _sets_device(model: Evaluator, callee: Callee, depth: int, memo: dict[Callee, bool]) -> bool:
    if callee in memo:
        return memo[callee]
    memo[callee] = False  # a call cycle is no evidence
    path, qualname = callee
    module = model.module(path)
    body = next((calls for name, calls in module.body_calls() if name == qualname), []) if module else []
    if module is None or not body:
        return False
    if any(is_device_setter(module, call) for call in body):
        memo[callee] = True
    elif depth < DEPTH:
        scope = scope_of(module, qualname)
        memo[callee] = any(
            (inner := model.resolve(module, scope, call.func)) is not None
            and _sets_device(model, inner, depth + 1, memo)
            for call in body
        )
    return memo[callee]

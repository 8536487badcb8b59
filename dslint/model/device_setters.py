"""Project functions that set the current CUDA device (`library.SET_DEVICE_CALLS`: `torch.cuda.set_device`,
`get_accelerator().set_device`...), themselves or through project functions they call, up to `DEPTH` calls deep:
`utils.init_distributed_mode(args)` in the timm-style scripts sets the rank's device before the script's own
`model.to("cuda")`. A call of one, where a file makes it, sets the device as a `set_device` of its own would
(`ProjectFacts.device_setting_calls`, read by `script/collect.py`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import resolved_calls
from dslint.model.library import SET_DEVICE_CALLS
from dslint.model.resolution import Callee
from dslint.model.summary import ModuleSummary

DEPTH = 4  # calls between the file's call and the function calling set_device


def device_setting_calls(model: Evaluator, paths: Iterable[str]) -> dict[str, set[tuple[int, int]]]:
    """For each module of `paths`, where (line, column: 1-based, in characters) it calls a project function that
    sets the current device."""
    sources = model.store.sources
    setters: set[Callee] = set()
    for path in paths:
        module = model.module(path) if b"set_device" in sources.get(path, b"") else None
        if module is None:
            continue
        for qualname, body in module.body_calls():
            if qualname and any(_called_name(module, call.func) in SET_DEVICE_CALLS for call in body):
                setters.add((path, qualname))
    found: dict[str, set[tuple[int, int]]] = {}
    for _ in range(DEPTH):
        if not setters:
            break
        names = frozenset(qualname.rpartition(".")[2] for _, qualname in setters)
        callers = [p for p in paths if any(name.encode() in sources.get(p, b"") for name in names)]
        added: set[Callee] = set()
        for call in resolved_calls(model, callers, _named(names)):
            if call.callee in setters:
                found.setdefault(call.path, set()).add((call.line, call.column))
                if call.qualname and (call.path, call.qualname) not in setters:
                    added.add((call.path, call.qualname))
        if not added:
            break
        setters |= added
    return found


def _called_name(module: ModuleSummary, func: ast.expr) -> str:
    """`torch.cuda.set_device`, or through a call in the chain `deepspeed.accelerator.get_accelerator().set_device`
    (as `library.SET_DEVICE_CALLS` writes it)."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        head = module.qualified(func.value.func)
        return f"{head}().{func.attr}" if head is not None else ""
    return module.qualified(func) or ""


def _named(names: frozenset[str]) -> Callable[[str, ast.Call], bool]:
    return lambda _, call: _last_name(call.func) in names


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None

"""Calls that hand accelerate's `Accelerator` to a project function that calls `save_state` on it, directly or
through further project functions (a few levels):

    def save_state_on_train_end(args, accelerator):
        accelerator.save_state(os.path.join(args.output_dir, "last-state"))

    if accelerator.is_main_process:
        train_util.save_state_on_train_end(args, accelerator)

Whether the call runs on one rank only, and whether accelerate runs DeepSpeed there, is DSL428's question; this
answers, for every call of a project function with an argument named `accelerator` (`accelerator`,
`self.accelerator`), whether the parameter receiving it reaches a `save_state` call. The callee is found as the
project model resolves calls (same module, imports, `self.method` along the bases). Also where the project builds
accelerate's `DeepSpeedPlugin`, the evidence that its accelerate runs may be DeepSpeed runs: for each saving
call, a plugin its module reaches through the project's imports (`plugin_reaching`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Callee, Evaluator, FunctionSummary
from dslint.model.summary import FunctionInfo, ModuleSummary, SummaryStore, character_column, own_nodes

MAX_DEPTH = 3
MAX_IMPORT_DEPTH = 4  # import levels between a saving call's module and the one building the DeepSpeedPlugin
_PLUGIN = re.compile(rb"\bDeepSpeedPlugin\s*\(")


@dataclass(frozen=True)
class StateSavingCall:
    """A call at `line`/`column` (1-based, the column in characters) in `path` whose argument `name` (the
    callee's parameter) reaches `accelerator.save_state(...)` in `saver` (path, qualname), at `save_line`."""

    path: str
    line: int
    column: int
    name: str
    saver: tuple[str, str]
    save_line: int


def state_saving_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[StateSavingCall]:
    memo: dict[tuple[Callee, str], tuple[Callee, int] | None] = {}
    for path in paths:
        module = model.module(path)
        if module is None:
            continue
        lines = model.store.sources.get(path, b"").splitlines()
        for qualname, body_calls in module.body_calls():
            scope = _scope(module, qualname)
            for call in body_calls:
                passed = _accelerator_arguments(call)
                if not passed:
                    continue
                callee = model.resolve(module, scope, call.func)
                function = model.function(callee) if callee is not None else None
                if callee is None or function is None:
                    continue
                for index, keyword in passed:
                    param = keyword if keyword is not None else _positional(function, index)
                    found = _saves(model, callee, function, param, 0, memo) if param is not None else None
                    if found is None:
                        continue
                    column = character_column(lines, call.lineno, call.col_offset) + 1
                    assert param is not None
                    yield StateSavingCall(path, call.lineno, column, param, found[0], found[1])


def plugin_sites(sources: dict[str, bytes]) -> dict[str, int]:
    """Every project file that builds accelerate's `DeepSpeedPlugin(...)`, with the line of its first."""
    sites: dict[str, int] = {}
    for path in sorted(sources):
        data = sources[path]
        match = _PLUGIN.search(data)
        if match is not None and b"accelerate" in data:
            sites[path] = data.count(b"\n", 0, match.start()) + 1
    return sites


def plugin_reaching(store: SummaryStore, path: str, sites: dict[str, int]) -> tuple[str, int] | None:
    """The DeepSpeedPlugin site on one run with `path`: the module itself, one it imports from the project
    (directly or through other project modules, a few levels, nearest first), or one whose module imports
    `path`'s (an entry script building the plugin and calling a library's saving helper). A plugin built in an
    unrelated script of the same repository (a monorepo's other project) is on no run with it."""
    if not sites:
        return None
    found = _imported(store, path, lambda current: current in sites)
    if found is not None:
        return found, sites[found]
    for site in sorted(sites):
        if _imported(store, site, lambda current: current == path) is not None:
            return site, sites[site]
    return None


def _imported(store: SummaryStore, path: str, wanted: Callable[[str], bool]) -> str | None:
    """The nearest module `wanted` among `path` and the project modules it imports (a few levels)."""
    return next((m for m in [path, *store.imported_modules(path, MAX_IMPORT_DEPTH)] if wanted(m)), None)


def _saves(
    model: Evaluator,
    callee: Callee,
    function: FunctionInfo,
    param: str,
    depth: int,
    memo: dict[tuple[Callee, str], tuple[Callee, int] | None],
) -> tuple[Callee, int] | None:
    """Where `param` of `function` reaches `save_state(...)`: its own call, or a project function it is handed to
    (to MAX_DEPTH levels); None when it does not, or when the function rebinds it."""
    key = (callee, param)
    if key in memo:
        return memo[key]
    memo[key] = None  # a cycle of calls ends here
    nodes = list(own_nodes(function.node))
    if any(isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Store) for n in nodes):
        return None
    found: tuple[Callee, int] | None = None
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save_state"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == param
        ):
            found = (callee, node.lineno)
            break
    if found is None and depth < MAX_DEPTH:
        module = model.module(callee[0])
        scope = _scope(module, callee[1]) if module is not None else None
        for node in nodes:
            if found is not None or module is None or scope is None or not isinstance(node, ast.Call):
                continue
            for index, keyword in _passed(node, param):
                inner = model.resolve(module, scope, node.func)
                inner_function = model.function(inner) if inner is not None else None
                if inner is None or inner_function is None:
                    break
                inner_param = keyword if keyword is not None else _positional(inner_function, index)
                if inner_param is not None:
                    found = _saves(model, inner, inner_function, inner_param, depth + 1, memo)
                if found is not None:
                    break
    memo[key] = found
    return found


def _accelerator_arguments(call: ast.Call) -> list[tuple[int | None, str | None]]:
    """The arguments named `accelerator` (`accelerator`, `self.accelerator`): (position, None) or (None, keyword)."""

    def named(argument: ast.expr) -> bool:
        if isinstance(argument, ast.Name):
            return argument.id == "accelerator"
        return isinstance(argument, ast.Attribute) and argument.attr == "accelerator"

    found: list[tuple[int | None, str | None]] = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            break
        if named(argument):
            found.append((index, None))
    found.extend((None, k.arg) for k in call.keywords if k.arg is not None and named(k.value))
    return found


def _passed(call: ast.Call, param: str) -> list[tuple[int | None, str | None]]:
    """Where a call hands on the name `param`: (position, None) or (None, keyword)."""
    found: list[tuple[int | None, str | None]] = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            break
        if isinstance(argument, ast.Name) and argument.id == param:
            found.append((index, None))
    found.extend(
        (None, k.arg)
        for k in call.keywords
        if k.arg is not None and isinstance(k.value, ast.Name) and k.value.id == param
    )
    return found


def _positional(function: FunctionInfo, index: int | None) -> str | None:
    if index is None or index >= len(function.positional):
        return None
    return function.positional[index]


def _scope(module: ModuleSummary, qualname: str) -> FunctionSummary:
    function = module.functions.get(qualname) if qualname else None
    if function is None:
        return FunctionSummary(module.path, "", [], False)
    return FunctionSummary(module.path, qualname, list(function.params), function.is_method)

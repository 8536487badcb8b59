"""Calls of project functions that return a plain torch `DataLoader` (no sampler that shards), alone or as an
item of a returned tuple, built in the function itself or in a project function whose result it returns:

    def get_loaders(data, batch_size):                      # data.py
        train = DataLoader(data["train"], batch_size=batch_size, shuffle=True)
        return train, DataLoader(data["val"], batch_size=batch_size)

    train_loader, val_loader = get_loaders(data, 8)         # train.py: item 0 is a plain DataLoader

Whether the loop over it drives a DeepSpeed engine under a launch of several processes is DSL445's question (the
script facts know the engine and the loop); this answers, for every call of a project function in the given
modules, which items of its result are such loaders and where each is built. A loader counts as plain when it
is `torch.utils.data.DataLoader(dataset, ...)` with no `sampler=`/`batch_sampler=` (or torch's single-process
`RandomSampler`/`SequentialSampler`), no `*args`/`**kwargs`, a dataset argument naming no rank or shard and no
made-up data, in a module that shards its data no other way (`library.SHARDED_ELSEWHERE`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import resolved_calls
from dslint.model.library import (
    DATA_LOADERS,
    RANK_WORDS,
    SAMPLER_GIVEN,
    SINGLE_PROCESS_SAMPLERS,
    SYNTHETIC_DATA,
)
from dslint.model.resolution import Callee, scope_of
from dslint.model.sharding import shards_elsewhere
from dslint.model.summary import ModuleSummary, named_values_and_returns

MAX_DEPTH = 2
Built = tuple[str, int, int]  # where the loader is built: path, line, column (`ast`'s, 0-based)
Items = dict[int | None, Built]  # item of the result (None: the result itself) -> where that loader is built


@dataclass(frozen=True)
class LoaderCall:
    """A call at `line`/`column` (1-based, the column in characters) in `path` of the project function `callee`,
    whose result (`index` None) or item `index` of its returned tuple is a plain DataLoader built at `built`."""

    path: str
    line: int
    column: int
    callee: Callee
    index: int | None
    built: Built


def loader_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[LoaderCall]:
    """Every call in the modules `paths` of a project function returning plain DataLoaders (`LoaderCall` for each
    item that is one)."""
    memo: dict[Callee, Items] = {}
    for found in resolved_calls(model, paths, lambda _, call: True):
        for index, built in sorted(_returned_loaders(model, found.callee, 0, memo).items(), key=_order):
            yield LoaderCall(found.path, found.line, found.column, found.callee, index, built)


def _order(item: tuple[int | None, Built]) -> int:
    return -1 if item[0] is None else item[0]


def _returned_loaders(model: Evaluator, callee: Callee, depth: int, memo: dict[Callee, Items]) -> Items:
    """The items of what `callee` returns that are plain DataLoaders: the same at every `return` of it."""
    if callee in memo:
        return memo[callee]
    memo[callee] = {}  # a cycle of calls ends here
    module = model.module(callee[0])
    function = model.function(callee)
    if module is None or function is None or shards_elsewhere(model.store.sources.get(callee[0], b""), module.tree):
        return {}
    if SAMPLER_GIVEN.search(model.store.sources.get(callee[0], b"")):
        return {}
    found = named_values_and_returns(function.node)
    if found is None:
        return {}
    bound, returns = found
    answers = [_items(model, module, callee, value, bound, depth, memo) for value in returns]
    common = {index: built for index, built in answers[0].items() if all(index in other for other in answers[1:])}
    memo[callee] = common
    return common


def _items(
    model: Evaluator,
    module: ModuleSummary,
    callee: Callee,
    value: ast.expr,
    bound: dict[str, list[ast.expr]],
    depth: int,
    memo: dict[Callee, Items],
) -> Items:
    if isinstance(value, (ast.Tuple, ast.List)):
        found: Items = {}
        for index, item in enumerate(value.elts):
            if isinstance(item, ast.Starred):
                break
            one = _items(model, module, callee, item, bound, depth, memo).get(None)
            if one is not None:
                found[index] = one
        return found
    if isinstance(value, ast.Name):
        values = bound.get(value.id, [])
        return _items(model, module, callee, values[0], {}, depth, memo) if len(values) == 1 else {}
    if not isinstance(value, ast.Call):
        return {}
    if module.qualified(value.func) in DATA_LOADERS:
        return {None: (module.path, value.lineno, value.col_offset)} if _plain(module, value, bound) else {}
    if depth >= MAX_DEPTH:
        return {}
    inner = model.resolve(module, scope_of(module, callee[1]), value.func)
    return _returned_loaders(model, inner, depth + 1, memo) if inner is not None else {}


def _plain(module: ModuleSummary, call: ast.Call, bound: dict[str, list[ast.expr]]) -> bool:
    """`DataLoader(dataset, ...)` with no sampler that shards, no starred arguments, a dataset of real data that
    names no rank."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    for keyword in call.keywords:
        if keyword.arg == "batch_sampler":
            return False
        if keyword.arg == "sampler" and not (
            isinstance(keyword.value, ast.Call) and module.qualified(keyword.value.func) in SINGLE_PROCESS_SAMPLERS
        ):
            return False
    dataset = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dataset"), None)
    if dataset is None or len(call.args) > 3:
        return False
    text = ast.unparse(dataset)
    if isinstance(dataset, ast.Name) and len(bound.get(dataset.id, [])) == 1:
        text += " " + ast.unparse(bound[dataset.id][0])
    return not RANK_WORDS.search(text) and not SYNTHETIC_DATA.search(text)

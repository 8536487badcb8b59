"""Calls of project functions that return Trainer arguments they build: a `*TrainingArguments(...)` (or one of TRL's
configs) made in the function, returned directly or through the one name bound to it, on every `return`.

    def get_training_args(path):                              # util.py
        with open(path) as handle:
            return TrainingArguments(**json.load(handle))

    training_args = get_training_args(cfg.training_config)     # train.py: arguments already built
    training_args.deepspeed = "ds.json"                        # DSL440: set too late to be applied

`TrainingArguments.__post_init__` is where a DeepSpeed config takes effect (the `HfTrainerDeepSpeedConfig` and the
accelerate plugin it makes), so whatever reaches the caller has been through it. This answers, for the calls in the
given modules, which return such arguments and where they are built; the library table
(`library.is_training_arguments_name`) says which classes are Trainer arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import resolved_calls
from dslint.model.library import is_training_arguments_name
from dslint.model.resolution import Callee
from dslint.model.summary import ModuleSummary, dotted, named_values_and_returns


@dataclass(frozen=True)
class ArgumentsCall:
    """A call at `line`/`column` (1-based, the column in characters) in `path` of the project function `callee`,
    which returns the Trainer arguments it builds at `built` (path, line, 0-based column as `ast` gives it)."""

    path: str
    line: int
    column: int
    callee: Callee
    built: tuple[str, int, int]


def arguments_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[ArgumentsCall]:
    """Every call in the modules `paths` of a project function returning Trainer arguments it builds."""
    memo: dict[Callee, tuple[str, int, int] | None] = {}
    for found in resolved_calls(model, paths, lambda _, call: True):
        if found.callee not in memo:
            memo[found.callee] = _built(model, found.callee)
        built = memo[found.callee]
        if built is not None:
            yield ArgumentsCall(found.path, found.line, found.column, found.callee, built)


def _built(model: Evaluator, callee: Callee) -> tuple[str, int, int] | None:
    """Where `callee` builds the Trainer arguments every one of its `return` statements hands back."""
    module = model.module(callee[0])
    function = model.function(callee)
    if module is None or function is None:
        return None
    found = named_values_and_returns(function.node)
    if found is None:
        return None
    bound, returns = found
    made = [_construction(module, value, bound) for value in returns]
    return made[0] if all(m is not None for m in made) else None


def _construction(
    module: ModuleSummary, value: ast.expr, bound: dict[str, list[ast.expr]]
) -> tuple[str, int, int] | None:
    if isinstance(value, ast.Name) and len(bound.get(value.id, [])) == 1:
        value = bound[value.id][0]
    if not isinstance(value, ast.Call):
        return None
    name = module.qualified(value.func) or dotted(value.func) or ""
    return (module.path, value.lineno, value.col_offset) if is_training_arguments_name(name) else None

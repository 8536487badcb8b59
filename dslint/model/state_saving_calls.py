"""Calls that hand accelerate's `Accelerator` to a project function that calls `save_state` on it, or the engine to
one that calls `save_checkpoint` on it (collective saves every rank must join), directly or through further project
functions (a few levels):

    def save_state_on_train_end(args, accelerator):
        accelerator.save_state(os.path.join(args.output_dir, "last-state"))

    if accelerator.is_main_process:
        train_util.save_state_on_train_end(args, accelerator)

Whether the call runs on one rank only, and whether accelerate runs DeepSpeed there, is DSL428's question; this
answers, for every call of a project function with an argument named `accelerator` (`accelerator`,
`self.accelerator`), whether the parameter receiving it reaches a `save_state` call; and for every call the engine
fixpoint saw hand the engine (`deepspeed.initialize`'s first result) to a project function, whether the parameter
receiving it reaches `save_checkpoint`; likewise for initialize's optimizer handed to a function reaching
`.step()` on it (DSL302, at the call: the helper may be right for its other callers). The callee is found as the
project model resolves calls (same module, imports, `self.method` along the bases). Also where the project builds
accelerate's `DeepSpeedPlugin`, the evidence that its accelerate runs may be DeepSpeed runs: for each saving
call, a plugin its module reaches through the project's imports (`plugin_reaching`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dslint.model.conditions import guards_of, without_deepspeed
from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import arguments_where, handed_arguments, positional
from dslint.model.library import ENGINE, OPTIMIZER
from dslint.model.resolution import Callee, FunctionSummary, scope_of
from dslint.model.summary import FunctionInfo, ModuleSummary, SummaryStore, character_column, dotted, own_nodes
from dslint.model.values import Item

MAX_DEPTH = 3
STATE_SAVES = frozenset({"save_state"})  # accelerate's, on the Accelerator
ENGINE_SAVES = frozenset({"save_checkpoint"})  # DeepSpeed's, on the engine
OPTIMIZER_STEPS = frozenset({"step"})  # on initialize's optimizer: the engine's job (DSL302)
# a Hugging Face Trainer's calls that gather the ZeRO-3 weights from every rank: its `save_model`, and the engine's
# `_zero3_consolidated_16bit_state_dict()` reached through the attributes where the Trainer keeps the engine
TRAINER_GATHERS = frozenset({"save_model", "_zero3_consolidated_16bit_state_dict"})
TRAINER_ENGINE_ATTRIBUTES = ("model_wrapped", "deepspeed")
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
    for handed in handed_arguments(model, paths, _names_accelerator):
        found = _saves(model, handed.callee, handed.function, handed.param, 0, memo, STATE_SAVES)
        if found is not None:
            yield StateSavingCall(handed.path, handed.line, handed.column, handed.param, found[0], found[1])


def trainer_gathering_calls(model: Evaluator, paths: Iterable[str]) -> Iterator[StateSavingCall]:
    """Calls handing a Hugging Face Trainer (an argument named `trainer`, `self.trainer`, `dpo_trainer`) to a
    project function whose parameter receiving it reaches `trainer.save_model(...)`, or the engine's
    `_zero3_consolidated_16bit_state_dict()` through `trainer.model_wrapped` / `trainer.deepspeed` (the helper many
    projects copy as `safe_save_model_for_hf_trainer`): under ZeRO-3 both gather from every rank."""
    memo: dict[tuple[Callee, str], tuple[Callee, int] | None] = {}
    for handed in handed_arguments(model, paths, _names_trainer):
        found = _saves(
            model, handed.callee, handed.function, handed.param, 0, memo, TRAINER_GATHERS, TRAINER_ENGINE_ATTRIBUTES
        )
        if found is not None:
            yield StateSavingCall(handed.path, handed.line, handed.column, handed.param, found[0], found[1])


def engine_saving_calls(model: Evaluator) -> Iterator[StateSavingCall]:
    """The calls the model saw hand the engine itself (not a maybe) to a project function whose parameter
    receiving it reaches `save_checkpoint` (the model must have run: `model.calls` holds what it followed)."""
    return handed_result_calls(model, ENGINE, ENGINE_SAVES)


def optimizer_stepping_calls(model: Evaluator) -> Iterator[StateSavingCall]:
    """The calls the model saw hand initialize's optimizer to a project function whose parameter receiving it
    reaches `.step()` (a mixed-precision helper's `optimize(opt)`): the optimizer stepped beside the engine."""
    return handed_result_calls(model, OPTIMIZER, OPTIMIZER_STEPS)


def handed_result_calls(model: Evaluator, role: str, methods: frozenset[str]) -> Iterator[StateSavingCall]:
    """The calls the model saw hand one of initialize's results (`role`, not a maybe) to a project function
    whose parameter receiving it reaches a call of one of `methods` on it, directly or a few calls deeper."""
    memo: dict[tuple[Callee, str], tuple[Callee, int] | None] = {}
    for site in model.calls:
        for param, value in site.arguments.items():
            function = model.function(site.callee)
            if not (isinstance(value, Item) and value.role == role) or function is None:
                continue
            found = _saves(model, site.callee, function, param, 0, memo, methods)
            if found is not None:
                lines = model.store.sources.get(site.caller_path, b"").splitlines()
                column = character_column(lines, site.line, site.column - 1) + 1
                yield StateSavingCall(site.caller_path, site.line, column, param, found[0], found[1])
                break


def plugin_sites(sources: dict[str, bytes]) -> dict[str, int]:
    """Every project file that builds accelerate's `DeepSpeedPlugin(...)`, with the line of its first."""
    sites: dict[str, int] = {}
    for path in sorted(sources):
        data = sources[path]
        # the words first: the pattern, led by `\b`, is tried at every byte of a source that cannot hold it
        if b"DeepSpeedPlugin" not in data or b"accelerate" not in data:
            continue
        match = _PLUGIN.search(data)
        if match is not None:
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
    methods: frozenset[str],
    through: tuple[str, ...] = (),
) -> tuple[Callee, int] | None:
    """Where `param` of `function` reaches a call of one of `methods` on it (or on one of its attributes
    `through`): its own call (not on a path DeepSpeed is off on: the `else` of `if args.deepspeed:`), or a
    project function it is handed to (to MAX_DEPTH levels); None when it does not, or when the function rebinds
    it."""
    key = (callee, param)
    if key in memo:
        return memo[key]
    memo[key] = None  # a cycle of calls ends here
    nodes = list(own_nodes(function.node))
    if any(
        isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store) and dotted(n) == param for n in nodes
    ):
        return None
    found: tuple[Callee, int] | None = None
    receivers = {param, *(f"{param}.{attribute}" for attribute in through)}
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in methods
            and dotted(node.func.value) in receivers
            and not any(without_deepspeed(guard) for guard in guards_of(function.node.body, node))
        ):
            found = (callee, node.lineno)
            break
    if found is None and depth < MAX_DEPTH:
        module = model.module(callee[0])
        scope = scope_of(module, callee[1]) if module is not None else None
        for node in nodes:
            if found is not None or module is None or scope is None or not isinstance(node, ast.Call):
                continue
            own = _own_method(model, module, scope, callee, function, node, param)
            if own is not None:  # `self.other()` reading the same attribute of the same instance
                found = _saves(model, own[0], own[1], own[2], depth + 1, memo, methods, through)
                continue
            for index, keyword in arguments_where(node, lambda argument: dotted(argument) == param):
                inner = model.resolve(module, scope, node.func)
                inner_function = model.function(inner) if inner is not None else None
                if inner is None or inner_function is None:
                    break
                inner_param = keyword if keyword is not None else positional(inner_function, index)
                if inner_param is not None:
                    found = _saves(model, inner, inner_function, inner_param, depth + 1, memo, methods, through)
                if found is not None:
                    break
    memo[key] = found
    return found


def _names_accelerator(argument: ast.expr) -> bool:
    """An argument named `accelerator` (`accelerator`, `self.accelerator`)."""
    if isinstance(argument, ast.Name):
        return argument.id == "accelerator"
    return isinstance(argument, ast.Attribute) and argument.attr == "accelerator"


def _names_trainer(argument: ast.expr) -> bool:
    """An argument named for a Hugging Face Trainer (`trainer`, `self.trainer`, `dpo_trainer`)."""
    name = (
        argument.id if isinstance(argument, ast.Name) else argument.attr if isinstance(argument, ast.Attribute) else ""
    )
    return name.lower().endswith("trainer")


def _own_method(
    model: Evaluator,
    module: ModuleSummary,
    scope: FunctionSummary,
    callee: Callee,
    function: FunctionInfo,
    call: ast.Call,
    receiver: str,
) -> tuple[Callee, FunctionInfo, str] | None:
    """For a receiver `self.x` of a method, a call `self.other(...)` of a method of the same class: that method,
    and the receiver under its own first parameter's name."""
    head, _, attribute = receiver.partition(".")
    if not attribute or not function.is_method or not function.params or head != function.params[0]:
        return None
    if not (isinstance(call.func, ast.Attribute) and dotted(call.func.value) == head):
        return None
    inner = model.resolve(module, scope, call.func)
    inner_function = model.function(inner) if inner is not None else None
    if inner is None or inner_function is None or not inner_function.is_method or not inner_function.params:
        return None
    if inner[0] != callee[0] or inner_function.owner != function.owner:
        return None
    return inner, inner_function, f"{inner_function.params[0]}.{attribute}"


def engine_attribute_saving_calls(model: Evaluator) -> Iterator[StateSavingCall]:
    """In a class one attribute of which holds the engine on every path the model saw (`self.model_engine, *_ =
    deepspeed.initialize(...)` in one method), the calls `self.m(...)` of a method of the class that reaches
    `self.model_engine.save_checkpoint(...)`, itself or through further methods of the class:

        def save(self, tag):
            self.model_engine.save_checkpoint(self.output_dir, tag)

        if self.local_rank == 0:
            self.save("best")
    """
    held: dict[tuple[str, str], list[str]] = {}
    for (path, owner, attribute), value in model.attributes.items():
        if isinstance(value, Item) and value.role == ENGINE and "." not in attribute:
            held.setdefault((path, owner), []).append(attribute)
    memo: dict[tuple[Callee, str], tuple[Callee, int] | None] = {}
    for (path, owner), attributes in sorted(held.items()):
        module = model.module(path)
        if module is None:
            continue
        lines = model.store.sources.get(path, b"").splitlines()
        for qualname, caller in module.functions.items():
            if caller.owner != owner or not caller.is_method or not caller.params:
                continue
            scope = scope_of(module, qualname)
            for node in own_nodes(caller.node):
                if not isinstance(node, ast.Call):
                    continue
                for attribute in attributes:
                    receiver = f"{caller.params[0]}.{attribute}"
                    own = _own_method(model, module, scope, (path, qualname), caller, node, receiver)
                    found = _saves(model, own[0], own[1], own[2], 0, memo, ENGINE_SAVES) if own else None
                    if found is not None:
                        column = character_column(lines, node.lineno, node.col_offset) + 1
                        name = f"self.{attribute}"
                        yield StateSavingCall(path, node.lineno, column, name, found[0], found[1])
                        break

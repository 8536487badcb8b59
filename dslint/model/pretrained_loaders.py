"""Calls of project functions that return a transformers model loaded with `from_pretrained` (or built with
`from_config`: `library.HF_MODEL_BUILDS`), directly or through
further project functions (a few levels), alone or in a returned tuple:

    def load_model(name):
        return AutoModelForCausalLM.from_pretrained(name)

    def get_model_tokenizer(name):
        model = load_model(name)
        return model, AutoTokenizer.from_pretrained(name)

    model, tokenizer = get_model_tokenizer(args.model)   # a loader call: the model is built here
    training_args = TrainingArguments(output_dir="out", deepspeed="ds_z3.json")

Whether a ZeRO-3 config is alive when the call runs is DSL208's question; this answers, for every call in a function
that builds `*TrainingArguments` (or calls a function of its module returning them), calls `deepspeed.initialize` or
makes an accelerate `Accelerator` (the only places the answer is asked), whether its
callee returns a `from_pretrained` model, and where that `from_pretrained` runs. The callee is found as the project
model resolves calls (same module, imports, `self.method` along the bases). A `from_pretrained` counts when its
class is imported from transformers and named like a model class (`library.TRANSFORMERS_MODEL_CLASS`), as in one
file's facts, or is a parameter of the helper that the call fills with such a class
(`create_hf_model(AutoModelForCausalLM, name)`: `_class_handed_in`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import resolved_calls
from dslint.model.library import HF_MODEL_BUILDS, TRANSFORMERS_MODEL_CLASS, is_training_arguments_name
from dslint.model.resolution import Callee, FunctionSummary, scope_of
from dslint.model.summary import ModuleSummary, dotted, own_nodes

MAX_DEPTH = 3
CONFIGURING = frozenset({"deepspeed.initialize", "accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
Load = tuple[Callee, int]  # the function holding the `from_pretrained` call, and its line


@dataclass(frozen=True)
class LoaderCall:
    """A call at `line`/`column` (1-based, the column in characters) in `path` of `loader` (path, qualname), which
    returns the model that `from_pretrained` builds in `load` (path, qualname) at `load_line`."""

    path: str
    line: int
    column: int
    loader: Callee
    load: Callee
    load_line: int


def loader_calls(model: Evaluator, paths: Iterable[str], classes: frozenset[str] = frozenset()) -> Iterator[LoaderCall]:
    memo: dict[Callee, Load | None] = {}
    building: dict[str, set[int]] = {}  # per module: the calls of its bodies that build `*TrainingArguments`

    def in_building_body(path: str, call: ast.Call) -> bool:
        if path not in building:
            module = model.module(path)
            bodies = module.body_calls() if module is not None else []
            makers = _arguments_makers(module) if module is not None else set()
            configuring = {
                qualname for qualname, calls in bodies if any(_configures_deepspeed(module, c, makers) for c in calls)
            }
            if configuring and module is not None:
                configuring.add("")  # module-level code runs before the functions that configure DeepSpeed
            building[path] = {id(c) for qualname, calls in bodies if qualname in configuring for c in calls}
        return id(call) in building[path]

    for found in resolved_calls(model, paths, in_building_body):
        load = _loads(model, found.callee, 0, memo, classes) or _class_handed_in(
            model, found.path, found.call, found.callee
        )
        if load is not None:
            yield LoaderCall(found.path, found.line, found.column, found.callee, load[0], load[1])


def _class_handed_in(model: Evaluator, path: str, call: ast.Call, callee: Callee) -> Load | None:
    """`create_hf_model(AutoModelForCausalLM, name, ...)` where the helper returns `model_class.from_pretrained(...)`
    (or `from_config`) of the parameter this call fills with a transformers model class."""
    module, function = model.module(path), model.function(callee)
    if module is None or function is None:
        return None
    arguments = function.node.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if positional and positional[0] in ("self", "cls") and "." in callee[1]:
        positional = positional[1:]
    handed = {name: value for name, value in zip(positional, call.args, strict=False)}
    handed.update((k.arg, k.value) for k in call.keywords if k.arg is not None)
    classes = {
        name
        for name, value in handed.items()
        if not isinstance(value, ast.Starred)
        and (module.qualified(value) or "").startswith("transformers")
        and TRANSFORMERS_MODEL_CLASS.match((module.qualified(value) or "").rpartition(".")[2])
    }
    if not classes or _makes_hf_config(function.node):
        return None
    bound: dict[str, list[ast.expr]] = {}
    nodes = list(own_nodes(function.node))
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
    for node in nodes:
        if isinstance(node, ast.Return) and node.value is not None:
            for value in _returned(node.value, bound):
                while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                    func = value.func
                    if func.attr in HF_MODEL_BUILDS and isinstance(func.value, ast.Name) and func.value.id in classes:
                        return callee, value.lineno
                    value = func.value  # `model_class.from_pretrained(...).eval()`
    return None


def _makes_hf_config(function: ast.AST) -> bool:
    """The function makes an `HfDeepSpeedConfig` itself (DeepSpeed-Chat's `dschf = HfDeepSpeedConfig(ds_config)`
    under ZeRO-3): its own loads are built partitioned, whatever its callers hold."""
    return any(
        isinstance(node, ast.Call) and (dotted(node.func) or "").rpartition(".")[2] == "HfDeepSpeedConfig"
        for node in own_nodes(function)
    )


def _configures_deepspeed(module: ModuleSummary | None, call: ast.Call, makers: set[str]) -> bool:
    """`*TrainingArguments(...)` (or a call of a function of the module returning them, named in `makers`),
    `deepspeed.initialize(...)` or `Accelerator(...)`: where the model's DeepSpeed config is given."""
    if is_training_arguments_name(dotted(call.func) or ""):
        return True
    if isinstance(call.func, ast.Name) and call.func.id in makers:
        return True
    method = call.func.attr if isinstance(call.func, ast.Attribute) and dotted(call.func.value) == "self" else None
    if method is not None and "." + method in makers:  # `self._arguments()`: a method of the class returning them
        return True
    return module is not None and module.qualified(call.func) in CONFIGURING


def _arguments_makers(module: ModuleSummary) -> set[str]:
    """The module-level functions of `module` that return the `*TrainingArguments(...)` they build, and its
    classes' methods doing so (as `.name`)."""
    return {
        name if not function.owner else "." + name.rsplit(".", 1)[-1]
        for name, function in module.functions.items()
        if (function.owner or "." not in name)
        and any(
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.Call)
            and is_training_arguments_name(dotted(node.value.func) or "")
            for node in own_nodes(function.node)
        )
    }


def _loads(
    model: Evaluator, callee: Callee, depth: int, memo: dict[Callee, Load | None], classes: frozenset[str] = frozenset()
) -> Load | None:
    """Where the model `callee` returns is loaded: a `from_pretrained` of its own, or of a project function whose
    result it returns (to MAX_DEPTH levels); None when it returns no such model."""
    if callee in memo:
        return memo[callee]
    memo[callee] = None  # a cycle of calls ends here
    module = model.module(callee[0])
    function = model.function(callee)
    if module is None or function is None or _makes_hf_config(function.node):
        return None
    nodes = list(own_nodes(function.node))
    bound: dict[str, list[ast.expr]] = {}
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
    scope = scope_of(module, callee[1])
    found: Load | None = None
    for node in nodes:
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        for value in _returned(node.value, bound):
            found = _model_of(model, module, scope, callee, value, depth, memo, classes)
            if found is not None:
                break
        if found is not None:
            break
    memo[callee] = found
    return found


def _returned(value: ast.expr, bound: dict[str, list[ast.expr]]) -> Iterator[ast.expr]:
    """The expressions a returned value may be: a tuple's items, a local name's assigned values."""
    items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    for item in items:
        if isinstance(item, ast.Name):
            yield from bound.get(item.id, [])
        else:
            yield item


def _model_of(
    model: Evaluator,
    module: ModuleSummary,
    scope: FunctionSummary,
    holder: Callee,
    value: ast.expr,
    depth: int,
    memo: dict[Callee, Load | None],
    classes: frozenset[str] = frozenset(),
) -> Load | None:
    """`Model.from_pretrained(...)` (maybe followed by module methods: `.eval()`, `.half()`), of a transformers
    model class or one of the project's (`classes`), or a call of a project function returning such a model."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in HF_MODEL_BUILDS:
            qualified = module.qualified(func.value) or ""
            last = qualified.rpartition(".")[2]
            if qualified.startswith("transformers") and TRANSFORMERS_MODEL_CLASS.match(last):
                return holder, value.lineno
            if isinstance(func.value, ast.Name) and func.value.id in classes:
                return holder, value.lineno
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            value = func.value  # `Model.from_pretrained(...).eval()`
            continue
        if depth >= MAX_DEPTH:
            return None
        callee = model.resolve(module, scope, func)
        return _loads(model, callee, depth + 1, memo, classes) if callee is not None else None
    return None

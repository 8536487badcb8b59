"""How engines travel between functions and modules: one small summary per function, read with `ast`.

Each function of a module that may create an engine is summarised once (symbolically): what each local name
holds (initialize's result tuple, one of its items, a parameter, a parameter unwrapped with `.module`), what
the function returns, and the calls it makes to the project's own functions with the values it passes. A
fixpoint over those summaries then answers:
- which parameters receive an engine (or `engine.module`) at EVERY call the index saw (one call with something
  else, or with a value it cannot read, and the parameter stays unknown);
- which helpers return initialize's results (`return deepspeed.initialize(...)`, `return engine, opt, sched`),
  and helpers that return their argument unwrapped (`engine.module if hasattr(engine, "module") else engine`).
Modules are parsed only when they may create an engine (a text test) or hold a function such a module calls.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dslint.project.inputs import exists
from dslint.script.project_facts import ENGINE, ENGINE_MODULE, RESULT_ORDER

# A symbolic value: ("result", roles, is_tuple, origin key) | ("param", name, unwrapped)
# | ("returned", path, qualname) | ("maybe", result on some paths only) | None
Value = tuple[object, ...] | None
MAX_ROUNDS = 6
# A function name found in more files than this is too common to check every call of it.
MAX_NAME_FILES = 24
# The constant None (an attribute set to None before its real value)
NONE_VALUE: Value = ("none",)
# Methods of the DeepSpeed engine that a torch module does not have: a parameter they are called on is an engine.
ENGINE_ONLY_METHODS = frozenset({"backward", "set_gradient_accumulation_boundary", "is_gradient_accumulation_boundary"})
# How many re-exports (`from .utils import get_model` in a package's `__init__.py`) a call is followed through.
MAX_REEXPORTS = 3


@dataclass
class CallSite:
    caller_path: str
    line: int
    column: int
    callee: tuple[str, str]  # (module path, qualname)
    arguments: dict[str, Value]  # callee parameter name -> value passed (None: unknown)


@dataclass
class FunctionSummary:
    path: str
    qualname: str
    params: list[str]
    is_method: bool
    returns: list[Value] = field(default_factory=list)


@dataclass
class ParsedModule:
    path: str
    tree: ast.Module
    imports: dict[str, str]  # local name -> dotted path (relative imports resolved against the package)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: set[str] = field(default_factory=set)
    stars: list[str] = field(default_factory=list)  # modules imported with `from X import *` (dotted, resolved)


@dataclass(frozen=True)
class InitSite:
    """A `deepspeed.initialize(...)` call, for naming where an engine comes from."""

    path: str
    line: int
    column: int
    qualname: str  # the function holding it ("" at module level)
    config: ast.expr | None  # `config=`/`config_params=`, or None
    has_args: bool  # `args=` given (DeepSpeed then reads args.deepspeed_config)


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _package_of(path: str) -> list[str]:
    """The dotted package a file sits in, as far as `__init__.py` files go up (for relative imports)."""
    parts: list[str] = []
    directory = Path(path).parent
    while exists(directory / "__init__.py") and directory.parent != directory:
        parts.append(directory.name)
        directory = directory.parent
    return list(reversed(parts))


def parse_module(path: str, data: bytes) -> ParsedModule | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's SyntaxWarnings are not dslint's to print
            tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # MemoryError: CPython on deep nesting
        return None
    module = ParsedModule(path, tree, {})
    package: list[str] | None = None
    for node in _all_statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    module.imports[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    package = _package_of(path)
                keep = package[: len(package) - (node.level - 1)] if node.level - 1 <= len(package) else []
                base = ".".join([*keep, base] if base else keep)
            for alias in node.names:
                if alias.name != "*":
                    module.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
                elif base:
                    module.stars.append(base)
    _collect_functions(module, tree.body, "")
    return module


def _collect_functions(module: ParsedModule, body: list[ast.stmt], prefix: str) -> None:
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = prefix + statement.name
            module.functions[qualname] = statement
            _collect_functions(module, statement.body, qualname + ".")
        elif isinstance(statement, ast.ClassDef):
            module.classes.add(prefix + statement.name)
            _collect_functions(module, statement.body, prefix + statement.name + ".")


class ModuleFinder:
    """Dotted module names -> files of the project (by path suffix; the nearest file wins)."""

    def __init__(self, files: Iterable[str]) -> None:
        self.by_stem: dict[str, list[str]] = {}
        for path in files:
            stem = Path(path).stem
            if stem == "__init__":
                stem = Path(path).parent.name
            self.by_stem.setdefault(stem, []).append(path)

    def find(self, dotted: str, near: str) -> str | None:
        parts = dotted.split(".")
        candidates = []
        for path in self.by_stem.get(parts[-1], ()):
            pieces = Path(path).with_suffix("").parts
            if pieces[-1] == "__init__":
                pieces = pieces[:-1]
            if tuple(pieces[-len(parts) :]) == tuple(parts):
                candidates.append(path)
        if not candidates:
            return None
        return max(candidates, key=lambda c: len(os.path.commonpath([c, near])))


class EngineFlow:
    """The fixpoint over function summaries (see the module docstring)."""

    def __init__(self, finder: ModuleFinder, read: dict[str, bytes]) -> None:
        self.finder = finder
        self.read = read
        self.modules: dict[str, ParsedModule | None] = {}
        self.summaries: dict[tuple[str, str], FunctionSummary] = {}
        self.calls: list[CallSite] = []
        self.inits: dict[tuple[str, int, int], InitSite] = {}
        self.call_texts: dict[tuple[str, str], tuple[str, str]] = {}  # (path, callee text) -> callee
        self.in_progress: set[tuple[str, str]] = set()
        self.unverifiable: set[str] = set()  # names too common to see every call of
        # The model initialize receives: built by a function (its return value), or a parameter of the function
        # holding initialize, filled by its callers.
        self.model_builders: dict[tuple[str, str], InitSite] = {}
        self.model_parameters: dict[tuple[str, str, str], InitSite] = {}
        # `self.x = engine` in one method, read in another: (path, class, "x") -> value
        self.attributes: dict[tuple[str, str, str], Value] = {}
        # (path, function, parameter) -> whether the function calls an engine-only method on the parameter
        self.engine_uses: dict[tuple[str, str, str], bool] = {}

    # --- modules ------------------------------------------------------------------------------------------
    def module(self, path: str) -> ParsedModule | None:
        if path not in self.modules:
            data = self.read.get(path)
            self.modules[path] = parse_module(path, data) if data is not None else None
        return self.modules[path]

    def analyse_all(self, producers: Iterable[str]) -> None:
        """Follow engines from where they are created, analysing only the functions they reach.

        Start: the functions (and module-level code) of `producers` that call `deepspeed.initialize`. Then,
        until nothing new comes in: the functions an engine (or something holding one) is passed to; and, found
        by a text test for their names, the functions that call a helper returning an engine or a function
        receiving one (so that every call of a receiving function is seen: one call with something else and
        its parameter stays unknown). A name found in too many files is not followed, and the functions
        reached through it are left unknown rather than guessed.
        """
        queue: list[tuple[str, str]] = []
        for path in producers:
            module = self.module(path)
            if module is not None:
                queue.extend((path, qualname) for qualname in self._initializing(module))
        searched: set[str] = set()
        followed = 0
        while queue:
            while queue:
                path, qualname = queue.pop()
                module = self.module(path)
                if module is not None:
                    self._ensure(module, qualname)
            for site in self.calls[followed:]:
                if any(v is not None for v in site.arguments.values()) and site.callee not in self.summaries:
                    queue.append(site.callee)
            followed = len(self.calls)
            names = {q.rpartition(".")[2] for (_, q), summary in self.summaries.items() if q and self._worth(summary)}
            names.update(site.callee[1].rpartition(".")[2] for site in self.calls)
            # classes keeping an engine in an attribute: who builds them reads it (`pair = EnginePair(...)`)
            names.update(
                owner.rpartition(".")[2]
                for (_, owner, _), held in self.attributes.items()
                if held is not None and held[0] in ("result", "maybe")
            )
            names.discard("__init__")
            for name in sorted(names - searched):
                searched.add(name)
                needle = name.encode() + b"("
                matched = [path for path, data in self.read.items() if needle in data]
                if len(matched) > MAX_NAME_FILES:
                    self.unverifiable.add(name)
                    continue
                for path in matched:
                    module = self.module(path)
                    if module is None:
                        continue
                    for qualname in self._calling(module, name):
                        if (path, qualname) not in self.summaries:
                            queue.append((path, qualname))
        self._models_through_calls()

    def _models_through_calls(self) -> None:
        """A builder's return value handed straight to a function whose parameter reaches initialize as the
        model (`fit(get_model())`, `fit(model)` after `model = get_model()`): that builder is a model builder."""
        for site in self.calls:
            for param, value in site.arguments.items():
                init = self.model_parameters.get((*site.callee, param))
                if init is not None and value is not None and value[0] == "returned":
                    self.model_builders.setdefault((str(value[1]), str(value[2])), init)

    def _worth(self, summary: FunctionSummary) -> bool:
        """Functions whose callers must be seen: they return an engine, or hand a parameter to initialize."""
        if any(r is not None and r[0] == "result" for r in summary.returns):
            return True
        return any(key[:2] == (summary.path, summary.qualname) for key in self.model_parameters)

    def _initializing(self, module: ParsedModule) -> list[str]:
        """The functions of a module (and "" for module-level code) that call deepspeed.initialize: only the
        innermost definitions around a line that mentions `initialize` are looked at."""
        data = self.read.get(module.path, b"")
        lines = {data.count(b"\n", 0, m.start()) + 1 for m in re.finditer(rb"initialize", data)}
        candidates: set[str] = set()
        for line in lines:
            holder = ""
            for qualname, function in module.functions.items():
                if function.lineno <= line <= (function.end_lineno or function.lineno) and len(qualname) > len(holder):
                    holder = qualname
            candidates.add(holder)
        found: list[str] = []
        for qualname in sorted(candidates):
            body = module.tree.body if not qualname else module.functions[qualname].body
            for statement in _statements(body):
                if any(self._is_initialize(module, call.func) for call in _calls(statement)):
                    found.append(qualname)
                    break
        return found

    def _calling(self, module: ParsedModule, name: str) -> list[str]:
        """The functions of a module (and "" for module-level code) holding a call of something named `name`."""
        found: list[str] = []
        for qualname, body in [("", module.tree.body), *((q, f.body) for q, f in module.functions.items())]:
            for statement in _statements(body):
                if any((_dotted(call.func) or "").rpartition(".")[2] == name for call in _calls(statement)):
                    found.append(qualname)
                    break
        return found

    def _analyse_module(self, module: ParsedModule) -> None:
        self._ensure(module, "")
        for qualname in module.functions:
            self._ensure(module, qualname)

    def _ensure(self, module: ParsedModule, qualname: str) -> FunctionSummary | None:
        """The summary of one function (module-level code for ""), analysed once, on first need."""
        key = (module.path, qualname)
        if key in self.summaries or key in self.in_progress:
            return self.summaries.get(key)
        self.in_progress.add(key)
        try:
            if not qualname:
                summary = FunctionSummary(module.path, "", [], False)
                self._analyse_body(module, summary, module.tree.body)
            else:
                function = module.functions.get(qualname)
                if function is None:
                    return None
                args = function.args
                params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
                owner = qualname.rpartition(".")[0]
                is_method = owner in module.classes and not any(
                    _dotted(d) == "staticmethod" for d in function.decorator_list
                )
                summary = FunctionSummary(module.path, qualname, params, is_method)
                self._analyse_body(module, summary, function.body)
        finally:
            self.in_progress.discard(key)
        self.summaries[key] = summary
        return summary

    def _analyse_body(self, module: ParsedModule, summary: FunctionSummary, body: list[ast.stmt]) -> None:
        values: dict[str, Value] = {p: ("param", p, False) for p in summary.params}
        if summary.is_method and summary.params:
            values.pop(summary.params[0], None)
        self._block(module, summary, values, body)

    def _block(
        self, module: ParsedModule, summary: FunctionSummary, values: dict[str, Value], body: list[ast.stmt]
    ) -> None:
        """Statements in order; after an `if` (or a loop, a `try`), a name keeps its value only when every path
        gives it the same one: `if use_ds: model, *_ = deepspeed.initialize(...)` leaves `model` unknown after
        the `if`, since the other path keeps the plain model."""
        for statement in body:
            self._statement(module, summary, values, statement)
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            arms: list[list[ast.stmt]] = []
            if isinstance(statement, ast.If):
                arms = [statement.body, statement.orelse]
            elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                arms = [statement.body + statement.orelse, []]
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                self._block(module, summary, values, statement.body)
                continue
            elif isinstance(statement, ast.Try):
                arms = [statement.body + statement.orelse, *(h.body for h in statement.handlers)]
                if statement.finalbody:
                    arms = [arm + statement.finalbody for arm in arms]
            elif isinstance(statement, ast.Match):
                arms = [case.body for case in statement.cases] + [[]]
            if not arms:
                continue
            results: list[dict[str, Value]] = []
            for arm in arms:
                copy = dict(values)
                self._block(module, summary, copy, arm)
                results.append(copy)
            for key in {k for result in results for k in result}:
                # a key one path never bound: `obj.x` read from the instance's class (not `self.x`, which
                # the other path may have just set)
                seen = [result[key] if key in result else self._instance_attribute(result, key) for result in results]
                values[key] = seen[0] if all(v == seen[0] for v in seen) else _maybe(seen)

    def _self_key(self, summary: FunctionSummary, key: str) -> tuple[str, str, str] | None:
        if not summary.is_method or not summary.params:
            return None
        head, _, rest = key.partition(".")
        if head != summary.params[0] or not rest or "." in rest:
            return None
        return (summary.path, summary.qualname.rpartition(".")[0], rest)

    def _statement(
        self, module: ParsedModule, summary: FunctionSummary, values: dict[str, Value], statement: ast.stmt
    ) -> None:
        for call in _calls(statement):
            self._call(module, summary, values, call)
        if isinstance(statement, ast.Assign):
            value = self.value(module, summary, values, statement.value)
            for target in statement.targets:
                self._bind(summary, values, target, value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self._bind(summary, values, statement.target, self.value(module, summary, values, statement.value))
        elif isinstance(statement, ast.Return) and statement.value is not None:
            summary.returns.append(self.value(module, summary, values, statement.value))
        elif isinstance(statement, ast.While) and isinstance(statement.test, ast.Call):
            # `while hasattr(m, "module"): m = m.module` unwraps whatever m held
            test = statement.test
            if _dotted(test.func) == "hasattr" and test.args and isinstance(test.args[0], ast.Name):
                name = test.args[0].id
                held = values.get(name)
                if held is not None:
                    values[name] = _unwrapped(held)

    def _bind(self, summary: FunctionSummary, values: dict[str, Value], target: ast.expr, value: Value) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            items = _items(value, len(target.elts))
            stars = [i for i, element in enumerate(target.elts) if isinstance(element, ast.Starred)]
            if len(stars) == 1:  # `engine, *_ = deepspeed.initialize(...)`
                star = stars[0]
                head = _items(value, len(_roles_of(value)))[:star] if _roles_of(value) else []
                tail_count = len(target.elts) - star - 1
                tail = _items(value, len(_roles_of(value)))[len(_roles_of(value)) - tail_count :] if tail_count else []
                if len(head) == star and len(tail) == tail_count:
                    items = [*head, None, *tail]
            for element, item in zip(target.elts, items, strict=True):
                self._bind(summary, values, element.value if isinstance(element, ast.Starred) else element, item)
            return
        key = _dotted(target)
        if key is not None:
            values[key] = value
            attribute = self._self_key(summary, key)
            if attribute is not None:
                # Two different values for one attribute: unknown; `None` beside one value: that value
                # (`self.ema = None` then `if args.ema: self.ema = self._init_ema()`).
                known = self.attributes.get(attribute, value)
                if known == NONE_VALUE:
                    known = value
                elif value == NONE_VALUE:
                    value = known
                self.attributes[attribute] = value if known == value else None

    def value(self, module: ParsedModule, summary: FunctionSummary, values: dict[str, Value], expr: ast.expr) -> Value:
        if isinstance(expr, ast.Call):
            if self._is_initialize(module, expr.func):
                site = self._init_site(module, summary.qualname, expr)
                self._model_sink(module, summary, values, expr, site)
                return ("result", RESULT_ORDER, True, site)
            callee = self.resolve(module, summary, expr.func)
            if callee is None:
                return None
            returned = self.returned(callee)
            if returned is None:
                return ("returned", callee[0], callee[1])
            if returned[0] == "param":
                argument = self._argument_for(callee, expr, str(returned[1]))
                if argument is None:
                    return None
                inner = self.value(module, summary, values, argument)
                return _unwrapped(inner) if returned[2] else inner
            return returned
        if isinstance(expr, ast.Tuple):
            items = [self.value(module, summary, values, element) for element in expr.elts]
            origins = {item[3] for item in items if item is not None and item[0] == "result" and not item[2]}
            if len(origins) != 1 or not any(item is not None for item in items):
                return None
            roles = tuple(
                item[1][0] if item is not None and item[0] == "result" and isinstance(item[1], tuple) else None
                for item in items
            )
            return ("result", roles, True, origins.pop())
        if isinstance(expr, ast.IfExp):
            body = self.value(module, summary, values, expr.body)
            orelse = self.value(module, summary, values, expr.orelse)
            if body is not None and orelse is not None and _base(body) == _base(orelse):
                return _unwrapped(body) if body != orelse else body
            return None
        if isinstance(expr, ast.Attribute) and expr.attr == "module":
            inner = self.value(module, summary, values, expr.value)
            return _unwrapped(inner) if inner is not None else None
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            index = expr.slice.value
            inner = self.value(module, summary, values, expr.value)
            if isinstance(index, int) and inner is not None and inner[0] == "result" and inner[2]:
                subscripted = inner[1]
                assert isinstance(subscripted, tuple)
                if -len(subscripted) <= index < len(subscripted):
                    return ("result", (subscripted[index],), False, inner[3])
            return None
        if isinstance(expr, ast.Constant) and expr.value is None:
            return NONE_VALUE
        key = _dotted(expr)
        if key is not None:
            return self._read(summary, values, key)
        return None

    def _read(self, summary: FunctionSummary, values: dict[str, Value], key: str) -> Value:
        """A name's value: bound here, `self.x` set in a method of this class, or `obj.x` on an instance of a
        project class (`rlhf = RLHFEngine(...)`, `rlhf.actor` set to an engine in its methods)."""
        if key in values:
            return values[key]
        attribute = self._self_key(summary, key)
        if attribute is not None:
            return self.attributes.get(attribute)
        return self._instance_attribute(values, key)

    def _instance_attribute(self, values: dict[str, Value], key: str) -> Value:
        """`obj.x` where `obj` holds an instance of a project class whose methods set `self.x` to one of
        initialize's results."""
        head, _, attr = key.rpartition(".")
        held = values.get(head) if head else None
        if held is None or held[0] != "returned" or not str(held[2]).endswith(".__init__"):
            return None
        path, owner = str(held[1]), str(held[2])[: -len(".__init__")]
        module = self.module(path)
        if module is None:
            return None
        for qualname in [q for q in module.functions if q.rpartition(".")[0] == owner]:
            self._ensure(module, qualname)
        found = self.attributes.get((path, owner, attr))
        # only initialize's results: a parameter of the class's method means nothing here
        return found if found is not None and found[0] in ("result", "maybe") else None

    def returned(self, callee: tuple[str, str]) -> Value:
        """What a function returns, when every return statement agrees."""
        module = self.module(callee[0])
        summary = self._ensure(module, callee[1]) if module is not None else None
        if summary is None:
            return None
        if not summary.returns or any(r is None for r in summary.returns):
            return None
        first = summary.returns[0]
        return first if all(r == first for r in summary.returns) else None

    def _model_sink(
        self, module: ParsedModule, summary: FunctionSummary, values: dict[str, Value], call: ast.Call, site: InitSite
    ) -> None:
        """Where the model given to initialize comes from: a builder's return value (`model = get_model()`),
        or a parameter of the function holding initialize (`def train(model): deepspeed.initialize(model=model)`)."""
        model = next((k.value for k in call.keywords if k.arg == "model"), None)
        if model is None and len(call.args) > 1 and not isinstance(call.args[1], ast.Starred):
            model = call.args[1]
        if model is None:
            return
        held = self.value(module, summary, values, model)
        if held is None:
            return
        if held[0] == "returned":
            self.model_builders.setdefault((str(held[1]), str(held[2])), site)
        elif held[0] == "param" and not held[2] and summary.qualname:
            self.model_parameters.setdefault((summary.path, summary.qualname, str(held[1])), site)

    def model_sinks(self) -> Iterator[tuple[str, str, int, str, InitSite]]:
        """(caller path, callee text, parameter index, parameter name, initialize site) for calls that pass a model
        into a function whose parameter goes to initialize as its model."""
        for (path, text), callee in list(self.call_texts.items()):
            for (callee_path, qualname, name), site in self.model_parameters.items():
                if (callee_path, qualname) != callee:
                    continue
                module = self.module(callee_path)
                function = module.functions.get(qualname) if module is not None else None
                if function is None:
                    continue
                params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
                owner = qualname.rpartition(".")[0]
                if module is not None and owner in module.classes and params:
                    params = params[1:]
                if name in params:
                    yield path, text, params.index(name), name, site

    def _init_site(self, module: ParsedModule, qualname: str, call: ast.Call) -> InitSite:
        key = (module.path, call.lineno, call.col_offset)
        site = self.inits.get(key)
        if site is None:
            keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
            config = keywords.get("config") or keywords.get("config_params")
            has_args = "args" in keywords or bool(call.args)
            site = InitSite(module.path, call.lineno, call.col_offset + 1, qualname, config, has_args)
            self.inits[key] = site
        return site

    def _is_initialize(self, module: ParsedModule, func: ast.expr) -> bool:
        name = _dotted(func)
        if name is None:
            return False
        head, _, rest = name.partition(".")
        full = module.imports.get(head)
        if full is None:
            return False
        return (f"{full}.{rest}" if rest else full) == "deepspeed.initialize"

    def resolve(self, module: ParsedModule, summary: FunctionSummary, func: ast.expr) -> tuple[str, str] | None:
        """The project function a call's callee names (same module, imported, `self.method`)."""
        name = _dotted(func)
        if name is None:
            return None
        found = self._resolve_name(module, summary, name)
        if found is not None:
            self.call_texts[(module.path, name)] = found
        return found

    def _resolve_name(self, module: ParsedModule, summary: FunctionSummary, name: str) -> tuple[str, str] | None:
        head, _, rest = name.partition(".")
        if summary.is_method and summary.params and head == summary.params[0] and rest and "." not in rest:
            owner = summary.qualname.rpartition(".")[0]
            qualname = f"{owner}.{rest}"
            return (module.path, qualname) if qualname in module.functions else None
        if not rest:
            # A function nested in the caller or in a function around it (`def main(): def training(model):
            # ...; training(model)`); class bodies are not scopes a method sees.
            scope = summary.qualname
            while scope and scope in module.functions:
                if f"{scope}.{name}" in module.functions:
                    return (module.path, f"{scope}.{name}")
                scope = scope.rpartition(".")[0]
            if name in module.functions:
                return (module.path, name)
            if name in module.classes and f"{name}.__init__" in module.functions:
                return (module.path, f"{name}.__init__")
        imported = module.imports.get(head)
        if imported is None and not rest:
            # `from util import *`: the first star-imported project module that defines the name
            for star in module.stars:
                path = self.finder.find(star, module.path)
                target = self.module(path) if path is not None else None
                if target is not None and name in target.functions:
                    return (target.path, name)
            return None
        if imported is None:
            return None
        dotted = f"{imported}.{rest}" if rest else imported
        near = module.path
        for _ in range(MAX_REEXPORTS + 1):
            module_name, _, function = dotted.rpartition(".")
            if not module_name or module_name.split(".")[0] in ("deepspeed", "torch", "transformers"):
                return None
            path = self.finder.find(module_name, near)
            if path is None:
                return None
            target = self.module(path)
            if target is None:
                return None
            if function in target.functions:
                return (path, function)
            if function in target.classes and f"{function}.__init__" in target.functions:
                return (path, f"{function}.__init__")
            # A package that re-exports the function (`utils/__init__.py`: `from .utils import get_model`)
            reexported = target.imports.get(function)
            if reexported is None or reexported == dotted:
                return None
            dotted, near = reexported, path
        return None

    def _call(self, module: ParsedModule, summary: FunctionSummary, values: dict[str, Value], call: ast.Call) -> None:
        if not call.args and not call.keywords:
            return
        callee = self.resolve(module, summary, call.func)
        if callee is None:
            return
        target = self.module(callee[0])
        function = target.functions.get(callee[1]) if target is not None else None
        if function is None:
            return
        arguments: dict[str, Value] = {}
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        owner = callee[1].rpartition(".")[0]
        if target is not None and owner in target.classes and params:
            params = params[1:]  # `self` is bound by the call
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred):
                return  # positions after *args cannot be known
            if index < len(params):
                arguments[params[index]] = self.value(module, summary, values, argument)
        for keyword in call.keywords:
            if keyword.arg is None:
                return
            arguments[keyword.arg] = self.value(module, summary, values, keyword.value)
        self.calls.append(CallSite(module.path, call.lineno, call.col_offset + 1, callee, arguments))

    def _argument_for(self, callee: tuple[str, str], call: ast.Call, param: str) -> ast.expr | None:
        target = self.module(callee[0])
        function = target.functions.get(callee[1]) if target is not None else None
        if function is None:
            return None
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        owner = callee[1].rpartition(".")[0]
        if target is not None and owner in target.classes and params:
            params = params[1:]
        for keyword in call.keywords:
            if keyword.arg == param:
                return keyword.value
        if param in params and params.index(param) < len(call.args):
            argument = call.args[params.index(param)]
            return None if isinstance(argument, ast.Starred) else argument
        return None

    # --- answers ------------------------------------------------------------------------------------------
    def engine_parameters(self) -> dict[tuple[str, str, str], tuple[str, CallSite, InitSite]]:
        """(path, function, parameter) -> (role, a call that passes it, the initialize it comes from), for
        parameters that receive the engine (or engine.module) at every call seen."""
        by_param: dict[tuple[str, str, str], list[tuple[Value, CallSite]]] = {}
        for site in self.calls:
            if site.callee[1].rpartition(".")[2] in self.unverifiable:
                continue
            for param, value in self._confirmed(site).items():
                by_param.setdefault((*site.callee, param), []).append((value, site))
        resolved: dict[tuple[str, str, str], tuple[str, CallSite, InitSite]] = {}
        for _ in range(MAX_ROUNDS):
            changed = False
            for key, passed in by_param.items():
                if key in resolved:
                    continue
                roles: set[str] = set()
                origin: InitSite | None = None
                for value, site in passed:
                    found = self._engine_role(value, site, resolved)
                    if found is None:
                        roles = set()
                        break
                    roles.add(found[0])
                    if origin is None:
                        origin = found[1]  # the initialize behind the first call, named with that call
                if len(roles) == 1 and origin is not None:
                    resolved[key] = (roles.pop(), passed[0][1], origin)
                    changed = True
            if not changed:
                break
        return resolved

    def _confirmed(self, site: CallSite) -> dict[str, Value]:
        """A call's arguments, where a value that is initialize's result only on some paths ("maybe") counts
        as that result when the callee uses the parameter receiving the engine as an engine
        (`model.backward(loss)`): the call then runs on the paths where initialize ran, so the other "maybe"
        items of that same initialize (its optimizer, its scheduler) are its results too. Other "maybe"
        values stay unknown."""
        confirmed: set[object] = set()
        for param, value in site.arguments.items():
            if value is None or value[0] != "maybe":
                continue
            result = value[1]
            assert isinstance(result, tuple)
            roles = result[1]
            assert isinstance(roles, tuple)
            if roles[0] == ENGINE and self._uses_as_engine(site.callee, param):
                confirmed.add(result[3])
        arguments: dict[str, Value] = {}
        for param, value in site.arguments.items():
            if value is not None and value[0] == "maybe":
                result = value[1]
                assert isinstance(result, tuple)
                value = result if result[3] in confirmed else None
            arguments[param] = value
        return arguments

    def _uses_as_engine(self, callee: tuple[str, str], param: str) -> bool:
        """Whether a function calls a method only the DeepSpeed engine has on its parameter `param`."""
        key = (*callee, param)
        if key not in self.engine_uses:
            module = self.module(callee[0])
            function = module.functions.get(callee[1]) if module is not None else None
            self.engine_uses[key] = function is not None and any(
                isinstance(call.func, ast.Attribute)
                and call.func.attr in ENGINE_ONLY_METHODS
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == param
                for statement in _statements(function.body)
                for call in _calls(statement)
            )
        return self.engine_uses[key]

    def _engine_role(
        self,
        value: Value,
        site: CallSite,
        resolved: dict[tuple[str, str, str], tuple[str, CallSite, InitSite]],
    ) -> tuple[str, InitSite] | None:
        if value is None:
            return None
        if value[0] == "result" and not value[2]:
            roles = value[1]
            assert isinstance(roles, tuple)
            role = roles[0]
            origin = value[3]
            if role in (*RESULT_ORDER, ENGINE_MODULE) and isinstance(origin, InitSite):
                return str(role), origin
            return None
        if value[0] == "param":
            caller = self._caller_of(site)
            upstream = resolved.get((site.caller_path, caller, str(value[1]))) if caller is not None else None
            if upstream is None:
                return None
            return (ENGINE_MODULE if value[2] else upstream[0]), upstream[2]
        return None

    def _caller_of(self, site: CallSite) -> str | None:
        module = self.module(site.caller_path)
        if module is None:
            return None
        best: tuple[int, str] | None = None
        for qualname, function in module.functions.items():
            end = function.end_lineno or function.lineno
            if function.lineno <= site.line <= end and (best is None or function.lineno > best[0]):
                best = (function.lineno, qualname)
        return best[1] if best is not None else None

    def passthrough_helpers(self) -> Iterator[tuple[str, str, int, str, bool]]:
        """(caller path, callee text, parameter index, parameter name, unwrapped) for calls of helpers that
        return their argument (`_unwrap_model(engine)`)."""
        for (path, text), callee in list(self.call_texts.items()):
            returned = self.returned(callee)
            if returned is None or returned[0] != "param":
                continue
            module = self.module(callee[0])
            function = module.functions.get(callee[1]) if module is not None else None
            if function is None:
                continue
            params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
            owner = callee[1].rpartition(".")[0]
            if module is not None and owner in module.classes and params:
                params = params[1:]
            name = str(returned[1])
            if name in params:
                yield path, text, params.index(name), name, bool(returned[2])

    def result_helpers(self) -> Iterator[tuple[str, str, tuple[str, str], tuple[str | None, ...], bool, InitSite]]:
        """(caller path, callee text, callee, roles, is_tuple, initialize site) for calls of helpers that
        return initialize's results."""
        for (path, text), callee in list(self.call_texts.items()):
            returned = self.returned(callee)
            if returned is None or returned[0] != "result" or not isinstance(returned[3], InitSite):
                continue
            roles = returned[1]
            assert isinstance(roles, tuple)
            yield (
                path,
                text,
                callee,
                tuple(str(r) if r is not None else None for r in roles),
                bool(returned[2]),
                returned[3],
            )


def _maybe(seen: list[Value]) -> Value:
    """After paths that disagree: ("maybe", result) when one path of this statement binds an item of initialize's
    result and the others keep something that is not one (the plain model, the client scheduler, unknown):
    `if "deepspeed" in env: model, opt, _, sched = deepspeed.initialize(...)`. Only a callee that uses its
    parameter as the engine turns it into a fact (`EngineFlow.engine_parameters`)."""
    if any(v is not None and v[0] == "maybe" for v in seen):
        # a name that held initialize's result on some paths, rebound on others: which paths ran initialize
        # is no longer the question this `if` decides
        return None
    found = {v for v in seen if v is not None and v[0] == "result"}
    if len(found) != 1:
        return None
    (result,) = found
    if not isinstance(result, tuple) or result[0] != "result" or result[2]:
        return None
    return ("maybe", result)


def _base(value: Value) -> Value:
    if value is None:
        return None
    if value[0] == "param":
        return ("param", value[1])
    if value[0] == "result" and not value[2]:
        roles = value[1]
        assert isinstance(roles, tuple)
        return ("result", ENGINE if roles[0] == ENGINE_MODULE else roles[0], value[3])
    return value


def _unwrapped(value: Value) -> Value:
    if value is None:
        return None
    if value[0] == "param":
        return ("param", value[1], True)
    if value[0] == "result" and not value[2]:
        roles = value[1]
        assert isinstance(roles, tuple)
        if roles[0] in (ENGINE, ENGINE_MODULE):
            return ("result", (ENGINE_MODULE,), False, value[3])
    return None


def _roles_of(value: Value) -> tuple[object, ...]:
    """The roles of a whole result tuple (empty for anything else)."""
    if value is not None and value[0] == "result" and value[2] and isinstance(value[1], tuple):
        return value[1]
    return ()


def _items(value: Value, count: int) -> list[Value]:
    """The values of `a, b, c = value`."""
    if value is not None and value[0] == "result" and value[2]:
        roles = value[1]
        assert isinstance(roles, tuple)
        if len(roles) == count:
            return [("result", (role,), False, value[3]) if role is not None else None for role in roles]
    return [None] * count


def _all_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, into nested definitions too (for imports; expressions are not entered)."""
    for statement in _statements(body):
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _all_statements(statement.body)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body in source order, into compound statements, not into nested definitions."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _statements(inner)
        if isinstance(statement, ast.Try):
            for handler in statement.handlers:
                yield from _statements(handler.body)
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _statements(case.body)


def _calls(statement: ast.stmt) -> Iterator[ast.Call]:
    """The calls in a statement's own expressions (not in its nested blocks or definitions)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    stack: list[ast.AST] = []
    for name, child in ast.iter_fields(statement):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        if isinstance(child, ast.AST):
            stack.append(child)
        elif isinstance(child, list):
            stack.extend(c for c in child if isinstance(c, ast.AST))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))

"""Reading one function (or a module's top-level code) into the project model: what each local name holds, what
it returns, the calls it makes to the project's own functions with the values it passes, the attributes its
methods set on `self`, and where the model given to initialize comes from. `fixpoint.ProjectModel` drives it.
"""

from __future__ import annotations

import ast

from dslint.model.conditions import guards_of
from dslint.model.library import (
    ENGINE,
    ENGINE_MODULE,
    FORWARDING_WRAPPERS,
    INITIALIZE,
    OPTIMIZER,
    SCHEDULER,
    SELF_RETURNING_METHODS,
)
from dslint.model.required_arms import required_arms, scope_stores
from dslint.model.resolution import Callee, CallSite, FunctionSummary, Resolver
from dslint.model.summary import ModuleSummary, SummaryStore, calls, dotted
from dslint.model.values import (
    NONE,
    Either,
    InitSite,
    Item,
    Keyed,
    LibraryFunction,
    Maybe,
    Packed,
    Param,
    Results,
    Returned,
    Value,
    base,
    instance_class,
    items,
    merge,
    options,
    roles_of,
    unwrapped,
)


class Evaluator(Resolver):
    """The state the fixpoint grows, and the reading of one function into it."""

    def __init__(self, store: SummaryStore) -> None:
        super().__init__(store)
        # parameters that hold a library's callable at every call (`def main(args, ds_init)`): (path, function,
        # parameter) -> that value, which a function read starts with instead of the bare parameter
        self.parameter_values: dict[tuple[str, str, str], Value] = {}
        # every binding of a name in a scope, by (path, function): what `required_arms` reads
        self.scope_stores: dict[tuple[str, str], dict[str, list[ast.AST]]] = {}
        # `required_arms`' answer for a branching statement (by id, with the statement kept: the summaries keep
        # every tree alive for the run): it depends on the statement, the block after it and its scope alone, and
        # the fixpoint reads a function once per round and per call context
        self.required: dict[int, tuple[ast.stmt, list[int] | None]] = {}
        self.reset()

    def reset(self) -> None:
        """Forget every function read (the fixpoint starts again when it learns a parameter's value)."""
        self.summaries: dict[Callee, FunctionSummary] = {}
        self.calls: list[CallSite] = []
        self.inits: dict[tuple[str, int, int], InitSite] = {}
        self.call_texts: dict[tuple[str, str], Callee] = {}  # (path, callee as written) -> callee
        self.in_progress: set[Callee] = set()
        # The model initialize receives: built by a function (its return value), or a parameter of the function
        # holding initialize, filled by its callers.
        self.model_builders: dict[Callee, InitSite] = {}
        self.model_parameters: dict[tuple[str, str, str], InitSite] = {}
        # `self.x = engine` in one method, read in another: (path, class, "x") -> value
        self.attributes: dict[tuple[str, str, str], Value] = {}
        # `obj.x` read where `obj` is an instance of a project class holding an engine in `x`:
        # (path, line, column, end line, end column), as `ast` gives them -> the value
        self.instance_reads: dict[tuple[str, int, int, int, int], Item] = {}
        # `obj.x.method(...)` on such an instance: the same position -> (class's path, class, "x")
        self.receivers: dict[tuple[str, int, int, int, int], tuple[str, str, str]] = {}
        # `obj.method(...)` where `obj` holds an instance of a project class (made here, or by a factory every
        # return of which makes one): (path, line, column as `ast` gives it) -> the methods it may run
        self.instance_calls: dict[tuple[str, int, int], list[Callee]] = {}
        # calls of deepspeed.initialize through a name holding it (`ds_init(...)`): (path, line, column as `ast`
        # gives it) -> (the name, the value it holds)
        self.initialize_aliases: dict[tuple[str, int, int], tuple[str, LibraryFunction]] = {}

    def ensure(self, module: ModuleSummary, qualname: str) -> FunctionSummary | None:
        """The summary of one function (module-level code for ""), read once, on first need."""
        key = (module.path, qualname)
        if key in self.summaries or key in self.in_progress:
            return self.summaries.get(key)
        self.in_progress.add(key)
        try:
            if not qualname:
                summary = FunctionSummary(module.path, "", [], False)
                body = module.tree.body
            else:
                function = module.functions.get(qualname)
                if function is None:
                    return None
                summary = FunctionSummary(module.path, qualname, list(function.params), function.is_method)
                body = function.node.body
            annotated = self.annotated_classes(module, qualname)
            values: dict[str, Value] = {
                p: self.parameter_values.get((module.path, qualname, p), Param(p, instance_of=annotated.get(p)))
                for p in summary.params
            }
            if summary.is_method and summary.params:
                values.pop(summary.params[0], None)
            self._block(module, summary, values, body)
        finally:
            self.in_progress.discard(key)
        self.summaries[key] = summary
        return summary

    def _block(
        self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], body: list[ast.stmt]
    ) -> None:
        """Statements in order; after an `if` (or a loop, a `try`), a name keeps its value only when every path
        gives it the same one: `if use_ds: model, *_ = deepspeed.initialize(...)` leaves `model` unknown after
        the `if`, since the other path keeps the plain model (`values.merge`). A name that some path leaves
        unbound (bound in one arm only, none before) has the value the other paths give: a read after the
        statement raises on that path."""
        for index, statement in enumerate(body):
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
            # arms that leave the same values need no choosing (most do: a log line, a flag set): the walk of
            # `required_arms` over the arms and the rest of the block is skipped, its answer could change nothing
            same = all(_same_values(results[0], result) for result in results[1:])
            needed = None if same else self._required(module, summary, statement, arms, body[index + 1 :])
            if needed is not None:  # the paths past the other arms raise on a name read after the statement
                results = [results[i] for i in needed]
            for key in {k for result in results for k in result}:
                if "." not in key:  # a name some path never bound is unbound there: a read after it raises
                    values[key] = merge([result[key] for result in results if key in result])
                    continue
                # a key one path never bound: `obj.x` read from the instance's class (not `self.x`, which
                # the other path may have just set)
                seen = [result[key] if key in result else self._instance_attribute(result, key) for result in results]
                values[key] = merge(seen)

    def _required(
        self,
        module: ModuleSummary,
        summary: FunctionSummary,
        statement: ast.stmt,
        arms: list[list[ast.stmt]],
        rest: list[ast.stmt],
    ) -> list[int] | None:
        known = self.required.get(id(statement))
        if known is None or known[0] is not statement:
            known = (statement, required_arms(statement, arms, rest, self._stores(module, summary)))
            self.required[id(statement)] = known
        return known[1]

    def _stores(self, module: ModuleSummary, summary: FunctionSummary) -> dict[str, list[ast.AST]]:
        key = (module.path, summary.qualname)
        found = self.scope_stores.get(key)
        if found is None:
            function = module.functions.get(summary.qualname) if summary.qualname else None
            body = function.node.body if function is not None else module.tree.body
            found = scope_stores(body, summary.params, function is None)
            self.scope_stores[key] = found
        return found

    def _self_key(self, summary: FunctionSummary, key: str) -> tuple[str, str, str] | None:
        if not summary.is_method or not summary.params:
            return None
        head, _, rest = key.partition(".")
        if head != summary.params[0] or not rest or "." in rest:
            return None
        return (summary.path, summary.qualname.rpartition(".")[0], rest)

    def _statement(
        self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], statement: ast.stmt
    ) -> None:
        for call in calls(statement):
            self._call(module, summary, values, call)
        if isinstance(statement, ast.Assign):
            value = self.value(module, summary, values, statement.value)
            if isinstance(value, Results) and isinstance(statement.value, ast.Call):
                self._bind_handed(values, statement.value, value.origin)
            for target in statement.targets:
                self._bind(summary, values, target, value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self._bind(summary, values, statement.target, self.value(module, summary, values, statement.value))
        elif isinstance(statement, ast.Return) and statement.value is not None:
            summary.returns.append(self.value(module, summary, values, statement.value))
        elif isinstance(statement, ast.While) and isinstance(statement.test, ast.Call):
            # `while hasattr(m, "module"): m = m.module` unwraps whatever m held
            test = statement.test
            if dotted(test.func) == "hasattr" and test.args and isinstance(test.args[0], ast.Name):
                name = test.args[0].id
                held = values.get(name)
                if held is not None:
                    values[name] = unwrapped(held)

    @staticmethod
    def _bind_handed(values: dict[str, Value], call: ast.Call, site: InitSite) -> None:
        """The optimizer and scheduler a name hands initialize (`optimizer=opt`) are the engine's from then on:
        it wraps that optimizer and steps that scheduler (the names its results are bound to are bound after)."""
        for role, parameter in ((OPTIMIZER, "optimizer"), (SCHEDULER, "lr_scheduler")):
            given = next((k.value for k in call.keywords if k.arg == parameter), None)
            position = INITIALIZE.positional.index(parameter)
            if given is None and len(call.args) > position:
                given = call.args[position]
            if isinstance(given, ast.Name):
                values[given.id] = Item(role, site)

    def _bind(self, summary: FunctionSummary, values: dict[str, Value], target: ast.expr, value: Value) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            found = items(value, len(target.elts))
            stars = [i for i, element in enumerate(target.elts) if isinstance(element, ast.Starred)]
            roles = roles_of(value)
            if len(stars) == 1 and roles:  # `engine, *_ = deepspeed.initialize(...)`
                star = stars[0]
                every = items(value, len(roles))
                tail_count = len(target.elts) - star - 1
                head = every[:star]
                tail = every[len(roles) - tail_count :] if tail_count else []
                if len(head) == star and len(tail) == tail_count:
                    found = [*head, None, *tail]
            for element, item in zip(target.elts, found, strict=True):
                self._bind(summary, values, element.value if isinstance(element, ast.Starred) else element, item)
            return
        key = dotted(target)
        if key is None:
            return
        values[key] = value
        attribute = self._self_key(summary, key)
        if attribute is not None:
            # Two different values for one attribute: unknown; `None` beside one value: that value
            # (`self.ema = None` then `if args.ema: self.ema = self._init_ema()`).
            known = self.attributes.get(attribute, value)
            if known == NONE:
                known = value
            elif value == NONE:
                value = known
            self.attributes[attribute] = value if known == value else None

    # --- expressions --------------------------------------------------------------------------------------
    def value(self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], expr: ast.expr) -> Value:
        if isinstance(expr, ast.Call):
            called = self._called_initialize(module, summary, values, expr.func)
            if called is not None:
                site = self._init_site(module, summary.qualname, expr)
                if isinstance(called, LibraryFunction):
                    name = dotted(expr.func) or ""
                    self.initialize_aliases[(module.path, expr.lineno, expr.col_offset)] = (name, called)
                self._model_sink(module, summary, values, expr, site)
                return Results(INITIALIZE.returns, site)
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_RETURNING_METHODS:
                receiver = self.value(module, summary, values, expr.func.value)
                if isinstance(receiver, Item) and receiver.role in (ENGINE, ENGINE_MODULE):
                    return receiver  # `engine = engine.cuda()`: nn.Module's `.cuda()`, `.to()`, `.train()` return it
            if expr.args and module.qualified(expr.func) in FORWARDING_WRAPPERS:
                wrapped = self.value(module, summary, values, expr.args[0])
                if isinstance(wrapped, Item) and wrapped.role in (ENGINE, ENGINE_MODULE):
                    return wrapped  # `engine = torch.compile(engine)`: the wrapper forwards to the engine
            callee = self.resolve(module, summary, expr.func)
            if callee is None:
                cls = self._project_class(module, expr.func)  # a class without an `__init__` of its own
                return Returned(cls[0], f"{cls[1]}.__init__") if cls is not None else None
            overrides = self._overrides(module, summary, expr.func)
            returned = self._returned_through(callee, overrides)
            if returned is None:
                return Returned(*callee, self._builders_through(callee, overrides))
            if isinstance(returned, Param):
                argument = self.argument_for(callee, expr, returned.name)
                if argument is None:
                    return None
                inner = self.value(module, summary, values, argument)
                return unwrapped(inner) if returned.unwrapped else inner
            if isinstance(returned, Returned):
                # the callee hands on another function's result: it builds that value too
                return Returned(returned.path, returned.qualname, (*returned.via, callee))
            if isinstance(returned, Either):
                # the callee returns one of several builders' results, or a parameter: each, through the callee
                return merge([self._through(module, summary, values, callee, expr, o) for o in returned.options])
            return returned
        if isinstance(expr, ast.Dict):
            return self._keyed(module, summary, values, expr)
        if isinstance(expr, (ast.Tuple, ast.List)):
            elements = [self.value(module, summary, values, element) for element in expr.elts]
            origins = {element.origin for element in elements if isinstance(element, Item)}
            if not origins and any(isinstance(element, LibraryFunction) for element in elements):
                return Packed(tuple(elements))
            if len(origins) != 1 or not any(element is not None for element in elements):
                return None
            roles = tuple(_first_role(element) for element in elements)
            return Results(roles, origins.pop())
        if isinstance(expr, ast.IfExp):
            body = self.value(module, summary, values, expr.body)
            orelse = self.value(module, summary, values, expr.orelse)
            if body is not None and orelse is not None and base(body) == base(orelse):
                return unwrapped(body) if body != orelse else body
            return None
        if isinstance(expr, ast.Attribute) and expr.attr == "module":
            inner = self.value(module, summary, values, expr.value)
            return unwrapped(inner) if inner is not None else None
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            index = expr.slice.value
            inner = self.value(module, summary, values, expr.value)
            if isinstance(index, int) and isinstance(inner, Results) and -len(inner.roles) <= index < len(inner.roles):
                return Item(inner.roles[index], inner.origin)
            if isinstance(index, str) and isinstance(inner, Keyed):
                return inner.item(index)
            packed = inner.elements if isinstance(inner, Packed) else ()
            if isinstance(index, int) and -len(packed) <= index < len(packed):
                return packed[index]
            return None
        if isinstance(expr, ast.Constant) and expr.value is None:
            return NONE
        key = dotted(expr)
        if key is not None:
            found = self._read(summary, values, key)
            # `pair.policy`: read from an instance of a project class that keeps an engine in `policy`
            instance = key not in values and self._self_key(summary, key) is None
            if isinstance(found, Item) and isinstance(expr, ast.Attribute) and instance:
                end_line, end_column = expr.end_lineno or expr.lineno, expr.end_col_offset or expr.col_offset
                self.instance_reads[(module.path, expr.lineno, expr.col_offset, end_line, end_column)] = found
            if found is None and module.qualified(expr) == INITIALIZE.name:
                return LibraryFunction(INITIALIZE.name, (module.path, expr.lineno))  # `ds_init = deepspeed.initialize`
            return found
        return None

    def _called_initialize(
        self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], func: ast.expr
    ) -> str | LibraryFunction | None:
        """Whether a call's callee is deepspeed.initialize: its qualified name, or the value a name holding it
        has (`ds_init`, bound here or a parameter every caller gives it to)."""
        if module.qualified(func) == INITIALIZE.name:
            return INITIALIZE.name
        key = dotted(func)
        if key is not None and (key in values or self._self_key(summary, key) is not None):
            held = self._read(summary, values, key)
            if isinstance(held, LibraryFunction) and held.name == INITIALIZE.name:
                return held
        return None

    def _keyed(
        self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], expr: ast.Dict
    ) -> Value:
        """`{"engine": engine, "optimizer": optimizer}`: a dict of one initialize's results."""
        keys: list[str] = []
        for key in expr.keys:
            if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
                return None  # `**other` or a key that is not a constant string
            keys.append(key.value)
        elements = [self.value(module, summary, values, element) for element in expr.values]
        origins = {element.origin for element in elements if isinstance(element, Item)}
        if len(origins) != 1:
            return None
        roles = tuple(element.role if isinstance(element, Item) else None for element in elements)
        return Keyed(tuple(keys), roles, origins.pop())

    def _read(self, summary: FunctionSummary, values: dict[str, Value], key: str) -> Value:
        """A name's value: bound here, `self.x` set in a method of this class, or `obj.x` on an instance of a
        project class (`rlhf = RLHFEngine(...)`, `rlhf.actor` set to an engine in its methods)."""
        if key in values:
            return values[key]
        attribute = self._self_key(summary, key)
        if attribute is not None:
            return self.attributes.get(attribute)
        return self._instance_attribute(values, key)

    def _through(
        self,
        module: ModuleSummary,
        summary: FunctionSummary,
        values: dict[str, Value],
        callee: Callee,
        call: ast.Call,
        option: Returned | Param,
    ) -> Value:
        """One option of what `callee` returns, as its caller's `call` sees it: a builder's return handed on
        through the callee, or the argument the call gives the parameter it returns."""
        if isinstance(option, Returned):
            return Returned(option.path, option.qualname, (*option.via, callee))
        argument = self.argument_for(callee, call, option.name)
        inner = self.value(module, summary, values, argument) if argument is not None else None
        return unwrapped(inner) if option.unwrapped else inner

    def _receiver(self, module: ModuleSummary, values: dict[str, Value], expr: ast.Attribute) -> None:
        """`pair.policy.step()` where `pair` holds an instance of a project class: kept, to be answered once the
        fixpoint is done from what the class's methods are then known to set (no method is read for it)."""
        head = dotted(expr.value)
        cls = instance_class(values.get(head)) if head is not None else None
        if cls is not None:
            end_line, end_column = expr.end_lineno or expr.lineno, expr.end_col_offset or expr.col_offset
            where = (module.path, expr.lineno, expr.col_offset, end_line, end_column)
            self.receivers[where] = (*cls, expr.attr)

    def _instance_attribute(self, values: dict[str, Value], key: str) -> Value:
        """`obj.x` where `obj` holds an instance of a project class whose methods set `self.x` to one of
        initialize's results."""
        head, _, attr = key.rpartition(".")
        cls = instance_class(values.get(head)) if head else None
        module = self.module(cls[0]) if cls is not None else None
        if cls is None or module is None:
            return None
        path, owner = cls
        for function in [f for f in module.functions.values() if f.qualname.rpartition(".")[0] == owner]:
            self.ensure(module, function.qualname)
        found = self.attributes.get((path, owner, attr))
        # only initialize's results: a parameter of the class's method means nothing here
        return found if isinstance(found, (Results, Keyed, Item, Maybe)) else None

    def returned(self, callee: Callee) -> Value:
        """What a function returns, when every return statement agrees."""
        module = self.module(callee[0])
        summary = self.ensure(module, callee[1]) if module is not None else None
        if summary is None or not summary.returns or any(r is None for r in summary.returns):
            return None
        first = summary.returns[0]
        return first if all(r == first for r in summary.returns) else None

    def _returned_through(self, callee: Callee, overrides: list[Callee]) -> Value:
        """What a call returns when it may reach overrides too (`self.build()` in a base class): the value every
        implementation with a return statement agrees on (an abstract one, `raise NotImplementedError`, has none)."""
        if not overrides:
            return self.returned(callee)
        found: list[Value] = []
        for implementation in [callee, *overrides]:
            summary = self._summary_of(implementation)
            if summary is None:
                return None
            if summary.returns:
                found.append(self.returned(implementation))
        if not found or any(value is None or value != found[0] for value in found):
            return None
        return found[0]

    def _builders_through(self, callee: Callee, overrides: list[Callee]) -> tuple[Callee, ...]:
        """`self.get_model()` in a base class whose overrides return different things: every implementation
        that returns may be the one called, so each builds the value, with the function each hands on
        (`return get_model(args)`)."""
        found: list[Callee] = []
        for implementation in [callee, *overrides]:
            summary = self._summary_of(implementation) if overrides else None
            if summary is None or not summary.returns:
                continue
            returned = self.returned(implementation)
            built = returned.builders() if isinstance(returned, Returned) else []
            found.extend(b for b in (implementation, *built) if b != callee and b not in found)
        return tuple(found)

    def _summary_of(self, callee: Callee) -> FunctionSummary | None:
        module = self.module(callee[0])
        return self.ensure(module, callee[1]) if module is not None else None

    def _overrides(self, module: ModuleSummary, summary: FunctionSummary, func: ast.expr) -> list[Callee]:
        """For `self.name(...)` in a method: the overrides of `name` in the project's subclasses of its class."""
        name = dotted(func)
        if name is None or not summary.is_method or not summary.params:
            return []
        head, _, rest = name.partition(".")
        if head != summary.params[0] or not rest or "." in rest:
            return []
        return self.hierarchy.overrides((module.path, summary.qualname.rpartition(".")[0]), rest)

    def _model_sink(
        self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], call: ast.Call, site: InitSite
    ) -> None:
        """Where the model given to initialize comes from: a builder's return value (`model = get_model()`),
        or a parameter of the function holding initialize (`def train(model): deepspeed.initialize(model=model)`)."""
        model = next((k.value for k in call.keywords if k.arg == INITIALIZE.model), None)
        position = INITIALIZE.positional.index("model")
        if model is None and len(call.args) > position and not isinstance(call.args[position], ast.Starred):
            model = call.args[position]
        if model is None:
            return
        for held in options(self.value(module, summary, values, model)):  # each path's model (`Either`)
            if isinstance(held, Returned):
                for builder in held.builders():
                    self.model_builders.setdefault(builder, site)
            elif isinstance(held, Param) and not held.unwrapped and summary.qualname:
                self.model_parameters.setdefault((summary.path, summary.qualname, held.name), site)

    def _init_site(self, module: ModuleSummary, qualname: str, call: ast.Call) -> InitSite:
        key = (module.path, call.lineno, call.col_offset)
        site = self.inits.get(key)
        if site is None:
            keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
            config = next((keywords[name] for name in INITIALIZE.config if keywords.get(name) is not None), None)
            has_args = "args" in keywords or bool(call.args)
            function = module.functions.get(qualname) if qualname else None
            body = function.node.body if function is not None else module.tree.body
            guards = guards_of(body, call)
            site = InitSite(module.path, call.lineno, call.col_offset + 1, qualname, config, has_args, guards)
            self.inits[key] = site
        return site

    # --- calls --------------------------------------------------------------------------------------------
    def _call(self, module: ModuleSummary, summary: FunctionSummary, values: dict[str, Value], call: ast.Call) -> None:
        """A call of a project function with arguments, recorded with the values it passes; a `self.name(...)`
        call in a method is recorded for every override of `name` in subclasses too (the base class calls them)."""
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Attribute):
            self._receiver(module, values, call.func.value)
        if not call.args and not call.keywords:
            return
        callee = self.resolve(module, summary, call.func)
        if callee is None:
            targets = self._instance_methods(values, call.func) or self.aliased_constructors(module, summary, call.func)
            if targets:
                self.instance_calls[(module.path, call.lineno, call.col_offset)] = targets
        else:
            targets = [callee, *self._overrides(module, summary, call.func)]
        if not targets:
            return
        functions = [(target, function) for target in targets if (function := self.function(target)) is not None]
        if not functions:
            return
        limit = max(len(function.positional) for _, function in functions)
        positional: list[Value] = []
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred):
                return  # positions after *args cannot be known
            if index < limit:
                positional.append(self.value(module, summary, values, argument))
        keywords: dict[str, Value] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                return  # **kwargs may fill any parameter
            keywords[keyword.arg] = self.value(module, summary, values, keyword.value)
        for target, function in functions:
            arguments: dict[str, Value] = dict(zip(function.positional, positional, strict=False))
            arguments.update(keywords)
            self.calls.append(CallSite(module.path, call.lineno, call.col_offset + 1, target, arguments))

    def _instance_methods(self, values: dict[str, Value], func: ast.expr) -> list[Callee]:
        """`obj.method` where `obj` holds an instance of a project class, or what a project factory returns when
        each of its returns is such an instance (`backend = backend_from_args(args)`): the method of each class
        that has one (along its bases)."""
        if not isinstance(func, ast.Attribute):
            return []
        head = dotted(func.value)
        held = values.get(head) if head is not None else None
        annotated = held.instance_of if isinstance(held, Param) else None
        if annotated is not None:  # a parameter annotated with a project class
            method = self.hierarchy.method(annotated, func.attr)
            return [method] if method is not None else []
        if not isinstance(held, Returned) or held.via:
            return []
        instances = [held]
        if not held.qualname.endswith(".__init__"):
            module = self.module(held.path)
            factory = self.ensure(module, held.qualname) if module is not None else None
            returns = factory.returns if factory is not None else []
            instances = [r for r in returns if isinstance(r, Returned) and r.qualname.endswith(".__init__")]
            if not returns or len(instances) != len(returns):
                return []
        found: list[Callee] = []
        for instance in instances:
            method = self.hierarchy.method((instance.path, instance.qualname[: -len(".__init__")]), func.attr)
            if method is not None and method not in found:
                found.append(method)
        return found


def _first_role(value: Value) -> str | None:
    """The role a tuple's element gives the tuple built from it (a nested result tuple: its first item's)."""
    if isinstance(value, Item):
        return value.role
    return value.roles[0] if isinstance(value, Results) else None


def _same_values(one: dict[str, Value], other: dict[str, Value]) -> bool:
    """The same names with the same values (the same objects, mostly: each arm starts from a copy)."""
    return len(one) == len(other) and all(
        (value := one.get(key, _ABSENT)) is found or value == found for key, found in other.items()
    )


_ABSENT = object()

"""The project fixpoint over the module summaries: engines followed from the `deepspeed.initialize` calls that
create them, through parameters, returns, `self.x` attributes and the instances that hold them, to any depth.

It answers:
- which parameters receive an engine (or `engine.module`, an optimizer or scheduler initialize returned) at EVERY
  call it saw (one call with something else, or with a value it cannot read, and the parameter stays unknown);
- which helpers return initialize's results (`return deepspeed.initialize(...)`, `return engine, opt, sched`),
  and which return their argument, maybe unwrapped (`engine.module if hasattr(engine, "module") else engine`);
- which functions build the model initialize receives, and which calls hand a model on to it.
Modules are read only when they may create an engine (a text test) or hold a function such a module calls.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dslint.model.attribute_models import attribute_builders
from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import resolved_calls
from dslint.model.library import ENGINE, ENGINE_MODULE, ENGINE_ONLY_METHODS, INITIALIZE, OPTIMIZER, RESULT_ORDER
from dslint.model.resolution import Callee, CallSite, FunctionSummary
from dslint.model.summary import ModuleSummary, calls, character_column, dotted, statements
from dslint.model.values import (
    InitSite,
    Item,
    Keyed,
    LibraryFunction,
    Maybe,
    NoneConstant,
    Param,
    Results,
    Returned,
    Value,
    holds_library_function,
    instance_class,
    is_engine_held,
    merge,
    options,
)

MAX_ROUNDS = 6
# A function name found in more files than this is too common to read every file calling it (see _possible_callers).
MAX_NAME_FILES = 24

EngineAnswer = tuple[str, CallSite, InitSite]  # (role, a call that passes it, the initialize it comes from)


@dataclass(frozen=True)
class HelperCall:
    """A call, in `caller_path` at `line`/`column` (1-based, in characters), of a project function the fixpoint
    has an answer for. Answers reach the caller's file keyed by that position."""

    caller_path: str
    line: int
    column: int
    text: str  # the callee as written (`utils.setup`), for `dslint graph`
    callee: Callee

    @property
    def position(self) -> tuple[int, int]:
        return (self.line, self.column)


class ProjectModel(Evaluator):
    """The fixpoint (see the module docstring)."""

    def reset(self) -> None:
        super().reset()
        self.unverifiable_callees: set[Callee] = set()  # functions whose possible callers are too many to read
        # names whose callers were read only where they can call the definitions met then: name -> definitions
        self.callers_read_for: dict[str, set[Callee]] = {}
        self._named: dict[str, set[Callee]] = {}  # last name -> functions met (`_functions_named`)
        self._named_upto = (0, 0)  # how many summaries and calls are in `_named`
        # (path, function, parameter) -> whether the function calls an engine-only method on the parameter
        self.engine_uses: dict[tuple[str, str, str], bool] = {}
        self._helpers: list[HelperCall] | None = None  # the answers' calls, found once the fixpoint is done
        self._engine_parameters: tuple[int, dict[tuple[str, str, str], EngineAnswer]] | None = None
        # engine parameters whose callers pass the engine only on the paths where initialize ran (`_confirmed`)
        self.conditional_parameters: set[tuple[str, str, str]] = set()
        # which calls hand a value the fixpoint follows (`_handing_followed`): the parameters some call hands one,
        # the calls handing a parameter of their own function that none has been handed yet, by that parameter,
        # the last names of the functions called with one, and how many of `calls` were looked at
        self._live_parameters: set[tuple[str, str, str]] = set(self.parameter_values)
        self._waiting: dict[tuple[str, str, str], list[tuple[CallSite, str]]] = {}
        self._handed_names: set[str] = set()
        self._handed_upto = 0

    def analyse_all(self, producers: Iterable[str]) -> None:
        """Follow engines from where they are created, reading only the functions they reach.

        Start: the functions (and module-level code) of `producers` that call `deepspeed.initialize`. Then,
        until nothing new comes in: the functions an engine (or something holding one) is passed to; and, found
        by a text test for their names, the functions that call a helper returning an engine or a function
        receiving one (so that every call of a receiving function is seen: one call with something else and
        its parameter stays unknown). A name found in too many files is followed only into the files that can
        call a definition of it (`_possible_callers`: its module and those importing it); a definition with too
        many of those, or a method, is left unknown rather than guessed.

        A parameter that receives deepspeed.initialize itself at every call (`main(args, ds_init)` after
        `ds_init = deepspeed.initialize`) holds it: the fixpoint starts again with that known, so that a call of
        the parameter creates an engine (rarely more than once: only where such a value was seen).
        """
        producers = list(producers)
        self._follow(producers)
        for _ in range(MAX_ROUNDS):
            learnt = self._parameters_holding_functions()
            if learnt.keys() <= self.parameter_values.keys():
                break
            self.parameter_values.update(learnt)
            self.reset()
            self._follow(producers)
        self._models_through_calls()

    def _follow(self, producers: list[str]) -> None:
        """One pass of the fixpoint (see `analyse_all`)."""
        queue: list[Callee] = [(path, qualname) for path, qualname, _ in self.parameter_values]
        for path in producers:
            module = self.module(path)
            if module is not None:
                queue.extend((path, qualname) for qualname in self._initializing(module))
        searched: set[str] = set()
        followed = 0
        sources = self.store.sources
        while queue:
            while queue:
                path, qualname = queue.pop()
                module = self.module(path)
                if module is not None:
                    self.ensure(module, qualname)
            for site in self.calls[followed:]:
                if any(v is not None for v in site.arguments.values()) and site.callee not in self.summaries:
                    queue.append(site.callee)
            followed = len(self.calls)
            holders = {key[:2] for key in self.model_parameters}  # once a pass, not once a function
            summaries = self.summaries.items()
            names = {q.rpartition(".")[2] for (_, q), summary in summaries if q and self._worth(summary, holders)}
            names.update(self._handing_followed())
            # classes keeping an engine in an attribute: who builds them reads it (`pair = EnginePair(...)`)
            names.update(owner.rpartition(".")[2] for _, owner in self._engine_keepers())
            names.discard("__init__")
            queue.extend(self._annotated_holders(searched))
            # the names a project function is imported under elsewhere (`from train.ds import main as run_ds`):
            # its calls are written with those, and resolved through that file's imports as any other
            names.update(alias for name in names - searched for alias in self.store.words.aliases(name))
            for name in sorted(names - searched):
                searched.add(name)
                needle = name.encode() + b"("
                matched = self.store.words.calling(name)
                if matched is None:  # not an ASCII name: scan
                    matched = [path for path, data in sources.items() if needle in data]
                if len(matched) > MAX_NAME_FILES:
                    matched = self._possible_callers(name, matched)
                elif len(matched) > 1:
                    matched = self._importing_callers(name, matched)
                for path in matched:
                    module = self.module(path)
                    if module is None:
                        continue
                    for qualname in self._calling(module, name):
                        if (path, qualname) not in self.summaries:
                            queue.append((path, qualname))

    def _engine_keepers(self) -> set[tuple[str, str]]:
        """The project classes (module path, qualname) keeping one of initialize's results in an attribute."""
        return {(path, owner) for (path, owner, _), held in self.attributes.items() if is_engine_held(held)}

    def _annotated_holders(self, searched: set[str]) -> list[Callee]:
        """The functions not read yet with a parameter annotated with a project class keeping an engine in an
        attribute (`def __init__(self, engine: RLHFEngine): self.actor = engine.actor`), however the instance
        reaches them (a config-driven factory, `instantiate(cfg.trainer, engine)`): searched once per class, in
        the files holding its name."""
        found: list[Callee] = []
        for path, owner in sorted(self._engine_keepers()):
            key = f"annotated:{path}:{owner}"
            if key in searched:
                continue
            searched.add(key)
            needle = owner.rpartition(".")[2].encode()
            matched = [p for p, data in self.store.sources.items() if needle in data]
            for module in map(self.module, matched[: MAX_NAME_FILES * 4]):
                if module is None:
                    continue
                for qualname in module.functions:
                    if (module.path, qualname) in self.summaries:
                        continue
                    if (path, owner) in self.annotated_classes(module, qualname).values():
                        found.append((module.path, qualname))
        return found

    def _handing_followed(self) -> set[str]:
        """The last names of the functions that some call hands a value the model follows, whose callers must all
        be read so that every call of them is seen. Followed: every value it knows but None (unknown, or the
        literal) and a parameter of the calling function that no call seen hands a followed value, to any depth
        (`def train(cfg): helper(cfg)` is followed once a call of `train` hands `cfg` one). A function only ever
        handed values that are not followed has no answer to keep sound, and whoever hands it one later is read
        anyway: the engine reaches that caller first, forward from its initialize."""
        for site in self.calls[self._handed_upto :]:
            for param, value in site.arguments.items():
                if value is None or isinstance(value, NoneConstant):
                    continue
                waits_on = self._unhanded_parameter(site, value)
                if waits_on is None:
                    self._handed(site, param)
                else:
                    self._waiting.setdefault(waits_on, []).append((site, param))
        self._handed_upto = len(self.calls)
        return self._handed_names

    def _unhanded_parameter(self, site: CallSite, value: Value) -> tuple[str, str, str] | None:
        """The calling function's parameter that `value` is, when no call seen hands that parameter a followed
        value yet; None when `value` is followed now."""
        if not isinstance(value, Param):
            return None
        holder = self._caller_function(site)
        if holder is None:
            return None
        key = (site.caller_path, holder, value.name)
        return None if key in self._live_parameters else key

    def _handed(self, site: CallSite, param: str) -> None:
        """`site` hands its callee's `param` a followed value: so does each call waiting on that parameter."""
        pending = [(site, param)]
        while pending:
            site, param = pending.pop()
            self._handed_names.add(site.callee[1].rpartition(".")[2])
            key = (*site.callee, param)
            if key not in self._live_parameters:
                self._live_parameters.add(key)
                pending.extend(self._waiting.pop(key, ()))

    def _importing_callers(self, name: str, matched: list[str]) -> list[str]:
        """Of a few files calling something named `name`, those that can call a function of that name the project
        defines, when every such definition is at a module's top level (a method, or a nested function, is reached
        from anywhere: every file stays; so is a name no `def` gives, a class or an alias): the defining modules,
        the files importing one of them (`_module_importers`), and those importing the name itself (`from x import
        name`, a re-export's importers too). Read from the text of every source, so the answer does not depend on
        what the fixpoint met first; a file that calls the name without any such import calls another function."""
        definers, nested = self.store.words.definitions(name)
        if nested or not definers:
            return matched
        found = set(definers).union(self.store.words.importing(name))
        for path in definers:
            found.update(self._module_importers(path))
        return [p for p in matched if p in found]

    def _module_importers(self, path: str) -> set[str]:
        """The files whose import lines name the module at `path` (its file's stem), or its package when the
        package's `__init__.py` names the module (it re-exports it)."""
        folder = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        package = self.store.sources.get(os.path.join(folder, "__init__.py"), b"")
        words = {stem} if stem != "__init__" else set()
        if stem == "__init__" or stem.encode() in package:
            words.add(os.path.basename(folder))
        return {p for word in words if word for p in self.store.words.importing(word)}

    def _possible_callers(self, name: str, matched: list[str]) -> list[str]:
        """Of the files calling something named `name` (too many to read them all), those that can call one of
        the project's own functions of that name the fixpoint met: its module, and the files importing that module
        (`from train import main`, `import train`; its package's name too when the package's `__init__.py` names
        the module); a function nested in another only from its own file. A
        definition with too many such files, or a method (an instance reaches it from anywhere), is not followed
        (`unverifiable_callees`)."""
        defined = set(self._functions_named(name))
        found: set[str] = set()
        for path, qualname in sorted(defined):
            owner = qualname.rpartition(".")[0]
            module = self.module(path)
            if owner and (module is None or owner not in module.functions):
                self.unverifiable_callees.add((path, qualname))  # a method: an instance reaches it from anywhere
                continue
            callers = [path] if path in matched else []
            if not owner:  # its module, or its package when that re-exports it, named in an import
                importing = self._module_importers(path)
                callers.extend(p for p in matched if p != path and p in importing)
            if len(callers) > MAX_NAME_FILES:
                self.unverifiable_callees.add((path, qualname))
                continue
            found.update(callers)
        self.callers_read_for[name] = defined
        return [p for p in matched if p in found]

    def _functions_named(self, name: str) -> set[Callee]:
        """The functions the fixpoint met (read, or called with arguments) whose last name is `name`: an index
        kept up with the summaries and calls as they grow."""
        summaries, calls = list(self.summaries)[self._named_upto[0] :], self.calls[self._named_upto[1] :]
        for callee in (*summaries, *(site.callee for site in calls)):
            self._named.setdefault(callee[1].rpartition(".")[2], set()).add(callee)
        self._named_upto = (len(self.summaries), len(self.calls))
        return self._named.get(name, set())

    def verifiable(self, callee: Callee) -> bool:
        """Whether every call of a function was seen: its name is not too common, or its own possible callers
        were read."""
        if callee in self.unverifiable_callees:
            return False
        read_for = self.callers_read_for.get(callee[1].rpartition(".")[2])
        return read_for is None or callee in read_for

    def _parameters_holding_functions(self) -> dict[tuple[str, str, str], Value]:
        """(path, function, parameter) -> the library callable every call seen passes it (`main(opts, ds_init)`), or
        the instance of a project class keeping an engine that every call seen passes it."""
        passed: dict[tuple[str, str, str], set[Value]] = {}
        for site in self.calls:
            if not self.verifiable(site.callee):
                continue
            for param, value in site.arguments.items():
                passed.setdefault((*site.callee, param), set()).add(value)
        held = {key: merge(list(values)) for key, values in passed.items()}  # None passed on other paths: fine
        learnt: dict[tuple[str, str, str], Value] = {
            key: value for key, value in held.items() if isinstance(value, LibraryFunction)
        }
        # an instance of a project class keeping an engine in an attribute, the same class at every call seen
        # (`trainer = PPOTrainer(rlhf_engine, args)` after `rlhf_engine = RLHFEngine(...)`): the parameter holds
        # one, as an annotation with the class would say (`Param.instance_of`)
        keeping = self._engine_keepers()
        for key, values in passed.items():
            classes = {instance_class(value) if value is not None else None for value in values}
            if key not in learnt and len(classes) == 1 and (cls := classes.pop()) in keeping:
                learnt[key] = Param(key[2], instance_of=cls)
        return learnt

    def _models_through_calls(self) -> None:
        """A builder's return value handed straight to a function whose parameter reaches initialize as the
        model (`fit(get_model())`, `fit(model)` after `model = get_model()`): that builder is a model builder."""
        for site in self.calls:
            for param, value in site.arguments.items():
                init = self.model_parameters.get((*site.callee, param))
                if init is None:
                    continue
                for option in options(value):
                    for builder in option.builders() if isinstance(option, Returned) else ():
                        self.model_builders.setdefault(builder, init)

    def _worth(self, summary: FunctionSummary, holders: set[tuple[str, str]]) -> bool:
        """Functions whose callers must be seen: they return an engine, or hand a parameter to initialize (the
        functions `holders` names: those of `model_parameters`)."""
        if any(isinstance(r, (Results, Keyed, Item)) or holds_library_function(r) for r in summary.returns):
            return True
        return (summary.path, summary.qualname) in holders

    def _initializing(self, module: ModuleSummary) -> list[str]:
        """The functions of a module (and "" for module-level code) that call deepspeed.initialize or hold it as a
        value (`ds_init = deepspeed.initialize`): only the innermost definitions around a line that mentions
        `initialize` are looked at."""
        data = self.store.sources.get(module.path, b"")
        lines = {data.count(b"\n", 0, m.start()) + 1 for m in re.finditer(rb"initialize", data)}
        candidates: set[str] = set()
        for line in lines:
            holder = ""
            for qualname, function in module.functions.items():
                if function.start <= line <= function.end and len(qualname) > len(holder):
                    holder = qualname
            candidates.add(holder)
        found: list[str] = []
        for qualname in sorted(candidates):
            body = module.tree.body if not qualname else module.functions[qualname].node.body
            for statement in statements(body):
                # a call of it names it too (`deepspeed.initialize(...)`), as a value does (`ds_init = ...`)
                if any(
                    isinstance(node, (ast.Name, ast.Attribute)) and module.qualified(node) == INITIALIZE.name
                    for node in ast.walk(statement)
                ):
                    found.append(qualname)
                    break
        return found

    @staticmethod
    def _calling(module: ModuleSummary, name: str) -> list[str]:
        """The functions of a module (and "" for module-level code) holding a call of something named `name`."""
        return module.callers_of(name)

    # --- answers ------------------------------------------------------------------------------------------
    def engine_parameters(self) -> dict[tuple[str, str, str], EngineAnswer]:
        """(path, function, parameter) -> (role, a call that passes it, the initialize it comes from), for
        parameters that receive the engine (or engine.module) at every call seen (worked out again only when
        a function read since added calls)."""
        if self._engine_parameters is None or self._engine_parameters[0] != len(self.calls):
            self._engine_parameters = (len(self.calls), self._find_engine_parameters())
        return self._engine_parameters[1]

    def _find_engine_parameters(self) -> dict[tuple[str, str, str], EngineAnswer]:
        by_param: dict[tuple[str, str, str], list[tuple[Value, CallSite]]] = {}
        self.conditional_parameters = set()
        for site in self.calls:
            if not self.verifiable(site.callee):
                continue
            arguments, confirmed = self._confirmed(site)
            for param, value in arguments.items():
                by_param.setdefault((*site.callee, param), []).append((value, site))
                if param in confirmed:
                    self.conditional_parameters.add((*site.callee, param))
        resolved: dict[tuple[str, str, str], EngineAnswer] = {}
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
                    if any(self._upstream_conditional(value, site) for value, site in passed):
                        self.conditional_parameters.add(key)
                    changed = True
            if not changed:
                break
        return resolved

    def partly_engine_parameters(self) -> dict[tuple[str, str, str], EngineAnswer]:
        """(path, function, parameter) -> (ENGINE or OPTIMIZER, the call that passes it, the initialize it comes
        from), for parameters that SOME call seen passes the engine itself (or its optimizer: initialize's result
        on every path of that call) while other calls pass something else: a loop shared by a DeepSpeed script
        and a plain one. Only what happens to the engine where it is passed may be said of it (a rule asks for it
        by name; `role_of` never answers it)."""
        every = self.engine_parameters()
        found: dict[tuple[str, str, str], EngineAnswer] = {}
        for site in self.calls:
            for param, value in site.arguments.items():
                key = (*site.callee, param)
                if key in every or key in found:
                    continue
                role = self._engine_role(value, site, every) if isinstance(value, (Item, Param)) else None
                if role is not None and role[0] in (ENGINE, OPTIMIZER):
                    found[key] = (role[0], site, role[1])
        return found

    def _upstream_conditional(self, value: Value, site: CallSite) -> bool:
        """A parameter passed on from a caller's own parameter that is conditional (see `_confirmed`)."""
        if not isinstance(value, Param):
            return False
        caller = self._caller_function(site)
        return caller is not None and (site.caller_path, caller, value.name) in self.conditional_parameters

    def _caller_function(self, site: CallSite) -> str | None:
        """The function a call is written in (None at module level): whose parameter a `Param` argument is."""
        module = self.module(site.caller_path)
        return module.function_at(site.line) if module is not None else None

    def _confirmed(self, site: CallSite) -> tuple[dict[str, Value], set[str]]:
        """A call's arguments, where a value that is initialize's result only on some paths (`Maybe`) counts
        as that result when the callee uses the parameter receiving the engine as an engine
        (`model.backward(loss)`), and so do the other `Maybe` items of that same initialize (its optimizer, its
        scheduler); with the names of the parameters so confirmed. Such a parameter is conditional
        (`conditional_parameters`): the call also runs where initialize did not, so the callee is right to treat
        it as the engine only where it uses it as one (the arms of an `if` beside such a use are plain PyTorch,
        `script.collect`). Other `Maybe` values stay unknown."""
        confirmed: set[InitSite] = set()
        for param, value in site.arguments.items():
            if isinstance(value, Maybe) and value.item.role == ENGINE and self._uses_as_engine(site.callee, param):
                confirmed.add(value.item.origin)
        arguments: dict[str, Value] = {}
        conditional: set[str] = set()
        for param, value in site.arguments.items():
            if isinstance(value, Maybe):
                if value.item.origin in confirmed:
                    conditional.add(param)
                value = value.item if value.item.origin in confirmed else None
            arguments[param] = value
        return arguments, conditional

    def _uses_as_engine(self, callee: Callee, param: str) -> bool:
        """Whether a function calls a method only the DeepSpeed engine has on its parameter `param`."""
        key = (*callee, param)
        if key not in self.engine_uses:
            function = self.function(callee)
            self.engine_uses[key] = function is not None and any(
                isinstance(call.func, ast.Attribute)
                and call.func.attr in ENGINE_ONLY_METHODS
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == param
                for statement in statements(function.node.body)
                for call in calls(statement)
            )
        return self.engine_uses[key]

    def _engine_role(
        self, value: Value, site: CallSite, resolved: dict[tuple[str, str, str], EngineAnswer]
    ) -> tuple[str, InitSite] | None:
        if isinstance(value, Item):
            if value.role in (*RESULT_ORDER, ENGINE_MODULE):
                return str(value.role), value.origin
            return None
        if isinstance(value, Param):
            caller = self._caller_function(site)
            upstream = resolved.get((site.caller_path, caller, value.name)) if caller is not None else None
            if upstream is None:
                return None
            return (ENGINE_MODULE if value.unwrapped else upstream[0]), upstream[2]
        return None

    def _helper_calls(self) -> list[HelperCall]:
        """Every call, in a module where the fixpoint resolved a call of a project function, of a name it resolved
        there, each resolved again in its own scope (functions the fixpoint did not need to read included)."""
        if self._helpers is not None:
            return self._helpers
        texts: dict[str, set[str]] = {}
        for path, written in self.call_texts:
            texts.setdefault(path, set()).add(written)
        found = [
            HelperCall(call.path, call.line, call.column, dotted(call.call.func) or "", call.callee)
            for call in resolved_calls(self, sorted(texts), lambda path, call: dotted(call.func) in texts[path])
        ]
        for (path, line, offset), callees in sorted(self.instance_calls.items()):  # `backend.distribute(...)`
            lines = self.store.sources.get(path, b"").splitlines()
            column = character_column(lines, line, offset) + 1
            found.extend(HelperCall(path, line, column, f"{c[1]}", c) for c in callees)
        self._helpers = found
        return found

    def instance_values(self) -> Iterator[tuple[str, tuple[int, int, int, int], Item]]:
        """(path, (line, column, end line, end column) 1-based in characters, value) for each `obj.x` read that
        holds one of initialize's results kept in an attribute of a project class's instance."""
        lines_of: dict[str, list[bytes]] = {}
        found = dict(self.instance_reads)
        for where, attribute in self.receivers.items():
            held = self.attributes.get(attribute)
            if isinstance(held, Item):
                found.setdefault(where, held)
        for (path, line, column, end_line, end_column), value in sorted(found.items()):
            if value.role not in (*RESULT_ORDER, ENGINE_MODULE):
                continue
            lines = lines_of.setdefault(path, self.store.sources.get(path, b"").splitlines())
            start = character_column(lines, line, column) + 1
            yield path, (line, start, end_line, character_column(lines, end_line, end_column) + 1), value

    def passthrough_helpers(self) -> Iterator[tuple[HelperCall, int, str, bool]]:
        """(the call, parameter index, parameter name, unwrapped) for calls of helpers that return their argument
        (`_unwrap_model(engine)`)."""
        for helper in self._helper_calls():
            returned = self.returned(helper.callee)
            function = self.function(helper.callee)
            if not isinstance(returned, Param) or function is None:
                continue
            index = function.position_of(returned.name)
            if index is not None:
                yield helper, index, returned.name, returned.unwrapped

    def result_helpers(self) -> Iterator[tuple[HelperCall, tuple[str | None, ...], bool, tuple[str, ...], InitSite]]:
        """(the call, roles, is a tuple or list, the keys of a dict, initialize site) for calls of helpers that
        return initialize's results."""
        for helper in self._helper_calls():
            returned = self.returned(helper.callee)
            if isinstance(returned, Results):
                yield helper, returned.roles, True, (), returned.origin
            elif isinstance(returned, Keyed):
                yield helper, returned.roles, False, returned.keys, returned.origin
            elif isinstance(returned, Item):
                yield helper, (returned.role,), False, (), returned.origin

    def model_sinks(self) -> Iterator[tuple[HelperCall, int, str, InitSite]]:
        """(the call, parameter index, parameter name, initialize site) for calls that pass a model into a
        function whose parameter goes to initialize as its model."""
        for helper in self._helper_calls():
            for (callee_path, qualname, name), site in self.model_parameters.items():
                if (callee_path, qualname) != helper.callee:
                    continue
                function = self.function(helper.callee)
                index = function.position_of(name) if function is not None else None
                if index is not None:
                    yield helper, index, name, site

    def attribute_builders(self) -> Iterator[tuple[Callee, str, tuple[int, int] | None, InitSite]]:
        """(a method, the `self` attribute it fills with the model initialize receives, up to which call of it
        (1-based, in characters; None: to its end), the initialize site) along class hierarchies
        (`attribute_models`)."""
        handoffs = [(helper.caller_path, helper.line, site) for helper, _, _, site in self.model_sinks()]
        for builder in attribute_builders(self.store, self.hierarchy, self.inits, handoffs):
            until = None
            if builder.until is not None:
                lines = self.store.sources.get(builder.method[0], b"").splitlines()
                line, offset = builder.until
                until = (line, character_column(lines, line, offset) + 1)
            yield builder.method, builder.attribute, until, builder.site

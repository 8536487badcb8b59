"""What the project fixpoint (`model/fixpoint.py`) learns, handed to each file as its `ProjectFacts`.

The index (`project/index.py`) runs the fixpoint once over the files that make engines; this module turns its
answers (engines passed as parameters, returned by helpers, kept in attributes; models headed for an initialize
elsewhere, with the guards on its path; `x.module` forwarded to a project function; the Accelerator handed to a
helper that saves its state) into the facts each file's rules read, each with the place it came from.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from dslint.diagnostics import Related
from dslint.model.conditions import Guard, guards_of
from dslint.model.device_setters import device_setting_calls
from dslint.model.fixpoint import ProjectModel
from dslint.model.forwarded_parameters import forwarding_calls
from dslint.model.inherited_engines import inherited_values
from dslint.model.library import OPTIMIZER, TRL_TRAINING_ARGUMENTS
from dslint.model.moved_arguments import (
    MovingCall,
    casting_calls,
    dict_saving_calls,
    loading_calls,
    moving_calls,
    own_casting_calls,
    own_moving_calls,
    state_saving_helper_calls,
)
from dslint.model.pretrained_loaders import loader_calls
from dslint.model.returned_loaders import loader_calls as returned_loader_calls
from dslint.model.stage_tests import stage_tested_after
from dslint.model.state_saving_calls import (
    StateSavingCall,
    engine_attribute_saving_calls,
    engine_saving_calls,
    optimizer_stepping_calls,
    plugin_reaching,
    plugin_sites,
    state_saving_calls,
    trainer_gathering_calls,
)
from dslint.model.summary import SummaryStore, character_column
from dslint.model.values import InitSite
from dslint.project.inputs import shown_path
from dslint.project.passed_devices import cpu_parameters
from dslint.project.site_configs import built_engine_config, engine_config
from dslint.script.project_facts import MovedArgument, ParameterFact, ProjectFacts, ReturnFact


def facts_of(files: dict[str, ProjectFacts], path: str) -> ProjectFacts:
    """The facts of `path` in `files`, an empty entry made for it first when it has none."""
    facts = files.get(path)
    if facts is None:
        facts = ProjectFacts(parameters={}, returns={}, launches=())
        files[path] = facts
    return facts


def record_state_saving_calls(files: dict[str, ProjectFacts], model: ProjectModel) -> None:
    """Calls handing the Accelerator to a project function that reaches `save_state` on it, or the engine to one
    that reaches `save_checkpoint` (DSL428), read from the model the engine fixpoint ran in (`follow_engines`): its
    resolutions are the same."""
    store = model.store
    for call in [*engine_saving_calls(model), *engine_attribute_saving_calls(model)]:
        facts = facts_of(files, call.path)
        note = f"{call.saver[1]}() calls {call.name}.save_checkpoint"
        saves = Related(shown_path(call.saver[0]), call.save_line, 1, note)
        files[call.path] = replace(
            facts, engine_saving_calls={**facts.engine_saving_calls, (call.line, call.column): saves}
        )
    record_optimizer_stepping_calls(files, model)
    gathering = any(b"_zero3_consolidated" in data or b".save_model(" in data for data in store.sources.values())
    trainers = sorted(p for p, data in store.sources.items() if b"trainer" in data and _HANDS_TRAINER.search(data))
    trainers = trainers if gathering else []
    for call in trainer_gathering_calls(model, trainers):
        facts = facts_of(files, call.path)
        note = f"{call.saver[1]}() gathers through {call.name}"
        gathers = {**facts.trainer_gathering_calls, (call.line, call.column): Related(*_site(call), note)}
        files[call.path] = replace(facts, trainer_gathering_calls=gathers)
    if not any(b".save_state(" in data for data in store.sources.values()):
        return
    sites = plugin_sites(store.sources)
    reaching: dict[str, Related | None] = {}
    holders = sorted(p for p, data in store.sources.items() if b"accelerator" in data)
    for call in state_saving_calls(model, holders):
        if call.path not in reaching:  # a plugin the calling module imports (not one of another project)
            plugin = plugin_reaching(store, call.path, sites)
            reaching[call.path] = (
                Related(shown_path(plugin[0]), plugin[1], 1, "DeepSpeedPlugin built here") if plugin else None
            )
        built = reaching[call.path]
        facts = facts_of(files, call.path)
        saves = Related(shown_path(call.saver[0]), call.save_line, 1, f"{call.saver[1]}() calls {call.name}.save_state")
        calls = {**facts.state_saving_calls, (call.line, call.column): (saves, built)}
        files[call.path] = replace(facts, state_saving_calls=calls)


# a call handing on an argument named for a Trainer (`save(trainer, out)`, `f(trainer=self.trainer)`)
_HANDS_TRAINER = re.compile(rb"[(,=]\s*(?:self\.)?\w*trainer\s*[,)]")


def _site(call: StateSavingCall) -> tuple[str, int, int]:
    return shown_path(call.saver[0]), call.save_line, 1


def _record_effect(files: dict[str, ProjectFacts], name: str, call: MovingCall, what: str, stored: bool) -> None:
    """Record in the caller's `ProjectFacts.<name>` (keyed by the call's position) what the callee does with the
    argument, with where it does it; `stored`: keep the attribute of `self` the callee keeps it in."""
    facts = facts_of(files, call.path)
    where = Related(
        shown_path(call.move_path), call.move_line, call.move_column, f"{call.callee}() {what}: {call.move_text}"
    )
    argument = MovedArgument(call.index, call.keyword, call.stored if stored else None, where)
    changed: dict[str, Any] = {name: {**getattr(facts, name), (call.line, call.column): argument}}
    files[call.path] = replace(facts, **changed)


def _told_at_the_call(savings: list[MovingCall], model: ProjectModel) -> list[MovingCall]:
    """The saving-helper calls the rules judge at the call: all but those handing a helper that saves in its own
    body and whose parameter receives the engine (or its optimizer) at every call, all from one module (one
    engine): the helper's own save is judged then, with that engine."""
    every = model.engine_parameters()
    callers: dict[tuple[str, str, str], set[str]] = {}
    for saving in savings:
        callers.setdefault((saving.callee_path, saving.callee, saving.param), set()).add(saving.path)

    def judged_in_helper(saving: MovingCall) -> bool:
        key = (saving.callee_path, saving.callee, saving.param)
        return saving.move_path == saving.callee_path and key in every and len(callers[key]) == 1

    return [saving for saving in savings if not judged_in_helper(saving)]


def record_optimizer_stepping_calls(files: dict[str, ProjectFacts], model: ProjectModel) -> None:
    """Calls handing initialize's optimizer to a project function that steps it (DSL302 at the call), unless the
    function steps a parameter that receives that optimizer at every call: DSL302 reports the step itself."""
    stepped = {
        (path, function) for (path, function, _), answer in model.engine_parameters().items() if answer[0] == OPTIMIZER
    }
    for call in optimizer_stepping_calls(model):
        if call.saver in stepped:
            continue
        facts = facts_of(files, call.path)
        steps = Related(
            shown_path(call.saver[0]), call.save_line, 1, f"{call.saver[1]}() calls .step() on the optimizer"
        )
        calls = {**facts.optimizer_stepping_calls, (call.line, call.column): steps}
        files[call.path] = replace(facts, optimizer_stepping_calls=calls)


# The calls that build a Trainer's arguments, as text: `*TrainingArguments(`, TRL's configs (`DPOConfig(`...)
_ARGUMENTS_CALLS = (b"TrainingArguments(", *(name.encode() + b"(" for name in sorted(TRL_TRAINING_ARGUMENTS)))


def _builds_arguments(data: bytes) -> bool:
    # every call of `_ARGUMENTS_CALLS` ends in one of the two: a first scan settles most files
    return (b"Arguments(" in data or b"Config(" in data) and any(call in data for call in _ARGUMENTS_CALLS)


def record_device_setters(files: dict[str, ProjectFacts], model: ProjectModel) -> None:
    """The calls of project functions that set the current device (`model/device_setters.py`), in the files that
    may move a model before DeepSpeed takes it (`_may_move_before_deepspeed`)."""
    sources = model.store.sources
    handing = {p for p, f in files.items() if f.model_sinks or f.model_builders or f.model_attributes}
    movers = sorted(p for p, data in sources.items() if _may_move_before_deepspeed(data, p in handing))
    for path, calls in device_setting_calls(model, movers).items():
        files[path] = replace(facts_of(files, path), device_setting_calls=frozenset(calls))


def _may_move_before_deepspeed(data: bytes, hands_model_on: bool) -> bool:
    """A `.cuda(`/`.to(` in a file that makes an engine, a Trainer or `prepare`s, or hands its model to a project
    function that does (`init_deepspeed(args, model)`)."""
    return (b".cuda(" in data or b".to(" in data) and (
        hands_model_on
        or b"initialize(" in data
        or b"Trainer(" in data
        or b"prepare(" in data
        or b"init_inference(" in data
    )


def record_pretrained_loads(
    files: dict[str, ProjectFacts], model: ProjectModel, classes: frozenset[str] = frozenset()
) -> None:
    """Calls, in functions building `*TrainingArguments` or calling `deepspeed.initialize`, of project functions
    returning a `from_pretrained` model (DSL208: the model is built before the DeepSpeed config exists)."""
    sources = model.store.sources
    if not any(b"from_pretrained(" in data for data in sources.values()):
        return
    holders = sorted(p for p, data in sources.items() if b"initialize(" in data or _builds_arguments(data))
    if not holders:
        return
    for call in loader_calls(model, holders, classes):
        facts = facts_of(files, call.path)
        note = f"{call.load[1]}() loads the model with from_pretrained"
        load = Related(shown_path(call.load[0]), call.load_line, 1, note)
        loads = {**facts.pretrained_loads, (call.line, call.column): load}
        files[call.path] = replace(facts, pretrained_loads=loads)


def follow_engines(
    files: dict[str, ProjectFacts], readers: dict[str, set[str]], model: ProjectModel, producers: list[str]
) -> list[tuple[str, int, str]]:
    """Run the project fixpoint from the files that make engines (`producers`) and hand each file what it
    learns (`files`, by absolute path, updated in place); a config file an initialize call names by a literal
    is recorded as initialize's in `readers`. Returns the initialize sites (path, line, function)."""
    model.analyse_all(producers)
    return record_engines(files, readers, model)


def _record_built(files: dict[str, ProjectFacts], site: InitSite, store: SummaryStore) -> None:
    """The stage of the dict a project function builds for `site`'s config, with the launches' option values
    (`site_configs.engine_config`), for the file's own rules (`ProjectFacts.built_configs`)."""
    config = built_engine_config(files, site, store)
    if config is None or config.zero_stage is None:
        return
    facts = facts_of(files, site.path)
    lines = store.sources.get(site.path, b"").splitlines()
    at = (site.line, character_column(lines, site.line, site.column - 1) + 1)
    files[site.path] = replace(facts, built_configs={**facts.built_configs, at: config})


def record_engines(
    files: dict[str, ProjectFacts], readers: dict[str, set[str]], model: ProjectModel
) -> list[tuple[str, int, str]]:
    """`follow_engines` once the fixpoint has run (`ProjectModel.analyse_all`)."""
    store = model.store
    sites = sorted((site.path, site.line, site.qualname) for site in model.inits.values())
    for init_site in model.inits.values():  # `initialize(config="ds.json")`: that file is initialize's
        config = engine_config(files, init_site) if isinstance(init_site.config, ast.Constant) else None
        if config is not None and config.config_path is not None:
            readers.setdefault(config.config_path, set()).add("initialize")
        if isinstance(init_site.config, (ast.Name, ast.Call)):  # a dict a project function may build
            _record_built(files, init_site, store)
    for (path, function, param), (role, site, init) in model.engine_parameters().items():
        origin = Related(
            shown_path(site.caller_path),
            site.line,
            site.column,
            f"{role} from {shown_path(init.path)}:{init.line} passed to {function}()",
        )
        facts = facts_of(files, path)
        parameters = {name: dict(values) for name, values in facts.parameters.items()}
        created = Related(shown_path(init.path), init.line, init.column, "deepspeed.initialize")
        summary = store.get(site.caller_path)
        tested = summary is not None and stage_tested_after(summary.tree, site.line)
        conditional = (path, function, param) in model.conditional_parameters
        parameters.setdefault(function, {})[param] = ParameterFact(
            role, origin, engine_config(files, init, store), created, tested, conditional
        )
        files[path] = replace(facts, parameters=parameters)
    for (path, function, param), (role, site, init) in model.partly_engine_parameters().items():
        note = f"{role} from {shown_path(init.path)}:{init.line} passed to {function}() (other calls pass none)"
        origin = Related(shown_path(site.caller_path), site.line, site.column, note)
        created = Related(shown_path(init.path), init.line, init.column, "deepspeed.initialize")
        facts = facts_of(files, path)
        partly = {name: dict(values) for name, values in facts.partly_engine.items()}
        partly.setdefault(function, {})[param] = ParameterFact(role, origin, engine_config(files, init, store), created)
        files[path] = replace(facts, partly_engine=partly)
    for path, where, value in (*model.instance_values(), *inherited_values(model)):
        origin = Related(
            shown_path(value.origin.path),
            value.origin.line,
            value.origin.column,
            f"{value.role} from deepspeed.initialize inside {value.origin.qualname or '<module>'}()",
        )
        facts = facts_of(files, path)
        fact = ParameterFact(str(value.role), origin, engine_config(files, value.origin, store))
        files[path] = replace(facts, values_at={**facts.values_at, where: fact})
    engine_files = [p for p, f in files.items() if f.receives_engine and b".module" in store.sources.get(p, b"")]
    for call in forwarding_calls(model, sorted({*engine_files, *(s.path for s in model.inits.values())})):
        facts = facts_of(files, call.path)
        runs = Related(shown_path(call.callee[0]), call.def_line, 1, f"{call.callee[1]}() calls {call.name}")
        forwarding = {**facts.forwarding_calls, (call.line, call.column): (call.index, call.name, runs)}
        files[call.path] = replace(facts, forwarding_calls=forwarding)
    holders = {*(s.path for s in model.inits.values())}
    holders.update(p for p, f in files.items() if f.model_sinks or f.model_builders or f.model_attributes)
    ordered = sorted(holders)
    effects: tuple[tuple[str, Iterable[MovingCall], str, bool], ...] = (
        ("moving_calls", (*moving_calls(model, ordered), *own_moving_calls(model, ordered)), "moves it to a GPU", True),
        (
            "casting_calls",
            (*casting_calls(model, ordered), *own_casting_calls(model, ordered)),
            "casts it to 16 bits",
            True,
        ),
        ("dict_saving_calls", dict_saving_calls(model, ordered), "writes it with torch.save", False),
        (
            "state_saving_helpers",
            _told_at_the_call(list(state_saving_helper_calls(model, ordered)), model),
            "writes its state_dict() with torch.save",
            False,
        ),
        ("loading_calls", loading_calls(model, ordered), "loads a state dict into it", False),
    )
    for name, done, what, stored in effects:
        for effect in done:
            _record_effect(files, name, effect, what, stored)
    trainers = {*(s.path for s in model.inits.values()), *(p for p, f in files.items() if f.receives_engine)}
    for loader in returned_loader_calls(model, sorted(p for p in trainers if b"backward" in store.sources.get(p, b""))):
        facts = facts_of(files, loader.path)
        path, line, column = loader.built
        item = "its result" if loader.index is None else f"item {loader.index} of its result"
        note = f"{loader.callee[1]}() returns a DataLoader without a sampler ({item})"
        lines = store.sources.get(path, b"").splitlines()
        built = Related(shown_path(path), line, character_column(lines, line, column) + 1, note)
        loaders = {**facts.returned_loaders}
        loaders[(loader.line, loader.column)] = (*loaders.get((loader.line, loader.column), ()), (loader.index, built))
        files[loader.path] = replace(facts, returned_loaders=loaders)
    for helper, position, name, unwrapped in model.passthrough_helpers():
        facts = facts_of(files, helper.caller_path)
        passthrough = {**facts.passthrough, helper.position: (position, name, unwrapped)}
        files[helper.caller_path] = replace(facts, passthrough=passthrough)
    for helper, roles, is_tuple, keys, init in model.result_helpers():
        origin = Related(
            shown_path(init.path), init.line, init.column, f"deepspeed.initialize inside {helper.callee[1]}()"
        )
        facts = facts_of(files, helper.caller_path)
        returns = dict(facts.returns)
        returns[helper.position] = ReturnFact(
            roles, is_tuple, origin, engine_config(files, init, store), keys, helper.text
        )
        files[helper.caller_path] = replace(facts, returns=returns)
    for (path, line, offset), (name, held) in sorted(model.initialize_aliases.items()):
        # `ds_init(args=args, model=model)`: an initialize call of that file
        lines = store.sources.get(path, b"").splitlines()
        taken_path, taken_line = held.taken
        taken = Related(shown_path(taken_path), taken_line, 1, f"{name} holds deepspeed.initialize, taken here")
        facts = facts_of(files, path)
        at = (line, character_column(lines, line, offset) + 1)
        files[path] = replace(facts, initialize_aliases={**facts.initialize_aliases, at: taken})
    for (path, qualname), init in model.model_builders.items():
        facts = facts_of(files, path)
        origin = Related(
            shown_path(init.path), init.line, init.column, f"{qualname}() returns the model initialize receives"
        )
        files[path] = replace(
            facts,
            model_builders={**facts.model_builders, qualname: origin},
            init_guards=_guards(facts, origin, init, store),
        )
    for path, functions in cpu_parameters(store, model.model_builders).items():
        files[path] = replace(facts_of(files, path), cpu_parameters=functions)
    for helper, position, name, init in model.model_sinks():
        facts = facts_of(files, helper.caller_path)
        origin = Related(
            shown_path(init.path), init.line, init.column, f"{helper.text}() hands {name} to deepspeed.initialize"
        )
        entry = (position, name, origin, engine_config(files, init, store))
        sinks = {**facts.model_sinks, helper.position: (*facts.model_sinks.get(helper.position, ()), entry)}
        files[helper.caller_path] = replace(facts, model_sinks=sinks, init_guards=_guards(facts, origin, init, store))
    for (path, qualname), attribute, until, init in model.attribute_builders():
        facts = facts_of(files, path)
        origin = Related(
            shown_path(init.path),
            init.line,
            init.column,
            f"self.{attribute} goes to deepspeed.initialize in {init.qualname}()",
        )
        filled = {**facts.model_attributes, qualname: (attribute, until, origin)}
        files[path] = replace(facts, model_attributes=filled, init_guards=_guards(facts, origin, init, store))
    return sites


def _guards(
    facts: ProjectFacts, origin: Related, init: InitSite, store: SummaryStore | None = None
) -> Mapping[tuple[str, int, int], tuple[Guard, ...]]:
    """The file's initialize guards with those of `init` (named by `origin`) added: the tests on its path in its
    function, and those every call of that function in its module shares (`load(): self.build(); if
    cfg.deepspeed: self.init_engine()`)."""
    guards = (*init.guards, *(_call_site_guards(store, init) if store is not None else ()))
    if not guards:
        return facts.init_guards
    return {**facts.init_guards, (origin.path, origin.line, origin.column): guards}


def _call_site_guards(store: SummaryStore, init: InitSite) -> tuple[Guard, ...]:
    """The guards every call of the function holding `init` has in its module (`self.name()` for a method,
    `name()` for a function), in the function holding that call; none when a call is unguarded or none is seen.
    A guard only ever silences a move that serves another path (DSL101): a call elsewhere left unseen costs a
    finding, never adds one."""
    summary = store.get(init.path)
    if summary is None or not init.qualname:
        return ()
    owner, _, name = init.qualname.rpartition(".")
    common: set[Guard] | None = None
    for function in ast.walk(summary.tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name == name:
            continue
        for call in ast.walk(function):
            if not isinstance(call, ast.Call):
                continue
            target = call.func
            own = (
                isinstance(target, ast.Attribute)
                and target.attr == name
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                if owner
                else isinstance(target, ast.Name) and target.id == name
            )
            if own:
                found = set(guards_of(function.body, call))
                common = found if common is None else common & found
    return tuple(common or ())

"""Where transformers learns of a ZeRO-3 config only after a model is loaded, in shapes a call of the script hides:

- a function of the script that builds and returns the `TrainingArguments(deepspeed=...)` (`def
  setup_training_args(...): return Seq2SeqTrainingArguments(deepspeed=...)`): its call is where they come to life
  (`returned_arguments`), before a load when bound to a name there, after it otherwise;
- an `Accelerator()` made after the load, under accelerate launches that all run ZeRO-3 (`accelerate_zero3`), or,
  for a script no launcher of the project starts, with the accelerate YAMLs shipped near it (each DeepSpeed on
  several processes, every one at stage 3) or, with none, its shipped ZeRO-3 DeepSpeed configs that write "auto"
  (`shipped_accelerate.shipped_accelerate_runs`). accelerate's DeepSpeed plugin keeps an `HfDeepSpeedConfig`
  alive only from the `Accelerator()` on (`set_deepspeed_weakref`): a model loaded before it is built whole on
  every rank. Only a model handed on to DeepSpeed counts (`accelerator.prepare(model, ...)`, a Trainer's model):
  a frozen one never prepared is never partitioned (`handed_on`). Where no accelerate launch of the script is
  found, an accelerate YAML beside it setting `zero3_init_flag` is how it runs: an `Accelerator()` made before
  the load then keeps the config alive (`zero3_init_beside`);
- a model loaded at module level, and the config made inside a function of the module that uses the model
  (`main()` building the `TrainingArguments`): module code runs first (`module_load_runs_first`);
- a model a class's constructor loads into `self.model` (itself or through a method it calls), and the config made
  in another method of the class that hands `self.model` on (`def train(self): args = TrainingArguments(...);
  Trainer(model=self.model, args=args)`): an instance is constructed before its other methods run
  (`constructor_load_runs_first`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import libcst as cst

from dslint.diagnostics import Related
from dslint.limits import DEFAULT_MAX_CONFIG_SIZE, TooLarge, read_capped
from dslint.project.accelerate_deepspeed import accelerate_zero3
from dslint.project.accelerate_yaml import parse_accelerate_yaml, yaml_boolean
from dslint.project.config_link import accelerate_runs
from dslint.project.engine_config import ZeroSource, ZeroSources
from dslint.project.inputs import record
from dslint.project.method_order import self_calls, sequenced
from dslint.project.shipped_accelerate import shipped_accelerate_runs
from dslint.script.context import ScriptContext
from dslint.script.facts import ScopeKind, ScriptFacts
from dslint.script.walk import all_nodes

MAX_BESIDE = 32  # YAML files read beside a script for its accelerate config


def zero3_made_after(
    context: ScriptContext,
    sources: ZeroSources,
    load: cst.Call,
    kinds: tuple[str, ...] = ("initialize", "TrainingArguments"),
) -> list[ZeroSource]:
    """The ZeRO-3 `initialize` and `TrainingArguments` sources made after `load` runs: later in its scope, or
    inside a function using the model loaded at module level (`module_load_runs_first`)."""
    facts = context.facts
    scope, pos = facts.scope_at(load), facts.start(load)
    return [
        source
        for source in sources.of_kind(*kinds)
        if source.stage == 3
        and (
            (facts.scope_at(source.call) is scope and pos < facts.start(source.call))
            or module_load_runs_first(context, load, source)
            or constructor_load_runs_first(context, load, source)
        )
    ]


def module_load_runs_first(context: ScriptContext, load: cst.Call, source: ZeroSource) -> bool:
    """`model = from_pretrained(...)` at module level, and `source` (a ZeRO-3 `TrainingArguments`, an
    initialize) inside a module-level function of the file that reads `model`: the module's code runs before any
    of its functions is called, unless one is called at module level before the load (then nothing is said)."""
    facts = context.facts
    if facts.scope_at(load).kind is not ScopeKind.MODULE:
        return False
    small = facts.small_statement_of_call.get(load)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return False
    target = small.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    scope = facts.scope_at(source.call)
    while scope.parent is not None and scope.parent.kind is not ScopeKind.MODULE:
        scope = scope.parent
    function = scope.node
    if scope.kind is not ScopeKind.FUNCTION or not isinstance(function, cst.FunctionDef):
        return False
    if not any(isinstance(node, cst.Name) and node.value == target.value for node in all_nodes(function.body)):
        return False  # the function does not use the model loaded at module level
    loaded_at = facts.start(load)
    module_calls = (
        call
        for call in facts.small_statement_of_call
        if facts.scope_at(call).kind is ScopeKind.MODULE and facts.start(call) < loaded_at
    )
    return not any(isinstance(call.func, cst.Name) and call.func.value == function.name.value for call in module_calls)


def constructor_load_runs_first(context: ScriptContext, load: cst.Call, source: ZeroSource) -> bool:
    """`self.model = from_pretrained(...)` (or a local name the method then stores in `self.model`) in a class's
    `__init__`, or in a method `__init__` calls as `self.<method>()`; and `source` in another method of the class
    (not the constructor, nor one it calls before the load) that hands `self.model` on as a Trainer's model or
    initialize's `model=`: the constructor has run before any other method of the instance can."""
    facts = context.facts
    scope = facts.scope_at(load)
    owner = scope.enclosing_class()
    where = facts.scope_at(source.call)
    if (
        owner is None
        or scope.self_name is None
        or where is scope
        or where.enclosing_class() is not owner
        or where.self_name is None
        or not isinstance(scope.node, cst.FunctionDef)
        or not isinstance(where.node, cst.FunctionDef)
        or not isinstance(owner.node, cst.ClassDef)
    ):
        return False
    constructor = next(
        (node for node in owner.node.body.body if isinstance(node, cst.FunctionDef) and node.name.value == "__init__"),
        None,
    )
    if where.node is constructor:
        return False
    loading, runs = scope.node.name.value, where.node.name.value
    called = self_calls(constructor, scope.self_name) if constructor is not None else {}
    if loading == "__init__" and any(facts.start(call) < facts.start(load) for call in called.get(runs, ())):
        return False  # the constructor runs the config's method before the load
    if (
        loading != "__init__"
        and (loading not in called or runs in called)
        and (runs in called or not sequenced(facts, owner.node, loading, runs))
    ):
        return False  # the loading method may not run first; or the constructor runs the config's method too
    attributes = _stored_attributes(context, load, scope.node, scope.self_name)
    return bool(attributes) and _hands_attribute(where.node, where.self_name, attributes)


def _stored_attributes(context: ScriptContext, load: cst.Call, method: cst.FunctionDef, self_name: str) -> set[str]:
    """The `self.<attribute>` names the loaded model is stored in: the load's own target, or attributes a later
    statement of the method assigns from the local name it was bound to (`self.model = get_peft_model(model, c)`)."""
    small = context.facts.small_statement_of_call.get(load)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not _ends(small.value, load):
        return set()
    target = small.targets[0].target
    if _is_self_attribute(target, self_name):
        assert isinstance(target, cst.Attribute)
        return {target.attr.value}
    name = _first_name(target)
    if name is None:
        return set()
    found: set[str] = set()
    for node in all_nodes(method.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            stored = node.targets[0].target
            if _is_self_attribute(stored, self_name) and any(
                isinstance(n, cst.Name) and n.value == name for n in (node.value, *all_nodes(node.value))
            ):
                assert isinstance(stored, cst.Attribute)
                found.add(stored.attr.value)
    return found


def _hands_attribute(method: cst.FunctionDef, self_name: str, attributes: set[str]) -> bool:
    """`method` hands `self.<attribute>` on as a Trainer's model (`Trainer(model=self.model)`, `SFTTrainer(
    self.model, ...)`) or as initialize's `model=`."""
    for node in all_nodes(method.body):
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if last.endswith("Trainer"):
            args = [a for i, a in enumerate(node.args) if _model_slot(a, i)]
        elif last == "initialize":
            args = [a for a in node.args if a.keyword is not None and a.keyword.value == "model"]
        else:
            continue
        if any(
            _is_self_attribute(arg.value, self_name) and arg.value.attr.value in attributes  # type: ignore[attr-defined]
            for arg in args
        ):
            return True
    return False


def _is_self_attribute(node: cst.BaseExpression, self_name: str) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self_name


def returned_arguments(context: ScriptContext, sources: ZeroSources, calls: list[cst.Call]) -> list[ZeroSource]:
    """For each of `calls` (`setup_training_args(...)`) naming a module-level function of this file that returns
    the `TrainingArguments` it builds, or a method of the caller's own class doing so (`self._arguments()`): those
    arguments' source, placed at the call (kept when the call's result is bound to a name or returned)."""
    facts = context.facts
    makers: dict[cst.FunctionDef, list[ZeroSource]] = {}
    methods: dict[tuple[cst.CSTNode, str], cst.FunctionDef] = {}  # (class, method name) -> a maker method
    for source in sources.of_kind("TrainingArguments"):
        small = facts.small_statement_of_call.get(source.call)
        scope = facts.scope_at(source.call)
        if (
            isinstance(small, cst.Return)
            and small.value is source.call
            and scope.kind is ScopeKind.FUNCTION
            and scope.parent is not None
            and scope.parent.kind in (ScopeKind.MODULE, ScopeKind.CLASS)
            and isinstance(scope.node, cst.FunctionDef)
        ):
            makers.setdefault(scope.node, []).append(source)
            if scope.parent.kind is ScopeKind.CLASS and scope.parent.node is not None:
                methods[(scope.parent.node, scope.node.name.value)] = scope.node
    if not makers:
        return []
    names = {node.name.value for node in makers}
    found: list[ZeroSource] = []
    for call in calls:
        made = _method_made(facts, call, methods, makers)
        if made is None and isinstance(call.func, cst.Name) and call.func.value in names:
            binding = facts.binding_at(call.func.value, facts.scope_at(call), facts.start(call))
            made = makers.get(binding.statement) if binding is not None else None
        if not made:
            continue
        small = facts.small_statement_of_call.get(call)
        bound = isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return)) and small.value is call
        found.extend(replace(source, call=call, bound=bound) for source in made)
    return found


def _method_made(
    facts: ScriptFacts,
    call: cst.Call,
    methods: dict[tuple[cst.CSTNode, str], cst.FunctionDef],
    makers: dict[cst.FunctionDef, list[ZeroSource]],
) -> list[ZeroSource] | None:
    """`self.<method>()` in a method of the class whose `<method>` returns the `TrainingArguments` it builds."""
    scope = facts.scope_at(call)
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and scope.self_name is not None):
        return None
    if func.value.value != scope.self_name or scope.parent is None or scope.parent.node is None:
        return None
    method = methods.get((scope.parent.node, func.attr.value))
    return makers.get(method) if method is not None else None


@dataclass(frozen=True)
class AccelerateZero3:
    """Every way the script runs DeepSpeed through accelerate is ZeRO-3: where that is written."""

    where: str
    related: tuple[Related, ...]


def accelerate_stage3(context: ScriptContext) -> AccelerateZero3 | None:
    """ZeRO-3 through accelerate: the script's own DeepSpeedPlugin or every accelerate launch of it at stage 3;
    for a script no launcher of the project starts, the accelerate setup shipped near it, every run at stage 3
    on several processes. None when every accelerate launch of it starts one process."""
    project = context.facts.project
    launched = [launch for launch in project.launches if launch.option == "accelerate"] if project else []
    if launched and all(launch.ranks == 1 for launch in launched):
        return None  # one process holds the whole model anyway: a partitioned load saves nothing
    found = accelerate_zero3(context)
    if found is not None:
        return AccelerateZero3(found[0], found[1])
    if accelerate_runs(context) != [] or (project is not None and project.launches) or not context.path:
        return None
    runs = shipped_accelerate_runs(context.path)
    if not runs or any(run.zero_stage != 3 for run in runs):
        return None
    where = runs[0].via[-1]
    return AccelerateZero3(
        f"{where.path}:{where.line}, shipped in the project; no launcher of the project starts this script",
        tuple(r for run in runs for r in run.via),
    )


def accelerator_after(context: ScriptContext, accelerators: list[cst.Call], load: cst.Call) -> cst.Call | None:
    """The first `Accelerator(...)` made after `load` in its scope, with none before it (there or at module
    level for a load in a function)."""
    facts = context.facts
    scope, at = facts.scope_at(load), facts.start(load)
    later: cst.Call | None = None
    for call in accelerators:
        where = facts.scope_at(call)
        if where is scope and facts.start(call) > at:
            later = later if later is not None and facts.start(later) < facts.start(call) else call
        elif where is scope or (where.kind is ScopeKind.MODULE and scope.kind is not ScopeKind.MODULE):
            return None  # one made before the load, or at module level: its config is alive already
    return later


def handed_on(context: ScriptContext, load: cst.Call, calls: list[cst.Call]) -> bool:
    """The model `load` gives (`model = ...`, `model = ....to(device)`, the first name of `model, tokenizer = ...`)
    is handed, later in the same scope, to an `.prepare(...)` or as the model of a Trainer (`SFTTrainer(model,
    ...)`, `Trainer(model=model)`)."""
    facts = context.facts
    small = facts.small_statement_of_call.get(load)
    name = _first_name(small.targets[0].target) if isinstance(small, cst.Assign) and _ends(small.value, load) else None
    if name is None:
        return False
    scope, at = facts.scope_at(load), facts.start(load)
    for call in calls:
        if facts.scope_at(call) is not scope or facts.start(call) <= at:
            continue
        func = call.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if last != "prepare" and not last.endswith("Trainer"):
            continue
        # a Trainer's model, not its `teacher_model=` or `ref_model=`; any of prepare's objects
        args = call.args if last == "prepare" else [a for i, a in enumerate(call.args) if _model_slot(a, i)]
        if any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in args):
            return True
    return False


def _model_slot(arg: cst.Arg, index: int) -> bool:
    return (arg.keyword.value == "model") if arg.keyword is not None else (index == 0 and not arg.star)


def _ends(value: cst.BaseExpression, load: cst.Call) -> bool:
    """`value` is `load`, maybe followed by method calls (`.half()`, `.to(device)`)."""
    while value is not load:
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
            return False
        value = value.func.value
    return True


def _first_name(target: cst.BaseExpression) -> str | None:
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Tuple | cst.List) and target.elements:
        first = target.elements[0].value
        return first.value if isinstance(first, cst.Name) else None
    return None


def zero3_init_beside(script: str) -> bool:
    """An accelerate YAML in the script's own folder that runs DeepSpeed with `zero3_init_flag` set: a script
    that makes an `Accelerator()` there is launched with it (`accelerate launch --config_file`), most likely."""
    folder = Path(script).parent
    record(folder)
    try:
        candidates = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    except OSError:
        return False
    for candidate in candidates[:MAX_BESIDE]:
        record(candidate)  # an input of this file's result (the result cache)
        try:
            text = read_capped(candidate, DEFAULT_MAX_CONFIG_SIZE, "max-config-size").decode("utf-8", errors="replace")
        except (OSError, TooLarge):
            continue
        config = parse_accelerate_yaml(str(candidate), text)
        if (
            config is not None
            and config.distributed_type == "DEEPSPEED"
            and yaml_boolean(config.zero3_init_flag) is True
        ):
            return True
    return False

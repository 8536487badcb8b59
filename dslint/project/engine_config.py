"""What rules need to know about the config an engine runs with: the ZeRO stage, whether the optimizer keeps its
own fp32 copy of the weights, the gradient accumulation steps, and every place a script hands DeepSpeed a config
(`ZeroSources`). Unknown answers are None; rules then say "under ZeRO-3" rather than guess."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from dslint.diagnostics import Related
from dslint.model.engine import Engine, EngineConfig
from dslint.project.config_edits import conditional, literal_value, module_index, top_level_writes
from dslint.project.config_link import resolve_config, resolve_config_expression, training_arguments_configs
from dslint.project.method_order import sequenced
from dslint.project.resolved_configs import ResolvedConfig
from dslint.project.shipped_configs import shipped_zero3
from dslint.project.splatted_arguments import call_argument
from dslint.script.context import ScriptContext
from dslint.script.facts import BindingKind, Scope, ScopeKind
from dslint.script.hf_models import is_hf_deepspeed_config, is_training_arguments


def zero_stage(context: ScriptContext, engine: Engine | None) -> int | None:
    """The ZeRO stage `engine` runs with, or None when the config cannot be read."""
    if engine is None:
        return None
    config = resolve_config(context, engine)
    if config is None or config.zero_stage is None:
        # what the project index read: a project helper's dict, or a stage written as an option, per launch
        known = known_config(context, engine)
        return known.zero_stage if known is not None else None
    return config.zero_stage


def known_config(context: ScriptContext, engine: Engine) -> EngineConfig | None:
    """What the project index read of the config `engine` runs with: an engine's from elsewhere, or, for an
    initialize call of this file, the dict a project function builds for it (`ProjectFacts.built_configs`)."""
    if engine.config is not None:
        return engine.config
    init = context.facts.initialize_of(engine)
    project = context.facts.project
    if init is None or project is None or not project.built_configs:
        return None
    return context.facts.call_fact(init.call, project.built_configs)


def keeps_master_weights(context: ScriptContext, engine: Engine | None) -> bool | None:
    """Whether DeepSpeed's optimizer holds fp32 master weights apart from the module's parameters.

    It does under ZeRO stages 1 to 3 (even in fp32) and with fp16/bf16; then a `load_state_dict` into the module
    is written over by the next `engine.step()`. None when the config cannot be read.
    """
    if engine is None:
        return None
    config = resolve_config(context, engine)
    if config is None:
        known = known_config(context, engine)
        return True if known is not None and known.zero_stage else None
    stage = config.zero_stage
    if stage is None:
        return None
    if stage > 0:
        return True
    fp16, bf16 = config.fp16_enabled, config.bf16_enabled
    if fp16 or bf16:
        return True
    if fp16 is None or bf16 is None:
        return None
    return False


def configured_accumulation_steps(context: ScriptContext, engine: Engine | None) -> int | None:
    """`gradient_accumulation_steps` as written in the engine's config; None when unknown or derived. A config
    that cannot be read otherwise (a JSON load of a path built at run time) counts the steps the script writes
    into it before `initialize` (`written_accumulation_steps`)."""
    config = resolve_config(context, engine) if engine is not None else None
    if config is None:
        return written_accumulation_steps(context, engine) if engine is not None else None
    steps = config.get("gradient_accumulation_steps")
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def written_accumulation_steps(context: ScriptContext, engine: Engine) -> int | None:
    """N of `cfg["gradient_accumulation_steps"] = N` (a literal), written into the dict this file's `initialize`
    receives, in the same function, before the call, on every path to it, and not changed after by another write
    of the key or a whole-dict update (`cfg.update(...)`); None otherwise."""
    facts = context.facts
    init = next((i for i in facts.initialize_calls if i.engine is engine), None)
    if init is None:
        return None
    expression = _config_argument(init.call, "config") or _config_argument(init.call, "config_params")
    if not isinstance(expression, cst.Name):
        return None
    scope, at = facts.scope_at(init.call), facts.start(init.call)
    mutations = [
        m
        for m in module_index(context.module).mutations.get(expression.value, [])
        if facts.scope_at(m.anchor) is scope and facts.start(m.anchor) < at
    ]
    found: int | None = None
    for mutation in sorted(mutations, key=lambda m: facts.start(m.anchor)):
        writes = top_level_writes(mutation)
        if writes is None:
            found = None  # the whole dict changed: what it holds is not known
            continue
        written = [value for key, value in writes if key == "gradient_accumulation_steps"]
        if not written:
            continue
        value = literal_value(written[0]) if written[0] is not None else None
        steady = not conditional(facts, scope.node, mutation.statement, init.call)
        found = value if isinstance(value, int) and not isinstance(value, bool) and steady else None
    return found


# the sources transformers itself reads (a config alive at `from_pretrained` builds the model partitioned)
HF_KINDS = ("HfDeepSpeedConfig", "TrainingArguments")


@dataclass(frozen=True)
class ZeroSource:
    """A place where the script hands DeepSpeed a config: initialize, HfDeepSpeedConfig, TrainingArguments."""

    call: cst.Call
    kind: str  # "initialize" | "HfDeepSpeedConfig" | "TrainingArguments"
    stage: int | None  # None: the config cannot be read
    bound: bool  # the call's result is assigned (an HfDeepSpeedConfig that stays alive)
    # configs from elsewhere (`TrainingArguments(**cfg.train)` given one by a launch's YAML): what the finding names
    configs: tuple[ResolvedConfig, ...] = ()
    # A config from outside the script that cannot be read, taken as ZeRO-3 because every DeepSpeed config the
    # project ships is (`shipped_configs.shipped_zero3`): where each of them sets the stage.
    presumed: tuple[Related, ...] = ()
    # the dict a project function builds, as the project index read it (`known_config`)
    built: EngineConfig | None = None

    def evidence(self) -> str:
        """ " (every DeepSpeed config the project ships is ZeRO-3: configs/z3.json and 1 more)", or ""."""
        if not self.presumed:
            return ""
        more = f" and {len(self.presumed) - 1} more" if len(self.presumed) > 1 else ""
        return f" (every DeepSpeed config the project ships is ZeRO-3: {self.presumed[0].path}{more})"


def _config_argument(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is not None and arg.keyword.value == keyword) or (
            arg.keyword is None and index == 0 and keyword == "config_file_or_dict"
        ):
            return arg.value
    return None


class ZeroSources:
    """Every ZeRO config source of one file, collected on demand from the calls a rule visits."""

    def __init__(self, context: ScriptContext) -> None:
        self.context = context
        self.sources: list[ZeroSource] = []
        self._shipped: tuple[Related, ...] | None = None
        for init in context.facts.initialize_calls:
            config = resolve_config(context, init.engine)
            stage = None if config is None else config.zero_stage
            built = known_config(context, init.engine) if config is None else None
            if built is not None and built.zero_stage is not None:
                self.sources.append(ZeroSource(init.call, "initialize", built.zero_stage, True, built=built))
                continue
            # without config=, DeepSpeed reads the command line's --deepspeed_config from args=
            command_line = init.config is None and init.argument("args") is not None
            presumed = self._presumed(init.config, command_line) if config is None else ()
            self.sources.append(ZeroSource(init.call, "initialize", 3 if presumed else stage, True, presumed=presumed))

    def consider(self, call: cst.Call) -> None:
        """Record `call` if it is an HfDeepSpeedConfig or TrainingArguments with a DeepSpeed config."""
        context = self.context
        if is_hf_deepspeed_config(context, call):
            expression = _config_argument(call, "config_file_or_dict")
            kind = "HfDeepSpeedConfig"
        elif is_training_arguments(context, call):
            expression = call_argument(context, call, "deepspeed")  # a keyword, or a splatted dict's entry
            kind = "TrainingArguments"
            if expression is None and any(arg.star == "**" for arg in call.args):
                self._splatted(call)
                return
        else:
            return
        if expression is None:
            return
        if isinstance(expression, cst.Name) and expression.value == "None":
            return
        small = context.facts.small_statement_of_call.get(call)
        # kept: bound to a name, or returned (the caller keeps it or not)
        bound = isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return)) and small.value is call
        config = resolve_config_expression(context, expression)
        stage = None if config is None else config.zero_stage
        # a Trainer whose launches never hand it a DeepSpeed config may run without DeepSpeed: nothing presumed
        presumed = self._presumed(expression) if stage is None and not self._launched_without_config() else ()
        files = (config,) if config is not None and config.path is not None else ()  # the file the stage is from
        self.sources.append(ZeroSource(call, kind, 3 if presumed else stage, bound, files, presumed=presumed))

    def _launched_without_config(self) -> bool:
        """Launches of this script are known, and none names a DeepSpeed config (nor an option for one)."""
        project = self.context.facts.project
        launches = project.launches if project is not None else ()
        return bool(launches) and not any(run.option is not None or run.config_path is not None for run in launches)

    def _presumed(self, expression: cst.BaseExpression | None, command_line: bool = False) -> tuple[Related, ...]:
        """The shipped ZeRO-3 configs standing for an unread config that comes from outside the script."""
        if not command_line and (expression is None or not from_outside(self.context, expression)):
            return ()
        if self._shipped is None:
            self._shipped = shipped_zero3(self.context.path)
        return self._shipped

    def _splatted(self, call: cst.Call) -> None:
        """`TrainingArguments(**cfg.train)`: the configs its launches' YAML files name (`TRAINER_YAML`)."""
        configs = training_arguments_configs(self.context)
        if not configs:
            return
        stages = {config.zero_stage for config in configs}
        stage = None if None in stages else max(s for s in stages if s is not None)
        small = self.context.facts.small_statement_of_call.get(call)
        bound = isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return)) and small.value is call
        self.sources.append(ZeroSource(call, "TrainingArguments", stage, bound, tuple(configs)))

    def of_kind(self, *kinds: str) -> Iterator[ZeroSource]:
        return (s for s in self.sources if s.kind in kinds)

    def in_scope_before(self, source: ZeroSource, scope: Scope, call: cst.Call) -> bool:
        """Whether `source` runs before `call`: earlier in the same scope, or at module level above a function."""
        facts = self.context.facts
        source_scope = facts.scope_at(source.call)
        if source_scope is scope:
            return facts.start(source.call) < facts.start(call)
        return source_scope.kind is ScopeKind.MODULE and scope.kind is not ScopeKind.MODULE

    def runs_after(self, source: ZeroSource, load: cst.Call, calls: Sequence[cst.Call]) -> bool:
        """Whether `source` surely runs after `load` (`calls`: every call of the file): later in the same scope,
        in a method of the class that a driver method runs after the load's (`method_order.sequenced`), or `load`
        is in a function of the module that is called only in `source`'s scope, before it (`model =
        load_model(...)` then `TrainingArguments(deepspeed=...)`)."""
        facts = self.context.facts
        load_scope = facts.scope_at(load)
        source_scope = facts.scope_at(source.call)
        if source_scope is load_scope:
            return facts.start(load) < facts.start(source.call)
        owner = load_scope.parent.node if load_scope.parent is not None else None
        if (  # methods of one class that a driver method runs in that order (`self.load(); self.train()`)
            isinstance(owner, cst.ClassDef)
            and source_scope.parent is load_scope.parent
            and isinstance(load_scope.node, cst.FunctionDef)
            and isinstance(source_scope.node, cst.FunctionDef)
            and load_scope.node is not source_scope.node
        ):
            return sequenced(facts, owner, load_scope.node.name.value, source_scope.node.name.value)
        home = load_scope.node
        if load_scope.parent is not facts.module_scope or not isinstance(home, cst.FunctionDef):
            return False
        name = home.name.value
        callers = [call for call in calls if isinstance(call.func, cst.Name) and call.func.value == name]
        return bool(callers) and all(
            facts.scope_at(call) is source_scope and facts.start(call) < facts.start(source.call) for call in callers
        )


ENVIRONMENT_READERS = frozenset({"os.environ.get", "os.getenv"})


def from_outside(context: ScriptContext, expression: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether a config expression is handed in from outside the script: an option of its command line or a
    parameter (`args.deepspeed`, `cfg.ds_config`, a parameter `deepspeed`), an item of one (`cfg["ds_config"]`),
    the launch's environment (`os.environ.get("DS_CONFIG")`), a path built from one (`os.path.join(root,
    args.ds)`, an f-string), or a name bound to such a value; not a dict the script builds or a file it reads
    itself."""
    if isinstance(expression, cst.Attribute | cst.FormattedString):
        return True
    if isinstance(expression, cst.Subscript):  # `cfg["ds_config"]`: an item of a value handed in
        return depth <= 3 and from_outside(context, expression.value, depth + 1)
    if isinstance(expression, cst.Call):
        name = context.facts.qualified(expression.func)
        if name in ENVIRONMENT_READERS:  # `os.environ.get("DS_CONFIG")`: the launch's environment
            return True
        return name == "os.path.join" and any(from_outside(context, arg.value, depth + 1) for arg in expression.args)
    if not isinstance(expression, cst.Name) or depth > 3:
        return False
    facts = context.facts
    binding = facts.binding_at(expression.value, facts.scope_at(expression), facts.start(expression))
    if binding is None:
        return False
    if binding.kind is BindingKind.PARAMETER:
        return True
    value = binding.value if binding.kind is BindingKind.OTHER else None
    return isinstance(value, cst.BaseExpression) and from_outside(context, value, depth + 1)

"""The link from a script's `deepspeed.initialize(...)` call to the DeepSpeed config it uses.

Rules of every family that depend on the ZeRO stage or the precision ask `resolve_config(context, engine)`.
Resolved statically: a dict literal as `config=` / `config_params=` (or a name bound to one, with the writes after
it: `cfg["zero_optimization"]["stage"] = args.stage` makes that value UNKNOWN, `cfg.update(other)` the whole
config), a path to a JSON/HJSON file (relative to the script, parsed once per file version), `args.<option>` by
its argparse default (`args=` alone: the `--deepspeed_config` DeepSpeed reads), a parameter (or its dict's item)
by what the module's callers pass, and `TrainingArguments(deepspeed=...)` or accelerate's
`DeepSpeedPlugin(hf_ds_config=...)` (`trainer_configs`; both fill "auto"). A question whose answer depends on an
UNKNOWN value gets None, and rules say "under ZeRO-3" rather than guess. Each resolved config carries a
positioned tree (`dslint.config.tree`) on which the config rules (DSL4xx) run.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import libcst as cst

from dslint.config.facts import Origin
from dslint.config.tree import Object, to_python
from dslint.diagnostics import Related
from dslint.model.engine import Engine
from dslint.model.library import is_training_arguments_name
from dslint.project.arguments_files import argument_file_configs
from dslint.project.builder_dicts import built_trees, completed_by_caller
from dslint.project.caller_configs import (
    caller_arguments,
    caller_items,
    splatted_options,
    strongest,
)
from dslint.project.config_access import config_path, load_config_tree
from dslint.project.config_edits import (
    Mutation,
    apply_mutation,
    conditional,
    copy_tree,
    fire_parameter,
    module_index,
    tree_from_literal,
)
from dslint.project.config_writers import written_argument
from dslint.project.edited_dicts import written_dict_configs
from dslint.project.resolved_configs import AccelerateRun, ResolvedConfig, launch_evidence, launched_file
from dslint.project.settings_entries import settings_config, settings_entry, splatted_trainer_configs
from dslint.project.shell_directories import UNKNOWN_VALUE
from dslint.project.shipped_configs import ships_only_lower_stages
from dslint.project.splatted_arguments import call_argument
from dslint.project.trainer_launches import builds_training_arguments, launched_for_trainer
from dslint.script.config_loads import loaded_path
from dslint.script.facts import BindingKind, InitializeCall, Pos
from dslint.script.names import dotted_name
from dslint.script.path_values import path_value
from dslint.script.project_facts import LaunchedConfig
from dslint.script.walk import own_returns

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext


def resolve_config(context: ScriptContext, engine: Engine) -> ResolvedConfig | None:
    """The config `engine` runs with, or None when it cannot be resolved statically. Without `config=`, DeepSpeed
    reads `args.deepspeed_config` from the `args=` it is given; its argparse default is followed
    (`deepspeed.add_config_arguments(parser)` adds the option with no default)."""
    init = context.facts.initialize_of(engine) or _created_here(context, engine)
    if init is None:  # an engine created elsewhere: what the project index knows of its config
        return _remote_config(engine)
    expression = init.config
    if expression is None:
        args = init.argument("args")
        if args is None:
            return None
        return _resolve_option(context, "deepspeed_config", args, Origin.INITIALIZE)
    return _resolve_expression(context, expression, depth=0, origin=Origin.INITIALIZE)


def resolve_config_expression(context: ScriptContext, expression: cst.BaseExpression) -> ResolvedConfig | None:
    """The config an expression handed to a DeepSpeed reader stands for (`zero.Init(config_dict_or_path=cfg)`,
    `HfDeepSpeedConfig(cfg)`), read as initialize's `config=` would be."""
    return _resolve_expression(context, expression, depth=0, origin=Origin.INITIALIZE)


def edited_configs(context: ScriptContext, engine: Engine) -> list[ResolvedConfig]:
    """A dict of unknown content (accelerate's live DeepSpeed dict, say) that the script edits with literal keys
    (`cfg.update({...})`, `cfg["key"] = ...`) before `init` receives it: the keys written (`_written_configs`).
    For the config rules only: a question about the stage or the precision must not read it, since what it
    does not show may be there."""
    init = context.facts.initialize_of(engine)
    expression = init.config if init is not None else None
    if not isinstance(expression, cst.Name):
        return []
    below = functools.partial(stages_below_zero3, context)
    return written_dict_configs(context, expression, Origin.INITIALIZE, (), below)


def returned_configs(context: ScriptContext) -> list[ResolvedConfig]:
    """The dicts this module's config builders return (`return cfg` in a function whose result a DeepSpeed
    config reader receives elsewhere, `project.config_builders`), as far as the builder writes them."""
    project = context.facts.project
    if project is None or not project.config_builders:
        return []
    found: list[ResolvedConfig] = []
    for statement in context.module.body:
        constant = _module_dict(statement)
        if constant is not None and constant[0] in project.config_builders:  # `DS_CONFIG = {...}` a reader imports
            reader, who, written = project.config_builders[constant[0]]
            tree = tree_from_literal(context, constant[1])
            if isinstance(tree, Object) and not tree.opaque:
                completed_by_caller(tree, written)
                found.append(
                    ResolvedConfig({}, f"dict at line {tree.start.line}", None, tree, Origin.of_reader(who), (reader,))
                )
            continue
        for function, name in _builder_functions(statement, project.config_builders):
            found.extend(_built_by(context, function, project.config_builders[name]))
    return found


def _builder_functions(statement: cst.CSTNode, builders: Mapping[str, object]) -> Iterator[tuple[cst.FunctionDef, str]]:
    """A module-level function, or a method of a module-level class (`Class.method`), that is a config builder."""
    if isinstance(statement, cst.FunctionDef) and statement.name.value in builders:
        yield statement, statement.name.value
    elif isinstance(statement, cst.ClassDef):
        for inner in statement.body.body:
            name = f"{statement.name.value}.{inner.name.value}" if isinstance(inner, cst.FunctionDef) else ""
            if isinstance(inner, cst.FunctionDef) and name in builders:
                yield inner, name


def _built_by(
    context: ScriptContext, statement: cst.FunctionDef, builder: tuple[Related, str, frozenset[str]]
) -> list[ResolvedConfig]:
    """The dicts the builder function `statement` returns, as far as it writes them."""
    found: list[ResolvedConfig] = []
    reader, who, written = builder
    origin = Origin.of_reader(who)
    for returned in own_returns(statement):
        if isinstance(returned.value, cst.Name):
            below = functools.partial(stages_below_zero3, context)
            found.extend(written_dict_configs(context, returned.value, origin, (reader,), below))
        for tree in built_trees(context, statement, returned.value) if returned.value is not None else ():
            if isinstance(tree, Object) and not tree.entries:
                continue  # `return {}`: a fallback that writes nothing, no config to check
            completed_by_caller(tree, written)  # the reader's function writes some keys itself
            found.append(ResolvedConfig({}, f"dict at line {tree.start.line}", None, tree, origin, (reader,)))
    return found


def _module_dict(statement: cst.CSTNode) -> tuple[str, cst.Dict] | None:
    """`NAME = {...}` at module level: the name and the dict."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.value, cst.Dict):
        return None
    target = assign.targets[0].target
    return (target.value, assign.value) if isinstance(target, cst.Name) else None


def trainer_configs(context: ScriptContext) -> list[ResolvedConfig]:
    """Configs given to the Hugging Face integrations, which fill "auto" values: `TrainingArguments(...,
    deepspeed=...)` (any `*TrainingArguments`) and accelerate's `DeepSpeedPlugin(hf_ds_config=...)`; and,
    for a script that parses its `TrainingArguments` from the command line (`HfArgumentParser`), the
    `--deepspeed ds.json` its launchers give it."""
    found: list[ResolvedConfig] = []
    explicit = False
    for expression in trainer_expressions(context):
        explicit = True
        resolved = _resolve_expression(context, expression, depth=0, origin=Origin.TRAINER)
        if resolved is not None:
            found.append(resolved)
    found.extend(splatted := splatted_trainer_configs(context))  # `TrainingArguments(**settings)`
    explicit = explicit or bool(splatted)
    project = context.facts.project
    if not explicit and project is not None and project.launches:
        for launch in project.launches:
            if not launched_for_trainer(context, launch) or launch.config_path is None:
                continue
            resolved = launched_file(launch.config_path, Origin.TRAINER, (launch.launch, *launch_evidence(launch)))
            if resolved is not None:
                found.append(resolved)
    return found


def training_arguments_configs(context: ScriptContext) -> list[ResolvedConfig] | None:
    """The DeepSpeed configs the Hugging Face Trainer of this script may run with: every `*TrainingArguments(
    deepspeed=...)` of the file and the `deepspeed` of each arguments file it parses by a written path
    (`project.arguments_files`), or, when it has none of those and parses them from the command line, each
    `--deepspeed ds.json` its launchers give. None when one of them cannot be read (the answer would be partial)."""
    found: list[ResolvedConfig] = []
    explicit = False
    for expression in trainer_expressions(context, ("deepspeed",)):
        explicit = True
        if isinstance(expression, cst.Name) and expression.value == "None":
            continue
        resolved = _resolve_expression(context, expression, depth=0, origin=Origin.TRAINER)
        if resolved is None:
            return None
        found.append(resolved)
    found.extend(splatted := splatted_trainer_configs(context))  # `TrainingArguments(**settings)`
    explicit = explicit or bool(splatted)
    for path, named in argument_file_configs(context):  # `parser.parse_json_file("config.json")`
        explicit = True
        resolved = launched_file(path, Origin.TRAINER, (named,))
        if resolved is None:
            return None
        found.append(resolved)
    project = context.facts.project
    if explicit or project is None:
        return found
    for launch in project.launches:
        if launched_for_trainer(context, launch) and launch.config_path is not None:
            resolved = launched_file(launch.config_path, Origin.TRAINER, (launch.launch, *launch_evidence(launch)))
            if resolved is None:
                return None
            found.append(resolved)
    if not found and builds_training_arguments(context):
        # arguments that name no config, under `accelerate launch`es whose YAML runs DeepSpeed: the Trainer builds
        # its plugin from the YAML (`TrainingArguments.__post_init__` under ACCELERATE_USE_DEEPSPEED); only where
        # every such launch names a config file (a YAML's own settings are no whole config)
        runs = accelerate_runs(context) or []
        if runs and all(run.config is not None for run in runs):
            found.extend(run.config for run in runs if run.config is not None)
    return found


def trainer_config_given(context: ScriptContext) -> str | None:
    """Where every `*TrainingArguments(deepspeed=...)` of this script surely names a DeepSpeed config, though
    `training_arguments_configs` cannot read it (a path of another machine): a written path or dict, or
    `args.<option>` that argparse requires (`required=True`) or every launch of the script gives a value. Any
    `deepspeed=` that may be None or empty (no DeepSpeed on that run): None. Transformers turns DeepSpeed on for
    any such value (`TrainingArguments.__post_init__`)."""
    found: list[str] = []
    for expression in trainer_expressions(context, ("deepspeed",)):
        facts = context.facts
        name = expression.value if isinstance(expression, cst.Name) else None
        binding = facts.binding_at(name, facts.scope_at(expression), facts.start(expression)) if name else None
        if binding is not None and binding.kind is BindingKind.OTHER and binding.value is not None:
            expression = binding.value  # `ds_config = "/data/ds.json"` before the call
        if isinstance(expression, cst.SimpleString) and expression.evaluated_value:
            found.append(str(expression.evaluated_value))
        elif isinstance(expression, cst.Dict) and expression.elements:
            found.append(f"dict at line {context.span(expression)[0].line}")
        elif isinstance(expression, cst.Attribute) and isinstance(expression.value, cst.Name):
            option = expression.attr.value
            if option in module_index(context.module).required_options:
                found.append(f"--{option}, required")
            elif _given_on_every_launch(context, option):
                found.append(f"--{option} on every launch")
            else:
                return None
        else:
            return None
    return ", ".join(dict.fromkeys(found)) or None


def _given_on_every_launch(context: ScriptContext, option: str) -> bool:
    """Every launch of the script gives `--option` a value, none built at run time (`UNKNOWN_VALUE`), and no
    launcher names the script where the index reads no launch of it."""
    project = context.facts.project
    if project is None or not project.launches or project.launches_partial:
        return False
    return all((given := launch.options.get(option)) and given != UNKNOWN_VALUE for launch in project.launches)


def stages_below_zero3(context: ScriptContext) -> bool:
    """Every config this script's run may take is known below ZeRO-3: its Trainer's (`TrainingArguments(
    deepspeed=...)`, the launches' `--deepspeed`), else those of its accelerate launches, else those the launches
    of the scripts importing it pass (a vendored trainer module: `project.importer_launches`); with no launch
    giving a config at all, every DeepSpeed config the project ships near it (`ships_only_lower_stages`)."""
    configs = training_arguments_configs(context)
    if configs:
        return all(config.zero_stage is not None and config.zero_stage < 3 for config in configs)
    runs = accelerate_runs(context) or []
    stages = [run.zero_stage for run in runs]
    if stages:
        return all(stage is not None and stage < 3 for stage in stages)
    project = context.facts.project
    inherited = [launch for launch in project.importer_launches if launch.option] if project is not None else []
    if inherited:
        stages = [_launched_stage(launch) for launch in inherited]
        return all(stage is not None and stage < 3 for stage in stages)
    return ships_only_lower_stages(context)


def _launched_stage(launch: LaunchedConfig) -> int | None:
    """The ZeRO stage of the config a launch gives: its own `--zero_stage`, or its config file's (None: unknown)."""
    if launch.config_path is None:
        return launch.inline_stage
    resolved = launched_file(launch.config_path, Origin.TRAINER, (launch.launch,))
    return resolved.zero_stage if resolved is not None else None


def accelerate_runs(context: ScriptContext) -> list[AccelerateRun] | None:
    """How the accelerate launches of this script run DeepSpeed; None when one of them cannot be read, or the script
    builds its own `DeepSpeedPlugin` (which replaces what the launcher passes)."""
    project = context.facts.project
    if project is None:
        return []
    if any(
        (name := dotted_name(call.func)) is not None and name.endswith("DeepSpeedPlugin")
        for call in _calls(context.module)
    ):
        return None
    runs: list[AccelerateRun] = []
    for launch in project.launches:
        if launch.option != "accelerate":
            continue
        via = (launch.launch, *launch_evidence(launch))
        if launch.config_path is not None:
            resolved = launched_file(launch.config_path, Origin.TRAINER, via)
            if resolved is None:
                return None
            runs.append(
                AccelerateRun(
                    via, config=resolved, mixed_precision=launch.mixed_precision, zero3_init=launch.zero3_init
                )
            )
        elif launch.inline_stage is not None:
            runs.append(
                AccelerateRun(
                    via,
                    stage=launch.inline_stage,
                    save_16bit=launch.inline_save_16bit,
                    mixed_precision=launch.mixed_precision,
                    zero3_init=launch.zero3_init,
                    clipping=launch.inline_clipping,
                    accumulation=launch.inline_accumulation,
                )
            )
        else:
            return None
    return runs


def _created_here(context: ScriptContext, engine: Engine) -> InitializeCall | None:
    """The initialize call of this file that created an engine reaching it from elsewhere (`Trainer(engine)`
    built in `main()` of the same module): its config is read as the call's own."""
    if engine.created is None:
        return None
    path, line, column = engine.created
    if os.path.abspath(path) != os.path.abspath(context.path):
        return None
    facts = context.facts
    return next((i for i in facts.initialize_calls if facts.call_position(i.call) == (line, column)), None)


def _remote_config(engine: Engine) -> ResolvedConfig | None:
    config = engine.config
    if config is None or config.config_path is None:
        return None
    return launched_file(config.config_path, Origin.INITIALIZE, config.evidence)


def _launched_option(
    context: ScriptContext, option: str, default: cst.BaseExpression | None, origin: Origin
) -> ResolvedConfig | bool | None:
    """The config the launchers give `--option`: with several launchers, the one with the highest ZeRO stage
    (stage-aware findings name the launchers where it applies). False when no launcher gives the option; None
    when one gives a value that cannot be read (a path built at run time, a file not found)."""
    project = context.facts.project
    if project is None:
        return False
    # a module no launch starts reads the options of the launched scripts importing it (`llama_finetune(args)`)
    launches = project.launches or project.importer_launches
    if not launches:
        return False
    given = [launch for launch in launches if launch.option == option]
    if not given:
        return False
    candidates: list[tuple[ResolvedConfig, LaunchedConfig | None]] = []
    for launch in given:
        if launch.config_path is None:
            return None
        resolved = launched_file(launch.config_path, origin, (launch.launch, *launch_evidence(launch)))
        if resolved is None:
            return None
        candidates.append((resolved, launch))
    # a launch without it and a default of None or "" (`if args.deepspeed else None`): no DeepSpeed for that one
    no_config = (
        default is None
        or (isinstance(default, cst.Name) and default.value == "None")
        or (isinstance(default, cst.SimpleString) and default.evaluated_value == "")
    )
    if len(given) < len(launches) and not no_config:
        assert default is not None
        fallback = _resolve_expression(context, default, depth=1, origin=origin)
        if fallback is None:
            return None
        candidates.append((fallback, None))
    stages = [c.zero_stage for c, _ in candidates]
    if any(stage is None for stage in stages):
        return None if len({str(c.path) for c, _ in candidates}) > 1 else candidates[0][0]
    top = max(s for s in stages if s is not None)
    chosen = [(c, launch) for c, launch in candidates if c.zero_stage == top]
    via = tuple(r for c, _ in chosen for r in c.via)
    first = chosen[0][0]
    return ResolvedConfig(first.values, first.source, first.path, first.tree, first.origin, via)


def trainer_expressions(
    context: ScriptContext, keywords: tuple[str, ...] = ("deepspeed", "hf_ds_config")
) -> Iterator[cst.BaseExpression]:
    for call in _calls(context.module):
        last = (dotted_name(call.func) or "").split(".")[-1]
        arguments = bool(last) and (is_training_arguments_name(last) or last in _project_arguments(context))
        keyword = "deepspeed" if arguments else "hf_ds_config" if last == "DeepSpeedPlugin" else None
        if keyword is None or keyword not in keywords:
            continue
        expression = call_argument(context, call, keyword)  # its keyword, or an entry of a dict splatted into it
        if expression is not None:
            yield expression


def _calls(module: cst.Module) -> list[cst.Call]:
    return module_index(module).calls


def _resolve_expression(
    context: ScriptContext, node: cst.BaseExpression, depth: int, origin: Origin = Origin.INITIALIZE
) -> ResolvedConfig | None:
    if depth > 4:
        return None
    facts = context.facts
    if isinstance(node, cst.Dict):
        tree = tree_from_literal(context, node)
        if not isinstance(tree, Object) or tree.opaque:
            return None
        values = to_python(tree)
        if not isinstance(values, dict):
            return None
        return ResolvedConfig(values, f"dict literal at line {context.span(node)[0].line}", None, tree, origin)
    written = written_argument(context, node) if isinstance(node, cst.Call) else None
    if written is not None:  # `save_ds_config(cfg, "ds.json")`: the dict the project function writes
        return _resolve_expression(context, written, depth + 1, origin)
    if isinstance(node, _PATH_EXPRESSIONS):
        # a literal path, or one built from literals and the script's location (`Path(__file__).parent / "x"`)
        entry = settings_entry(context, node) if (value := path_value(facts, node, context.path)) is None else None
        value, via = (entry[0], (entry[1],) if entry[1] else ()) if entry else (value, ())  # a settings file's entry
        if value is not None and origin is Origin.TRAINER and value == "auto":
            return None
        if value is not None:
            path = config_path(context.path, value)
            loaded = load_config_tree(path, context.path)
            if not isinstance(loaded, Object):
                return None
            values = to_python(loaded)
            return ResolvedConfig(values, str(path), path, loaded, origin, via) if isinstance(values, dict) else None
    if isinstance(node, cst.IfExp):  # `"ds.json" if args.deepspeed else None`: the arms that give a config
        arms = [a for a in (node.body, node.orelse) if not (isinstance(a, cst.Name) and a.value == "None")]
        return strongest([_resolve_expression(context, arm, depth + 1, origin) for arm in arms])
    opened = loaded_path(facts, node)  # json.load(open(path)): the file the path names
    if opened is not None:
        return _resolve_expression(context, opened, depth + 1, origin)
    items = caller_items(context, node)  # `config["ds_config"]` of a parameter: the entry its callers' dicts give
    if items is not None:
        return strongest([_resolve_expression(context, item, depth + 1, origin) for item in items])
    key = dotted_name(node)
    if key is None:
        return None
    binding = facts.binding_at(key, facts.scope_at(node), facts.start(node))
    if binding is None:
        if isinstance(node, cst.Attribute):  # an option, else the settings files' one value for the attribute
            found = _resolve_option(context, node.attr.value, node.value, origin)
            return found if found is not None else settings_config(context, node.attr.value, origin)
        return None
    if binding.kind is BindingKind.PARAMETER:  # what this module's calls of the function pass for it
        passed = caller_arguments(context, binding)
        # `main(**vars(args))`, or `fire.Fire(main)`: the parameter is the command line's option of its name
        if passed is None and (splatted_options(context, binding) or fire_parameter(context, binding)):
            return _resolve_option(context, binding.key, cst.Name("args"), origin)
        return strongest([_resolve_expression(context, v, depth + 1, origin) for v in passed or ()])
    if binding.kind is not BindingKind.OTHER or binding.value is None:
        return None
    resolved = _resolve_expression(context, binding.value, depth + 1, origin)
    if resolved is None or resolved.tree is None:
        return resolved
    if not isinstance(binding.value, cst.Dict) and loaded_path(facts, binding.value) is None:
        return resolved
    return _with_mutations(context, resolved, key, binding.scope, binding.value, facts.start(node))


# --- argparse defaults -------------------------------------------------------------------------------------


def _resolve_option(
    context: ScriptContext, option: str, namespace: cst.BaseExpression, origin: Origin
) -> ResolvedConfig | None:
    """`args.<option>` where `args` comes from argparse: follow the option's literal string default."""
    if not isinstance(namespace, cst.Name):
        return None
    default = module_index(context.module).option_defaults.get(option)
    launched = _launched_option(context, option, default, origin)
    if launched is not False:
        return launched if isinstance(launched, ResolvedConfig) else None
    if default is None:
        return None
    return _resolve_expression(context, default, depth=1, origin=origin)


# --- mutations after the literal ---------------------------------------------------------------------------


def _with_mutations(
    context: ScriptContext,
    resolved: ResolvedConfig,
    name: str,
    scope: Any,
    bound: cst.BaseExpression,
    before: Pos,
) -> ResolvedConfig | None:
    """Apply `cfg["a"]["b"] = value` (literal: that value; otherwise UNKNOWN) and `cfg.update(...)` (the whole
    dict becomes unknown) written between the literal `bound` and the use, in the same scope; a write under an
    `if` (a loop, a `try`) that does not hold the literal may or may not have run: its key becomes UNKNOWN."""
    facts = context.facts
    after = facts.start(bound)
    placed = [
        (facts.start(m.anchor), m if not conditional(facts, scope.node, m.statement, bound) else m.unsure())
        for m in module_index(context.module).mutations.get(name, [])
        if facts.scope_at(m.anchor) is scope and after < facts.start(m.anchor) < before
    ]
    for call in module_index(context.module).calls:  # a function of the module the dict is handed to
        handed = _handed_mutations(context, call, name, 0) if _hands(call, name) else []
        if handed and facts.scope_at(call) is scope and after < facts.start(call) < before:
            unsure = conditional(facts, scope.node, call, bound)
            placed.extend((facts.start(call), m.unsure() if unsure else m) for m in handed)
    mutations = [m for _, m in sorted(placed, key=lambda pair: pair[0])]
    if not mutations:
        return resolved
    assert resolved.tree is not None
    tree = copy_tree(resolved.tree)
    assert isinstance(tree, Object)
    for mutation in mutations:
        if mutation.keys is None or (not mutation.keys and mutation.value is None):  # an update, maybe conditional
            return None
        apply_mutation(context, tree, mutation)
    values = to_python(tree)
    if not isinstance(values, dict):
        return None
    return ResolvedConfig(values, resolved.source, resolved.path, tree, resolved.origin)


# what `path_values.path_value` reads a path from (a settings file's entry: `cfg["ds_config"]`, `cfg.get(...)`)
_PATH_EXPRESSIONS: tuple[type, ...] = (cst.SimpleString, cst.ConcatenatedString, cst.Call, cst.BinaryOperation)
_PATH_EXPRESSIONS += (cst.Attribute, cst.Subscript)
_HELPER_DEPTH = 3  # a helper handing the dict on to another: followed to this many functions in


def _hands(call: cst.Call, name: str) -> bool:
    """`call` of a plain name hands it the name `name` (`fill(cfg, args)`)."""
    return isinstance(call.func, cst.Name) and any(
        isinstance(arg.value, cst.Name) and arg.value.value == name for arg in call.args
    )


def _handed_mutations(context: ScriptContext, call: cst.Call, name: str, depth: int) -> list[Mutation]:
    """The writes a function of this module makes into the dict `name` that `call` hands it (`fill(cfg, args)`
    with `def fill(config, args): config["lr"] = args.lr`), into its parameter while the parameter still holds
    it (not after `config = copy.deepcopy(config)`), and into the dicts it hands on; a write under a branch of
    the function gives its key an unknown value. As `config_readers.replaced_keys` reads them for a file."""
    if depth >= _HELPER_DEPTH or not isinstance(call.func, cst.Name):
        return []
    defined = (s for s in context.module.body if isinstance(s, cst.FunctionDef) and not s.decorators)
    function = next((s for s in defined if s.name.value == call.func.value), None)
    if function is None:
        return []
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    named = {p.name.value for p in (*params.params, *params.kwonly_params)}
    receivers: list[str] = []
    for index, arg in enumerate(call.args):
        if arg.star:
            return []  # the positions after it are not known
        handed = isinstance(arg.value, cst.Name) and arg.value.value == name
        if handed and arg.keyword is not None and arg.keyword.value in named:
            receivers.append(arg.keyword.value)
        elif handed and arg.keyword is None and index < len(positional):
            receivers.append(positional[index])
    facts = context.facts
    found: list[Mutation] = []
    for parameter in receivers:
        for m in module_index(context.module).mutations.get(parameter, []):
            scope = facts.scope_at(m.anchor)
            binding = facts.binding_at(parameter, scope, facts.start(m.anchor))
            if scope.node is not function or binding is None or binding.kind is not BindingKind.PARAMETER:
                continue
            found.append(m.unsure() if conditional(facts, function, m.statement, function.name) else m)
        for inner in module_index(context.module).calls:
            if _hands(inner, parameter) and facts.scope_at(inner).node is function:
                found.extend(_handed_mutations(context, inner, parameter, depth + 1))
    return found


def _project_arguments(context: ScriptContext) -> frozenset[str]:
    """The project's own Trainer argument classes this script names (`ProjectFacts.arguments_classes`)."""
    return context.facts.project.arguments_classes if context.facts.project is not None else frozenset()

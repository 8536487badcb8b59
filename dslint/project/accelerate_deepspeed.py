"""Whether a script runs DeepSpeed through Hugging Face accelerate, and whether its engine then trains in 16 bits.

accelerate hands the model to `deepspeed.initialize` inside `accelerator.prepare` (`Accelerator._prepare_deepspeed`)
when the script builds a `DeepSpeedPlugin` (the `Accelerator` then sets ACCELERATE_USE_DEEPSPEED) or when `accelerate
launch` starts it with a YAML whose `distributed_type` is DEEPSPEED (`config_link.accelerate_runs`). The precision
(`DeepSpeedPlugin.set_mixed_precision`, called by `AcceleratorState`): the Accelerator's `mixed_precision` (its
argument, else ACCELERATE_MIXED_PRECISION, which `accelerate launch` sets from the YAML or `--mixed_precision`)
writes an `fp16` or `bf16` section where the DeepSpeed config has none, and fills an `enabled` written "auto"; an
`enabled` the config writes as true or false stays. `fp8` runs the engine in bf16.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from dslint.config.versions import CLIPPING_BY_DEFAULT_SINCE
from dslint.diagnostics import Related
from dslint.model.library import ACCELERATOR_CALLS
from dslint.project.config_edits import literal_value, module_index
from dslint.project.config_link import (
    accelerate_runs,
    resolve_config_expression,
    trainer_expressions,
    training_arguments_configs,
)
from dslint.project.resolved_configs import AccelerateRun, ResolvedConfig
from dslint.project.shipped_configs import shipped_zero3
from dslint.script.names import dotted_name

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext

_NOT_KNOWN = "?"  # a `mixed_precision` the script computes
# The section each `mixed_precision` enables (`set_mixed_precision`: fp16 -> fp16, bf16 and fp8 -> bf16)
_SECTION_OF = {"fp16": "fp16", "bf16": "bf16", "fp8": "bf16"}


@dataclass(frozen=True)
class AccelerateDeepSpeed:
    """How one script runs DeepSpeed through accelerate."""

    where: str  # "configs/acc.yaml:4" (the launch's YAML key), or "DeepSpeedPlugin at line 7"
    related: tuple[Related, ...]  # the launch lines and YAML keys (none for the script's own plugin)
    half: bool | None  # the engine trains in fp16/bf16 on every run (True), on none (False); None: not known
    precision: str | None = None  # "fp16" or "bf16" when `half` and every run agrees


def accelerate_deepspeed(context: ScriptContext) -> AccelerateDeepSpeed | None:
    """None when the script is not known to run DeepSpeed through accelerate."""
    plugin = next(iter(_plugins(context)), None)
    chosen = _script_precision(context)
    if plugin is not None:
        where = _plugin_place(context, plugin)
        expressions = list(trainer_expressions(context, ("hf_ds_config",)))
        if not expressions:
            return _judged(where, (), [(None, chosen)])
        configs = [resolve_config_expression(context, expression) for expression in expressions]
        if any(config is None for config in configs):
            return AccelerateDeepSpeed(where, (), None)
        return _judged(where, (), [(config, chosen) for config in configs])
    runs = accelerate_runs(context)
    if not runs:
        return None
    last = runs[0].via[-1]
    related = tuple(r for run in runs for r in run.via)
    return _judged(f"{last.path}:{last.line}", related, [_run_precision(run, chosen) for run in runs])


def _run_precision(run: AccelerateRun, chosen: str | None) -> tuple[ResolvedConfig | None, str | None]:
    return run.config, chosen if chosen is not None else run.mixed_precision


def _judged(
    where: str, related: tuple[Related, ...], runs: list[tuple[ResolvedConfig | None, str | None]]
) -> AccelerateDeepSpeed:
    found = [_engine_precision(config, mixed) for config, mixed in runs]
    names = {p for p in found if isinstance(p, str)}
    if found and len(names) == len(set(found)):
        return AccelerateDeepSpeed(where, related, True, names.pop() if len(names) == 1 else None)
    if found and all(p is False for p in found):
        return AccelerateDeepSpeed(where, related, False)
    return AccelerateDeepSpeed(where, related, None)


def _engine_precision(config: ResolvedConfig | None, mixed: str | None) -> str | bool | None:
    """The 16-bit section the engine enables ("fp16", "bf16"), False for fp32, None when not known. `mixed`: the
    Accelerator's `mixed_precision` (None: not known)."""
    mixed = mixed.lower() if mixed is not None and mixed != _NOT_KNOWN else None
    enabled: dict[str, bool | None] = {}
    for section in ("fp16", "bf16"):
        value = config.get(section, "enabled") if config is not None else None
        present = config is not None and config.get(section) is not None
        if not present or value == "auto":  # accelerate writes it from `mixed_precision`
            enabled[section] = None if mixed is None else _SECTION_OF.get(mixed) == section
        elif value is None or value is False:  # a section without `enabled` is off (DeepSpeed's default)
            enabled[section] = False
        elif value is True:
            enabled[section] = True
        else:
            enabled[section] = None  # UNKNOWN, or a value that is no boolean
    on = [section for section, value in enabled.items() if value is True]
    if on:
        return on[0]
    if all(value is False for value in enabled.values()):
        return False
    return None


def _script_precision(context: ScriptContext) -> str | None:
    """The `mixed_precision` the script's `Accelerator(...)` calls give (lower case), `_NOT_KNOWN` when one computes
    it or they disagree, None when none gives it (then ACCELERATE_MIXED_PRECISION, the launch's, decides)."""
    given: set[str] = set()
    for call in module_index(context.module).calls:
        if context.facts.qualified(call.func) not in ACCELERATOR_CALLS:
            continue
        if any(arg.keyword is None for arg in call.args):
            return _NOT_KNOWN  # `Accelerator(*args)`, or mixed_precision given by position
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "mixed_precision":
                value = arg.value
                text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
                given.add(text.lower() if isinstance(text, str) else _NOT_KNOWN)
    if not given:
        return None
    return given.pop() if len(given) == 1 else _NOT_KNOWN


def trainer_zero3(context: ScriptContext) -> tuple[str, tuple[Related, ...]] | None:
    """Where ZeRO-3 comes from when the script's Hugging Face Trainer runs it on every config it may take: its
    TrainingArguments' configs, each at stage 3, or with none of its own, the accelerate plugin or launches
    (`accelerate_zero3`). None otherwise, or when one is not known."""
    configs = training_arguments_configs(context)
    zero3 = accelerate_zero3(context) if configs == [] else None
    if zero3 is None and configs == [] and _arguments_from_command_line(context):
        shipped = shipped_zero3(context.path)  # no launch gives one: the project's configs are all ZeRO-3
        if shipped:
            return f"every DeepSpeed config the project ships is ZeRO-3: {shipped[0].path}", shipped
    if zero3 is None and (not configs or any(c.zero_stage != 3 for c in configs)):
        return None
    where, related = zero3 or (", ".join(dict.fromkeys(c.source for c in configs or ())), ())
    return where, related or tuple(r for c in configs or () for r in c.via)


def _arguments_from_command_line(context: ScriptContext) -> bool:
    """The script parses its Trainer's arguments from a command line no launch of the project gives: the
    `--deepspeed` config, if any, is the user's."""
    project = context.facts.project
    if project is not None and (project.launches or project.importer_launches):
        return False
    return "parse_args_into_dataclasses" in context.text and "HfArgumentParser" in context.text


def accelerate_zero3(context: ScriptContext, any_launch: bool = False) -> tuple[str, tuple[Related, ...]] | None:
    """Where ZeRO-3 comes from when every way the script runs DeepSpeed through accelerate is ZeRO-3: its own
    `DeepSpeedPlugin(zero_stage=3)` (or one whose `hf_ds_config` is a stage-3 config), or every `accelerate launch`
    of it with a YAML (or the DeepSpeed config it names) at stage 3. None otherwise, or when one is not known.
    `any_launch`: without a plugin, the launches at stage 3 when at least one is (`run_zero3.sh` beside
    `run_zero2.sh`: that run is ZeRO-3), as the Trainer's `--deepspeed` configs are read."""
    plugins = _plugins(context)
    if plugins:
        configs: list[ResolvedConfig | None] | None = None  # the plugins' `hf_ds_config`s, read once when needed
        for plugin in plugins:
            stage = _keyword(plugin, "zero_stage")
            if isinstance(stage, cst.Integer) and stage.evaluated_value == 3:
                continue
            if configs is None:
                expressions = trainer_expressions(context, ("hf_ds_config",))
                configs = [resolve_config_expression(context, expression) for expression in expressions]
            if stage is not None or not configs or any(c is None or c.zero_stage != 3 for c in configs):
                return None
        return _plugin_place(context, plugins[0]), ()
    runs = accelerate_runs(context)
    if any_launch and runs:
        runs = [run for run in runs if run.zero_stage == 3]
    if not runs or any(run.zero_stage != 3 for run in runs):
        return None
    last = runs[0].via[-1]
    return f"{last.path}:{last.line}", tuple(r for run in runs for r in run.via)


def accelerate_stage(context: ScriptContext) -> tuple[int, str, tuple[Related, ...]] | None:
    """The lowest ZeRO stage of every way the script runs DeepSpeed through accelerate (`accelerate_stages`), with
    where it is written. None when one of them is not known."""
    found = accelerate_stages(context)
    return (min(found[0]), found[1], found[2]) if found is not None else None


def accelerate_stages(context: ScriptContext) -> tuple[list[int], str, tuple[Related, ...]] | None:
    """The ZeRO stage of every way the script runs DeepSpeed through accelerate, with where it is written:
    each `DeepSpeedPlugin(zero_stage=N)`, or the stage of the config its `hf_ds_config` names, or, with neither,
    accelerate's default 2 (`DeepSpeedPlugin.__post_init__`); else every `accelerate launch` of it with DeepSpeed
    (the YAML's `zero_stage` or the config file it names). None when one of them is not known."""
    plugins = _plugins(context)
    if plugins:
        stages: list[int] = []
        configs = [resolve_config_expression(context, e) for e in trainer_expressions(context, ("hf_ds_config",))]
        for plugin in plugins:
            written = _keyword(plugin, "zero_stage")
            from_config = [c.zero_stage for c in configs if c is not None and isinstance(c.zero_stage, int)]
            if isinstance(written, cst.Integer) and not configs:
                stages.append(int(written.evaluated_value))
            elif configs and len(from_config) == len(configs):
                stages.extend(from_config)
            elif written is None and not configs and not any(a.keyword is None for a in plugin.args):
                stages.append(2)  # accelerate's default (ACCELERATE_DEEPSPEED_ZERO_STAGE unset)
            else:
                return None
        return stages, _plugin_place(context, plugins[0]), ()
    runs = accelerate_runs(context)
    if not runs:
        return None
    found = [run.zero_stage for run in runs]
    if any(not isinstance(stage, int) for stage in found):
        return None
    last = runs[0].via[-1]
    stages = [s for s in found if isinstance(s, int)]
    return stages, f"{last.path}:{last.line}", tuple(r for run in runs for r in run.via)


def accelerate_accumulation(context: ScriptContext) -> tuple[int, str, tuple[Related, ...]] | None:
    """The gradient accumulation steps the engine accelerate builds runs with, when every way the script runs
    DeepSpeed through accelerate gives a number above 1 (`configured_accumulation`: the fewest); with where that is.
    None otherwise."""
    found = configured_accumulation(context)
    if found is None or min(found[0]) < 2:
        return None
    steps, where, related = found
    return min(steps), where, related


def configured_accumulation(context: ScriptContext) -> tuple[list[int], str, tuple[Related, ...]] | None:
    """The gradient accumulation steps each way the script runs DeepSpeed through accelerate writes into the
    engine's config: its own `DeepSpeedPlugin(gradient_accumulation_steps=N)` (or the `gradient_accumulation_steps`
    of the config its `hf_ds_config` names), or the config file every `accelerate launch` of it names; with where
    that is. None unless every one is a number ("auto", a YAML's own setting, not known)."""
    return _numbers(_accumulations(context, filled=False), None)


def engine_accumulation(context: ScriptContext) -> tuple[list[int], str, tuple[Related, ...]] | None:
    """The gradient accumulation steps the engine accelerate builds runs with, for each way the script runs DeepSpeed
    through accelerate, as accelerate fills them: a config file without the key gets 1 (`DeepSpeedPlugin`, accelerate
    1.16 `dataclasses.py`), and `"auto"`, a YAML without the setting or a plugin without the keyword get the
    Accelerator's (1 unless the script's `Accelerator(...)` asks another: then not known); with where that is. None
    when one is not known."""
    return _numbers(_accumulations(context, filled=True), _accelerator_accumulation(context))


def _accumulations(context: ScriptContext, filled: bool) -> tuple[list[object], str, tuple[Related, ...]] | None:
    """Each way's accumulation as written (`filled`: as accelerate fills what is not: a config file without the key
    1, no number at all "auto"), with where that is; None when no way, or a plugin not handed on."""
    plugins = _plugins(context)
    found: list[object] = []
    related: tuple[Related, ...] = ()
    if plugins:
        if not _plugin_handed_on(context):
            return None
        for plugin in plugins:
            given = _keyword(plugin, "gradient_accumulation_steps")
            found.append(given.evaluated_value if isinstance(given, cst.Integer) else None if given else _FROM_CONFIG)
        if _FROM_CONFIG in found:
            configs = [resolve_config_expression(context, e) for e in trainer_expressions(context, ("hf_ds_config",))]
            found = [f for f in found if f is not _FROM_CONFIG]
            absent = 1 if filled else None
            found += [c.values.get("gradient_accumulation_steps", absent) if c is not None else None for c in configs]
            found = found or ["auto" if filled else None]
        where = _plugin_place(context, plugins[0])
    else:
        runs = accelerate_runs(context)
        if not runs:
            return None
        # a config file's number, or the inline one `accelerate launch` also exports for `Accelerator()` to read
        # (ACCELERATE_GRADIENT_ACCUMULATION_STEPS); none written: "auto", filled with the Accelerator's
        found = [
            run.config.values.get("gradient_accumulation_steps", 1 if filled else None)
            if run.config is not None
            else _inline(run.accumulation) or ("auto" if filled else None)
            for run in runs
        ]
        last = runs[0].via[-1]
        where, related = f"{last.path}:{last.line}", tuple(r for run in runs for r in run.via)
    return found, where, related


def _numbers(
    found: tuple[list[object], str, tuple[Related, ...]] | None, auto: int | None
) -> tuple[list[int], str, tuple[Related, ...]] | None:
    """The accumulations when every one is a number (`"auto"` read as `auto`); None otherwise."""
    if found is None:
        return None
    values, where, related = found
    steps = [auto if value == "auto" else value for value in values]
    numbers = [value for value in steps if isinstance(value, int) and not isinstance(value, bool)]
    if not values or len(numbers) != len(values):
        return None
    return numbers, where, related


_FROM_CONFIG = object()  # a plugin that leaves the accumulation to the config its `hf_ds_config` names


def _accelerator_accumulation(context: ScriptContext) -> int | None:
    """The accumulation the script's `Accelerator(...)` asks: 1 when none asks (accelerate's default), None when one
    passes `gradient_accumulation_steps` or a plugin (or the file makes none it can be read from)."""
    for call in module_index(context.module).calls:
        name = dotted_name(call.func)
        if name is None or name.rsplit(".", 1)[-1] != "Accelerator":
            continue
        for argument in call.args:
            if argument.keyword is None and argument.star:
                return None
            if argument.keyword is not None and argument.keyword.value.startswith("gradient_accumulation"):
                return None
    return 1


def accelerate_config_files(context: ScriptContext) -> tuple[list[ResolvedConfig], tuple[Related, ...]] | None:
    """The DeepSpeed config file of every way the script runs DeepSpeed through accelerate: the `hf_ds_config` of
    each of its own `DeepSpeedPlugin`s, or the file every `accelerate launch` of it names; with the launches. None
    when one way has no file (a plugin's or a YAML's own settings) or one cannot be read."""
    plugins = _plugins(context)
    if plugins:
        if any(_keyword(plugin, "hf_ds_config") is None for plugin in plugins) or not _plugin_handed_on(context):
            return None
        configs = [resolve_config_expression(context, e) for e in trainer_expressions(context, ("hf_ds_config",))]
        related: tuple[Related, ...] = ()
    else:
        runs = accelerate_runs(context) or []
        configs = [run.config for run in runs]
        related = tuple(r for run in runs for r in run.via)
    known = [config for config in configs if config is not None]
    return (known, related) if known and len(known) == len(configs) else None


def _inline(written: str | None) -> int | None:
    return int(written) if written is not None and written.isdigit() else None


def accelerate_clipping(context: ScriptContext) -> tuple[float, str, tuple[Related, ...]] | None:
    """The `gradient_clipping` the engine accelerate builds clips at, when every way the script runs DeepSpeed
    through accelerate gives the same known value, with why and where that is decided. Its own `DeepSpeedPlugin`
    with an `hf_ds_config` file: the file's value, its `"auto"` filled with the plugin's `gradient_clipping=` or,
    without one, the 1.0 that `prepare` writes (`_prepare_deepspeed`'s `config_kwargs`); without a file: the
    plugin's `gradient_clipping=`, or 1.0 (its own config holds `"auto"`). A config file every `accelerate
    launch` of it names: its literal value (`"auto"` may be filled from the launch's `--gradient_clipping`: not
    known). A config with no such key: DeepSpeed's default (1.0 since 0.19.3, 0.0 before). An accelerate YAML's
    inline settings: its `gradient_clipping` (or the launch's `--gradient_clipping`), else 1.0. None otherwise."""
    default = 0.0 if context.deepspeed_version < CLIPPING_BY_DEFAULT_SINCE else 1.0
    found: list[tuple[float | None, str]] = []
    related: tuple[Related, ...] = ()
    plugins = _plugins(context)
    if plugins:
        plugin_at = _plugin_place(context, plugins[0])
        configs = [resolve_config_expression(context, e) for e in trainer_expressions(context, ("hf_ds_config",))]
        for plugin in plugins:
            given = _keyword(plugin, "gradient_clipping")
            keyword = _number(literal_value(given)) if given is not None else 1.0  # no keyword: "auto", then 1.0
            if configs:  # the file's value; its "auto" filled with the keyword's (`fill_match`)
                found += [_engine_clipping(c, default, keyword) if c else (None, "") for c in configs]
            elif keyword:  # the plugin's own config: the keyword's value, or the "auto" accelerate fills with 1.0
                found.append((keyword, plugin_at if given is not None else f'{plugin_at}, for its "auto"'))
            else:  # a false (or unknown) value leaves the key out
                found.append((default if keyword is not None else None, f"{plugin_at}: DeepSpeed's default"))
    else:
        runs = accelerate_runs(context)
        if not runs:
            return None
        found = [_engine_clipping(run.config, default, None) if run.config else _inline_clipping(run) for run in runs]
        related = tuple(r for run in runs for r in run.via)
    values = {value for value, _ in found}
    if not found or None in values or len(values) != 1:
        return None
    value, why = found[0]
    assert value is not None
    return value, why, related


def _engine_clipping(config: ResolvedConfig, default: float, auto: float | None) -> tuple[float | None, str]:
    """The value a config file gives (`auto`: what fills its `"auto"`), and why."""
    name = os.path.basename(str(config.path)) if config.path is not None else "the config"
    written = config.get("gradient_clipping")
    if written is None:
        return default, f"{name} sets none: DeepSpeed's default"
    if written == "auto":
        return auto, f'{name}\'s "auto", filled by accelerate'
    return _number(written), name


def _inline_clipping(run: AccelerateRun) -> tuple[float | None, str]:
    """An accelerate YAML's inline DeepSpeed settings: its `gradient_clipping` (or the launch's flag); without
    one the plugin's `"auto"`, which `prepare` fills with 1.0."""
    name = os.path.basename(run.via[-1].path)
    if run.stage is None:
        return None, ""
    if run.clipping is None:
        return 1.0, f"{name} sets none: accelerate's 1.0"
    try:
        return float(run.clipping), f"{name}'s gradient_clipping"
    except ValueError:
        return None, ""


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _plugin_place(context: ScriptContext, plugin: cst.Call) -> str:
    """How a finding names the script's own plugin as where accelerate's DeepSpeed settings are decided."""
    return f"DeepSpeedPlugin at line {context.span(plugin)[0].line}"


def _keyword(plugin: cst.Call, name: str) -> cst.BaseExpression | None:
    """The value a `DeepSpeedPlugin(...)` call gives keyword `name`, written as a keyword."""
    return next((a.value for a in plugin.args if a.keyword is not None and a.keyword.value == name), None)


def _plugin_handed_on(context: ScriptContext) -> bool:
    """An `Accelerator(...)` of the script is given `deepspeed_plugin=` (not the literal None): a plugin built and
    then dropped (`plugin = None`) runs nothing."""
    for call in module_index(context.module).calls:
        name = dotted_name(call.func)
        if name is not None and name.rsplit(".", 1)[-1] == "Accelerator":
            given = _keyword(call, "deepspeed_plugin")
            if given is not None and not (isinstance(given, cst.Name) and given.value == "None"):
                return True
    return False


def _plugins(context: ScriptContext) -> list[cst.Call]:
    """The script's `DeepSpeedPlugin(...)` calls, under any import path."""
    return [
        call
        for call in module_index(context.module).calls
        if (name := dotted_name(call.func)) is not None and name.rsplit(".", 1)[-1] == "DeepSpeedPlugin"
    ]

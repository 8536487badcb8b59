"""The rule catalog: every rule's code, and what each script rule needs to fire (`ScriptRule.needs()`: the byte
strings a script must contain, an engine, ...), as plain data. Settings select codes and the prefilter settles a
file that no rule can touch from this table, without importing the rule modules (and libcst) at all.

It mirrors the registry (`dslint.framework.registry.all_rules`), which stays the truth: `tests/test_catalog.py`
fails, naming the line to add, when a rule is added, removed or changes its needs without this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from dslint.model.library import DEEPSPEED_PLUGIN_CALLS, TORCH_CLIP_FUNCTIONS, TRL_TRAINING_ARGUMENTS

# Every rule code, by family (`dslint.rules` holds one module a code)
CODES: tuple[str, ...] = tuple(
    """
    DSL001 DSL002 DSL010
    DSL101 DSL102 DSL103 DSL104
    DSL201 DSL202 DSL203 DSL204 DSL205 DSL206 DSL207 DSL208 DSL209 DSL210 DSL211 DSL212
    DSL214
    DSL301 DSL302 DSL303 DSL304 DSL305 DSL306 DSL307 DSL308 DSL309 DSL310 DSL311
    DSL400 DSL401 DSL402 DSL403 DSL404 DSL405 DSL406 DSL407 DSL408 DSL409 DSL410 DSL411
    DSL412 DSL413 DSL414 DSL416 DSL417 DSL418 DSL419 DSL420 DSL422 DSL423 DSL424 DSL425
    DSL426 DSL427 DSL428 DSL430 DSL431 DSL433 DSL434 DSL435 DSL436 DSL437 DSL438 DSL439
    DSL440 DSL441 DSL442 DSL443 DSL444 DSL445 DSL446 DSL447 DSL448 DSL449 DSL450 DSL451
    DSL452 DSL453 DSL454 DSL455 DSL456 DSL457 DSL458 DSL459 DSL460 DSL461 DSL462 DSL463
    DSL464 DSL465 DSL466 DSL467 DSL468 DSL469 DSL470 DSL471 DSL472 DSL473 DSL474 DSL475
    DSL476 DSL477 DSL478 DSL479
    """.split()  # noqa: SIM905 (one line a family, not one a code)
)


@dataclass(frozen=True)
class Shape:
    """A call at which a rule can report, as CPython's tree shows it (`dslint.lint.parse_guard.CodeFacts` reads
    the calls; `dslint.lint.activation` compares). Any one of `methods` or `calls` does:

    methods: a call `X.m(...)` whose method m is one of these; calls: a call that resolves through the file's
    imports to one of these dotted names (`torch.save`); one_rank: the `methods` call sits in the body of an `if`
    whose test names a rank or the main process, or of a `with X.main_process_first()` (an over-approximation of
    `dslint.script.one_rank`); words: byte strings among the code's words as well; engine: this shape counts only
    where an engine may be; configured: only where a DeepSpeed config may reach a Hugging Face reader of the file
    (a call's `deepspeed=` or `hf_ds_config=`, a `DeepSpeedPlugin`, a launch passing `--deepspeed` or `accelerate
    launch`: what `project.config_link`'s trainer configs and accelerate runs read); project_saves: instead, a
    call the project index says reaches accelerate's `save_state` (`ProjectFacts.state_saving_calls`); project_moves:
    instead, a call whose argument the project function called moves to a GPU (`ProjectFacts.moving_calls`);
    project_casts: instead, a call whose argument the project function called casts to 16 bits
    (`ProjectFacts.casting_calls`); stored:
    instead of a call, an assignment to an attribute of one of these names (`args.deepspeed = ...`); stored_keys:
    instead of a call, an assignment to a subscript of one of these string keys (`os.environ["RANK"] = ...`)."""

    methods: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    one_rank: bool = False
    words: tuple[bytes, ...] = ()
    engine: bool = False
    configured: bool = False
    project_saves: bool = False
    project_moves: bool = False
    project_casts: bool = False
    stored: tuple[str, ...] = ()
    stored_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Needs:
    """What a script rule needs to possibly fire, as data (`ScriptRule.needs()`); `dslint.lint.activation` answers
    it at each level (the text, CPython's tree, the script's facts).

    tokens: byte strings all present in the file (once parsed: among the code's words, not only in comments);
    alternatives: other sets of byte strings, all of any one of which does as well as `tokens` (transformers'
    `HfDeepSpeedConfig` hands DeepSpeed a config in a file that never writes the lowercase word `deepspeed`);
    engine: a training engine, from this file's `deepspeed.initialize` or brought by the project index;
    inference_engine: the rule also runs wherever `deepspeed.init_inference` is called (its tokens, or an engine,
    then not needed); zero_source: the file hands DeepSpeed a ZeRO config itself (`deepspeed.initialize`,
    `HfDeepSpeedConfig`, a `*TrainingArguments`), or `accelerate launch` starts it with a DeepSpeed config."""

    tokens: tuple[bytes, ...]
    engine: bool = True
    inference_engine: bool = False
    zero_source: bool = False
    alternatives: tuple[tuple[bytes, ...], ...] = ()
    # The project starts the script as several processes a node, or one a GPU (a launch of it says so:
    # `world_size.py`).
    several_processes: bool = False
    # The rule also runs, engine and tokens or not, where the project index finds a `torch.load` of a file that
    # holds GPU tensors (`ProjectFacts.gpu_loads`).
    gpu_loads: bool = False
    # Where the code is read (CPython's tree), the rule fires only at one of these calls (none: no such test).
    shapes: tuple[Shape, ...] = ()
    # A DeepSpeed config may reach a Hugging Face reader of the file (what `Shape.configured` asks, for the file).
    hf_configured: bool = False
    # The rule also runs, engine and tokens or not, where the project index finds a parameter of the file's
    # functions that some call passes the engine and others do not (`ProjectFacts.partly_engine`).
    partly_engine: bool = False
    # Token sets with all of any one of which the rule also runs with no engine in sight (a Hugging Face Trainer
    # builds its engine itself).
    without_engine: tuple[tuple[bytes, ...], ...] = ()
    # The rule also runs, tokens or not, where the project index finds a call of a project function returning a
    # plain DataLoader in a file that back-propagates through an engine (`ProjectFacts.returned_loaders`).
    returned_loaders: bool = False
    # The project index finds a call here of a project function loading a pretrained model
    # (`ProjectFacts.pretrained_loads`): it does as well as a token set.
    pretrained_loads: bool = False
    # a call here hands an object to a project function torch-saving its state (`ProjectFacts.state_saving_helpers`)
    state_saving_helpers: bool = False

    def token_sets(self) -> tuple[tuple[bytes, ...], ...]:
        return (self.tokens, *self.alternatives, *self.without_engine)


_CLIP_CALLS = tuple(sorted(TORCH_CLIP_FUNCTIONS))
_ACCELERATE_CLIP = Shape(methods=("clip_grad_norm_",), configured=True)  # accelerate's, beside a DeepSpeed config
_ACCELERATOR, _PREPARE = (
    Shape(calls=("accelerate.Accelerator",), configured=True),
    Shape(methods=("prepare",), configured=True),
)

_PLUGIN_CALLS = tuple(sorted(DEEPSPEED_PLUGIN_CALLS))
_CAST_METHODS = ("bfloat16", "half", "to")
_MOVE_METHODS = ("cuda", "to")
_PLACEMENT_METHODS = ("bfloat16", "cuda", "half", "to")

# Script rules -> what each needs (DSL001, DSL002 and DSL010 are driver findings, not traversals).
SCRIPT_NEEDS: dict[str, Needs] = {
    # a move before this file's initialize, or before `accelerator.prepare` where DeepSpeed may run through accelerate
    "DSL101": Needs(
        (b"deepspeed", b"initialize"),
        engine=False,
        inference_engine=True,
        alternatives=(
            (b"prepare", b"cuda", b"Accelerator"),
            (b"prepare", b"to", b"Accelerator"),
            (b"Trainer", b"cuda"),
            (b"Trainer", b"to"),
        ),
        shapes=(
            Shape(methods=_MOVE_METHODS, engine=True),
            Shape(project_moves=True, engine=True),
            Shape(methods=_MOVE_METHODS, words=(b"Accelerator",), configured=True),
            Shape(methods=_MOVE_METHODS, words=(b"Trainer",), configured=True),
            Shape(calls=("deepspeed.init_inference",)),
        ),
    ),
    # a placement call on the engine or its module, on what prepare returns under DeepSpeed, on an inference engine
    "DSL102": Needs(
        (b"deepspeed", b"initialize"),
        inference_engine=True,
        partly_engine=True,
        without_engine=((b"prepare", b"Accelerator"),),
        shapes=(
            Shape(methods=_PLACEMENT_METHODS, engine=True),
            Shape(methods=_PLACEMENT_METHODS, words=(b"Accelerator",), configured=True),
            Shape(methods=_PLACEMENT_METHODS, words=(b"init_inference",)),
        ),
    ),
    "DSL103": Needs((b"deepspeed", b"initialize"), inference_engine=True),
    # a cast before this file's initialize, or before `accelerator.prepare` where DeepSpeed may run through accelerate
    "DSL104": Needs(
        (b"deepspeed", b"initialize"),
        engine=False,
        alternatives=((b"prepare", b"half", b"Accelerator"), (b"prepare", b"float16", b"Accelerator")),
        shapes=(
            Shape(methods=_CAST_METHODS, engine=True),
            Shape(methods=_CAST_METHODS, words=(b"Accelerator",), configured=True),
            Shape(project_casts=True, engine=True),
        ),
    ),
    "DSL201": Needs((b"deepspeed", b"initialize")),
    "DSL202": Needs((b"deepspeed", b"initialize"), gpu_loads=True),
    "DSL203": Needs((b"deepspeed", b"initialize")),
    "DSL204": Needs(
        (b"deepspeed", b"initialize", b"state_dict"),
        engine=False,
        state_saving_helpers=True,
        alternatives=(
            (b"Trainer", b"state_dict"),
            (b"Trainer", b"save_pretrained"),
            (b"unwrap_model", b"state_dict"),
            (b"unwrap_model", b"save_pretrained"),
        ),
        shapes=(
            Shape(calls=("torch.save",), engine=True),
            Shape(project_saves=True, engine=True),
            Shape(methods=("state_dict", "save_pretrained"), words=(b"Trainer",), configured=True),
            Shape(methods=("state_dict", "save_pretrained"), words=(b"unwrap_model",), configured=True),
        ),
    ),
    "DSL205": Needs((b"deepspeed", b"initialize")),
    "DSL206": Needs((b"deepspeed", b"initialize")),
    "DSL207": Needs(
        (b"deepspeed", b"from_pretrained", b"device_map"),
        engine=False,
        zero_source=True,
        alternatives=(
            (b"HfDeepSpeedConfig", b"from_pretrained", b"device_map"),
            (b"prepare", b"from_pretrained", b"device_map"),
        ),
    ),
    "DSL208": Needs(
        (b"deepspeed", b"from_pretrained"),
        engine=False,
        zero_source=True,
        alternatives=(
            (b"HfDeepSpeedConfig",),
            (b"deepspeed", b"from_config"),
            (b"Accelerator", b"from_pretrained"),
            (b"Accelerator", b"from_config"),
            (b"from_pretrained", b"TrainingArguments"),
            (b"from_config", b"TrainingArguments"),
            *((b"from_pretrained", name.encode()) for name in sorted(TRL_TRAINING_ARGUMENTS)),  # TRL's configs
        ),
        pretrained_loads=True,
    ),
    "DSL209": Needs((b"deepspeed", b"initialize")),
    "DSL211": Needs(
        (b"deepspeed", b"initialize", b"state_dict"),
        without_engine=((b"state_dict", b"prepare", b"Accelerator"),),
        state_saving_helpers=True,
        shapes=(
            Shape(calls=("torch.save",), engine=True),
            Shape(project_saves=True, engine=True),
            Shape(calls=("torch.save",), words=(b"prepare", b"Accelerator")),
        ),
    ),
    "DSL212": Needs(
        (b"deepspeed", b"data"),
        without_engine=tuple(
            (getter, b"data", source)
            for getter in (b"get_input_embeddings", b"get_output_embeddings")
            for source in (b"TrainingArguments", b"HfArgumentParser", b"HfDeepSpeedConfig")
        ),
        shapes=(
            Shape(methods=("get_input_embeddings", "get_output_embeddings")),
            Shape(methods=("named_parameters", "parameters"), engine=True),
        ),
    ),
    "DSL214": Needs((b"DataParallel",)),
    # this file's engine's output, or, where accelerate runs DeepSpeed, the output of the model `prepare` returned
    "DSL301": Needs(
        (b"deepspeed", b"initialize"),
        engine=False,
        alternatives=((b"backward", b"prepare", b"Accelerator"),),
        shapes=(
            Shape(methods=("backward",), engine=True),
            Shape(methods=("backward",), words=(b"prepare", b"Accelerator"), configured=True),
        ),
        partly_engine=True,
    ),
    "DSL302": Needs(
        (b"deepspeed", b"initialize"), partly_engine=True, without_engine=((b"GradScaler", b"prepare", b"Accelerator"),)
    ),
    "DSL303": Needs((b"deepspeed", b"initialize")),
    # a division before this file's engine's backward, or `accelerator.backward` where accelerate runs DeepSpeed
    "DSL304": Needs(
        (b"deepspeed", b"initialize"),
        engine=False,
        alternatives=((b"backward", b"Accelerator"),),
        shapes=(
            Shape(methods=("backward",), engine=True),
            Shape(methods=("backward",), words=(b"Accelerator",), configured=True),
        ),
    ),
    # a clip beside this file's engine, or after `accelerator.backward` where DeepSpeed may run through accelerate
    "DSL305": Needs(
        (b"deepspeed", b"initialize"),
        engine=False,
        alternatives=((b"clip_grad_norm", b"backward", b"prepare"),),
        shapes=(
            Shape(calls=_CLIP_CALLS, engine=True),
            Shape(calls=_CLIP_CALLS, words=(b"Accelerator",), configured=True),
        ),
    ),
    "DSL306": Needs(
        (b"deepspeed", b"initialize"),
        partly_engine=True,
        without_engine=((b"autocast", b"Trainer"), (b"autocast", b"prepare", b"Accelerator")),
    ),
    "DSL307": Needs((b"deepspeed", b"initialize")),
    "DSL308": Needs((b"deepspeed", b"initialize")),
    "DSL210": Needs(
        (b"deepspeed", b"initialize", b"save"),
        engine=False,
        alternatives=(
            (b"save_model", b"Trainer"),
            (b"save_model", b"Accelerator"),
            (b"get_state_dict", b"Accelerator"),
        ),
        shapes=(
            Shape(methods=("save_16bit_model",), engine=True),
            Shape(methods=("save_model", "get_state_dict"), configured=True),
        ),
    ),
    # ZeRO-3 reaches the file through its own initialize or a Trainer's arguments: never a file without either
    "DSL426": Needs(
        (b"generate", b"deepspeed", b"rank"),
        engine=False,
        alternatives=tuple(
            (generation, source, test)
            for generation in (b"generate", b"pipeline")
            for source in (b"deepspeed", b"TrainingArguments", b"HfArgumentParser")
            for test in (b"rank", b"main_process", b"process_zero", b"should_save")
        )[1:],
        shapes=(
            Shape(methods=("generate",), one_rank=True, engine=True),
            Shape(methods=("generate",), one_rank=True, configured=True),
            Shape(calls=("transformers.pipeline",), engine=True),  # a pipeline over the model, in a one-rank block
            Shape(calls=("transformers.pipeline",), configured=True),
        ),
    ),
    "DSL425": Needs((b"from_pretrained", b"device_map"), engine=False, several_processes=True),
    # a save every rank must join (the engine's, accelerate's under DeepSpeed, the ZeRO-3 gathering ones, or a call
    # handing the accelerator to a helper that saves its state), under a one-rank test (`script/one_rank.py`)
    "DSL428": Needs(
        (b"save_checkpoint", b"rank"),
        engine=False,
        alternatives=(
            *[
                (save, test)
                for save in (b"save_checkpoint", b"save_16bit_model", b"save_state", b"save_model", b"get_state_dict")
                for test in (b"rank", b"main_process", b"process_zero", b"should_save")
            ][1:],
            (b"accelerator", b"main_process"),
            # a project helper that saves, under a rank test (`ProjectFacts.engine_saving_calls`)
            *((test,) for test in (b"rank", b"main_process", b"process_zero")),
            # Lightning Fabric's save under its DeepSpeed strategy (`script/fabric.py`)
            (b"Fabric", b"is_global_zero"),
        ),
        shapes=(
            Shape(methods=("save_checkpoint", "save_16bit_model"), one_rank=True, engine=True),
            Shape(methods=("save_state", "save_model", "get_state_dict"), one_rank=True, configured=True),
            Shape(project_saves=True),
            Shape(methods=("save",), one_rank=True, words=(b"Fabric",)),
            Shape(methods=("save_state", "save_model", "get_state_dict"), one_rank=True, words=(b"Accelerator",)),
        ),
    ),
    "DSL431": Needs(
        (b"deepspeed", b"initialize", b"optimizer"),
        # a Lightning module's optimizer under an offloading strategy of Lightning's (which calls initialize)
        without_engine=((b"configure_optimizers", b"_offload"), (b"configure_optimizers", b"offload_optimizer")),
    ),
    # a rank variable assigned (`os.environ["RANK"] = "0"`) where a launch starts several processes
    "DSL433": Needs(
        (b"environ", b"RANK"),
        engine=False,
        alternatives=((b"environ", b"WORLD_SIZE"),),
        several_processes=True,
        shapes=(Shape(stored_keys=("LOCAL_RANK", "RANK", "WORLD_SIZE")),),
    ),
    # a Trainer's arguments with a config: written in the file, or parsed from a launch's command line
    "DSL435": Needs(
        (b"TrainingArguments", b"deepspeed"),
        engine=False,
        alternatives=(
            (b"HfArgumentParser",),
            (b"TrainingArguments",),
            *((name.encode(),) for name in sorted(TRL_TRAINING_ARGUMENTS)),
        ),
        hf_configured=True,
    ),
    "DSL436": Needs((b"deepspeed", b"initialize", b"grad")),
    "DSL437": Needs((b"deepspeed", b"initialize", b"lr_scheduler", b"len")),
    "DSL440": Needs((b"deepspeed", b"Train"), engine=False, shapes=(Shape(stored=("deepspeed",)),)),
    "DSL441": Needs((b"deepspeed", b"numel"), alternatives=((b"deepspeed", b"nelement"),)),
    "DSL445": Needs(
        (b"DataLoader", b"backward"), without_engine=((b"DataLoader", b"get_train_dataloader"),), returned_loaders=True
    ),
    "DSL447": Needs((b"deepspeed",)),
    "DSL448": Needs(
        (b"Trainer", b"rank"),
        engine=False,
        alternatives=((b"Trainer", b"main_process"), (b"Trainer", b"process_zero")),
        shapes=(Shape(methods=("evaluate", "predict", "train"), one_rank=True, configured=True),),
    ),
    "DSL446": Needs(
        (b"deepspeed", b"rank"), alternatives=((b"deepspeed", b"main_process"), (b"deepspeed", b"process_zero"))
    ),
    "DSL451": Needs(
        (b"deepspeed", b"rank"), alternatives=((b"deepspeed", b"main_process"), (b"deepspeed", b"process_zero"))
    ),
    "DSL452": Needs((b"deepspeed", b"initialize")),
    # a Trainer's arguments naming a schedule, with a config: in the file, or parsed from a launch's command line
    "DSL458": Needs((b"DataParallel",)),
    "DSL454": Needs(
        (b"lr_scheduler_type", b"deepspeed"),
        engine=False,
        # a parser of the Trainer's arguments: transformers' own, or a project's parser class handed them
        alternatives=((b"HfArgumentParser",), (b"Parser", b"TrainingArguments")),
        hf_configured=True,
    ),
    # a Trainer's arguments beside a config with no key for them: in the file, or parsed from a launch's command line
    "DSL460": Needs(
        (b"TrainingArguments", b"deepspeed"),
        engine=False,
        # TRL's trainer configs by name (`Config` alone is in nearly every file of a library's source); without
        # `deepspeed` for a config an accelerate launch gives arguments that name none
        alternatives=(
            (b"HfArgumentParser",),
            (b"TrainingArguments",),
            *((name.encode(),) for name in sorted(TRL_TRAINING_ARGUMENTS)),
        ),
        hf_configured=True,
    ),
    "DSL309": Needs((b"deepspeed", b"initialize"), partly_engine=True),
    "DSL310": Needs((b"deepspeed", b"initialize"), partly_engine=True),
    # `optimizer.step()` after `accelerator.backward` where DeepSpeed may run through accelerate
    "DSL311": Needs(
        (b"backward", b"prepare", b"step"),
        engine=False,
        shapes=(Shape(methods=("step",), words=(b"Accelerator",), configured=True),),
    ),
    "DSL466": Needs((b"deepspeed", b"initialize", b"load_checkpoint", b"save_latest")),
    "DSL467": Needs((b"deepspeed", b"initialize", b"Trainer")),
    "DSL472": Needs((b"deepspeed", b"initialize", b"DataLoader", b"batch_size")),
    "DSL471": Needs((b"DeepSpeedStrategy", b"config"), engine=False, alternatives=((b"DeepSpeedPlugin", b"config"),)),
    "DSL475": Needs((b"DeepSpeedPlugin", b"zero_stage"), engine=False, shapes=(Shape(calls=_PLUGIN_CALLS),)),
    "DSL476": Needs((b"clip_grad_norm_",), engine=False, shapes=(_ACCELERATE_CLIP,)),
    "DSL477": Needs((b"Accelerator", b"gradient_accumulation_steps"), engine=False, shapes=(_ACCELERATOR,)),
    "DSL478": Needs((b"prepare", b"Accelerator"), engine=False, shapes=(_PREPARE,)),
}


# The driver findings of a script that does not parse (DSL001) and of one nested too deeply to parse (DSL002): the
# script driver asks whether they are selected for every file it reads, before it imports any rule.
SYNTAX_ERROR_CODE = "DSL001"
TOO_DEEP_CODE = "DSL002"

# Config rules -> their module under dslint/rules/, in code order (the registry's): the script driver's text and code
# levels decide from these codes and `SCRIPT_NEEDS` alone, and a config file's lint imports only these modules,
# whose rules build on `framework/rule_base.py`: linting configs never imports libcst (nor the script rules).
CONFIG_RULE_MODULES: dict[str, str] = {
    "DSL400": "config_parse_error", "DSL401": "unknown_top_level_config_key", "DSL402": "removed_config_key",
    "DSL403": "unknown_config_section_key", "DSL404": "invalid_config_value", "DSL405": "auto_config_value",
    "DSL406": "missing_batch_size", "DSL407": "unsatisfiable_batch_size", "DSL408": "fp16_and_bf16_enabled",
    "DSL409": "offload_param_below_stage_3", "DSL410": "partial_offload_below_stage_3",
    "DSL411": "zero_stage_missing", "DSL412": "ignored_parameters_config_key", "DSL413": "fixed_loss_scale",
    "DSL414": "duplicate_config_key", "DSL416": "config_key_needs_newer_deepspeed",
    "DSL420": "section_key_ignored_by_release", "DSL439": "optimizer_setting_outside_params",
    "DSL455": "activation_checkpointing_never_configured", "DSL457": "config_section_overridden_by_client",
    "DSL459": "trainer_optimizer_without_lr", "DSL461": "old_key_beside_its_replacement",
    "DSL462": "scheduler_param_not_taken", "DSL464": "auto_value_nothing_fills",
}  # fmt: skip
CONFIG_CODES: tuple[str, ...] = tuple(CONFIG_RULE_MODULES)


# Launch rules -> their module under dslint/rules/: a run's launch findings import only these (the registry imports
# every rule module, and libcst with them).
LAUNCH_RULE_MODULES: dict[str, str] = {
    "DSL407": "unsatisfiable_batch_size",
    "DSL422": "launch_command_cut_by_comment",
    "DSL423": "launched_config_not_found",
    "DSL424": "launched_config_never_read",
    "DSL427": "launcher_options_refused_together",
    "DSL430": "interpreter_given_to_deepspeed",
    "DSL434": "local_rank_refused",
    "DSL438": "launch_continuation_broken",
    "DSL442": "deepspeed_launch_without_trainer_config",
    "DSL443": "deepspeed_switch_given_a_path",
    "DSL444": "launched_script_not_found",
    "DSL449": "visible_devices_ignored",
    "DSL450": "option_unknown_to_script",
    "DSL453": "required_option_not_given",
    "DSL456": "initialize_config_not_given",
    "DSL465": "accelerate_deepspeed_never_on",
    "DSL468": "config_given_twice",
    "DSL469": "srun_launcher_layout",
    "DSL470": "master_port_not_passed",
    "DSL473": "visible_devices_not_exported",
    "DSL474": "accelerate_precision_contradicts_config",
    "DSL479": "deepspeed_config_as_accelerate_config",
}

# -- the rule lifecycle -------------------------------------------------------------------------------------------
#
# As ruff's: a rule is `stable` unless listed here. A `preview` rule runs only under `preview = true` (or
# `--preview`); a `deprecated` rule runs only when a selector names its exact code, with a warning, and goes in a
# later release. A code that is gone (renamed, or split into several) is not a rule at all: it is a redirect.
PREVIEW = "preview"
STABLE = "stable"
DEPRECATED = "deprecated"
LIFECYCLE: dict[str, str] = {}


def lifecycle(code: str) -> str:
    return LIFECYCLE.get(code, STABLE)


@dataclass(frozen=True)
class Redirect:
    """An old code and the codes that now cover what it used to (ruff's `rule_redirects`).

    `to` may hold the old code itself: a rule split in two keeps its code for the common case and gives the rest
    a new one. Written as a selector (`--select`, `--ignore`, `[tool.dslint]`, `per-file-ignores`, a noqa
    comment), the old code stands for all of `to`, with a deprecation warning, until the settings name one of
    the new codes themselves (then they have moved on, and a split code means only itself)."""

    old: str
    to: tuple[str, ...]
    why: str


REDIRECTS: dict[str, Redirect] = {
    r.old: r
    for r in (
        Redirect("DSL101", ("DSL101", "DSL104"), "casts of the model before initialize are DSL104 now"),
        Redirect(
            "DSL302",
            ("DSL302", "DSL309", "DSL310"),
            "a redundant optimizer.zero_grad() is DSL309 and a scheduler stepped beside the engine DSL310 now",
        ),
        Redirect("DSL415", ("DSL210",), "save_16bit_model without the ZeRO-3 gather joined the checkpoint rules"),
    )
}


def redirected(selector: str) -> Redirect | None:
    """The redirect an exact selector (a whole code, not a prefix) goes through, if any."""
    return REDIRECTS.get(selector)


def covers(selector: str, code: str) -> bool:
    """Whether a selector written by a user (a code prefix, or an old code) covers `code`: the prefix starts it,
    or `selector` is an old code redirected to it."""
    if code.startswith(selector):
        return True
    redirect = REDIRECTS.get(selector)
    return redirect is not None and code in redirect.to

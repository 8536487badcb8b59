"""What the project index knows about one file, as plain data handed to that file's script facts.

The project index (`dslint.project`) reads the whole project once: launchers, configs, and how engines travel
between functions and modules. Script facts never import it; they receive a `ProjectFacts` for their file (or
None when linting one file alone) and ask it:
- which parameters of which functions receive an engine created elsewhere (`train(engine, ...)`,
  `save_hf_format(engine, ...)` in another module), with the call that passes it;
- which helpers return initialize's results (`engine, opt, sched = setup_engine(args, model)`);
- the configs the launchers start this script with (`deepspeed train.py --deepspeed_config ds_z3.json`,
  `accelerate launch --config_file acc.yaml train.py`, `--zero_stage 3`).
Every fact carries where it comes from (`Related`), so a finding that depends on it can say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dslint.diagnostics import Related
from dslint.model import library
from dslint.model.conditions import Guard
from dslint.model.engine import EngineConfig

# The roles of deepspeed.initialize's results, in its order (the project model's library table).
ENGINE = library.ENGINE
ENGINE_MODULE = library.ENGINE_MODULE
OPTIMIZER = library.OPTIMIZER
DATALOADER = library.DATALOADER
SCHEDULER = library.SCHEDULER
RESULT_ORDER = library.RESULT_ORDER


@dataclass(frozen=True)
class ParameterFact:
    """A parameter that receives an engine (or `engine.module`) at every call the index saw; also what an
    expression reads from an instance's attribute (`ProjectFacts.values_at`)."""

    role: str  # ENGINE or ENGINE_MODULE
    origin: Related  # the call that passes it (for an instance's attribute: the initialize call)
    config: EngineConfig | None = None
    created: Related | None = None  # the initialize call that creates the engine
    # the passing call is followed by an `if` testing the ZeRO stage (`model.stage_tests`): the author handles
    # stage 3 there
    caller_tests_stage: bool = False
    # the callers pass the engine only on the paths where initialize ran (an engine on some paths, given because
    # the function uses the parameter as one): the arms of an `if` beside such a use are plain PyTorch
    conditional: bool = False


@dataclass(frozen=True)
class ReturnFact:
    """A helper whose return value is (part of) initialize's result."""

    roles: tuple[str | None, ...]  # one role per returned item
    is_tuple: bool  # `return engine, optimizer` (or a list) vs `return engine`
    origin: Related  # the initialize call inside the helper
    config: EngineConfig | None = None
    keys: tuple[str, ...] = ()  # `return {"engine": engine, ...}`: the key of each role
    callee: str = ""  # the helper as the call writes it (`utils.setup_engine`), for `dslint graph`


# LaunchedConfig.option for a launch passing a YAML file (`--train_config train.yaml`) whose `deepspeed:` key names
# the DeepSpeed config: a script that splats a mapping into `TrainingArguments(**...)` runs with it.
TRAINER_YAML = "trainer-yaml"


@dataclass(frozen=True)
class LaunchedConfig:
    """One launch of this script, and the DeepSpeed config it names (when it names one)."""

    launch: Related  # the launcher line
    option: str | None  # the script option naming the config (`deepspeed_config`, `deepspeed`), or "accelerate"
    config_path: str | None  # the config file (absolute), when literal and found
    config_evidence: Related | None = None  # where the config path is written (the option, or the YAML key)
    options: Mapping[str, str | None] = field(default_factory=dict)  # every `--name value` given, literal
    inline_stage: int | None = None  # accelerate's inline `zero_stage`
    mixed_precision: str | None = None  # accelerate's `mixed_precision`
    # accelerate's inline `zero3_save_16bit_model` read as accelerate does (None: not written, or not a yes/no)
    inline_save_16bit: bool | None = None
    # accelerate's `zero3_init_flag` read as a YAML boolean (None: not written, or not a yes/no): with it the
    # launch's `Accelerator()` keeps an HfDeepSpeedConfig alive (`DeepSpeedPlugin.set_deepspeed_weakref`)
    zero3_init: bool | None = None
    # The processes the launch starts on each node and in all, where the launcher says (`world_size.py`), and how
    # it says so; None when unknown.
    ranks_per_node: int | None = None
    ranks: int | None = None
    world_source: str = ""
    option_places: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # (line, column) of each option
    # accelerate's inline `gradient_clipping` (the YAML's, or `--gradient_clipping`), as written; None: not given
    inline_clipping: str | None = None
    inline_accumulation: str | None = None  # the same of its `gradient_accumulation_steps`
    # more options may be given than `options` holds (`"$@"`, `$EXTRA`, a document's `...`): an absent one is unknown
    options_open: bool = False

    def option_evidence(self, name: str) -> Related:
        """Where the launch writes `--name` (its value shown), or the launch line when not known."""
        place = self.option_places.get(name)
        if place is None:
            return self.launch
        value = self.options.get(name)
        return Related(self.launch.path, place[0], place[1], f"--{name}" + (f" {value}" if value is not None else ""))

    @property
    def one_per_gpu(self) -> bool:
        """The launcher starts a process for every GPU it finds (its count is the machine's, unknown here)."""
        return self.ranks_per_node is None and "every GPU" in self.world_source

    @property
    def several_a_node(self) -> bool:
        """The launch starts several processes a node, or one a GPU (`one_per_gpu`)."""
        return (self.ranks_per_node or 0) > 1 or self.one_per_gpu


@dataclass(frozen=True)
class LaunchWorldSize:
    """The number of ranks one launch starts with a config, and where that was read."""

    ranks: int
    source: str  # how the launcher gives it: "--num_gpus 8, one node (no hostfile)"
    launch: Related  # the launch line

    @property
    def at_launcher(self) -> bool:
        """Whether the launch is a launcher's (a shell script, a Makefile, a document), whose findings the
        launcher's lint reports; a notebook's or a Python file's launch is that file's own lint's."""
        return not self.launch.path.endswith((".py", ".ipynb"))


@dataclass(frozen=True)
class MovedArgument:
    """A call's argument (positional `index`, or `keyword`) that the project function it calls moves to a GPU
    (`where`; or, in `ProjectFacts.loading_calls`, loads a state dict into); `stored`: the attribute of the
    caller's own `self` the callee keeps it in (`super().__init__(net)` storing `self.net`), else None."""

    index: int | None
    keyword: str | None
    stored: str | None
    where: Related


@dataclass(frozen=True)
class ProjectFacts:
    """The project's facts for one file."""

    parameters: Mapping[str, Mapping[str, ParameterFact]] = field(default_factory=dict)  # function -> param
    # Parameters that SOME call in the project passes the engine (initialize's result), others something else (a
    # loop shared by a DeepSpeed script and a plain one): function -> param -> the fact of that call. Never an
    # answer of `role_of`; only a rule that asks (DSL306: what that call's engine does with an outer autocast).
    partly_engine: Mapping[str, Mapping[str, ParameterFact]] = field(default_factory=dict)
    # Answers about calls in this file are keyed by the call's position: (line, column), 1-based, in characters.
    returns: Mapping[tuple[int, int], ReturnFact] = field(default_factory=dict)  # the helper's call -> fact
    launches: tuple[LaunchedConfig, ...] = ()
    # A launcher names this script where the index reads no launch of it: `launches` may not be all of them
    launches_partial: bool = False
    launches_open: bool = False  # a launch of it gives options built at run time (`"$@"`, `$EXTRA`) or elided (`...`)
    # The script's own switches (`add_argument("--use_amp", action="store_true")`, off by default) that no launch of
    # it turns on, every launch known and written out (`project/script_parser.off_switches`): code under `if
    # args.use_amp:` runs in no run the project holds
    switches_never_on: frozenset[str] = frozenset()
    # The boolean fields of the dataclasses the script's `HfArgumentParser` builds that every launch leaves on (on
    # by default and given no false value, or given a true one): code under their `else` runs in no run
    switches_always_on: frozenset[str] = frozenset()
    # The launches of the launched scripts that import this module (three imports deep at most), for a module no
    # launch starts itself: its code runs in their processes (`project/importer_launches.py`)
    importer_launches: tuple[LaunchedConfig, ...] = ()
    # The launches of the launched scripts that import this module and call a function of it parsing the Trainer's
    # arguments from the command line (`train_mem.py` calling `train()` of `train.py`): the command lines that
    # parser reads, beside those of the module's own launches (`project/importer_launches.py`)
    parser_launches: tuple[LaunchedConfig, ...] = ()
    # the option defaults of those importers' parsers (alike in all that declare one), for `args.<opt>` read here
    importer_defaults: Mapping[str, tuple[str, Related]] = field(default_factory=dict)  # (default, where declared)
    # The project dataclasses this module builds, by the name it calls: each field's literal string default
    # (`project/dataclass_defaults.py`; `script/path_values.py` reads `cfg.ds_config_path` of `cfg = Cfg()`)
    class_defaults: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The file each path-like parameter of this module's functions names at every call of the project (absolute):
    # qualname -> parameter -> path (`project/parameter_paths.py`; `script/path_values.py` reads it)
    parameter_paths: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # No launch in the project (launcher, document command, notebook `!` line) starts several processes (each is
    # `python x.py`, or there is none): a program of it runs as one process, unless its own code says otherwise
    one_process_project: bool = False
    # No launch of the project starts this script, and an accelerate (or "auto" ZeRO-3 DeepSpeed) setup is shipped
    # near it (`project/shipped_accelerate.py`): how `accelerate launch` would run its `Accelerator`
    accelerate_shipped: bool = False
    # Calls of helpers that return their argument, maybe unwrapped (`_unwrap(m)`: `m.module if hasattr(m,
    # "module") else m`): the call -> (parameter index, parameter name, unwrapped)
    passthrough: Mapping[tuple[int, int], tuple[int, str, bool]] = field(default_factory=dict)
    # Functions of this file whose return value initialize receives as its model (`get_model()`), with the call
    model_builders: Mapping[str, Related] = field(default_factory=dict)
    # Methods that fill a `self` attribute with the model initialize receives, before the method that hands it on
    # runs (`model.attribute_models`): method qualname -> (attribute, the call up to which moves apply, or None
    # for the whole method; where the model goes)
    model_attributes: Mapping[str, tuple[str, tuple[int, int] | None, Related]] = field(default_factory=dict)
    # Calls in this file that hand a model to a function passing it on to initialize: the call -> for each
    # such parameter (a constructor may take several models), (parameter index, parameter name, the initialize
    # call, what is known of that call's config)
    model_sinks: Mapping[tuple[int, int], tuple[tuple[int, str, Related, EngineConfig | None], ...]] = field(
        default_factory=dict
    )
    # Expressions of this file that read an engine (or another of initialize's results) kept in an attribute of a
    # project class's instance (`pair.policy`): (line, column, end line, end column) -> the fact
    values_at: Mapping[tuple[int, int, int, int], ParameterFact] = field(default_factory=dict)
    # Calls in this file of a project function that writes a dict argument to a JSON file and returns its path
    # (`project/config_writers.py`): the call -> the dumped argument's position and name, and the writer
    config_writers: Mapping[tuple[int, int], tuple[int, str, Related]] = field(default_factory=dict)
    # This file's initialize calls whose config is a dict a project function builds (`get_ds_config(stage=
    # args.zero_stage)`, read per launch: `built_configs.built_stage`): the call -> the stage and its evidence
    built_configs: Mapping[tuple[int, int], EngineConfig] = field(default_factory=dict)
    # Module-level functions of this file whose returned dict a DeepSpeed config reader receives elsewhere:
    # name -> (the reader's call, who reads it: "initialize" or "trainer", the keys the reader's function writes
    # into the returned dict before the reader: `config_builders.ConfigBuilder.written`)
    config_builders: Mapping[str, tuple[Related, str, frozenset[str]]] = field(default_factory=dict)
    # Parameters of this file's functions that every caller fills with a CUDA device, read by a `torch.load`'s
    # map_location (`model.device_parameters`): function -> parameter -> where the device is written
    cuda_parameters: Mapping[str, Mapping[str, Related]] = field(default_factory=dict)
    # Parameters of this file's model builders that every caller fills with the CPU, read by a `.to(...)`:
    # function -> parameter -> where the CPU is written (`devices_of` reads such a parameter as the CPU)
    cpu_parameters: Mapping[str, Mapping[str, Related]] = field(default_factory=dict)
    # Calls in this file whose plain-name argument the project function called moves to a GPU
    # (`model.moved_arguments`): the call -> the argument and where the callee moves it
    moving_calls: Mapping[tuple[int, int], MovedArgument] = field(default_factory=dict)
    # Whether this script, or a project module it imports, may apply a config's `activation_checkpointing`
    # section (it calls `deepspeed.checkpointing.configure` or brings Megatron): DSL455 on the configs it builds;
    # None when not read (the script's own text decides)
    checkpointing_applied: bool | None = None
    # Calls in this file of project functions that set the current CUDA device (`model/device_setters.py`): the
    # call's position, 1-based, in characters
    device_setting_calls: frozenset[tuple[int, int]] = frozenset()
    # Calls of this file (by line and column) of project functions returning plain DataLoaders
    # (`model.returned_loaders`): the item of the result (None: the result itself) and where each is built
    returned_loaders: Mapping[tuple[int, int], tuple[tuple[int | None, Related], ...]] = field(default_factory=dict)
    # Calls in this file whose plain-name argument (or, for `self.method()`, an attribute of the instance) the
    # project function called casts to 16 bits (`model.moved_arguments`, DSL104 asks)
    casting_calls: Mapping[tuple[int, int], MovedArgument] = field(default_factory=dict)
    # Calls of this file (by line and column) handing `x.state_dict()` to a project function that writes it with
    # `torch.save` (`model.moved_arguments.dict_saving_calls`; DSL204 asks)
    dict_saving_calls: Mapping[tuple[int, int], MovedArgument] = field(default_factory=dict)
    # Calls of this file (by line and column) handing an object to a project function that writes the object's
    # `state_dict()` with `torch.save` (`model.moved_arguments.state_saving_helper_calls`; DSL204 for an engine,
    # DSL211 for initialize's optimizer)
    state_saving_helpers: Mapping[tuple[int, int], MovedArgument] = field(default_factory=dict)
    # Calls of this file (by line and column) whose argument the project function called loads a state dict into
    # (`restore(model, path)` running `model.load_state_dict(...)`); `where` is that load (DSL203 asks)
    loading_calls: Mapping[tuple[int, int], MovedArgument] = field(default_factory=dict)
    # Calls in this file that hand `x.module` to a project function calling that parameter (a forward pass):
    # the call -> (positional index or None for a keyword, the parameter's name, the function's definition)
    forwarding_calls: Mapping[tuple[int, int], tuple[int | None, str, Related]] = field(default_factory=dict)
    # What holds on the path to each initialize call a model of this file reaches elsewhere (the `if`s around it
    # in its function, `model/conditions.py`): (path as shown, line, column) of the call -> its guards
    init_guards: Mapping[tuple[str, int, int], tuple[Guard, ...]] = field(default_factory=dict)
    # The project's own Trainer argument classes this file names (`project/arguments_classes.py`): last names
    arguments_classes: frozenset[str] = frozenset()
    # The project's own transformers model classes this file loads (`project/model_classes.py`): last names
    model_classes: frozenset[str] = frozenset()
    # The project's own Hugging Face Trainer classes this file imports from another module
    # (`project/trainer_classes.py`): local names
    trainer_classes: frozenset[str] = frozenset()
    # Calls in this file that hand accelerate's Accelerator to a project function reaching `save_state` on it
    # (`model.state_saving_calls`): the call -> (where save_state is called, where the project builds a
    # DeepSpeedPlugin, or None)
    state_saving_calls: Mapping[tuple[int, int], tuple[Related, Related | None]] = field(default_factory=dict)
    # Calls in this file that hand the engine to a project function reaching `save_checkpoint` on it
    # (`model.state_saving_calls`): the call -> where save_checkpoint is called
    engine_saving_calls: Mapping[tuple[int, int], Related] = field(default_factory=dict)
    # Calls handing a Hugging Face Trainer to a project function that gathers the ZeRO-3 weights through it
    # (`model.state_saving_calls.trainer_gathering_calls`): the call -> where it gathers
    trainer_gathering_calls: Mapping[tuple[int, int], Related] = field(default_factory=dict)
    # Calls in this file that hand initialize's optimizer to a project function reaching `.step()` on it, where
    # that function is not reported itself (another caller hands it an optimizer of its own): the call -> where
    # the step is (`model.state_saving_calls.optimizer_stepping_calls`, DSL302)
    optimizer_stepping_calls: Mapping[tuple[int, int], Related] = field(default_factory=dict)
    # Calls in this file, in a function building `*TrainingArguments`, of a project function returning a model
    # that transformers' `from_pretrained` builds (`model.pretrained_loaders`): the call -> where it is loaded
    pretrained_loads: Mapping[tuple[int, int], Related] = field(default_factory=dict)
    # Files this module opens for writing and `json.dump`s a dict into that a launch passes as the DeepSpeed
    # config (`project.dumped_configs`): the name as written here -> where the launch names the file
    dumped_configs: Mapping[str, Related] = field(default_factory=dict)
    # Names this module receives only through `from m import *` of a project module that imports them
    # (`model.star_imports`): local name -> the dotted path (`deepspeed` -> "deepspeed")
    star_imports: Mapping[str, str] = field(default_factory=dict)
    # `torch.load` calls of this module, without a map location, of files that hold GPU tensors
    # (`model.gpu_saves`): line -> (what the file is, where the project writes it, None for DeepSpeed's own)
    gpu_loads: Mapping[int, tuple[str, Related | None]] = field(default_factory=dict)
    # line of a `torch.load` without a map location -> where the project writes the file it reads from CPU
    # data only (`model/cpu_saves.py`): nothing goes back to a GPU
    cpu_loads: Mapping[int, Related] = field(default_factory=dict)
    # Calls in this file of a name holding deepspeed.initialize itself (`ds_init(args=args, model=model)` after
    # `ds_init = deepspeed.initialize`, here or in a caller): the call -> where the value was taken. The script
    # facts read each as an initialize call of the file.
    initialize_aliases: Mapping[tuple[int, int], Related] = field(default_factory=dict)
    # Calls in this file of a project function that returns the Trainer arguments it builds
    # (`project/built_arguments.py`): the call -> where it builds them
    built_arguments: Mapping[tuple[int, int], Related] = field(default_factory=dict)

    def guards_of(self, origin: Related | None) -> tuple[Guard, ...]:
        """The path conditions of the initialize call `origin` names (none known: empty)."""
        if origin is None:
            return ()
        return self.init_guards.get((origin.path, origin.line, origin.column), ())

    @property
    def receives_engine(self) -> bool:
        """Whether an engine created elsewhere reaches this file, or a model from this file reaches an
        initialize elsewhere (so engine rules must look at it)."""
        return bool(
            self.parameters
            or self.returns
            or self.model_builders
            or self.model_sinks
            or self.values_at
            or self.model_attributes
            or self.initialize_aliases
        )

    @property
    def collective_saving_calls(self) -> bool:
        """Whether any call of this file hands on what a project function saves or gathers with on every rank."""
        return bool(self.state_saving_calls or self.engine_saving_calls or self.trainer_gathering_calls)

    def reaches_collective_save(self, position: tuple[int, int]) -> bool:
        """The call at `position` hands on what a project function saves or gathers with on every rank: the
        Accelerator (`save_state`), the engine (`save_checkpoint`) or a Trainer (its ZeRO-3 gather)."""
        return any(
            position in calls
            for calls in (self.state_saving_calls, self.engine_saving_calls, self.trainer_gathering_calls)
        )

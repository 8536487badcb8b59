"""What the libraries a training script calls return or carry: one table, read by the project fixpoint
(`dslint.model.fixpoint`), the per-file facts (`dslint.script.facts`) and the config-reader scans
(`dslint.project.reader_calls`), in the spirit of astroid's brain modules.

Each entry names a callable by its qualified name (or, for framework classes imported under many paths, by the
last part of its name) and says what its result is and which arguments carry what. Knowledge that rules keep
for their own message (which Hugging Face classes load models, what a Trainer wraps) stays with those rules
until a second reader needs it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# transformers' model classes, whose `from_pretrained` builds a model (not a tokenizer or a config): `AutoModel*`,
# `*Model`, `*For<Task>` (read by `script/hf_models.py` and `model/pretrained_loaders.py`).
TRANSFORMERS_MODEL_CLASS = re.compile(r"^(AutoModel\w*|\w*Model|\w+For[A-Z]\w*)$")

# The class methods of transformers' model classes that build the model, each inside `deepspeed.zero.Init` when a
# live HfDeepSpeedConfig says ZeRO-3 (`PreTrainedModel.from_pretrained`, and `_from_config`, which the Auto
# classes' `from_config` calls): DSL208 asks.
HF_MODEL_BUILDS = frozenset({"from_pretrained", "from_config", "_from_config"})

# The order of deepspeed.initialize's results: (engine, optimizer, training_dataloader, lr_scheduler).
ENGINE = "engine"
ENGINE_MODULE = "engine.module"
OPTIMIZER = "optimizer"
DATALOADER = "dataloader"
SCHEDULER = "scheduler"
RESULT_ORDER = (ENGINE, OPTIMIZER, DATALOADER, SCHEDULER)
# The engine's attributes that hold what initialize returned beside it (`runtime/engine.py`: `self.module`,
# `self.optimizer`, the optimizer initialize's second result is; `self.lr_scheduler`, its fourth).
ENGINE_ATTRIBUTES = {"module": ENGINE_MODULE, "optimizer": OPTIMIZER, "lr_scheduler": SCHEDULER}


@dataclass(frozen=True)
class LibraryCall:
    """One callable of a library, as the model sees it."""

    name: str  # qualified (`deepspeed.initialize`) or a class's own name (`DeepSpeedStrategy`)
    aliases: tuple[str, ...] = ()  # other qualified names of the same callable
    returns: tuple[str, ...] = ()  # the roles of its result, in order; one role: not a tuple
    positional: tuple[str, ...] = ()  # parameter names in positional order
    model: str | None = None  # the parameter taking the model it wraps
    config: tuple[str, ...] = ()  # the keywords taking a DeepSpeed config (the first one wins)
    reader: str | None = None  # who reads that config: "initialize", "lightning" or "trainer"
    note: str = ""

    @property
    def names(self) -> frozenset[str]:
        return frozenset((self.name, *self.aliases))


INITIALIZE = LibraryCall(
    "deepspeed.initialize",
    returns=RESULT_ORDER,
    positional=("args", "model", "optimizer", "model_parameters", "training_data", "lr_scheduler"),
    model="model",
    config=("config", "config_params"),
    reader="initialize",
    note="creates the engine; `args=` given: DeepSpeed reads args.deepspeed_config",
)
INIT_INFERENCE = LibraryCall(
    "deepspeed.init_inference",
    returns=("inference engine",),
    positional=("model",),
    model="model",
    config=("config",),
    note="an InferenceEngine: no backward, no step, no ZeRO training state",
)
ZERO_INIT = LibraryCall(
    "deepspeed.zero.Init",
    aliases=("deepspeed.runtime.zero.Init", "deepspeed.runtime.zero.partition_parameters.Init"),
    config=("config_dict_or_path", "config"),
    note="a context manager: modules built inside are partitioned at construction (ZeRO-3)",
)
# Predicates that are true on one rank only (accelerate's Accelerator/PartialState, the HF Trainer, Lightning).
ONE_RANK_PREDICATES = frozenset(
    {"is_main_process", "is_local_main_process", "is_world_process_zero", "should_save", "is_global_zero"}
)
# Context managers that run their body on the main process first while the others wait at a barrier.
ONE_RANK_FIRST = ("main_process_first",)
# TRL's trainer configs subclass TrainingArguments: their `deepspeed=` is the HF Trainer's. PPOConfig is left out
# (before TRL 0.12 it was no TrainingArguments and had no `deepspeed`).
TRL_TRAINING_ARGUMENTS = frozenset(
    {
        "SFTConfig", "DPOConfig", "GRPOConfig", "RewardConfig", "ORPOConfig", "KTOConfig", "CPOConfig",
        "RLOOConfig", "OnlineDPOConfig", "GKDConfig", "PRMConfig", "BCOConfig",
    }
)  # fmt: skip


# Packages whose `*Trainer` classes build the engine from TrainingArguments.deepspeed (transformers', TRL's).
TRAINER_PACKAGES = ("transformers.", "trl.")


def is_trainer_class_name(qualified: str) -> bool:
    """A Hugging Face or TRL trainer class, by its qualified name (`transformers.Trainer`, `trl.SFTTrainer`)."""
    return qualified.startswith(TRAINER_PACKAGES) and qualified.rsplit(".", 1)[-1].endswith("Trainer")


def is_training_arguments_name(name: str) -> bool:
    """`TrainingArguments` and any `*TrainingArguments` (`Seq2SeqTrainingArguments`, a project's subclass named
    so), or one of TRL's trainer configs (`SFTConfig`, `DPOConfig`, ...), by the name's last part."""
    last = name.rsplit(".", 1)[-1]
    return last.endswith("TrainingArguments") or last in TRL_TRAINING_ARGUMENTS


def is_arguments_parser(name: str, handed: Sequence[str]) -> bool:
    """A parser that builds the Trainer's argument dataclasses it is handed from the command line, defaults where no
    option is given: transformers' `HfArgumentParser` (by the name's last part), or a project's parser class handed a
    `*TrainingArguments` class (`ProjectArgumentParser((ModelArguments, TrainingArguments))`, a subclass of it).
    `handed`: the dotted names of the classes given (the first argument, or the elements of its tuple or list)."""
    last = name.rsplit(".", 1)[-1]
    return last == "HfArgumentParser" or (last.endswith("Parser") and any(map(is_training_arguments_name, handed)))


TRAINING_ARGUMENTS = LibraryCall(
    "TrainingArguments",
    config=("deepspeed",),
    reader="trainer",
    note="any `*TrainingArguments` (and TRL's configs, `is_training_arguments_name`): the Hugging Face Trainer fills "
    'the config\'s "auto" values, then initializes',
)


@dataclass(frozen=True)
class CallbackRunner:
    """A library call that calls a function it is handed, in each process it starts: `function` is the
    parameter (position 0, or this keyword) taking the function; the function gets `leading` arguments of its own
    first (the process index of `mp.spawn`: not known here), then, from `handed` (a keyword, or position 1), one
    argument (`unpacked` False: Ray's `train_loop_config` dict) or each item of a tuple (`args=(cfg, model)`)."""

    function: str
    handed: str
    unpacked: bool
    leading: int = 0


CALLBACK_RUNNERS = {
    # ray.train.torch.TorchTrainer(train_loop_per_worker, train_loop_config=...): `train_loop_per_worker(config)`
    "TorchTrainer": CallbackRunner("train_loop_per_worker", "train_loop_config", unpacked=False),
    "TransformersTrainer": CallbackRunner("train_loop_per_worker", "train_loop_config", unpacked=False),
    # torch.multiprocessing.spawn(fn, args=(...)): `fn(process_index, *args)`
    "spawn": CallbackRunner("fn", "args", unpacked=True, leading=1),
    # accelerate.notebook_launcher(function, args=(...)): `function(*args)`
    "notebook_launcher": CallbackRunner("function", "args", unpacked=True),
}

# accelerate's Accelerator and DeepSpeed plugin, by the dotted names a call resolves to through the imports
ACCELERATOR_CALLS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
DEEPSPEED_PLUGIN_CALLS = frozenset({"accelerate.DeepSpeedPlugin", "accelerate.utils.DeepSpeedPlugin"})
# What builds an optimizer or a learning-rate schedule object of the script's own, as `accelerator.prepare` tells
# them from accelerate's placeholders (`DummyOptim`, `DummyScheduler`): torch's optimizers and schedules by module,
# transformers' and bitsandbytes' by name (read through the file's imports; `_prepare_deepspeed` raises when the
# DeepSpeed config has the same section).
OPTIMIZER_MODULES = ("torch.optim.", "bitsandbytes.optim.")
OPTIMIZER_CALLS = frozenset(
    {f"transformers.{name}" for name in ("AdamW", "Adafactor", "optimization.AdamW", "optimization.Adafactor")}
)
SCHEDULE_MODULES = ("torch.optim.lr_scheduler.",)  # before OPTIMIZER_MODULES: it is under torch.optim
SCHEDULE_CALLS = frozenset(
    {
        f"transformers.{module}{name}"
        for module in ("", "optimization.")
        for name in (
            "get_scheduler",
            "get_linear_schedule_with_warmup",
            "get_cosine_schedule_with_warmup",
            "get_cosine_with_hard_restarts_schedule_with_warmup",
            "get_constant_schedule",
            "get_constant_schedule_with_warmup",
            "get_polynomial_decay_schedule_with_warmup",
            "get_inverse_sqrt_schedule",
        )
    }
    | {"diffusers.optimization.get_scheduler"}
)
DEEPSPEED_PLUGIN = LibraryCall(
    "DeepSpeedPlugin",
    config=("hf_ds_config",),
    reader="trainer",
    note='accelerate\'s plugin (`Accelerator(deepspeed_plugin=...)` carries it); accelerate fills "auto" too',
)
LIGHTNING_STRATEGY = LibraryCall(
    "DeepSpeedStrategy",
    config=("config",),
    reader="lightning",
    note="Lightning fills train_micro_batch_size_per_gpu from the data loader, then calls deepspeed.initialize",
)

# Lightning's registered DeepSpeed strategies that offload the optimizer (`DeepSpeedStrategy.register_strategies`:
# `offload_optimizer=True`), and the keyword that asks for it on a strategy built by hand. The config Lightning then
# builds sets no `zero_force_ds_cpu_optimizer`, and its DeepSpeedStrategy hands `configure_optimizers`' optimizer to
# `deepspeed.initialize` (Fabric's `setup` the one it is given).
LIGHTNING_OFFLOAD_STRATEGIES = frozenset(
    {"deepspeed_stage_2_offload", "deepspeed_stage_3_offload", "deepspeed_stage_3_offload_nvme"}
)
LIGHTNING_STRATEGY_CLASSES = frozenset({"DeepSpeedStrategy", "DeepSpeedPlugin"})  # the plugin: Lightning < 1.6
# GPU optimizers that are no CPU optimizer either (ZeRO-Offload refuses them as it does torch's)
FUSED_ADAMS = frozenset({"apex.optimizers.FusedAdam", "deepspeed.ops.adam.FusedAdam"})

# Config readers found by the callee's last name (`DeepSpeedStrategy(config=...)` under any import path);
# `initialize` only as `deepspeed.initialize`, any name ending in `TrainingArguments` as TrainingArguments.
READERS_BY_LAST_NAME: dict[str, LibraryCall] = {
    "initialize": INITIALIZE,
    "DeepSpeedStrategy": LIGHTNING_STRATEGY,
    "DeepSpeedPlugin": DEEPSPEED_PLUGIN,
}

# Methods of the DeepSpeed engine that a torch module does not have: a parameter they are called on is an engine.
ENGINE_ONLY_METHODS = frozenset({"backward", "set_gradient_accumulation_boundary", "is_gradient_accumulation_boundary"})
# nn.Module methods that return the module itself.
SELF_RETURNING_METHODS = frozenset(
    {"cuda", "to", "half", "bfloat16", "float", "double", "cpu", "train", "eval", "requires_grad_", "to_empty"}
)
# Calls returning a wrapper of the module they are given whose attribute reads reach that module: torch.compile's
# `OptimizedModule.__getattr__` falls back to `_orig_mod`, so `engine = torch.compile(engine)` keeps the engine's
# methods (`engine.load_checkpoint`, `engine.backward`) callable on the wrapper.
FORWARDING_WRAPPERS = frozenset({"torch.compile"})
# PEFT methods returning the base model under the adapter, holding the same parameter objects (merged in place):
# `model = model.merge_and_unload()` keeps a ZeRO-3 model's partitioned parameters.
BASE_MODEL_METHODS = frozenset({"merge_and_unload", "unload", "get_base_model"})
# torch's gradient-norm clipping functions, every spelling (DSL305: beside an engine that clips itself).
TORCH_CLIP_FUNCTIONS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_norm",
    }
)
# torch's loss scalers for automatic mixed precision: `scaler.step(optimizer)` steps that optimizer.
GRAD_SCALERS = frozenset({"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"})
# Data-parallel wrappers of a module (torch's and apex's): qualified name -> the short name messages use.
DATA_PARALLEL_WRAPPERS = {
    "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.DataParallel": "DataParallel",
    "torch.nn.parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "DataParallel",
    "apex.parallel.DistributedDataParallel": "apex DistributedDataParallel",
    "apex.parallel.distributed.DistributedDataParallel": "apex DistributedDataParallel",
}
# Library calls returning a module that holds the module given first (its parameters are that module's): peft's
# LoRA model around the base model. A move of the base model before applies to what the wrapper hands on.
MODULE_WRAPPERS = frozenset(
    {
        "peft.get_peft_model",
        "peft.mapping.get_peft_model",
        "peft.mapping_func.get_peft_model",
        "peft.PeftModel.from_pretrained",
        "peft.peft_model.PeftModel.from_pretrained",
        "peft.prepare_model_for_kbit_training",
    }
)
# Calls that set the current device.
SET_DEVICE_CALLS = frozenset(
    {
        "torch.cuda.set_device",
        "torch.accelerator.set_device_index",
        "torch.accelerator.set_device_idx",
        "deepspeed.accelerator.get_accelerator().set_device",
        "deepspeed.get_accelerator().set_device",
    }
)
# Calls that name the accelerator's device without an index: the current device ("cuda").
DEVICE_NAME_CALLS = frozenset(
    {"deepspeed.accelerator.get_accelerator().device_name", "deepspeed.get_accelerator().device_name"}
)
TORCH_DEVICE = "torch.device"
# Where a rank's index comes from: the local rank (the process's GPU on its node) and the global rank.
LOCAL_RANK_ENV = "LOCAL_RANK"
GLOBAL_RANK_CALLS = frozenset({"torch.distributed.get_rank", "deepspeed.comm.get_rank", "deepspeed.dist.get_rank"})
# Top-level packages whose functions the fixpoint never looks for among the project's files.
LIBRARY_ROOTS = frozenset({"deepspeed", "torch", "transformers"})

# torch's data loader, and how a script shards (or does not shard) what it feeds each rank (DSL445 asks, in a file
# and in the project functions that return loaders: `model.returned_loaders`).
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# A file that shards its data some other way, or streams it, is left alone.
SHARDED_ELSEWHERE = (
    b"DistributedSampler",
    b"split_dataset_by_node",
    b"IterableDataset",
    b"streaming",
    b"num_replicas",
    b".shard(",
)
# A sampler of a file's own making may shard (`sampler=make_sampler(ds)`); torch's single-process samplers do not.
SAMPLER_GIVEN = re.compile(rb"sampler\s*=\s*(?!(torch\.utils\.data\.)?(RandomSampler|SequentialSampler)\()")
SINGLE_PROCESS_SAMPLERS = frozenset(
    f"torch.utils.data{module}.{name}" for module in ("", ".sampler") for name in ("RandomSampler", "SequentialSampler")
)
# Words in the dataset argument that say it is already this rank's part (`data[rank::world_size]`).
RANK_WORDS = re.compile(r"rank|shard|world|split_by|partition", re.IGNORECASE)
# Words in it that say it is made up (a benchmark's random tensors): the same data on every rank changes nothing.
SYNTHETIC_DATA = re.compile(r"random|randn|rand\(|synthetic|dummy|fake", re.IGNORECASE)

# Calls that end the process: what follows them in their block never runs (`lint/unreachable.py`), and an arm
# ending in one leaves its block (`script/branches.py`).
PROCESS_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})

# Words of a Python file that may apply a DeepSpeed config's `activation_checkpointing` section: the engine never
# reads it; only `deepspeed.checkpointing.configure(..., deepspeed_config=...)` does (called by Megatron-DeepSpeed
# and GPT-NeoX, whose code imports `megatron`, and by Lightning's DeepSpeedStrategy, whose configs are not this
# question's).
CHECKPOINTING_CONFIGURED = (b"checkpointing.configure", b"checkpointing import configure", b"megatron")

# Packages none of whose functions reads the command line when called without arguments (`torch.no_grad()`,
# `np.random.seed()`, `deepspeed.init_distributed()`): such a call is no entry point that may parse the options
# a launch passes (DSL424 asks; `fire.Fire()`, `main()` from another package may).
NO_COMMAND_LINE_PACKAGES = frozenset(
    {
        *LIBRARY_ROOTS,
        "accelerate",
        "datasets",
        "peft",
        "trl",
        "numpy",
        "tqdm",
        "os",
        "math",
        "random",
        "time",
        "json",
        "logging",
        "gc",
        "pathlib",
        "collections",
        "itertools",
        "functools",
        "warnings",
        "shutil",
        "platform",
        "sys",
        "socket",
        "datetime",
        "glob",
        "re",
        "subprocess",
        "uuid",
        "hashlib",
        "pickle",
        "tempfile",
        "threading",
        "multiprocessing",
        "inspect",
        "traceback",
    }
)


@dataclass(frozen=True)
class TrainerMatch:
    """A DeepSpeed config key that the Hugging Face Trainer compares with its TrainingArguments
    (`HfTrainerDeepSpeedConfig.trainer_config_process`, transformers 4.x: `fill_match`): "auto" is filled with the
    arguments' value; any other value that differs (Python's `!=`) is a mismatch, and the Trainer raises
    "Please correct the following DeepSpeed config values that mismatch TrainingArguments values" when it builds
    the engine (`trainer_config_finalize`)."""

    key: tuple[str, ...]  # the config key, as a path (`("optimizer", "params", "lr")`)
    fields: tuple[str, ...]  # the TrainingArguments fields compared: one value, a list of them, or an `or` of flags
    defaults: tuple[object, ...]  # transformers' defaults of those fields
    # "value": the field; "list": [the fields]; "any": the fields' `or` (flags); "steps", "warmup": the schedule's
    kind: str = "value"


TRAINER_MATCHES = (
    TrainerMatch(("train_micro_batch_size_per_gpu",), ("per_device_train_batch_size",), (8,)),
    TrainerMatch(("gradient_accumulation_steps",), ("gradient_accumulation_steps",), (1,)),
    TrainerMatch(("gradient_clipping",), ("max_grad_norm",), (1.0,)),
    TrainerMatch(("optimizer", "params", "lr"), ("learning_rate",), (5e-05,)),
    TrainerMatch(("optimizer", "params", "betas"), ("adam_beta1", "adam_beta2"), (0.9, 0.999), "list"),
    TrainerMatch(("optimizer", "params", "eps"), ("adam_epsilon",), (1e-08,)),
    TrainerMatch(("optimizer", "params", "weight_decay"), ("weight_decay",), (0.0,)),
    TrainerMatch(("scheduler", "params", "warmup_max_lr"), ("learning_rate",), (5e-05,)),
    # The schedule's steps, compared when `train()` builds the engine (`trainer_config_finalize`): the total with the
    # optimizer steps the Trainer computes (`max_steps` when positive, else counted from the data: "steps"), the
    # warmup with `get_warmup_steps` (`warmup_steps` when at least 1, else the ratio of that total: "warmup")
    TrainerMatch(("scheduler", "params", "total_num_steps"), ("max_steps",), (-1,), "steps"),
    TrainerMatch(
        ("scheduler", "params", "warmup_num_steps"),
        ("warmup_steps", "warmup_ratio", "max_steps"),
        (0, 0.0, -1),
        "warmup",
    ),
    # fp16.enabled is matched with `(fp16 or fp16_full_eval) and the amp backend`: a run naming another backend
    # (`half_precision_backend="apex"`) is left alone by the reader (`trainer_matches.PRECISION_BACKENDS`).
    TrainerMatch(("fp16", "enabled"), ("fp16", "fp16_full_eval"), (False, False), "any"),
    TrainerMatch(("bf16", "enabled"), ("bf16", "bf16_full_eval"), (False, False), "any"),
)
# The arguments that make the batch-size match a fill only (`auto_find_batch_size=True`).
TRAINER_BATCH_FILL_ONLY = "auto_find_batch_size"

# The DeepSpeed schedule (a config's `scheduler.type`) that does what the Trainer's `lr_scheduler_type` names; the
# Trainer builds no schedule of its own when the config has a `scheduler` section (transformers'
# `deepspeed_optim_sched` hands it a `DummyScheduler`), so any other pairing silently runs the config's.
TRAINER_SCHEDULE_EQUIVALENTS = {
    "linear": "WarmupDecayLR",
    "cosine": "WarmupCosineLR",
    "constant_with_warmup": "WarmupLR",
    "constant": "WarmupLR",
}

# Entry scripts of other projects that launchers start from a checkout of those projects, not from their own
# repository: Megatron-LM / Megatron-DeepSpeed's `pretrain_*.py` (recognised also by their dashed model options)
# and the Hugging Face examples' `run_*.py`. A launch of one that the project does not hold is no missing file.
EXTERNAL_ENTRY_SCRIPTS = re.compile(
    r"^(pretrain_(gpt|bert|t5|retro|mamba|ict|vlm|gpt_core|vision_\w+)"
    r"|run_(clm|mlm|plm|glue|xnli|ner|qa|seq2seq_qa|swag|translation|summarization|image_classification"
    r"|speech_recognition_\w+|audio_classification|clip|mim|fim|wav2vec2_pretraining\w*)(_no_trainer)?)\.py$"
)
MEGATRON_OPTIONS = frozenset(
    {"tensor-model-parallel-size", "pipeline-model-parallel-size", "num-layers", "hidden-size"}
)

# The keywords DeepSpeed's entry points accept (0.19.8; no release before it had one more): a keyword outside
# these is a TypeError at the call. `init_inference` takes `**kwargs` (config fields), so it is not here.
ACCEPTED_KEYWORDS: dict[str, frozenset[str]] = {
    "initialize": frozenset(
        {
            "args",
            "model",
            "optimizer",
            "model_parameters",
            "training_data",
            "lr_scheduler",
            "distributed_port",
            "mpu",
            "dist_init_required",
            "collate_fn",
            "config",
            "mesh_param",
            "config_params",
        }
    ),
    "save_checkpoint": frozenset({"save_dir", "tag", "client_state", "save_latest", "exclude_frozen_parameters"}),
    "load_checkpoint": frozenset(
        {
            "load_dir",
            "tag",
            "load_module_strict",
            "load_optimizer_states",
            "load_lr_scheduler_states",
            "load_module_only",
            "custom_load_fn",
        }
    ),
}

"""Where a DeepSpeed config given to the Hugging Face Trainer contradicts its TrainingArguments (DSL435).

transformers compares the config's batch, clipping, optimizer and precision keys with the TrainingArguments
(`dslint.model.library.TRAINER_MATCHES`): "auto" is filled in, any other value must be equal, and a difference
stops the run when the Trainer builds the engine. The arguments' values are known from the script's literal
keywords (`TrainingArguments(fp16=True, ...)`) or from a launch's literal options (`--bf16`,
`--per_device_train_batch_size 4`) for a script that parses them (`HfArgumentParser`); a field not given has
transformers' default only where the class is transformers' own (TRL's configs and project subclasses may change
the defaults). Anything else (a variable, a splatted mapping, a string value in the config) is not compared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dslint.config.facts import Origin
from dslint.config.tree import UNKNOWN, Node, node_at
from dslint.diagnostics import Related
from dslint.model.library import TRAINER_BATCH_FILL_ONLY, TRAINER_MATCHES, TrainerMatch
from dslint.project.resolved_configs import ResolvedConfig, launch_evidence, launched_file
from dslint.project.trainer_launches import launched_for_trainer
from dslint.script.context import ScriptContext
from dslint.script.project_facts import LaunchedConfig

# Arguments that choose the fp16 backend: fp16.enabled is compared with `fp16 and the amp backend` (not modelled).
PRECISION_BACKENDS = ("half_precision_backend", "fp16_backend")
# The TrainingArguments fields the comparison reads (launch options are read for these names only).
MATCHED_FIELDS = frozenset(
    {field for match in TRAINER_MATCHES for field in match.fields} | {TRAINER_BATCH_FILL_ONLY, *PRECISION_BACKENDS}
)


@dataclass(frozen=True)
class Mismatch:
    key: str  # "fp16.enabled"
    config_value: Any
    fields: str  # "fp16|fp16_full_eval", "adam_beta1+adam_beta2"
    trainer_value: Any
    given: str | None  # the first compared field the arguments give (None: every one is transformers' default)
    node: Node | None  # the config's value, positioned in its file (or in the script, for a dict it writes)

    def describe(self) -> str:
        if self.trainer_value is COUNTED:
            return f"{self.key}={_shown(self.config_value)} vs {COUNTED}"
        return f"{self.key}={_shown(self.config_value)} vs {self.fields}={_shown(self.trainer_value)}"


def mismatches(config: ResolvedConfig, arguments: Mapping[str, Any], defaults: bool) -> list[Mismatch]:
    """The config keys the Trainer would find unequal to its arguments. `arguments`: field -> value (UNKNOWN when
    given but not literal); a field not in it has transformers' default when `defaults`, else is unknown."""
    found: list[Mismatch] = []
    for match in TRAINER_MATCHES:
        if match.key == ("fp16", "enabled") and any(field in arguments for field in PRECISION_BACKENDS):
            continue  # another fp16 backend may be chosen (apex): not compared
        batch = match.key == ("train_micro_batch_size_per_gpu",)
        if batch and _value(arguments, TRAINER_BATCH_FILL_ONLY, defaults, False) is not False:
            continue  # auto_find_batch_size (or not known): a fill only
        value = config.get(*match.key)
        if value is None or value is UNKNOWN or isinstance(value, (str, dict)) or not _literal_list(value):
            continue  # absent, not literal, "auto" (filled in), or a string the comparison would not settle
        trainer = _trainer_value(match, arguments, defaults)
        if trainer is UNKNOWN or value == trainer:
            continue
        given = next((f for f in match.fields if f in arguments), None)
        node = node_at(config.tree, *match.key) if config.tree is not None else None
        separator = "|" if match.kind == "any" else "+"
        fields = match.fields[0] if match.kind in ("steps", "warmup") else separator.join(match.fields)
        found.append(Mismatch(".".join(match.key), value, fields, trainer, given, node))
    return found


def _literal_list(value: Any) -> bool:
    """Not a list, or a list of numbers only."""
    return not isinstance(value, list) or all(isinstance(v, (int, float)) for v in value)


def _trainer_value(match: TrainerMatch, arguments: Mapping[str, Any], defaults: bool) -> Any:
    values = [_value(arguments, f, defaults, d) for f, d in zip(match.fields, match.defaults, strict=True)]
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    if match.kind in ("steps", "warmup"):
        return _schedule_steps(match.kind, values)
    if match.kind == "list":
        return values
    if match.kind == "any":
        if any(not isinstance(v, bool) for v in values):
            return UNKNOWN
        return any(values)
    value = values[0]
    return value if isinstance(value, (int, float)) else UNKNOWN


# The optimizer steps of a run without `max_steps`: counted from the data when `train()` starts
COUNTED = "the steps it counts"


def _schedule_steps(kind: str, values: list[Any]) -> Any:
    """The Trainer's value for the schedule's total ("steps": `max_steps`) or warmup ("warmup": `warmup_steps`,
    `warmup_ratio`, `max_steps`), as `get_warmup_steps` computes it; `COUNTED` for a total counted from the data
    (any literal total contradicts it but by chance), UNKNOWN for a warmup that is a ratio of such a total."""
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values):
        return UNKNOWN
    total = values[-1]
    counted = total <= 0
    if kind == "steps":
        return COUNTED if counted else int(total)
    steps, ratio = values[0], values[1]
    if steps >= 1:
        return int(steps)
    if steps > 0 or ratio > 0:  # a ratio (newer releases read a `warmup_steps` below 1 as one) of the total
        return UNKNOWN if counted else math.ceil(total * (steps or ratio))
    return 0


def _value(arguments: Mapping[str, Any], field: str, defaults: bool, default: Any) -> Any:
    if field in arguments:
        return arguments[field]
    return default if defaults else UNKNOWN


def launch_arguments(options: Mapping[str, str | None]) -> dict[str, Any]:
    """The compared fields a launch gives on the command line, as HfArgumentParser reads them: a bare flag is
    True, `--fp16 false` False (its `string_to_bool`), numbers as numbers; a value built at run time is UNKNOWN."""
    found: dict[str, Any] = {}
    for name, text in options.items():
        if name not in MATCHED_FIELDS:
            continue
        found[name] = _parsed(name, text)
    return found


_TRUE = ("yes", "true", "t", "y", "1")
_FALSE = ("no", "false", "f", "n", "0")
_FLAGS = frozenset({"fp16", "fp16_full_eval", "bf16", "bf16_full_eval", TRAINER_BATCH_FILL_ONLY})


_COUNTS = frozenset({"per_device_train_batch_size", "gradient_accumulation_steps", "max_steps"})


def flag_value(text: str | None) -> bool | None:
    """A boolean field's option as `HfArgumentParser` reads it (`string_to_bool`): `--name` alone true, `--name
    false` false; None for any other word."""
    if text is None:
        return True
    lowered = text.lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _parsed(name: str, text: str | None) -> Any:
    if name in _FLAGS:
        value = flag_value(text)
        return UNKNOWN if value is None else value
    if text is None:
        return UNKNOWN
    if name in PRECISION_BACKENDS:
        return text
    try:
        return int(text) if name in _COUNTS else float(text)
    except ValueError:
        return UNKNOWN


def _shown(value: Any) -> str:
    if isinstance(value, bool) or value is COUNTED:
        return str(value)
    return repr(value) if isinstance(value, str) else str(value)


def launched_trainer_configs(context: ScriptContext) -> list[tuple[LaunchedConfig, ResolvedConfig]]:
    """Each launch that gives this script's Trainer a config file by `--deepspeed ds.json` (the script parses its
    TrainingArguments from the command line), with that config read: the script's own launches, and those of the
    launched scripts calling its parsing function (their command line is the one its parser reads, `train_mem.py`
    calling `train()` of `train.py`: `parser_launches`)."""
    project = context.facts.project
    found: list[tuple[LaunchedConfig, ResolvedConfig]] = []
    for launch in (*project.launches, *project.parser_launches) if project is not None else ():
        if launch.option != "deepspeed" or launch.config_path is None or not launched_for_trainer(context, launch):
            continue
        resolved = launched_file(launch.config_path, Origin.TRAINER, (launch.launch, *launch_evidence(launch)))
        if resolved is not None:
            found.append((launch, resolved))
    return found


def launched_precisions(context: ScriptContext, config: ResolvedConfig) -> tuple[set[str], list[Related]] | None:
    """The half precisions (`"fp16"`, `"bf16"`) a Trainer config with `"enabled": "auto"` runs in under the
    launches handing it to this script: the Trainer fills each from its `--fp16`/`--bf16` argument
    (`HfTrainerDeepSpeedConfig.trainer_config_process`). None unless every launch giving this config turns one
    on (a launch leaving both off runs it in fp32), with where each launch says so."""
    auto = [name for name in ("fp16", "bf16") if config.get(name, "enabled") == "auto"]
    launches = [launch for launch, found in launched_trainer_configs(context) if found.path == config.path]
    if not auto or not launches or config.path is None:
        return None
    precisions: set[str] = set()
    places: list[Related] = []
    for launch in launches:
        on = [name for name in auto if _switched_on(launch.options, name)]
        if len(on) != 1:
            return None
        precisions.add(on[0])
        places.append(launch.option_evidence(on[0]))
    return precisions, places


def _switched_on(options: Mapping[str, str | None], name: str) -> bool:
    """`--bf16`, `--bf16 True`: a boolean field of the Trainer's arguments given as on (`flag_value`)."""
    if name not in options:
        return False
    value = options[name]
    return flag_value(value.strip("'\"") if value is not None else None) is True


def accelerate_trainer_configs(context: ScriptContext) -> list[tuple[LaunchedConfig, ResolvedConfig]]:
    """Each `accelerate launch` of this script whose YAML runs DeepSpeed with a config file, with that config read:
    a Trainer whose `TrainingArguments` name no config of their own builds its plugin from it (transformers'
    `TrainingArguments.__post_init__` under ACCELERATE_USE_DEEPSPEED) and fills and compares it as it would a
    `deepspeed=` one (`Trainer.propagate_args_to_deepspeed`)."""
    project = context.facts.project
    found: list[tuple[LaunchedConfig, ResolvedConfig]] = []
    for launch in project.launches if project is not None else ():
        if launch.option != "accelerate" or launch.config_path is None:
            continue
        resolved = launched_file(launch.config_path, Origin.TRAINER, (launch.launch, *launch_evidence(launch)))
        if resolved is not None:
            found.append((launch, resolved))
    return found

"""Which DeepSpeed config a launch command hands its script, and how: a config option (`--deepspeed ds.json`,
`--deepspeed_config`), the accelerate YAML it is started with (`deepspeed_config_file`, or a `zero_stage` of its
own) or accelerate's own flags (`--use_deepspeed --deepspeed_config_file ds.json`, `--zero_stage 2`), or a YAML of
the Trainer's arguments the command passes whose `deepspeed:` key names one. Paths are read from where the command
runs (`find_written`, after its `cd`), as the script will open them."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace

from dslint.diagnostics import Related
from dslint.project.accelerate_deepspeed_off import other_backend
from dslint.project.accelerate_yaml import AccelerateConfig, yaml_boolean
from dslint.project.config_access import deepspeed_config_text
from dslint.project.inputs import absolute, find_written, is_file, read_input, shown_path
from dslint.project.launchers import LaunchLine
from dslint.project.shell_directories import UNKNOWN_VALUE
from dslint.script.project_facts import TRAINER_YAML, LaunchedConfig


def launched_config(
    line: LaunchLine,
    launcher: str,
    roots: Sequence[str],
    accelerate: AccelerateConfig | None,
    run_from: str | None = None,
) -> LaunchedConfig:
    """`run_from`: the folder a document's command runs in when its script was found there (`documented_script`):
    a config path the command writes is read from that folder when it is not found from the document's own. The
    launch keeps where each of the script's options is written (`option_places`)."""
    launched = _launched_config(line, launcher, roots, accelerate, run_from)
    places = {o.name: (o.line, o.column) for o in line.options}
    return replace(launched, option_places=places) if places else launched


def _launched_config(
    line: LaunchLine,
    launcher: str,
    roots: Sequence[str],
    accelerate: AccelerateConfig | None,
    run_from: str | None,
) -> LaunchedConfig:
    # A script the launcher names from its own folder (`$(dirname "$0")/train.py`) is absolute: shown relative
    script = shown_path(absolute(line.script)) if os.path.isabs(line.script) else line.script
    where = Related(shown_path(absolute(launcher)), line.line, line.column, f"{line.tool} launches {script}")
    options = {o.name: o.value for o in line.options}
    option = line.config_option()
    if option is not None and option.value is not None:
        config_path = _run_path(option.value, line, launcher, roots, run_from)
        written = shown_path(absolute(option.value)) if os.path.isabs(option.value) else option.value
        evidence = Related(where.path, option.line, option.column, f"--{option.name} {written}")
        # a nested option (`--training_arguments.deepspeed`) is the Trainer's argument of its last name
        return LaunchedConfig(where, option.name.rsplit(".", 1)[-1], config_path, evidence, options)
    # accelerate runs DeepSpeed only for `distributed_type: DEEPSPEED` (`launch.py`: `use_deepspeed`); a YAML of
    # another type may keep a `deepspeed_config` block that nothing reads
    # (`--multi_gpu` on the command line picks its own launcher: the YAML's type no longer decides)
    if accelerate is not None and accelerate.distributed_type in (None, "DEEPSPEED") and other_backend(line) is None:
        shown = shown_path(accelerate.path)
        # `accelerate launch --mixed_precision bf16` overrides the YAML's (a value built at run time: not known)
        options_given = line.launcher_options
        given = next((o.value for o in options_given if o.name == "mixed_precision"), accelerate.mixed_precision)
        mixed_precision = None if given is None or UNKNOWN_VALUE in given else given
        if accelerate.deepspeed_config_file:
            config_path = find_written(accelerate.deepspeed_config_file, accelerate.path, roots)
            evidence = Related(
                shown,
                accelerate.deepspeed_config_file_line,
                1,
                f"deepspeed_config_file: {accelerate.deepspeed_config_file}" + _presumed(accelerate),
            )
            launched = LaunchedConfig(where, "accelerate", config_path, evidence, options, None, mixed_precision)
            return replace(launched, zero3_init=yaml_boolean(accelerate.zero3_init_flag))
        if accelerate.zero_stage is not None:
            written = f"zero_stage: {accelerate.zero_stage}" + _presumed(accelerate)
            evidence = Related(shown, accelerate.zero_stage_line, 1, written)
            save = accelerate.zero3_save_16bit_model
            clipping = next((o.value for o in options_given if o.name == "gradient_clipping"), None)
            launched = LaunchedConfig(
                where,
                "accelerate",
                None,
                evidence,
                options,
                accelerate.zero_stage,
                mixed_precision,
                # DeepSpeedPlugin gathers when the value reaches it as "true" (a YAML boolean: true, yes, on)
                yaml_boolean(save) if save else False,
                yaml_boolean(accelerate.zero3_init_flag),
            )
            accumulation = next((o.value for o in options_given if o.name == "gradient_accumulation_steps"), None)
            return replace(
                launched,
                inline_clipping=clipping or accelerate.gradient_clipping,
                inline_accumulation=accumulation or accelerate.gradient_accumulation_steps,
            )
    flags = _accelerate_flags(line, launcher, roots, run_from, where, options) if accelerate is None else None
    if flags is not None:
        return flags
    found = _trainer_yaml_config(line, launcher, roots, run_from)
    if found is not None:
        return LaunchedConfig(where, TRAINER_YAML, found[0], found[1], options)
    return LaunchedConfig(where, None, None, None, options)


def _presumed(accelerate: AccelerateConfig) -> str:
    return " (the launch names no config file: the accelerate config beside it, presumed its default)" * (
        accelerate.presumed
    )


def _accelerate_flags(
    line: LaunchLine,
    launcher: str,
    roots: Sequence[str],
    run_from: str | None,
    where: Related,
    options: dict[str, str | None],
) -> LaunchedConfig | None:
    """`accelerate launch --use_deepspeed --deepspeed_config_file ds.json` (or `--zero_stage 2`) with no YAML:
    accelerate's DeepSpeed from its own command-line flags (`launch.py`: `use_deepspeed`, the DeepSpeed
    arguments)."""
    if line.tool != "accelerate" or line.launcher_option("use_deepspeed") is None:
        return None
    given = line.launcher_option("mixed_precision")
    mixed_precision = given.value if given is not None and given.value and UNKNOWN_VALUE not in given.value else None
    config = line.launcher_option("deepspeed_config_file")
    if config is not None and config.value and UNKNOWN_VALUE not in config.value:
        path = _run_path(config.value, line, launcher, roots, run_from)
        evidence = Related(where.path, config.line, config.column, f"--deepspeed_config_file {config.value}")
        return LaunchedConfig(where, "accelerate", path, evidence, options, None, mixed_precision)
    stage = line.launcher_option("zero_stage")
    if stage is not None and stage.value is not None and stage.value.isdigit():
        evidence = Related(where.path, stage.line, stage.column, f"--zero_stage {stage.value}")
        return LaunchedConfig(where, "accelerate", None, evidence, options, int(stage.value), mixed_precision)
    return None


# A YAML key `deepspeed: ds.json` that is not commented out (a Trainer's arguments written in YAML).
_YAML_TRAINER_DEEPSPEED = re.compile(r"^[ \t]*deepspeed[ \t]*:[ \t]*['\"]?([^'\"\s#]+\.json)", re.MULTILINE)


def _trainer_yaml_config(
    line: LaunchLine, launcher: str, roots: Sequence[str], run_from: str | None
) -> tuple[str | None, Related] | None:
    """A YAML file the launch passes (`--train_config configs/train.yaml`) with one `deepspeed: ds.json` key (the
    Trainer's arguments kept in YAML, splatted into `TrainingArguments(**cfg.train)`): the config file, read from
    where the command runs as TrainingArguments opens it (None when not found), and where the YAML names it.
    `run_from`: as for `launched_config`."""
    for option in line.options:
        value = option.value
        if value is None or UNKNOWN_VALUE in value or not value.endswith((".yaml", ".yml")):
            continue
        path = _run_path(value, line, launcher, roots, run_from)
        data = read_input(path) if path is not None else None
        if path is None or data is None or b"deepspeed" not in data:
            continue
        text = data.decode("utf-8", errors="replace")
        matches = list(_YAML_TRAINER_DEEPSPEED.finditer(text))
        if len({m.group(1) for m in matches}) != 1:
            continue
        match = matches[0]
        number = text.count("\n", 0, match.start()) + 1
        evidence = Related(shown_path(path), number, 1, f"deepspeed: {match.group(1)}")
        return _run_path(match.group(1), line, launcher, roots, run_from), evidence
    return None


def _run_path(value: str, line: LaunchLine, launcher: str, roots: Sequence[str], run_from: str | None) -> str | None:
    """A path a launch command writes, found as launchers' paths are (`find_written`, after the command's `cd`),
    else, for a document's command that runs from its script's folder (`run_from`), read from that folder."""
    path = find_written(value, launcher, roots, line.directory, by_name=deepspeed_config_text)
    if path is None and run_from and not os.path.isabs(value):
        candidate = os.path.join(run_from, value)
        path = absolute(candidate) if is_file(candidate) else None
    return path

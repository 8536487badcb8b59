"""The accelerate configs a project ships beside a script that no launcher of the project starts: the evidence left
for how `accelerate launch --config_file <the project's YAML> script.py` runs it.

When every accelerate YAML in the script's folder or in up to two folders above it (stopping at the project's root),
each with its config folders (`configs/`...), says `distributed_type: DEEPSPEED`, there is no other accelerate
setup in the project to run the script with: its `Accelerator()` runs DeepSpeed, with the DeepSpeed config file or
the inline `zero_stage` that YAML gives. A YAML of another type (`MULTI_GPU`), one that starts one process
(`num_processes: 1`), or one that cannot be read leaves the question open (none is returned). With no accelerate
YAML at all, the DeepSpeed configs shipped there decide when each is ZeRO-3 and writes "auto" (`_auto_zero3`)."""

from __future__ import annotations

from pathlib import Path

from dslint.config.facts import Origin
from dslint.diagnostics import Related
from dslint.project.accelerate_yaml import AccelerateConfig, parse_accelerate_yaml, yaml_boolean
from dslint.project.inputs import exists, record, shown_path
from dslint.project.resolved_configs import AccelerateRun, launched_file
from dslint.project.shipped_configs import files_near, project_folders, shipped_zero3

MAX_YAML = 40  # YAML files looked at: a folder of many is no project's launch setup
_MAX_BYTES = 64 * 1024


def shipped_accelerate_runs(script: str) -> list[AccelerateRun]:
    """One run per accelerate YAML shipped near `script` when each of them runs DeepSpeed on several processes;
    [] otherwise."""
    folders = project_folders(script)
    candidates = files_near(folders, lambda entry: entry.suffix in (".yaml", ".yml") and entry.is_file())
    if candidates is None or len(candidates) > MAX_YAML:
        return []
    runs: list[AccelerateRun] = []
    for path in candidates:
        config = _read(path)
        if config is None:
            continue  # YAML of another tool
        if config.distributed_type != "DEEPSPEED" or config.num_processes == 1:
            return []
        runs.append(_run(config, folders[-1]))
    return runs or _auto_zero3(script)


def _auto_zero3(script: str) -> list[AccelerateRun]:
    """With no accelerate YAML: the DeepSpeed configs shipped near the script when every one is ZeRO-3 and writes
    "auto" (a value only the Hugging Face integration fills: `accelerate launch --deepspeed_config_file` hands it
    to the script's Accelerator)."""
    runs: list[AccelerateRun] = []
    for where in shipped_zero3(script):
        config = launched_file(where.path, Origin.TRAINER, (where,))
        if config is None or not _writes_auto(config.values):
            return []
        runs.append(AccelerateRun((where,), config=config))
    return runs


def _writes_auto(value: object) -> bool:
    if isinstance(value, dict):
        return any(_writes_auto(item) for item in value.values())
    return value == "auto"


def _read(path: Path) -> AccelerateConfig | None:
    record(str(path))
    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "distributed_type" not in text:
        return None
    return parse_accelerate_yaml(str(path), text)


def _run(config: AccelerateConfig, root: Path) -> AccelerateRun:
    """The run the YAML sets up; its DeepSpeed config file read from the YAML's folder or the project's root."""
    shown = shown_path(config.path)
    where = Related(shown, config.lines.get("distributed_type", 1), 1, "distributed_type: DEEPSPEED")
    if config.deepspeed_config_file:
        written = Path(config.deepspeed_config_file)
        for base in (Path(config.path).parent, root):
            if not written.is_absolute() and exists(base / written):
                evidence = Related(shown, config.deepspeed_config_file_line, 1, "deepspeed_config_file")
                found = (where, evidence)
                return AccelerateRun(found, config=launched_file(str(base / written), Origin.TRAINER, found))
        return AccelerateRun((where,))
    save = config.zero3_save_16bit_model
    stage_at = Related(shown, config.zero_stage_line, 1, f"zero_stage: {config.zero_stage}")
    via: tuple[Related, ...] = (where, stage_at) if config.zero_stage is not None else (where,)
    return AccelerateRun(
        via, stage=config.zero_stage, save_16bit=yaml_boolean(save) if save else False, mixed_precision=None
    )

"""The accelerate config an `accelerate launch` without `--config_file` is presumed to read.

Such a launch reads the machine's own default config (`accelerate config` writes it under
`~/.cache/huggingface/accelerate/`, outside the project: `launch.py`, `_validate_launch_command`, accelerate 0.2x to
1.16). A project that ships exactly one accelerate config in the launcher's folder or the script's folder, and
launches without naming it, ships the setup its authors ran with (a README's "run `accelerate config`, choose
DeepSpeed", and the file that made): that YAML stands for the default. Not presumed when the command line picks a
backend or carries DeepSpeed settings itself (`--multi_gpu`, `--use_deepspeed`, `--zero_stage`: those say how it
runs, DSL465's question), nor when the folders hold no accelerate config or several.
"""

from __future__ import annotations

from pathlib import Path

from dslint.project.accelerate_deepspeed_off import DEEPSPEED_ONLY_OPTIONS, OTHER_BACKENDS
from dslint.project.inputs import absolute, record
from dslint.project.launchers import LaunchLine

_SUFFIXES = (".yaml", ".yml")
_MAX_BYTES = 64 * 1024
_MAX_FILES = 40  # YAML files looked at in one folder: a folder of many is no launch setup


def presumed_default_config(line: LaunchLine, launcher: str, script: str | None) -> str | None:
    """The one accelerate YAML (`distributed_type:` written) in the launcher's or the script's folder, for an
    `accelerate launch` that names no config file and no backend or DeepSpeed setting; None otherwise."""
    if line.tool != "accelerate" or line.accelerate_config is not None:
        return None
    if line.launcher_option("use_deepspeed", *OTHER_BACKENDS, *DEEPSPEED_ONLY_OPTIONS) is not None:
        return None
    folders = {Path(absolute(launcher)).parent, *((Path(script).parent,) if script is not None else ())}
    found: list[str] = []
    for folder in sorted(folders):
        record(str(folder))  # its listing is an input (the result cache)
        try:
            entries = sorted(entry for entry in folder.iterdir() if entry.suffix in _SUFFIXES)
        except OSError:
            return None
        if len(entries) > _MAX_FILES:
            return None
        found.extend(str(entry) for entry in entries if _is_accelerate_config(entry))
    return found[0] if len(found) == 1 else None


def _is_accelerate_config(path: Path) -> bool:
    record(str(path))
    try:
        return path.is_file() and path.stat().st_size <= _MAX_BYTES and b"distributed_type" in path.read_bytes()
    except OSError:
        return False

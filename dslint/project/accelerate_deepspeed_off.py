"""`accelerate launch` given DeepSpeed settings on its command line (`--deepspeed_config_file ds.json`,
`--zero_stage 3`, ...) that never turns DeepSpeed on (DSL465): without `--use_deepspeed`, accelerate runs
DeepSpeed only when the config file it reads says `distributed_type: DEEPSPEED` (`launch.py`,
`_validate_launch_command`, accelerate 0.2x to 1.16). With `--multi_gpu` (or `--use_fsdp`, `--cpu`...) or a
`--config_file` of another type, it never does: the run is plain DDP and the settings are never read. With
neither, the machine's own default config (`accelerate config`, outside the project) decides.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from dslint.config.accelerate import DEEPSPEED_KEYS
from dslint.project.accelerate_yaml import parse_accelerate_yaml
from dslint.project.inputs import read_input
from dslint.project.launchers import LaunchLine, ScriptOption
from dslint.project.project_index import LaunchIssue, LaunchSite
from dslint.project.shell_directories import UNKNOWN_VALUE

# The launch options accelerate reads only for a DeepSpeed launch ("DeepSpeed Arguments" of `launch.py`) that say
# a DeepSpeed run is meant: all of them but the accumulation and clipping a plain run's command may carry too, and
# the MoE layer classes (a model's setting).
DEEPSPEED_ONLY_OPTIONS = tuple(
    key
    for key in DEEPSPEED_KEYS
    if key not in ("gradient_accumulation_steps", "gradient_clipping", "deepspeed_moe_layer_cls_names")
)
# Each picks another launcher, and keeps the config file's type from deciding.
OTHER_BACKENDS = ("multi_gpu", "use_fsdp", "cpu", "tpu", "use_megatron_lm")
MACHINE_DEFAULT = ""  # `LaunchIssue.detail` when the machine's default accelerate config decides


def deepspeed_never_on(
    site: LaunchSite, sources: Mapping[str, bytes], launcher_text: Callable[[str], str | None]
) -> LaunchIssue | None:
    """The issue of an `accelerate launch` whose DeepSpeed options never take effect; its `detail` says what runs
    instead (`--multi_gpu`, `distributed_type: MULTI_GPU`) or is MACHINE_DEFAULT."""
    line = site.line
    if line.tool != "accelerate" or line.launcher_option("use_deepspeed") is not None:
        return None
    given = next((o for o in line.launcher_options if o.name in DEEPSPEED_ONLY_OPTIONS), None)
    script = sources.get(site.script) if site.script is not None else None
    if script is not None and b"DeepSpeedPlugin" in script:
        return None  # the script builds its own plugin, which turns DeepSpeed on whatever the launch says
    other = other_backend(line)
    if given is None:
        return _deepspeed_file_overridden(site, other)
    if other is not None:
        detail = f"--{other.name}"
    elif line.accelerate_config is not None or line.launcher_option("config_file") is not None:
        if site.accelerate_config is None:
            return None  # a file not found: what it says is not known
        data = read_input(site.accelerate_config)
        parsed = parse_accelerate_yaml(site.accelerate_config, data.decode("utf-8", "replace")) if data else None
        kind = parsed.distributed_type if parsed is not None else None
        if kind is None or kind == "DEEPSPEED" or UNKNOWN_VALUE in kind:
            return None
        detail = f"distributed_type: {kind}"
    else:
        text = launcher_text(line.launcher) or ""
        if "accelerate config" in text or "default_config" in text:
            return None  # the launcher writes the machine's default config itself
        detail = MACHINE_DEFAULT
    end = given.column + len(given.name) + 2
    return LaunchIssue("deepspeed_never_on", given.line, given.column, end, detail, (f"--{given.name}",))


def other_backend(line: LaunchLine) -> ScriptOption | None:
    """`--multi_gpu` (or `--use_fsdp`, `--cpu`...) switched on in an `accelerate launch`: it picks its launcher, and
    the config file's `distributed_type` no longer decides (`_validate_launch_command`)."""
    other = line.launcher_option(*OTHER_BACKENDS)
    if other is not None and other.value is not None and other.value.lower() in ("false", "0", UNKNOWN_VALUE.lower()):
        return None
    return other


def _deepspeed_file_overridden(site: LaunchSite, other: ScriptOption | None) -> LaunchIssue | None:
    """`accelerate launch --config_file ds.yaml --multi_gpu`, the YAML saying `distributed_type: DEEPSPEED`: the
    command line's backend wins, and none of the YAML's DeepSpeed settings is read."""
    if other is None or site.accelerate_config is None:
        return None
    data = read_input(site.accelerate_config)
    parsed = parse_accelerate_yaml(site.accelerate_config, data.decode("utf-8", "replace")) if data else None
    if parsed is None or parsed.distributed_type != "DEEPSPEED":
        return None
    end = other.column + len(other.name) + 2
    shown = os.path.basename(site.accelerate_config)
    return LaunchIssue("deepspeed_never_on", other.line, other.column, end, f"--{other.name}", ("--config_file", shown))

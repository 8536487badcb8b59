"""What an accelerate config file (`accelerate launch --config_file X.yaml`) says about DeepSpeed, as accelerate
reads it (checked against accelerate's `commands/launch.py`, `utils/launch.py` and `utils/dataclasses.py`):

- `accelerate launch` copies every key of the `deepspeed_config:` section onto its parsed arguments
  (`setattr(args, key, value)`, unless the command line gave that option), then hands the DeepSpeed ones to the
  training processes as environment variables (`prepare_deepspeed_cmd_env`: ACCELERATE_DEEPSPEED_ZERO_STAGE, ...),
  which `DeepSpeedPlugin.__post_init__` reads. A key that is no option of `accelerate launch` becomes an
  attribute nothing reads: it is ignored without a word.
- Without `deepspeed_config_file`, the plugin builds the DeepSpeed config from those keys: the stage is
  `zero_stage` (2 when absent), `offload_param_device` becomes `zero_optimization.offload_param.device`.
- `zero3_init_flag` true below stage 3: the plugin warns "DeepSpeed Zero3 Init flag is only applicable for ZeRO
  Stage 3. Setting it to False." and builds the model without `deepspeed.zero.Init`.

A YAML file is an accelerate DeepSpeed config when its top level says `distributed_type: DEEPSPEED`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from dslint.config.tree import Entry, Object, ParseError, Scalar
from dslint.config.yaml_subset import parse_yaml_subset

YAML_SUFFIXES = (".yaml", ".yml")
_DEEPSPEED_TYPE = re.compile(rb"^distributed_type\s*:\s*['\"]?DEEPSPEED\b", re.MULTILINE)
DEFAULT_STAGE = 2  # DeepSpeedPlugin: ACCELERATE_DEEPSPEED_ZERO_STAGE unset

# The options of `accelerate launch`'s DeepSpeed group (the keys `accelerate config` writes in the section).
DEEPSPEED_KEYS = (
    "deepspeed_config_file",
    "zero_stage",
    "offload_optimizer_device",
    "offload_param_device",
    "offload_optimizer_nvme_path",
    "offload_param_nvme_path",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "zero3_init_flag",
    "zero3_save_16bit_model",
    "deepspeed_hostfile",
    "deepspeed_exclusion_filter",
    "deepspeed_inclusion_filter",
    "deepspeed_multinode_launcher",
    "deepspeed_moe_layer_cls_names",
)
# Every other option `accelerate launch` has had (any release up to 1.10): a key of the section that names one
# sets that option, so it is read (and never reported as unknown).
OTHER_LAUNCH_OPTIONS = frozenset(
    (
        "aws_access_key_id",
        "aws_secret_access_key",
        "config_file",
        "cpu",
        "debug",
        "downcast_bf16",
        "dynamo_backend",
        "dynamo_mode",
        "dynamo_use_dynamic",
        "dynamo_use_fullgraph",
        "dynamo_use_regional_compilation",
        "dynmo_backend",
        "enable_cpu_affinity",
        "env",
        "exclude",
        "fp16",
        "fp8_amax_compute_algo",
        "fp8_amax_history_len",
        "fp8_backend",
        "fp8_enable_fsdp_float8_all_gather",
        "fp8_format",
        "fp8_interval",
        "fp8_margin",
        "fp8_opt_level",
        "fp8_override_linear_precision",
        "fp8_pad_inner_dim",
        "fp8_use_autocast_during_eval",
        "fsdp_activation_checkpointing",
        "fsdp_auto_wrap_policy",
        "fsdp_backward_prefetch",
        "fsdp_backward_prefetch_policy",
        "fsdp_cpu_ram_efficient_loading",
        "fsdp_forward_prefetch",
        "fsdp_min_num_params",
        "fsdp_offload_params",
        "fsdp_reshard_after_forward",
        "fsdp_sharding_strategy",
        "fsdp_state_dict_type",
        "fsdp_sync_module_states",
        "fsdp_transformer_layer_cls_to_wrap",
        "fsdp_use_orig_params",
        "fsdp_version",
        "gpu_ids",
        "hostfile",
        "include",
        "ipex",
        "ipex_enabled",
        "launcher",
        "log_dir",
        "machine_rank",
        "main_process_ip",
        "main_process_port",
        "main_training_function",
        "master_addr",
        "master_port",
        "max_restarts",
        "min_num_params",
        "mixed_precision",
        "module",
        "monitor_interval",
        "mpirun_ccl",
        "mpirun_hostfile",
        "mps",
        "multi_gpu",
        "nnodes",
        "no_local_rank",
        "no_python",
        "no_tpu_cluster",
        "node_rank",
        "nproc_per_node",
        "num_cpu_threads_per_process",
        "num_gpus",
        "num_machines",
        "num_nodes",
        "num_processes",
        "offload_params",
        "quiet",
        "rdzv_backend",
        "rdzv_conf",
        "role",
        "same_network",
        "sharding_strategy",
        "tee",
        "tp_size",
        "tpu",
        "tpu_cluster",
        "tpu_num_cores",
        "tpu_use_sudo",
        "transformer_layer_cls_to_wrap",
        "use_deepspeed",
        "use_env",
        "use_fsdp",
        "use_megatron_lm",
        "use_mps_device",
        "use_parallelism_config",
        "use_tp",
        "use_xpu",
        "vm",
        "xpu_enabled",
    )
)
_MEGATRON_OR_PARALLELISM = ("megatron_lm_", "parallelism_config_")  # whole families of launch options
_TRUE_WORDS = frozenset({"y", "yes", "t", "true", "on", "1"})  # accelerate's str_to_bool
_OFFLOAD_DEVICES = ("cpu", "nvme")


def is_accelerate_candidate(data: bytes) -> bool:
    """A text test: the file's top level says `distributed_type: DEEPSPEED` (decided for sure once parsed)."""
    return b"DEEPSPEED" in data and _DEEPSPEED_TYPE.search(data) is not None


def is_launch_option(key: str) -> bool:
    return key in DEEPSPEED_KEYS or key in OTHER_LAUNCH_OPTIONS or key.startswith(_MEGATRON_OR_PARALLELISM)


def suggestion(key: str) -> str | None:
    """The DeepSpeed key of accelerate closest to a misspelt one."""
    found = difflib.get_close_matches(key.lower(), DEEPSPEED_KEYS, n=1, cutoff=0.75)
    return found[0] if found else None


@dataclass(frozen=True)
class AccelerateDeepSpeed:
    """An accelerate config that runs DeepSpeed, and its `deepspeed_config:` section (None when absent)."""

    root: Object
    section: Object | None

    def entry(self, key: str) -> Entry | None:
        return self.section.entry(key) if self.section is not None else None

    def config_file(self) -> str | None:
        """The DeepSpeed config file the section names (`deepspeed_config_file`), if any."""
        entry = self.entry("deepspeed_config_file")
        if entry is None or not isinstance(entry.value, Scalar):
            return None
        value = entry.value.value
        return value if isinstance(value, str) and value.strip().lower() not in ("", "none") else None

    def stage(self) -> int | None:
        """The ZeRO stage accelerate builds the DeepSpeed config with, when the section decides it: `zero_stage`,
        else 2. None when a `deepspeed_config_file` decides it instead, or the value cannot be read."""
        if self.config_file() is not None:
            return None
        entry = self.entry("zero_stage")
        if entry is None:
            return DEFAULT_STAGE
        value = entry.value.value if isinstance(entry.value, Scalar) else None
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3 else None

    def flag(self, key: str) -> bool | None:
        """A yes/no key as accelerate reads it (the text of the value, lower-cased, through str_to_bool)."""
        entry = self.entry(key)
        if entry is None or not isinstance(entry.value, Scalar) or entry.value.value is None:
            return None
        value = entry.value.value
        text = str(value).lower() if isinstance(value, (bool, int, str)) else None
        return None if text is None else text in _TRUE_WORDS

    def offload_device(self, key: str) -> str | None:
        """`cpu` or `nvme` when the key offloads (accelerate lower-cases it), else None."""
        entry = self.entry(key)
        value = entry.value.value if entry is not None and isinstance(entry.value, Scalar) else None
        return value.lower() if isinstance(value, str) and value.lower() in _OFFLOAD_DEVICES else None


def read_accelerate_config(text: str) -> AccelerateDeepSpeed | None:
    """The accelerate config `text` when it runs DeepSpeed, else None; ParseError for YAML it cannot read."""
    root = parse_yaml_subset(text)
    kind = root.get("distributed_type")
    if not isinstance(kind, Scalar) or kind.value != "DEEPSPEED":
        return None
    section = root.get("deepspeed_config")
    return AccelerateDeepSpeed(root, section if isinstance(section, Object) else None)


__all__ = ["YAML_SUFFIXES", "AccelerateDeepSpeed", "ParseError", "is_accelerate_candidate", "read_accelerate_config"]

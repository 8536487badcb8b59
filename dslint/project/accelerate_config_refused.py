"""`accelerate launch --config_file ds.json` naming a DeepSpeed config instead of an accelerate one (DSL479).

accelerate reads its `--config_file` as its own config (`commands/config/config_args.py`, accelerate 1.16:
`load_config_from_file` reads a `.json` file with `json.load`, any other as YAML; `ClusterConfig.process_config`
raises "A `distributed_type` must be specified in the config file", and `from_json_file` / `from_yaml_file`
raise on every key it does not know, `train_batch_size`, `zero_optimization`...). A DeepSpeed config given there
stops the launch before any process starts; it belongs in `--deepspeed_config_file` (with `--use_deepspeed`) or
under `deepspeed_config_file:` of an accelerate YAML.
"""

from __future__ import annotations

from pathlib import Path

from dslint.config.recognition import is_config_name, is_deepspeed_config
from dslint.config.tree import Object
from dslint.diagnostics import Related
from dslint.project.config_access import load_config_tree
from dslint.project.inputs import shown_path
from dslint.project.project_index import LaunchIssue, LaunchSite

KIND = "deepspeed_config_as_accelerate_config"


def deepspeed_config_as_accelerate_config(site: LaunchSite) -> LaunchIssue | None:
    """The issue of an `accelerate launch` whose `--config_file` is a project file that is a DeepSpeed config
    (recognised as the config rules recognise one) with no `distributed_type` key of its own."""
    line = site.line
    option = line.launcher_option("config_file")
    if line.tool != "accelerate" or site.accelerate_config is None or option is None:
        return None
    path = Path(site.accelerate_config)
    if path.suffix.lower() != ".json":  # another suffix is read as YAML: a JSON-in-YAML file is not this mistake
        return None
    root = load_config_tree(path, line.launcher)
    if not isinstance(root, Object) or root.entry("distributed_type") is not None:
        return None
    if not is_deepspeed_config(root, is_config_name(path)):
        return None
    shown = shown_path(site.accelerate_config)
    first = next(iter(root.entries), None)
    line_number, column = (first.key_start.line, first.key_start.column) if first is not None else (1, 1)
    related = (Related(shown, line_number, column, "a DeepSpeed config, not accelerate's"),)
    end = option.column + len("--config_file")
    return LaunchIssue(KIND, option.line, option.column, end, shown, ("--config_file",), related=related)

"""The DeepSpeed configs a project ships beside a script: the evidence left when the script takes its config from
the command line and no launcher of the project gives one (`deepspeed.add_config_arguments`, run by hand).

A rule that would warn "under ZeRO-3" for a stage it cannot read asks whether any config shipped there could be
ZeRO-3: when every one of them is known to run a lower stage, the warning has nothing to stand on."""

from __future__ import annotations

from pathlib import Path

from dslint.config import facts as config_facts
from dslint.config.recognition import is_candidate, is_config_name, is_deepspeed_config
from dslint.config.tree import Object
from dslint.project.config_link import load_config_tree

# Folders beside a script where projects keep its configs.
CONFIG_FOLDERS = ("config", "configs", "ds_config", "ds_configs", "deepspeed", "deepspeed_configs")
MAX_SHIPPED = 40


def shipped_stages(script: str) -> list[int] | None:
    """The ZeRO stage of each DeepSpeed config file in `script`'s folder and its config folders (`configs/`...);
    None when there is none, too many to say, or one whose stage cannot be read."""
    folder = Path(script).parent
    candidates: list[Path] = []
    for place in (folder, *(folder / name for name in CONFIG_FOLDERS)):
        try:
            entries = sorted(place.iterdir()) if place.is_dir() else []
        except OSError:
            return None
        candidates.extend(entry for entry in entries if entry.is_file() and is_candidate(entry))
    if not candidates or len(candidates) > MAX_SHIPPED:
        return None
    stages: list[int] = []
    for path in candidates:
        tree = load_config_tree(path, script)
        if not isinstance(tree, Object) or not is_deepspeed_config(tree, is_config_name(path)):
            continue  # a JSON file of another tool
        stage = config_facts.zero_stage(tree)
        if stage is None:
            return None
        stages.append(stage)
    return stages or None

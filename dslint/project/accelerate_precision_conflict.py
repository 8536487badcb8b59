"""`accelerate launch --mixed_precision bf16` of a script whose own `DeepSpeedPlugin(hf_ds_config="ds.json")` reads a
DeepSpeed config that enables the other 16-bit type (`"fp16": {"enabled": true}`): DSL474.

The `Accelerator` takes its precision from its `mixed_precision` argument, else from ACCELERATE_MIXED_PRECISION,
which `accelerate launch` sets from `--mixed_precision` or the launch's config file (`mixed_precision:`); with a
DeepSpeed plugin, `AcceleratorState` then calls `DeepSpeedPlugin.set_mixed_precision`, which raises a ValueError
("`--mixed_precision` arg cannot be set to `bf16` when `fp16` is set in the DeepSpeed config file") when the config's
other section says `"enabled": true` (accelerate 0.20 to 1.x, `utils/dataclasses.py`). Every process stops in
`Accelerator()`, before training.

Conservative: the plugin's config must be a literal path (or a name bound once to one) found beside the launch,
its `enabled` written `true`; the script's `Accelerator(...)` calls must give no `mixed_precision` (theirs wins
over the launch's); `fp8` (which newer releases run in bf16) is not judged.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping
from pathlib import Path

from dslint.config.tree import Object, to_python
from dslint.model.library import ACCELERATOR_CALLS, DEEPSPEED_PLUGIN_CALLS
from dslint.model.summary import SummaryStore
from dslint.project.accelerate_yaml import parse_accelerate_yaml
from dslint.project.config_access import load_config_tree
from dslint.project.inputs import find_written, read_input
from dslint.project.project_index import LaunchIssue, LaunchSite

# `set_mixed_precision`: the section that must not be on for each launch precision
_OTHER_SECTION = {"bf16": "fp16", "fp16": "bf16"}


def precision_conflict(
    site: LaunchSite, sources: Mapping[str, bytes], store: SummaryStore, roots: tuple[str, ...] = ()
) -> LaunchIssue | None:
    line = site.line
    if line.tool != "accelerate" or site.script is None:
        return None
    data = sources.get(site.script)
    if data is None or b"DeepSpeedPlugin" not in data or b"hf_ds_config" not in data:
        return None
    given = line.launcher_option("mixed_precision")
    precision = given.value.lower() if given is not None and given.value is not None else None
    where = given
    if given is None and site.accelerate_config is not None:
        raw = read_input(site.accelerate_config)
        parsed = parse_accelerate_yaml(site.accelerate_config, raw.decode("utf-8", "replace")) if raw else None
        precision = parsed.mixed_precision.lower() if parsed is not None and parsed.mixed_precision else None
        where = line.launcher_option("config_file")
    other = _OTHER_SECTION.get(precision or "")
    if other is None or where is None:
        return None
    written = _plugin_config(store, site.script)
    if written is None:
        return None
    config = find_written(written, line.launcher, roots, line.directory)
    if config is None or not _enabled(config, other, line.launcher):
        return None
    end = where.column + len(where.name) + 2
    script = os.path.basename(site.script)
    detail = f"{precision}|{other}|{os.path.basename(config)}|{script}"
    return LaunchIssue("precision_conflict", where.line, where.column, end, detail, (f"--{where.name}",))


def _plugin_config(store: SummaryStore, path: str) -> str | None:
    """The path written as the `hf_ds_config` of the script's one `DeepSpeedPlugin(...)`, when every
    `Accelerator(...)` of the script leaves its precision to the launch; None otherwise."""
    summary = store.get(path)
    if summary is None:
        return None
    plugins: list[ast.Call] = []
    accelerators: list[ast.Call] = []
    for _, calls in summary.body_calls():
        for call in calls:
            name = summary.qualified(call.func)
            if name in DEEPSPEED_PLUGIN_CALLS:
                plugins.append(call)
            elif name in ACCELERATOR_CALLS:
                accelerators.append(call)
    if len(plugins) != 1 or not any(k.arg == "deepspeed_plugin" for c in accelerators for k in c.keywords):
        return None
    for call in accelerators:
        if call.args or any(k.arg in (None, "mixed_precision") for k in call.keywords):
            return None  # its own precision (or one it may pass through **kwargs) decides
    value = next((k.value for k in plugins[0].keywords if k.arg == "hf_ds_config"), None)
    if isinstance(value, ast.Name):
        value = _bound_once(summary.tree, value.id)
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.endswith(".json"):
        return value.value
    return None


def _bound_once(tree: ast.Module, name: str) -> ast.expr | None:
    bound = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    ]
    stored = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)]
    return bound[0] if len(bound) == 1 and len(stored) == 1 else None


def _enabled(path: str, section: str, named_by: str) -> bool:
    """The config's `section` says `"enabled": true` (or the string "true", which accelerate reads the same), as
    the project reads config files (`config_access.load_config_tree`: cached, within the project of `named_by`)."""
    tree = load_config_tree(Path(path), named_by)
    part = tree.get(section) if isinstance(tree, Object) else None
    value = part.get("enabled") if isinstance(part, Object) else None
    enabled = to_python(value) if value is not None else None
    return enabled is True or (isinstance(enabled, str) and enabled.lower() == "true")

"""The accelerate settings a launched script's own `DeepSpeedPlugin(...)` gives in code.

`accelerate launch --config_file acc.yaml` hands the YAML's `deepspeed_config:` settings to the processes as
ACCELERATE_DEEPSPEED_* variables, and `DeepSpeedPlugin.__post_init__` reads each of them only for a field the code
left None (`if self.zero_stage is None: self.zero_stage = int(os.environ.get(prefix + "ZERO_STAGE", 2))`,
accelerate 0.20 to 1.x, `utils/dataclasses.py`). So a field the script's plugin is given is the run's, whatever the
YAML says: the accelerate rules leave the YAML's setting of it alone (`AccelerateContext.given_in_code`).
"""

from __future__ import annotations

import ast

from dslint.model.library import DEEPSPEED_PLUGIN_CALLS
from dslint.model.summary import SummaryStore
from dslint.project.project_index import ProjectIndex


def plugin_fields(store: SummaryStore, script: str) -> frozenset[str]:
    """The fields every `DeepSpeedPlugin(...)` call of `script` is given (keywords whose value is not `None`);
    none when it builds no plugin, or one whose arguments are not all named."""
    data = store.sources.get(script, b"")
    if b"DeepSpeedPlugin" not in data:
        return frozenset()
    summary = store.get(script)
    if summary is None:
        return frozenset()
    given: frozenset[str] | None = None
    for _, calls in summary.body_calls():
        for call in calls:
            if summary.qualified(call.func) not in DEEPSPEED_PLUGIN_CALLS:
                continue
            if call.args or any(k.arg is None for k in call.keywords):
                return frozenset()  # fields given by position or through **kwargs: not known
            named = frozenset(
                k.arg
                for k in call.keywords
                if k.arg is not None and not (isinstance(k.value, ast.Constant) and k.value.value is None)
            )
            given = named if given is None else given & named
    return given or frozenset()


def record_plugin_fields(index: ProjectIndex, store: SummaryStore) -> None:
    """`ProjectIndex.plugin_fields`: for each launch passing an accelerate YAML, what its script's plugin gives."""
    for launch in index.launches:
        if launch.accelerate is not None and launch.script is not None:
            fields = plugin_fields(store, launch.script)
            index.plugin_fields.setdefault(launch.accelerate.path, []).append(fields)

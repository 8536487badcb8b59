"""Whether a hand cast of the model before `deepspeed.initialize` is one the engine would make itself (DSL104)."""

from __future__ import annotations

import libcst as cst

from dslint.config.versions import BUFFERS_KEPT_SINCE
from dslint.project.config_link import resolve_config_expression
from dslint.script.context import ScriptContext
from dslint.script.model_moves import ModelSink, cast_dtype

# The config's sections that make the engine cast its module, and the type they cast to.
_HALF_SECTIONS = (("fp16", "float16"), ("bf16", "bfloat16"), ("bfloat16", "bfloat16"))


def engine_casts_alike(context: ScriptContext, node: cst.Call, sink: ModelSink) -> bool:
    """Before 0.19.2 the engine casts the whole module, buffers too, to the half type its config enables, and
    builds its fp32 master weights from the cast parameters: a hand cast `node` to that same type, before this
    file's `initialize` (`sink`) of a config read here, changes nothing. Since 0.19.2 the engine keeps the buffers
    in fp32, which such a cast does not."""
    if not context.deepspeed_version < BUFFERS_KEPT_SINCE or sink.call is None:
        return False
    init = context.facts.initialize_call_for(sink.call)
    resolved = resolve_config_expression(context, init.config) if init is not None and init.config else None
    if resolved is None:
        return False
    enabled = [
        dtype
        for section, dtype in _HALF_SECTIONS
        if isinstance(part := resolved.values.get(section), dict) and part.get("enabled") is True
    ]
    return len(enabled) == 1 and cast_dtype(node, context.code) == enabled[0]

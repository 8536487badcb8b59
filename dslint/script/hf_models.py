"""Hugging Face model loading under DeepSpeed: `from_pretrained` calls, and where the script tells DeepSpeed
(and transformers) that ZeRO-3 is on.

transformers learns that ZeRO-3 is on only through a live `HfDeepSpeedConfig` (held by a weak reference, so
the object must stay referenced; `TrainingArguments(deepspeed=...)` keeps one). With it, `from_pretrained`
builds the model partitioned (`zero.Init`) and refuses a `device_map`
("DeepSpeed Zero-3 is not compatible with passing a `device_map`").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from dslint.project.config_link import resolve_config
from dslint.script.context import ScriptContext
from dslint.script.facts import InitializeCall, Scope, ScopeKind

MODEL_CLASS = re.compile(r"^(AutoModel\w*|\w*Model|\w+For[A-Z]\w*)$")
TRAINING_ARGUMENTS = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments"})


def hf_class_name(context: ScriptContext, node: cst.BaseExpression) -> str | None:
    """`transformers.X` (through imports) -> "X"."""
    qualified = context.facts.qualified(node)
    if qualified is None or not qualified.startswith("transformers."):
        return None
    return qualified.rsplit(".", 1)[-1]


def is_model_from_pretrained(context: ScriptContext, call: cst.Call) -> bool:
    """`AutoModelForCausalLM.from_pretrained(...)`, `LlamaForCausalLM.from_pretrained(...)`; not tokenizers."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"):
        return False
    name = hf_class_name(context, func.value)
    return name is not None and bool(MODEL_CLASS.match(name))


def is_hf_deepspeed_config(context: ScriptContext, call: cst.Call) -> bool:
    return hf_class_name(context, call.func) == "HfDeepSpeedConfig"


def is_training_arguments(context: ScriptContext, call: cst.Call) -> bool:
    return hf_class_name(context, call.func) in TRAINING_ARGUMENTS


@dataclass(frozen=True)
class ZeroSource:
    """A place where the script hands DeepSpeed a config: initialize, HfDeepSpeedConfig, TrainingArguments."""

    call: cst.Call
    kind: str  # "initialize" | "HfDeepSpeedConfig" | "TrainingArguments"
    stage: int | None  # None: the config cannot be read
    bound: bool  # the call's result is assigned (an HfDeepSpeedConfig that stays alive)


def _config_argument(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is not None and arg.keyword.value == keyword) or (
            arg.keyword is None and index == 0 and keyword == "config_file_or_dict"
        ):
            return arg.value
    return None


def _stage_of(context: ScriptContext, call: cst.Call, expression: cst.BaseExpression) -> int | None:
    facts = context.facts
    probe = InitializeCall(
        call=call,
        scope=facts.scope_at(call),
        start=facts.start(call),
        end=facts.end(call),
        arguments={"config": expression},
    )
    config = resolve_config(context, probe)
    return None if config is None else config.zero_stage


class ZeroSources:
    """Every ZeRO config source of one file, collected on demand from the calls a rule visits."""

    def __init__(self, context: ScriptContext) -> None:
        self.context = context
        self.sources: list[ZeroSource] = []
        for init in context.facts.initialize_calls:
            config = resolve_config(context, init)
            stage = None if config is None else config.zero_stage
            self.sources.append(ZeroSource(init.call, "initialize", stage, bound=True))

    def consider(self, call: cst.Call) -> None:
        """Record `call` if it is an HfDeepSpeedConfig or TrainingArguments with a DeepSpeed config."""
        context = self.context
        if is_hf_deepspeed_config(context, call):
            expression = _config_argument(call, "config_file_or_dict")
            kind = "HfDeepSpeedConfig"
        elif is_training_arguments(context, call):
            expression = _config_argument(call, "deepspeed")
            kind = "TrainingArguments"
        else:
            return
        if expression is None:
            return
        if isinstance(expression, cst.Name) and expression.value == "None":
            return
        small = context.facts.small_statement_of_call.get(call)
        bound = isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is call
        self.sources.append(ZeroSource(call, kind, _stage_of(context, call, expression), bound))

    def of_kind(self, *kinds: str) -> Iterator[ZeroSource]:
        return (s for s in self.sources if s.kind in kinds)

    def in_scope_before(self, source: ZeroSource, scope: Scope, call: cst.Call) -> bool:
        """Whether `source` runs before `call`: earlier in the same scope, or at module level above a function."""
        facts = self.context.facts
        source_scope = facts.scope_at(source.call)
        if source_scope is scope:
            return facts.start(source.call) < facts.start(call)
        return source_scope.kind is ScopeKind.MODULE and scope.kind is not ScopeKind.MODULE


def keyword_value(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"

"""Hugging Face model loading under DeepSpeed: `from_pretrained` calls, and where the script tells DeepSpeed
(and transformers) that ZeRO-3 is on.

transformers learns that ZeRO-3 is on only through a live `HfDeepSpeedConfig` (held by a weak reference, so
the object must stay referenced; `TrainingArguments(deepspeed=...)` keeps one). With it, `from_pretrained`
builds the model partitioned (`zero.Init`) and refuses a `device_map`
("DeepSpeed Zero-3 is not compatible with passing a `device_map`").
"""

from __future__ import annotations

import libcst as cst

from dslint.model.library import TRANSFORMERS_MODEL_CLASS, TRL_TRAINING_ARGUMENTS, is_training_arguments_name
from dslint.script.context import ScriptContext
from dslint.script.names import dotted_name

TRAINING_ARGUMENTS = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments"})


def hf_class_name(context: ScriptContext, node: cst.BaseExpression) -> str | None:
    """`transformers.X` (through imports) -> "X"."""
    qualified = context.facts.qualified(node)
    if qualified is None or not qualified.startswith("transformers."):
        return None
    return qualified.rsplit(".", 1)[-1]


def is_model_from_pretrained(
    context: ScriptContext, call: cst.Call, methods: frozenset[str] = frozenset({"from_pretrained"})
) -> bool:
    """`AutoModelForCausalLM.from_pretrained(...)`, `LlamaForCausalLM.from_pretrained(...)`; not tokenizers.
    `methods`: the class methods that count (`library.HF_MODEL_BUILDS`: `from_config` too)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in methods):
        return False
    name = hf_class_name(context, func.value)
    if name is not None:
        return bool(TRANSFORMERS_MODEL_CLASS.match(name))
    if not isinstance(func.value, cst.Name):
        return False
    project = context.facts.project
    return func.value.value in _model_subclasses(context) or (
        project is not None and func.value.value in project.model_classes  # a model class of another module
    )


def _model_subclasses(context: ScriptContext) -> set[str]:
    """Classes of this module deriving from a transformers model class that keep its `from_pretrained`
    (`class Policy(LlamaForCausalLM): ...` with no `from_pretrained` of its own)."""
    found: set[str] = set()
    for statement in context.module.body:
        if not isinstance(statement, cst.ClassDef):
            continue
        own = {s.name.value for s in statement.body.body if isinstance(s, cst.FunctionDef)}
        if "from_pretrained" in own:
            continue
        for base in statement.bases:
            name = hf_class_name(context, base.value)
            if (name is not None and TRANSFORMERS_MODEL_CLASS.match(name)) or (
                isinstance(base.value, cst.Name) and base.value.value in found
            ):
                found.add(statement.name.value)
                break
    return found


def is_hf_deepspeed_config(context: ScriptContext, call: cst.Call) -> bool:
    return hf_class_name(context, call.func) == "HfDeepSpeedConfig"


def is_training_arguments(context: ScriptContext, call: cst.Call) -> bool:
    """transformers' `TrainingArguments` / `Seq2SeqTrainingArguments`, one of TRL's configs (`trl.SFTConfig`), or a
    project class deriving from one (`ProjectFacts.arguments_classes`)."""
    if hf_class_name(context, call.func) in TRAINING_ARGUMENTS:
        return True
    project = context.facts.project
    if project is not None and project.arguments_classes:  # a project class deriving from one
        name = dotted_name(call.func)
        local = _module_class(context.module, name) if name is not None else None
        if local is not None:  # this module's own class of that name: its bases decide
            bases = {(dotted_name(base.value) or "").rsplit(".", 1)[-1] for base in local.bases}
            return any(is_training_arguments_name(b) or b in project.arguments_classes for b in bases)
        if name is not None and name.rsplit(".", 1)[-1] in project.arguments_classes:
            return True
    qualified = context.facts.qualified(call.func)
    return (
        qualified is not None
        and qualified.startswith("trl.")
        and qualified.rsplit(".", 1)[-1] in TRL_TRAINING_ARGUMENTS
    )


def _module_class(module: cst.Module, name: str) -> cst.ClassDef | None:
    """The class statement of that name at the module's top level (or inside an `if` there)."""
    for statement in module.body:
        found = [statement] if isinstance(statement, cst.ClassDef) else []
        if isinstance(statement, cst.If):
            found = [s for s in statement.body.body if isinstance(s, cst.ClassDef)]
        for node in found:
            if node.name.value == name:
                return node
    return None


def keyword_value(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def trainer_config_argument(context: ScriptContext, call: cst.Call) -> cst.BaseExpression | None:
    """The `deepspeed=` of a `*TrainingArguments(...)` call (TRL's configs too): the DeepSpeed config its Trainer
    runs with; None for any other call, or `deepspeed=None`."""
    if not is_training_arguments(context, call):
        return None
    expression = keyword_value(call, "deepspeed")
    return expression if expression is not None and not is_none(expression) else None

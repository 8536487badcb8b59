"""State dicts taken from a Hugging Face Trainer's model and written to disk: `trainer.model.state_dict()` whose result
(or a dict made from it: `{k: v.cpu() for k, v in state.items()}`) reaches `torch.save(...)` or a `state_dict=`
argument (`trainer._save(out, state_dict=...)`, `model.save_pretrained(out, state_dict=...)`) in the same function.
The Trainer is a name bound to a `transformers.*Trainer(...)` / `trl.*Trainer(...)` call (or of a class of the
script deriving from one that keeps its saving), or a parameter annotated with such a class. Under ZeRO-3 the
Trainer's model holds partitioned parameters, so the saved tensors are empty; whether ZeRO-3 is on is the rule's
question (the configs the script is launched with)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from dslint.model.bindings import Scope
from dslint.model.library import BASE_MODEL_METHODS, SELF_RETURNING_METHODS, is_trainer_class_name
from dslint.script.facts import BindingKind, ScriptFacts, method_name
from dslint.script.hf_trainers import local_trainer_classes
from dslint.script.model_moves import argument_at
from dslint.script.walk import own_nodes

TORCH_SAVE = "torch.save"


def is_hf_trainer_class(facts: ScriptFacts, node: cst.BaseExpression) -> bool:
    """A transformers or trl `*Trainer` class, or a class of the script deriving from one that keeps its saving
    (`class NoShuffleTrainer(SFTTrainer)`: `hf_trainers.local_trainer_classes`)."""
    if isinstance(node, cst.Name) and node.value in _local_trainers(facts):
        return True
    qualified = facts.qualified(node)
    return qualified is not None and is_trainer_class_name(qualified)


_LOCAL_TRAINERS: dict[int, tuple[cst.Module, frozenset[str]]] = {}


def _local_trainers(facts: ScriptFacts) -> frozenset[str]:
    """The script's own Trainer classes, read once per module."""
    known = _LOCAL_TRAINERS.get(id(facts.module))
    if known is not None and known[0] is facts.module:
        return known[1]
    if len(_LOCAL_TRAINERS) > 64:
        _LOCAL_TRAINERS.clear()
    imported = facts.project.trainer_classes if facts.project is not None else frozenset()
    found = local_trainer_classes(facts.module, facts.qualified, imported)
    _LOCAL_TRAINERS[id(facts.module)] = (facts.module, found)
    return found


def trainer_state_dicts_saved(facts: ScriptFacts, module: cst.Module) -> list[cst.Call]:
    """The `<trainer>.model.state_dict()` calls whose result is written to disk in their own function."""
    found: list[cst.Call] = []
    for call in _calls(facts):
        if method_name(call) != "state_dict" or not isinstance(call.func, cst.Attribute):
            continue
        holder = call.func.value
        if not (isinstance(holder, cst.Attribute) and holder.attr.value == "model"):
            continue
        if not _is_trainer(facts, holder.value, call):
            continue
        if _saved(facts, call):
            found.append(call)
    return found


def _is_trainer(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    if not isinstance(expr, cst.Name):
        return False
    binding = facts.binding_at(expr.value, facts.scope_at(at), facts.start(at))
    if binding is None:
        return False
    if binding.kind is BindingKind.PARAMETER:
        scope = binding.scope.node
        if not isinstance(scope, cst.FunctionDef):
            return False
        params = scope.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == expr.value:
                return param.annotation is not None and is_hf_trainer_class(facts, param.annotation.annotation)
        return False
    value = binding.value
    return binding.kind is BindingKind.OTHER and isinstance(value, cst.Call) and is_hf_trainer_class(facts, value.func)


def _saved(facts: ScriptFacts, call: cst.Call) -> bool:
    """Whether the state dict `call` returns is written to disk in the same function: directly inside a save, or
    through names bound to it or to expressions that read such names."""
    scope = facts.scope_at(call).node
    body = scope.body if isinstance(scope, cst.FunctionDef) else scope
    tainted: set[str] = set()
    assigns = [node for node in own_nodes(body) if isinstance(node, cst.Assign)]
    changed = True
    while changed:
        changed = False
        for assign in assigns:
            if not (_contains(assign.value, call) or _reads(assign.value, tainted)):
                continue
            for target in assign.targets:
                if isinstance(target.target, cst.Name) and target.target.value not in tainted:
                    tainted.add(target.target.value)
                    changed = True
    for node in own_nodes(body):
        if not isinstance(node, cst.Call):
            continue
        for index, arg in enumerate(node.args):
            saved = (index == 0 and arg.keyword is None and facts.qualified(node.func) == TORCH_SAVE) or (
                arg.keyword is not None and arg.keyword.value == "state_dict"
            )
            if saved and (_contains(arg.value, call) or _reads(arg.value, tainted)):
                return True
    return False


def _contains(expr: cst.CSTNode, wanted: cst.CSTNode) -> bool:
    return expr is wanted or any(node is wanted for node in own_nodes(expr))


def _reads(expr: cst.CSTNode, names: set[str]) -> bool:
    """Whether `expr` reads one of `names` (an attribute's name or a keyword is not a read)."""
    if not names:
        return False
    nodes = [expr, *own_nodes(expr)]
    not_reads = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)}
    not_reads.update(id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None)
    return any(isinstance(n, cst.Name) and n.value in names and id(n) not in not_reads for n in nodes)


def _calls(facts: ScriptFacts) -> list[cst.Call]:
    """Every call of the module, from the facts' one traversal (`scope_of_node` holds each call): walking the tree
    again through libcst's `children`, which visits each node to list them, cost a third of the lint's CPU time
    on DeepSpeed's own source."""
    return [node for node in facts.scope_of_node if isinstance(node, cst.Call)]


def trainer_models_saved(facts: ScriptFacts) -> list[cst.Call]:
    """Saves of the model a Hugging Face Trainer trained, made after `trainer.train()` in the same function:
    `model.save_pretrained(dir)` without `state_dict=`, or `model.state_dict()` written to disk, where `model` is
    the name handed to the Trainer (`Trainer(model=model, ...)`), a wrapper of it bound later
    (`model = torch.compile(model)`), or the Trainer's own `trainer.model`. Under ZeRO-3 the Trainer leaves that
    model's parameters partitioned: each rank holds an empty `param.data`, so what is saved is empty
    (transformers gathers only in `save_model`)."""
    trained = _trained_models(facts)
    return [
        call
        for call, holder in _model_saves(facts)
        if (_own_model(holder) is not None and _after_training(facts, holder, call, trained))
        or _trainers_model_after_training(facts, holder, call)
    ]


def _trainers_model_after_training(facts: ScriptFacts, holder: cst.BaseExpression, call: cst.Call) -> bool:
    """`trainer.model` saved after `trainer.train()` in the same scope, where `trainer` holds a Trainer: the model
    the Trainer trained (its `model` attribute; DeepSpeed's engine is `trainer.model_wrapped`)."""
    if not (isinstance(holder, cst.Attribute) and holder.attr.value == "model" and isinstance(holder.value, cst.Name)):
        return False
    if not _is_trainer(facts, holder.value, call):
        return False
    at = facts.start(call)
    return any(train < at for train in _trainings(facts, _calls(facts), holder.value.value, facts.scope_at(call)))


def _model_saves(facts: ScriptFacts) -> Iterator[tuple[cst.Call, cst.BaseExpression]]:
    """(the call, the model it saves) for `X.save_pretrained(dir)` without `state_dict=` (a state dict given
    explicitly: where it comes from is another question) and `X.state_dict()` written to disk."""
    for call in _calls(facts):
        name = method_name(call)
        if name not in ("save_pretrained", "state_dict") or not isinstance(call.func, cst.Attribute):
            continue
        if name == "save_pretrained" and any(
            a.keyword is not None and a.keyword.value == "state_dict" for a in call.args
        ):
            continue
        if name == "state_dict" and not _saved(facts, call):
            continue
        yield call, call.func.value


def _own_model(node: cst.BaseExpression) -> str | None:
    """A name (`model`), or an attribute of the method's own instance (`self.model`), as a binding key."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return f"self.{node.attr.value}"
    return None


def _trained_models(facts: ScriptFacts) -> list[tuple[cst.BaseExpression, int]]:
    """The models (names, `self.model`) handed to a Trainer whose `train()` is called later in the same scope,
    with the position of that `train()` call."""
    found: list[tuple[cst.BaseExpression, int]] = []
    helpers: dict[str, tuple[int, str]] = {}  # module-level functions training a parameter: its position, name
    calls = _calls(facts)
    for call in calls:
        if not is_hf_trainer_class(facts, call.func):
            continue
        model = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "model"), None)
        if model is None and call.args and call.args[0].keyword is None and not call.args[0].star:
            model = call.args[0].value
        # `model=peft_model if args.lora else model`: each arm is the model trained on its path
        models = [model.body, model.orelse] if isinstance(model, cst.IfExp) else [model] if model is not None else []
        scope, at = facts.scope_at(call), facts.start(call)
        for trainer in _bound_names(facts, call):
            trainings = [train for train in _trainings(facts, calls, trainer, scope) if train > at]
            found.extend((handed, train) for handed in models if _own_model(handed) is not None for train in trainings)
            if trainings and isinstance(scope.node, cst.FunctionDef) and scope.parent is facts.module_scope:
                names = [param.name.value for param in scope.node.params.params]
                helpers.update(
                    (scope.node.name.value, (names.index(h.value), h.value))
                    for h in models
                    if isinstance(h, cst.Name) and h.value in names
                )
    return found + _trained_by_helpers(facts, calls, helpers)


def _trained_by_helpers(
    facts: ScriptFacts, calls: list[cst.Call], helpers: dict[str, tuple[int, str]]
) -> list[tuple[cst.BaseExpression, int]]:
    """A module-level function of this file that trains a model it receives (`def train_model(model, ...):
    Trainer(model=model, ...).train()`; `helpers`: its name -> the parameter's position and name): the model each
    call of it in this file passes, trained at the call."""
    found: list[tuple[cst.BaseExpression, int]] = []
    for call in calls if helpers else ():
        if not isinstance(call.func, cst.Name) or call.func.value not in helpers:
            continue
        index, name = helpers[call.func.value]
        given = argument_at(call, None, name) or argument_at(call, index, None)
        if given is not None and _own_model(given) is not None:
            found.append((given, facts.start(call)))
    return found


def _trainings(facts: ScriptFacts, calls: list[cst.Call], trainer: str, scope: Scope) -> list[int]:
    """Where `<trainer>.train()` is called in `scope`, among `calls`."""
    return [
        facts.start(train)
        for train in calls
        if method_name(train) == "train"
        and isinstance(train.func, cst.Attribute)
        and isinstance(train.func.value, cst.Name)
        and train.func.value.value == trainer
        and facts.scope_at(train) is scope
    ]


def _bound_names(facts: ScriptFacts, call: cst.Call) -> list[str]:
    """The name a call's result is assigned to (`trainer = Trainer(...)`)."""
    small = facts.small_statement_of_call.get(call)
    if not isinstance(small, cst.Assign) or small.value is not call:
        return []
    return [t.target.value for t in small.targets if isinstance(t.target, cst.Name)]


def _after_training(
    facts: ScriptFacts, holder: cst.BaseExpression, call: cst.Call, trained: list[tuple[cst.BaseExpression, int]]
) -> bool:
    """`holder` at `call` is a model handed to a Trainer trained before `call`: the binding it had when handed
    over, or later bindings wrapping that name (`model = torch.compile(model)`)."""
    scope = facts.scope_at(call)
    at = facts.start(call)
    key = _own_model(holder)
    for model, train in trained:
        if _own_model(model) != key or key is None or facts.scope_at(model) is not scope or not train < at:
            continue
        handed = facts.binding_at(key, scope, facts.start(model))
        binding = facts.binding_at(key, scope, at)
        while binding is not None and binding is not handed:
            value = binding.value
            wraps = (
                binding.kind is BindingKind.OTHER
                and isinstance(value, cst.Call)
                and _wraps(value, key)
                and binding.scope is scope
                and binding.pos > (handed.pos if handed is not None else -1)
            )
            earlier = facts.binding_at(key, scope, binding.pos - 1) if wraps else None
            if earlier is None or earlier is binding:
                break
            binding = earlier
        if binding is not None and binding is handed:
            return True
        if binding is None and handed is None and key.startswith("self."):
            return True  # `self.model`, set by other methods and not by this one: the same object at both
    return False


def _wraps(call: cst.Call, key: str) -> bool:
    """`call` returns the model `key` names, or a wrapper holding its parameters: the model is an argument
    (`torch.compile(model)`, `get_peft_model(model, lora)`), or the call is one of its methods returning itself
    or the base model under an adapter (`model.half()`, `model.merge_and_unload()`)."""
    if any(_own_model(a.value) == key for a in call.args):
        return True
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and _own_model(func.value) == key
        and func.attr.value in SELF_RETURNING_METHODS | BASE_MODEL_METHODS
    )


def prepared_models_saved(facts: ScriptFacts, is_accelerator: Callable[[cst.BaseExpression], bool]) -> list[cst.Call]:
    """Saves of the model accelerate prepared, unwrapped: `accelerator.unwrap_model(m).save_pretrained(dir)`
    without `state_dict=` (on the call, or on a name every binding of which where it is read is such an unwrap),
    or its `state_dict()` written to disk. Under ZeRO-3 the unwrapped module's parameters are partitioned, so what
    it saves is empty; `accelerator.get_state_dict(m)` gathers them (`_zero3_consolidated_16bit_state_dict`)."""
    return [call for call, holder in _model_saves(facts) if _unwrapped(facts, holder, call, is_accelerator)]


def _unwrapped(
    facts: ScriptFacts, holder: cst.BaseExpression, at: cst.Call, is_accelerator: Callable[[cst.BaseExpression], bool]
) -> bool:
    """`holder` is `accelerator.unwrap_model(...)`, or a name bound to that where `at` reads it."""
    if isinstance(holder, cst.Call):
        func = holder.func
        return method_name(holder) == "unwrap_model" and isinstance(func, cst.Attribute) and is_accelerator(func.value)
    if not isinstance(holder, cst.Name):
        return False
    binding = facts.binding_at(holder.value, facts.scope_at(at), facts.start(at))
    if binding is None or binding.kind is not BindingKind.OTHER or not isinstance(binding.value, cst.Call):
        return False
    return _unwrapped(facts, binding.value, at, is_accelerator)

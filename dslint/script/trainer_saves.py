"""State dicts taken from a Hugging Face Trainer's model and written to disk: `trainer.model.state_dict()` whose
result (or a dict made from it: `{k: v.cpu() for k, v in state.items()}`) reaches `torch.save(...)` or a
`state_dict=` argument (`trainer._save(out, state_dict=...)`, `model.save_pretrained(out, state_dict=...)`) in the
same function. The Trainer is a name bound to a `transformers.*Trainer(...)` / `trl.*Trainer(...)` call, or a
parameter annotated with such a class. Under ZeRO-3 the Trainer's model holds partitioned parameters, so the
saved tensors are empty; whether ZeRO-3 is on is the rule's question (the configs the script is launched with)."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import BindingKind, ScriptFacts, method_name

TRAINER_PACKAGES = ("transformers.", "trl.")
TORCH_SAVE = "torch.save"


def is_hf_trainer_class(facts: ScriptFacts, node: cst.BaseExpression) -> bool:
    qualified = facts.qualified(node)
    return (
        qualified is not None
        and qualified.startswith(TRAINER_PACKAGES)
        and qualified.rsplit(".", 1)[-1].endswith("Trainer")
    )


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
    assigns = [node for node in _walk(body) if isinstance(node, cst.Assign)]
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
    for node in _walk(body):
        if not isinstance(node, cst.Call):
            continue
        for index, arg in enumerate(node.args):
            saved = (index == 0 and arg.keyword is None and facts.qualified(node.func) == TORCH_SAVE) or (
                arg.keyword is not None and arg.keyword.value == "state_dict"
            )
            if saved and (_contains(arg.value, call) or _reads(arg.value, tainted)):
                return True
    return False


def _walk(root: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node under `root`, nested functions and classes left out (their own scopes)."""
    found: list[cst.CSTNode] = []
    stack = list(root.children)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        found.append(node)
        stack.extend(node.children)
    return found


def _contains(expr: cst.CSTNode, wanted: cst.CSTNode) -> bool:
    return expr is wanted or any(node is wanted for node in _walk(expr))


def _reads(expr: cst.CSTNode, names: set[str]) -> bool:
    """Whether `expr` reads one of `names` (an attribute's name or a keyword is not a read)."""
    if not names:
        return False
    nodes = [expr, *_walk(expr)]
    not_reads = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)}
    not_reads.update(id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None)
    return any(isinstance(n, cst.Name) and n.value in names and id(n) not in not_reads for n in nodes)


def _calls(facts: ScriptFacts) -> list[cst.Call]:
    """Every call of the module, from the facts' one traversal (`scope_of_node` holds each call): walking the tree
    again through libcst's `children`, which visits each node to list them, cost a third of the lint's CPU time
    on DeepSpeed's own source."""
    return [node for node in facts.scope_of_node if isinstance(node, cst.Call)]

"""Where a script reaches an engine's forward without writing `engine(...)` at the place asked about, and whether
a flag is on as the script is run (what DSL306 asks of the code inside an autocast):

- a call handing the engine to a function of the file (`compute_loss(model=engine, ...)`), or to a method of the
  class around it (`self.step(self.engine, batch)`), whose own body runs that parameter forward (`model(...)`,
  `model.forward(...)`, outside `no_grad`/`inference_mode`, the name never assigned): `engine_forwarded`;
- a forward of a parameter that some call in the project passes the engine and others something else
  (`ProjectFacts.partly_engine`: a loop shared by a DeepSpeed script and a plain one): `partly_engine_forward`;
- an option of the script's own `argparse` parser whose default is `True` and that no launch gives:
  `on_by_default`;
- the `X.train()` calls of a block (a Hugging Face Trainer runs the engine's forward: the rule checks `X` holds
  one): `trainer_runs`; what a device test says on the GPU the engine trains on: `on_gpu`.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from dslint.model.engine import Engine, Origin
from dslint.model.library import ENGINE
from dslint.script.facts import BindingKind, Role, RoleAnswer, ScopeKind, ScriptFacts, method_name
from dslint.script.names import dotted_name
from dslint.script.walk import children, visit_tree

NO_GRAD = ("no_grad", "inference_mode")


def engine_forwarded(facts: ScriptFacts, module: cst.Module, call: cst.Call) -> RoleAnswer | None:
    """The engine a call hands to a function of this file that runs that parameter forward (see the module
    docstring); None otherwise."""
    function = _local_function(facts, module, call)
    if function is None:
        return None
    params = [*function.params.posonly_params, *function.params.params]
    if isinstance(call.func, cst.Attribute):
        params = params[1:]  # `self.step(...)`: the first parameter is the instance
    for index, argument in enumerate(call.args):
        if argument.star:
            break
        if argument.keyword is not None:
            name: str | None = argument.keyword.value
        else:
            name = params[index].name.value if index < len(params) else None
        if name is None or dotted_name(argument.value) is None:
            continue
        answer = facts.role_of(argument.value, at=call)
        if answer is not None and answer.role is Role.ENGINE and runs_forward(function, name):
            return answer
    return None


def _local_function(facts: ScriptFacts, module: cst.Module, call: cst.Call) -> cst.FunctionDef | None:
    """The function of this file a call names: the one module-level `def` of a plain name, the one method of the
    class around the call for `self.name(...)`."""
    func = call.func
    body: Sequence[cst.CSTNode]
    if isinstance(func, cst.Name):
        body, name = module.body, func.value
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        scope = facts.scope_at(call)
        while scope.parent is not None and scope.kind is not ScopeKind.FUNCTION:
            scope = scope.parent
        owner = scope.parent
        if scope.self_name is None or func.value.value != scope.self_name or owner is None:
            return None
        if owner.kind is not ScopeKind.CLASS or not isinstance(owner.node, cst.ClassDef):
            return None
        body, name = owner.node.body.body, func.attr.value
    else:
        return None
    found = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    return found[0] if len(found) == 1 else None


def runs_forward(function: cst.FunctionDef, param: str) -> bool:
    """`function` calls its parameter `param` (`param(...)`, `param.forward(...)`) in its own body, outside any
    `with torch.no_grad()` / `inference_mode()` and nested definitions, and never assigns the name."""
    if any(_no_grad(d.decorator) for d in function.decorators):
        return False
    found = False
    stack: list[tuple[cst.CSTNode, bool]] = [(child, False) for child in children(function.body)]
    while stack:
        node, quiet = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            target = node.target
            if isinstance(target, cst.Name) and target.value == param:
                return False
        if isinstance(node, cst.With) and any(_no_grad(item.item) for item in node.items):
            quiet = True
        if isinstance(node, cst.Call) and not quiet:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "forward":
                func = func.value
            found = found or (isinstance(func, cst.Name) and func.value == param)
        stack.extend((child, quiet) for child in children(node))
    return found


def _no_grad(expr: cst.BaseExpression) -> bool:
    """`torch.no_grad()`, `torch.inference_mode`, as written (the last name)."""
    target = expr.func if isinstance(expr, cst.Call) else expr
    return (dotted_name(target) or "").rsplit(".", 1)[-1] in NO_GRAD


# --- a parameter some call passes the engine -----------------------------------------------------------------------
def partly_passed(facts: ScriptFacts, name: cst.BaseExpression, at: cst.CSTNode, role: str) -> Engine | None:
    """`name`, a parameter of its function not rebound before `at`, that some call in the project passes
    initialize's `role` (`library.ENGINE`, `library.OPTIMIZER`) and others something else
    (`ProjectFacts.partly_engine`: a loop shared by a DeepSpeed script and a plain one): the engine of that call
    (its `site` is the call that passes it)."""
    project = facts.project
    if project is None or not project.partly_engine or not isinstance(name, cst.Name):
        return None
    binding = facts.binding_at(name.value, facts.scope_at(name), facts.start(at))
    fact = facts.parameter_entry(project.partly_engine, binding)
    if fact is None or fact.role != role:
        return None
    return facts.remote_engine(fact, Origin.CALLER, fact.origin, fact.config, fact.created)


def partly_prefix(engine: Engine, what: str = "the engine") -> str:
    """The start of a message about a partly-passed value: `where train_ds.py:9 passes the engine: `."""
    site = engine.site if engine.origin is Origin.CALLER else None
    return f"where {site.path}:{site.line} passes {what}: " if site is not None else ""


def partly_engine_forward(facts: ScriptFacts, call: cst.Call) -> Engine | None:
    """`model(x)` / `model.forward(x)` on a parameter that some call passes the engine (`partly_passed`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    return partly_passed(facts, func, call, ENGINE)


def partly_engines_in(facts: ScriptFacts, body: cst.CSTNode) -> list[Engine]:
    """The engines (see `partly_engine_forward`) whose forward runs in `body`, not in nested definitions."""
    found: list[Engine] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            engine = partly_engine_forward(facts, node)
            if engine is not None:
                found.append(engine)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    visit_tree(body, Calls())  # read only: without libcst's rebuilding of every node
    return found


def partly_engine_sources(facts: ScriptFacts, expr: cst.CSTNode, depth: int = 0) -> list[Engine]:
    """The engines (see `partly_engine_forward`) whose forward output `expr` is computed from: a call of one in
    `expr`, or in what a name of `expr` is bound to in the same function (to a few steps)."""
    if depth > 4:
        return []
    for node in _own_nodes(expr):
        if isinstance(node, cst.Call):
            engine = partly_engine_forward(facts, node)
            if engine is not None:
                return [engine]
        elif isinstance(node, cst.Name):
            scope = facts.scope_at(node)
            binding = facts.binding_at(node.value, scope, facts.start(node))
            if binding is None or binding.kind is not BindingKind.OTHER or binding.scope is not scope:
                continue
            statement, value = binding.statement, binding.value
            if value is None and isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                value = statement.value
            if value is not None and value is not expr:
                found = partly_engine_sources(facts, value, depth + 1)
                if found:
                    return found
    return []


def _own_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node` and what it holds, not descending into lambdas, nested definitions, or an attribute's name."""
    found: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        found.append(current)
        if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)) and current is not node:
            continue
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
            continue
        stack.extend(children(current))
    return found


# --- an option on by default ------------------------------------------------------------------------------------
def on_by_default(facts: ScriptFacts, calls: Sequence[cst.Call], condition: cst.BaseExpression) -> bool:
    """`params.use_fp16` where `use_fp16` is an option of this script's own parser (`calls`: the file's calls)
    whose default is `True` (one `add_argument` stores it, not `store_false`), and no launch of the script the
    project knows gives the option: on as the script is run."""
    name = dotted_name(condition)
    if name is None or "." not in name:
        return False
    dest = name.rsplit(".", 1)[-1]
    project = facts.project
    if project is not None and any(dest in launch.options for launch in project.launches):
        return False
    defaults = [_option_default(call) for call in calls if _option_dest(call) == dest]
    return defaults == [True]


def _option_dest(call: cst.Call) -> str | None:
    """The attribute `parser.add_argument("--use-fp16", ...)` stores its value in (`dest=`, else the first long
    option, dashes as underscores); None for any other call or an option not written literally."""
    if method_name(call) != "add_argument":
        return None
    for argument in call.args:
        if argument.keyword is not None and argument.keyword.value == "dest":
            value = argument.value
            dest = value.evaluated_value if isinstance(value, cst.SimpleString) else None
            return dest if isinstance(dest, str) else None
    for argument in call.args:
        value = argument.value
        if argument.keyword is None and isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            if isinstance(text, str) and text.startswith("--") and len(text) > 2:
                return text[2:].replace("-", "_")
    return None


def _option_default(call: cst.Call) -> bool | None:
    """True when the option's `default=` is the literal `True` and its action is not `store_false`."""
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    action = keywords.get("action")
    if isinstance(action, cst.SimpleString) and action.evaluated_value == "store_false":
        return None
    default = keywords.get("default")
    return True if isinstance(default, cst.Name) and default.value == "True" else None


# --- the Trainer's run, a device test -------------------------------------------------------------------------------
def trainer_runs(body: cst.CSTNode) -> list[cst.BaseExpression]:
    """The receivers of `X.train(...)` calls in `body` (not in nested definitions)."""
    found: list[cst.BaseExpression] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if method_name(node) == "train" and isinstance(node.func, cst.Attribute):
                found.append(node.func.value)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    visit_tree(body, Calls())  # read only: without libcst's rebuilding of every node
    return found


def on_gpu(facts: ScriptFacts, test: cst.BaseExpression) -> bool | None:
    """What a device test says on the GPU the engine trains on: `device_type == "cpu"` False, `"cuda" in device`
    True, `device.type == "cuda"` True, `torch.cuda.is_available()` True; None for any other test. The subject
    must name a device (`device_type`, `args.device`, or the `.type` of one)."""
    if isinstance(test, cst.Call) and not test.args and facts.qualified(test.func) == "torch.cuda.is_available":
        return True
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    left, right = test.left, target.comparator
    operator = target.operator
    if isinstance(left, cst.SimpleString) and isinstance(operator, (cst.In, cst.NotIn)):
        subject, constant, equal = right, left.evaluated_value, isinstance(operator, cst.In)
    elif isinstance(right, cst.SimpleString) and isinstance(operator, (cst.Equal, cst.NotEqual)):
        subject, constant, equal = left, right.evaluated_value, isinstance(operator, cst.Equal)
    else:
        return None
    name = dotted_name(subject)
    if name is not None and name.endswith(".type"):
        name = name[: -len(".type")]  # `device.type == "cuda"`: the kind of a torch.device
    if name is None or "device" not in name.rsplit(".", 1)[-1].lower() or constant not in ("cpu", "cuda"):
        return None
    return (constant == "cuda") is equal

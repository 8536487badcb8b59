"""Which calls move or cast the model that goes into `deepspeed.initialize`, before it goes in.

Shared by the device-placement rules so that one call is judged once: DSL101 reports moves of the model,
DSL103 everything else that uses an un-indexed CUDA device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from dslint.diagnostics import Related
from dslint.model.conditions import TRUTHINESS, Guard, contradicts, settled
from dslint.model.engine import EngineConfig
from dslint.model.library import MODULE_WRAPPERS
from dslint.script.devices import is_cpu, is_unindexed_cuda
from dslint.script.facts import (
    Binding,
    Pos,
    Scope,
    ScopeKind,
    ScriptFacts,
    iter_call_chain,
    method_name,
)
from dslint.script.hf_trainers import TrainerNames
from dslint.script.names import dotted_name
from dslint.script.project_facts import MovedArgument
from dslint.script.walk import own_returns

CAST_METHODS = frozenset({"half", "bfloat16"})
# the methods of `is_placement_call`, for the rules' call shapes (`catalog.Shape`)
PLACEMENT_METHODS = ("bfloat16", "cuda", "half", "to")
# accelerate's context that builds a model's parameters on the meta device (no data)
EMPTY_WEIGHTS = frozenset({"accelerate.init_empty_weights", "accelerate.big_modeling.init_empty_weights"})


def is_placement_call(call: cst.Call) -> bool:
    """`.cuda(...)`, `.to(<device or dtype>)`, `.half()`, `.bfloat16()`; not `.to(memory_format=...)`, not CPU."""
    name = method_name(call)
    if name in CAST_METHODS or name == "cuda":
        return True
    if name != "to" or not call.args:
        return False
    if all(
        arg.keyword is not None and arg.keyword.value in ("memory_format", "non_blocking", "copy") for arg in call.args
    ):
        return False
    first = call.args[0].value
    return not (isinstance(first, cst.SimpleString) and first.evaluated_value == "cpu")


def to_full_precision(call: cst.Call) -> bool:
    """`.to(torch.float32)` (or `dtype=torch.float32`, `torch.float64`): a cast to full precision, nothing else."""
    given = [arg.value for arg in call.args if arg.keyword is None or arg.keyword.value == "dtype"]
    return method_name(call) == "to" and bool(given) and all(_full_precision(value) for value in given)


def _full_precision(value: cst.BaseExpression) -> bool:
    """`torch.float32`, `torch.float`, `torch.float64`, `torch.double`."""
    dotted = dotted_name(value) or ""
    return dotted.startswith("torch.") and dotted.split(".")[-1] in ("float32", "float", "float64", "double")


def moves_to_unindexed_cuda(facts: ScriptFacts, call: cst.Call) -> bool:
    """`.cuda()` without an index, or `.to(<an un-indexed CUDA device>)`."""
    name = method_name(call)
    if name == "cuda":
        return not call.args
    if name != "to" or not call.args:
        return False
    first = call.args[0]
    is_device = first.keyword is None or first.keyword.value == "device"
    return is_device and is_unindexed_cuda(facts, first.value, call)


def is_cast(call: cst.Call) -> bool:
    name = method_name(call)
    if name in CAST_METHODS:
        return True
    if name == "to":
        return any(
            (arg.keyword is not None and arg.keyword.value == "dtype")
            or (dotted_name(arg.value) or "").split(".")[-1] in ("float16", "half", "bfloat16")
            # a name holding a dtype (`.to(args.dtype)`, `.to(weight_dtype)`), as `model.moved_arguments` reads it
            or (arg.keyword is None and "dtype" in (dotted_name(arg.value) or "").split(".")[-1].lower())
            for arg in call.args
        )
    return False


# The dtype a cast method gives, and the dtype each name of a `torch.<dtype>` argument means.
CAST_METHOD_DTYPES = {"half": "float16", "bfloat16": "bfloat16", "float": "float32", "double": "float64"}
DTYPE_NAMES = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
}


def cast_dtype(call: cst.Call, code: Callable[[cst.CSTNode], str]) -> str | None:
    """The dtype a cast call gives its receiver (`.half()`, `.float()`, `.to(torch.float32)`,
    `.to(dtype=weight_dtype)`): a canonical name for a torch dtype, the source text (`code`) of another
    `dtype=` value; None when the call is no cast."""
    name = method_name(call)
    if name in CAST_METHOD_DTYPES:
        return CAST_METHOD_DTYPES[name]
    if name != "to":
        return None
    for arg in call.args:
        dotted = dotted_name(arg.value) or ""
        known = DTYPE_NAMES.get(dotted.split(".")[-1]) if dotted.startswith("torch.") else None
        if known is not None:
            return known
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return code(arg.value)
    return None


@dataclass(eq=False)
class ModelSink:
    """Where a model leaves for something that places it on its device: a `deepspeed.initialize` here (`call`),
    one in another function or module that the project model sees it reach (`origin`: from a builder's return,
    or a call handing it on), or a tensor-parallel `init_inference` here (`call`)."""

    model: cst.BaseExpression | None
    scope: Scope
    start: Pos  # moves before this position apply
    origin: Related | None = None
    call: cst.Call | None = None
    config: EngineConfig | None = None  # elsewhere: what the project knows of the initialize call's config


def excluded(facts: ScriptFacts, sink: ModelSink, node: cst.CSTNode) -> bool:
    """Whether `node` never runs on a path that reaches `sink`: its guards contradict those where the model leaves
    (`if args.deepspeed: initialize(...) else: model.cuda()`, a move before an early return), or those of the
    initialize call in another function or module that the sink leads to (`if engine == "ddp": model.cuda()` in
    one function, `if engine == "deepspeed": initialize(...)` in another)."""
    if facts.paths.exclusive(node, sink.start):
        return True
    project = facts.project
    return project is not None and facts.paths.excludes(node, project.guards_of(sink.origin))


def model_lineage(facts: ScriptFacts, init: ModelSink) -> list[Binding]:
    """The bindings the model argument went through: `m = Net(); m = m.to(d); initialize(model=m)` gives
    both bindings of `m`, newest first; and those the other arm of an `if` leaves in place (`if scratch: m =
    Net().to(d) else: m = load()`: the first reaches initialize on its own path), with theirs."""
    model = init.model
    key = dotted_name(model) if model is not None else None
    if key is None:
        return []
    lineage: list[Binding] = []
    _follow(facts, key, facts.binding_at(key, init.scope, init.start), lineage)
    for binding in lineage:  # grows while it is read: each arm's own lineage is looked at too
        for other in _other_arms(facts, binding, lineage):
            _follow(facts, other.key, other, lineage)
    return lineage


def _other_arms(facts: ScriptFacts, binding: Binding, lineage: list[Binding]) -> list[Binding]:
    """The earlier bindings of the same name in the same scope that `binding` never replaces: each on a path
    exclusive with it (`model.path_guards`), up to the first that is not."""
    if binding.statement is None:
        return []
    found: list[Binding] = []
    earlier = [b for b in binding.scope.bindings.get(binding.key, []) if b.pos < binding.pos]
    for other in sorted(earlier, key=lambda b: b.pos, reverse=True):
        if other.statement is None or not facts.paths.exclusive(other.statement, binding.statement):
            break
        if other not in lineage and not facts.in_plain_branch(other.statement):
            found.append(other)
    return found


def _follow(facts: ScriptFacts, key: str, binding: Binding | None, lineage: list[Binding]) -> None:
    """Add `binding` and the bindings its value goes on from (`m = m.to(d)`, a wrapper) to `lineage`."""
    while binding is not None and binding not in lineage:
        lineage.append(binding)
        value = binding.value
        if value is None:
            break
        root = _chain_root(value)
        if (root is None or dotted_name(root) != key) and not _wraps(value, key):
            inner = _library_wrapped(facts, value)  # `model = get_peft_model(base, lora)`: on with `base`
            if inner is None:
                break
            key = inner
        binding = facts.binding_at(key, binding.scope, facts.start(value))


def _library_wrapped(facts: ScriptFacts, value: cst.BaseExpression) -> str | None:
    """The plain name of the module a library wrapper (`library.MODULE_WRAPPERS`: peft's `get_peft_model(base,
    cfg)`) receives first, whose parameters the returned module holds; None for any other value."""
    calls = list(iter_call_chain(value))
    if not calls or facts.qualified(calls[-1].func) not in MODULE_WRAPPERS:
        return None
    inner = argument_at(calls[-1], 0, None) or argument_at(calls[-1], None, "model")
    return inner.value if isinstance(inner, cst.Name) else None


def _wraps(value: cst.BaseExpression, key: str) -> bool:
    """`model = DDP(model)`, `model = init_compression(model, cfg)`: the model goes on inside the wrapper, so a
    move of it before still applies to what initialize receives (also when the wrap sits under an `if`, or a
    method chain follows it: `model = Wrapper(model).to(device)`)."""
    calls = list(iter_call_chain(value))
    if not calls:
        return False
    value = calls[-1]
    positional = [a for a in value.args if a.keyword is None and not a.star]
    if positional and dotted_name(positional[0].value) == key:
        return True
    return any(
        a.keyword is not None and a.keyword.value in ("model", "module") and dotted_name(a.value) == key
        for a in value.args
    )


def moves_to_cpu(facts: ScriptFacts, call: cst.Call) -> bool:
    """`.to(device)` or `.to(device=device)` where `device` is the CPU on every path (`torch.device("cpu")`, a
    name bound to one, a builder's parameter every caller fills with the CPU): not a GPU move."""
    if method_name(call) != "to" or not call.args:
        return False
    given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if given is None and call.args[0].keyword is None and not call.args[0].star:
        given = call.args[0].value
    return given is not None and is_cpu(facts, given, call)


def _chain_root(node: cst.BaseExpression) -> cst.BaseExpression | None:
    root: cst.BaseExpression = node
    for call in iter_call_chain(node):
        if not isinstance(call.func, cst.Attribute):
            return None
        root = call.func.value
    return root


def _chain_calls(value: cst.BaseExpression | None) -> Iterator[cst.Call]:
    if value is not None:
        yield from iter_call_chain(value)


def elsewhere_sinks(facts: ScriptFacts) -> list[ModelSink]:
    """Where a model from this file leaves for an initialize call in another function or module:
    the return value of a model builder (`def get_model(): ...; return model`), or the argument of a call to a
    function that hands its parameter to initialize (`train(model, args)`). Each starts where the model leaves
    this code (the return, the call), so moves and casts before it apply."""
    project = facts.project
    if project is None or not (project.model_builders or project.model_sinks or project.model_attributes):
        return []
    sinks: list[ModelSink] = []
    if project.model_attributes:
        sinks.extend(_attribute_sinks(facts, project.model_attributes))
    if project.model_builders:
        scopes = {id(scope): scope for scope in facts.scope_of_node.values()}
        for scope in scopes.values():
            name = facts.qualname(scope) if scope.kind is ScopeKind.FUNCTION else None
            origin = project.model_builders.get(name) if name is not None else None
            if origin is None or not isinstance(scope.node, cst.FunctionDef):
                continue
            if name is not None and name.endswith(".__init__") and scope.self_name is not None:
                # a constructor builds the instance itself: `self.to(device)` in it moves the model handed on
                sinks.append(ModelSink(cst.Name(scope.self_name), scope, facts.end(scope.node), origin))
            for statement in own_returns(scope.node):
                if statement.value is not None:
                    sinks.append(ModelSink(statement.value, scope, facts.start(statement), origin))
    if project.model_sinks:
        for call in facts.statement_of_call:
            for position, name, origin, config in facts.call_fact(call, project.model_sinks) or ():
                argument = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
                positional = [a for a in call.args if a.keyword is None]
                if argument is None and position < len(positional) and not positional[position].star:
                    argument = positional[position].value
                if argument is not None:
                    sinks.append(ModelSink(argument, facts.scope_at(call), facts.start(call), origin, config=config))
    return sinks


def _attribute_sinks(
    facts: ScriptFacts, filled: Mapping[str, tuple[str, tuple[int, int] | None, Related]]
) -> Iterator[ModelSink]:
    """A method that fills `self.<attribute>` with the model initialize receives (the project model saw another
    method hand it on after this one runs): the attribute as it stands at the method's end, or at the call that
    hands it on."""
    calls_at = {facts.call_position(call): call for call in facts.statement_of_call}
    for scope in {id(s): s for s in facts.scope_of_node.values()}.values():
        if (
            scope.kind is not ScopeKind.FUNCTION
            or scope.self_name is None
            or not isinstance(scope.node, cst.FunctionDef)
        ):
            continue
        found = filled.get(facts.qualname(scope) or "")
        if found is None:
            continue
        attribute, until, origin = found
        handing = calls_at.get(until) if until is not None else None
        start = facts.start(handing) if handing is not None else facts.end(scope.node)
        model = cst.Attribute(value=cst.Name(scope.self_name), attr=cst.Name(attribute))
        yield ModelSink(model, scope, start, origin)


class ModelMoves:
    """For one file: every placement call that applies to a model before it is given to initialize (here, or
    in another function or module that the project model sees it reach)."""

    def __init__(self, facts: ScriptFacts, sinks: Sequence[ModelSink] | None = None) -> None:
        """`sinks`: where the model leaves (default: every initialize call, here and elsewhere)."""
        self.facts = facts
        if sinks is None:
            here = [ModelSink(init.model, init.scope, init.start, None, init.call) for init in facts.initialize_calls]
            sinks = [*here, *elsewhere_sinks(facts)]
        self._lineages = [(sink, model_lineage(facts, sink)) for sink in sinks]
        self._in_chains: dict[cst.Call, ModelSink] = {}
        self._meta_blocks: list[tuple[Pos, Pos]] | None = None  # `with init_empty_weights():` blocks, when asked
        for sink, lineage in self._lineages:
            for binding in lineage:
                for call in _chain_calls(binding.value):
                    self._in_chains[call] = sink
            for call in _chain_calls(sink.model):
                self._in_chains[call] = sink

    def initialize_for(self, call: cst.Call) -> ModelSink | None:
        """Where the model that `call` moves or casts beforehand leaves for initialize, if anywhere."""
        if not is_placement_call(call) or moves_to_cpu(self.facts, call) or self._on_meta_device(call):
            return None
        if to_full_precision(call):  # before initialize: neither a move (DSL101) nor a 16-bit cast (DSL104)
            return None
        if call in self._in_chains:
            sink = self._in_chains[call]
            return None if excluded(self.facts, sink, call) else sink
        assert isinstance(call.func, cst.Attribute)
        return self.initialize_of_model(call, call.func.value)

    def _on_meta_device(self, call: cst.Call) -> bool:
        """`with init_empty_weights(): net = Net(cfg).half()`: accelerate builds the parameters on the meta device,
        without data; the dtype set there is the one a later load fills, no weights are cast or moved."""
        if self._meta_blocks is None:
            self._meta_blocks = [
                (self.facts.start(node), self.facts.end(node))
                for node in self.facts.entered  # every node the traversal met, in source order
                if type(node) is cst.With
                and any(
                    isinstance(item.item, cst.Call) and (self.facts.qualified(item.item.func) or "") in EMPTY_WEIGHTS
                    for item in node.items
                )
            ]
        position = self.facts.start(call)
        return any(start <= position < end for start, end in self._meta_blocks)

    def helper_move(self, call: cst.Call, casts: bool = False) -> tuple[ModelSink, MovedArgument] | None:
        """A call of a project function that moves its argument to a GPU (`ProjectFacts.moving_calls`:
        `place(model)`, or `super().__init__(net)` keeping it as `self.net`), made on a model before the initialize
        that receives it: that initialize and what the project index knows of the move. `casts`: the same for a
        function that casts its argument to 16 bits (`ProjectFacts.casting_calls`, DSL104)."""
        project = self.facts.project
        table = (project.casting_calls if casts else project.moving_calls) if project is not None else {}
        moved, argument = handed_argument(self.facts, call, table)
        # `super()` itself starts where `super().__init__(net)` does; `super().to(d)` moving `self.model`: no argument
        own = moved is not None and moved.index is None and moved.keyword is None and moved.stored is not None
        if moved is None or (argument is None and not (own and isinstance(call.func, cst.Attribute))):
            return None
        scope = self.facts.scope_at(call)
        if moved.stored is not None and scope.self_name is not None:
            argument = cst.Attribute(value=cst.Name(scope.self_name), attr=cst.Name(moved.stored))
        if argument is None:
            return None
        init = self.initialize_of_model(call, argument)
        return (init, moved) if init is not None else None

    def initialize_of_model(self, call: cst.Call, model: cst.BaseExpression) -> ModelSink | None:
        """Where the model `model` names at `call` leaves for an initialize of the same scope after it, if it
        does (`set_parameter_bf16(model)`: the model the helper casts)."""
        key = dotted_name(model)
        if key is None:
            return None
        facts = self.facts
        scope = facts.scope_at(call)
        pos = facts.start(call)
        binding = facts.binding_at(key, scope, pos)
        for init, lineage in self._lineages:
            if scope is init.scope and pos < init.start and binding in lineage and not excluded(facts, init, call):
                return init
        if binding is None and "." in key:
            # `self.model.cuda()` then `initialize(model=self.model)`, the attribute bound by no method of the file
            # (a base class's `__init__`, a property): one object at both places, none rebinding it in between
            for init, lineage in self._lineages:
                same = init.model is not None and dotted_name(init.model) == key and not lineage
                if same and scope is init.scope and pos < init.start and not excluded(facts, init, call):
                    return init
        return None


def serves_another_path(facts: ScriptFacts, move: cst.Call, init: ModelSink) -> bool:
    """`initialize` runs only under a test the move does not share (`if args.deepspeed: initialize(...) else:
    model = DDP(model)`, or no `else` at all), here or in the function elsewhere that calls it: the move also
    places the model for the path without DeepSpeed, where it is needed. A test of the model itself (`if
    teacher is not None:`) leaves no such path, nor does a test of a call on values (`os.path.exists(cfg)`)."""
    paths = facts.paths
    own = set(paths.at(move))
    model = dotted_name(init.model) if init.model is not None else None
    # initialize here, or the call that hands the model to one elsewhere (`train_deepspeed(model, ...)`)
    guards = paths.at(init.call) if init.call is not None else paths.at_position(init.start)
    if init.origin is not None and facts.project is not None:
        # initialize in another function or module, under a test of its own (`elif optimizer_name ==
        # ADAM1BIT: initialize(...)` beside plain optimizers): the other arms use the model as moved
        guards = (*guards, *facts.project.guards_of(init.origin))
    # the other arm of a test that initializes too (`if cfg is not None: initialize(config_params=cfg) else:
    # initialize(config=path)`) is no path without DeepSpeed
    elsewhere = [paths.at(i.call) for i in facts.initialize_calls if i.call is not init.call]
    if _run_before(facts, move, init, model):
        return True
    # a test of a call on values (`if not os.path.exists(cfg): ...`), or one whose failing arm raises, splits no
    # plain-PyTorch path off; nor does a test of an option every launch of the script gives (`--deepspeed`)
    return any(
        guard not in own
        and guard.subject != model
        and not guard.raised
        and "(" not in guard.subject.replace("()", "")
        and not any(contradicts(guard, other) for others in elsewhere for other in others)
        and not (launch_settled(facts, guard) and not _launched_use(facts, move, init, model))
        and not _latched(facts, guard, init)
        for guard in guards
    )


# Calls that run a model: the model called itself, or these methods of it
_RUNNING_METHODS = frozenset({"forward", "generate"})


def _run_before(facts: ScriptFacts, move: cst.Call, init: ModelSink, model: str | None) -> bool:
    """The moved model runs on the GPU between the move and `initialize`, in the move's function (`outputs =
    model(**inputs)`, `model.generate(...)`): the move serves that run, and removing it would break it."""
    if model is None or init.call is None or facts.scope_at(init.call) is not facts.scope_at(move):
        return False
    for call in _calls_between(facts, move, init):
        called = dotted_name(call.func) or ""
        head, _, method = called.rpartition(".")
        if called == model or (head == model and method in _RUNNING_METHODS):
            return True
    return False


def _calls_between(facts: ScriptFacts, move: cst.Call, init: ModelSink) -> Iterator[cst.Call]:
    """The calls of the move's function after the move and before `initialize` (`init.start`)."""
    after, scope = facts.start(move), facts.scope_at(move)
    for call in facts.statement_of_call:
        if after < facts.start(call) < init.start and facts.scope_at(call) is scope:
            yield call


def _launched_use(facts: ScriptFacts, move: cst.Call, init: ModelSink, model: str | None) -> bool:
    """Between the move and initialize, the model is handed to a call under a test of an option some launch gives
    (`if args.model_ema: ema = ModelEma(model)`, `--model_ema` on a launch): a use on the GPU the move serves."""
    launches = facts.project.launches if facts.project is not None else ()
    given = {option for launch in launches for option in launch.options}
    shared = set(facts.paths.at(init.call) if init.call is not None else facts.paths.at_position(init.start))
    for call in _calls_between(facts, move, init):
        if model is None or not any(dotted_name(a.value) == model for a in call.args):
            continue
        tests = [g for g in facts.paths.at(call) if g.value == TRUTHINESS and g.truth and g not in shared]
        if any("." in g.subject and g.subject.rpartition(".")[2] in given for g in tests):
            return True
    return False


def _latched(facts: ScriptFacts, guard: Guard, init: ModelSink) -> bool:
    """`if not self.started: <initialize>; self.started = True`: the test makes initialize run once, and its
    other path is a later call (the model already handed on), not one without DeepSpeed."""
    if guard.value != TRUTHINESS or guard.truth or init.call is None:
        return False
    head, dot, rest = guard.subject.partition(".")
    key = "self" + dot + rest if dot and head == init.scope.self_name else guard.subject
    return any(
        binding.pos > init.start
        and isinstance(binding.value, cst.Name)
        and binding.value.value == "True"
        and binding.statement is not None
        and guard in facts.paths.at(binding.statement)
        for binding in init.scope.bindings.get(key, ())
    )


def launch_settled(facts: ScriptFacts, guard: Guard) -> bool:
    """Whether every launch of this script the project holds makes `guard` hold (`model.conditions.settled`), and
    no launcher names the script where the index reads no launch of it. The path where the guard fails is then
    never taken in this project."""
    project = facts.project
    launches = project.launches if project is not None and not project.launches_partial else ()
    return settled([launch.options for launch in launches], guard)


def handed_argument(
    facts: ScriptFacts, call: cst.Call, calls: Mapping[tuple[int, int], MovedArgument]
) -> tuple[MovedArgument | None, cst.BaseExpression | None]:
    """What the project index says the function `call` calls does with an argument (`ProjectFacts.moving_calls`,
    `loading_calls`), and that argument at the call (None: not handed by position or keyword)."""
    handed = facts.call_fact(call, calls)
    return handed, argument_at(call, handed.index, handed.keyword) if handed is not None else None


def argument_at(call: cst.Call, index: int | None, keyword: str | None) -> cst.BaseExpression | None:
    """The argument at positional `index` or by `keyword` (None past a `*args`)."""
    if keyword is not None:
        return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    positional = [a for a in call.args if a.keyword is None]
    if index is None or index >= len(positional) or any(a.star for a in positional[: index + 1]):
        return None
    return positional[index].value


def trainer_sinks(facts: ScriptFacts, trainer_calls: Sequence[cst.Call]) -> list[ModelSink]:
    """A sink per `*Trainer(...)` call's model (its `model=`, or its first positional argument)."""
    sinks = []
    for call in trainer_calls:
        model = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "model"), None)
        if model is None and call.args and call.args[0].keyword is None and not call.args[0].star:
            model = call.args[0].value
        if model is not None:
            sinks.append(ModelSink(model, facts.scope_at(call), facts.start(call), None, call))
    return sinks


def prepare_sinks(facts: ScriptFacts, prepares: Sequence[cst.Call], trainers: TrainerNames) -> list[ModelSink]:
    """A sink per positional argument of each `accelerator.prepare(...)` call whose receiver holds the
    Accelerator: where DeepSpeed through accelerate receives a model."""
    return [
        ModelSink(arg.value, facts.scope_at(call), facts.start(call), None, call)
        for call in prepares
        if isinstance(call.func, cst.Attribute) and trainers.names_accelerator(call.func.value)
        for arg in call.args
        if arg.keyword is None and not arg.star
    ]

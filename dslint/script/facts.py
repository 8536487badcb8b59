"""Script facts: computed once per file, in one traversal, and shared by every script rule.

What is collected:
- imports (`ImportTable`, as the module summary reads them), so rules can ask what `ds.initialize` or `nn.Module`
  stands for;
- scopes (module, classes, functions) and every binding of a name or `self.attribute` in each, with the position
  from which the binding holds: the module's (`dslint.model.bindings`, from CPython's tree), laid over libcst's
  nodes, with the bindings that hold initialize's results marked;
- every `deepspeed.initialize(...)` call: its arguments (model, optimizer, lr_scheduler, config) and the names
  bound to its results (tuple unpacking, starred targets, one name then indexing, `self.engine` attributes);
- branches that belong to plain PyTorch (`else:` of `if args.deepspeed:`), where no rule reports;
- the calls that set the current device (`torch.cuda.set_device`, `get_accelerator().set_device`).

The traversal that fills them is `dslint.script.collect` (`collect_facts`). Rules then ask questions
(`role_of(expr, at=node)`: is this the engine here, and from where? the model given to initialize?) instead of
re-deriving them; the answer names the engine (`dslint.model.engine.Engine`: this file's initialize call, or one
the project model brings from a caller, a helper's return or an instance's attribute, with its config). Where a
name's role cannot be known, the answer is None and rules stay silent.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from dslint.diagnostics import Related
from dslint.model import library
from dslint.model.bindings import Binding as Binding
from dslint.model.bindings import BindingKind as BindingKind
from dslint.model.bindings import Bindings
from dslint.model.bindings import Pos as Pos
from dslint.model.bindings import Scope as Scope
from dslint.model.bindings import ScopeKind as ScopeKind
from dslint.model.engine import Engine, EngineConfig, Origin
from dslint.script.local_positions import NodePositions
from dslint.script.names import ImportTable, dotted_name
from dslint.script.paths import PathGuards
from dslint.script.project_facts import ParameterFact, ProjectFacts
from dslint.script.statement_lines import StatementLines

Fact = TypeVar("Fact")

# `Pos`: an order index. Nodes are numbered on entry and on exit in one traversal, so `a < b` means "a comes
# first in the source" without computing line/column positions (which costs a whole code generation pass).
# Scopes and bindings are the module's (`dslint.model.bindings`), laid over libcst's nodes by `collect_facts`.

INITIALIZE = library.INITIALIZE.name
INIT_INFERENCE = library.INIT_INFERENCE.name  # returns an InferenceEngine (dslint.script.inference)
# deepspeed.initialize(args, model, optimizer, model_parameters, training_data, lr_scheduler, ...)
INITIALIZE_POSITIONAL = library.INITIALIZE.positional
RESULT_ARITY = len(library.INITIALIZE.returns)  # (engine, optimizer, training_dataloader, lr_scheduler)
SET_DEVICE_CALLS = library.SET_DEVICE_CALLS
SELF_RETURNING_METHODS = library.SELF_RETURNING_METHODS  # nn.Module methods that return the module itself


class Role(enum.Enum):
    """What a name stands for, with respect to a `deepspeed.initialize` call."""

    ENGINE = "engine"
    OPTIMIZER = "optimizer"  # the optimizer returned by initialize
    DATALOADER = "dataloader"
    SCHEDULER = "scheduler"  # the scheduler returned by initialize
    INIT_RESULT = "initialize result"  # the whole 4-tuple
    ENGINE_MODULE = "engine.module"
    RAW_MODEL = "model given to initialize"
    CLIENT_OPTIMIZER = "optimizer given to initialize"
    CLIENT_SCHEDULER = "lr_scheduler given to initialize"


RESULT_ROLES = (Role.ENGINE, Role.OPTIMIZER, Role.DATALOADER, Role.SCHEDULER)


def result_role(binding: Binding) -> Role | None:
    """Which of initialize's results a binding holds (the whole tuple: INIT_RESULT)."""
    slot = binding.result_slot
    return None if slot is None else Role.INIT_RESULT if slot < 0 else RESULT_ROLES[slot]


@dataclass(eq=False)
class InitializeCall:
    """A `deepspeed.initialize(...)` call of this file, and the engine it creates (`Origin.CALL`). An engine
    created elsewhere is an `Engine` alone (`dslint.model.engine`), with no call of this file."""

    call: cst.Call = field(repr=False)
    scope: Scope = field(repr=False)
    start: Pos
    end: Pos
    arguments: dict[str, cst.BaseExpression] = field(repr=False)
    engine: Engine = field(default_factory=lambda: Engine(Origin.CALL), repr=False)

    def argument(self, name: str) -> cst.BaseExpression | None:
        return self.arguments.get(name)

    @property
    def model(self) -> cst.BaseExpression | None:
        return self.arguments.get("model")

    @property
    def config(self) -> cst.BaseExpression | None:
        return self.arguments.get("config") or self.arguments.get("config_params")


@dataclass(frozen=True)
class RoleAnswer:
    """What an expression stands for: its role, the engine it belongs to (here or from elsewhere), and the
    initialize call of this file that creates that engine (None for an engine from elsewhere)."""

    role: Role
    engine: Engine
    init: InitializeCall | None = None


def node_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """libcst's `PositionProvider` ranges of every node of `module`, from its code generation pass alone: a
    `MetadataWrapper` then walks the whole tree again (rebuilding each node) only to hand the same table out,
    which took as long as the pass itself."""
    provider = PositionProvider()
    computed = getattr(provider, "_computed", None)
    if not isinstance(computed, dict):  # a libcst whose provider keeps its table elsewhere
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    provider._gen_impl(module)
    return computed


class ScriptFacts:
    """The facts of one script; built by `collect_facts`."""

    def __init__(self, module: cst.Module, project: ProjectFacts | None = None) -> None:
        self.module = module
        self.project = project
        self.remote_engines: dict[int, Engine] = {}
        self.calls_of_engine: dict[Engine, InitializeCall] = {}
        self.result_bindings: dict[Engine, list[Binding]] = {}
        self.entered: dict[cst.CSTNode, Pos] = {}
        self.exited: dict[cst.CSTNode, Pos] = {}
        self.imports = ImportTable()
        # the module's scopes and bindings (`dslint.model.bindings`), laid over this module's nodes by the collector
        self.bindings = Bindings(Scope(ScopeKind.MODULE, module, None), {}, [], [], [], [], [])
        self.module_scope = self.bindings.module_scope
        self.initialize_calls: list[InitializeCall] = []
        self.inference_calls: list[cst.Call] = []  # `deepspeed.init_inference(...)`, in source order
        self.scope_of_node: dict[cst.CSTNode, Scope] = {}
        self.statement_of_call: dict[cst.Call, cst.CSTNode] = {}
        self.small_statement_of_call: dict[cst.Call, cst.BaseSmallStatement] = {}
        self.block_size_of_line: dict[cst.CSTNode, int] = {}
        self.device_set_calls: list[tuple[Scope, Pos]] = []
        self.plain_ranges: list[tuple[Pos, Pos]] = []

        self._positions: NodePositions | None = None
        self.text: str | None = None  # the source, when the linter has it: positions from one statement's code
        self._paths: PathGuards | None = None
        # the functions and `if`, loop and `try` statements, in source order, each with the innermost function
        # holding it (None at module level): filled by the traversal (`collect.py`)
        self.blocks: list[tuple[cst.CSTNode, cst.CSTNode | None]] | None = None
        self._lines: StatementLines | None = None
        # CPython's module body, its statements and libcst's twins, paired one to one (`collect.py`): the path
        # guards are read from the first and laid over the last; None when the two trees are not paired
        self.statement_pairs: tuple[Sequence[ast.stmt], Sequence[ast.stmt], Sequence[cst.CSTNode]] | None = None
        self.collected = False  # the traversal is done: every node has its start and end (`collect_facts`)
        # CPython's statements and libcst's twins, once the traversal has paired them (before the facts are done)
        self.statement_twins: tuple[Sequence[ast.stmt], Sequence[cst.CSTNode]] | None = None

    @property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        """Line/column of every node: a whole code generation pass, so computed only when asked (a finding is
        reported, or the project has an answer about a call in this file); shared with the script's context."""
        if self._positions is None:
            self._positions = NodePositions(self, lambda: node_positions(self.module))
        return self._positions

    def call_position(self, call: cst.Call) -> tuple[int, int] | None:
        """Where a call starts, 1-based, in characters: the key of the project's answers about it."""
        found = self.positions.get(call)
        return (found.start.line, found.start.column + 1) if found is not None else None

    def call_fact(self, call: cst.Call, table: Mapping[tuple[int, int], Fact]) -> Fact | None:
        """The project's answer about `call` in `table` (keyed by where calls start, `call_position`)."""
        position = self.call_position(call) if self.may_be_at(call, table) else None
        return table.get(position) if position is not None else None

    def may_be_at(self, call: cst.Call, positions: Collection[tuple[int, int]]) -> bool:
        """Whether one of `positions` (where calls start, as the project's answers are keyed) may be `call`'s, as
        the lines of its statement say (`statement_lines.py`): libcst's positions are computed only then."""
        if not positions:
            return False
        if not self.collected:  # during the traversal the collector asks with the statement it is in
            return True
        if self._lines is None:
            _, theirs, ours = self.statement_pairs or ((), (), ())
            self._lines = StatementLines(theirs, ours, self.statement_of_call, self.small_statement_of_call)
        return self._lines.may_hold(call, positions)

    @property
    def paths(self) -> PathGuards:
        """Which places of this file run on exclusive paths (`script/paths.py`), built on first need."""
        if self._paths is None:
            body, theirs, ours = self.statement_pairs or ((), (), ())
            self._paths = PathGuards(body, zip(theirs, ours, strict=True), self.start, self.end)
        return self._paths

    # --- order ----------------------------------------------------------------------------------------------
    def held_by(self, node: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...] = (cst.If,)) -> bool:
        """Whether `node` runs inside a statement of one of `kinds` (an `if`; a loop, a `try`) of its own
        function: one around the `def` (or the class) holding the function does not count."""
        assert self.blocks is not None, "held_by asks the facts of a traversal (collect_facts)"
        at = self.start(node)
        owner = None
        for block, _ in self.blocks:
            if isinstance(block, cst.FunctionDef) and self.start(block) <= at < self.end(block):
                owner = block  # the blocks come in source order: the last holding `node` is the innermost
        return any(
            isinstance(block, kinds) and holder is owner and self.start(block) <= at < self.end(block)
            for block, holder in self.blocks
        )

    def start(self, node: cst.CSTNode) -> Pos:
        return self.entered[node]

    def end(self, node: cst.CSTNode) -> Pos:
        return self.exited[node]

    # --- the big questions -----------------------------------------------------------------------------------
    @property
    def has_engine(self) -> bool:
        """Whether the file creates a DeepSpeed engine (calls `deepspeed.initialize`), or receives one created
        elsewhere (a parameter, or a helper's result, that the project index follows)."""
        return bool(self.initialize_calls) or (self.project is not None and self.project.receives_engine)

    def remote_engine(
        self, fact: object, origin: Origin, site: Related, config: EngineConfig | None, created: Related | None = None
    ) -> Engine:
        """The engine an initialize call in another function or module creates, as the project model brings it
        here (one per project fact)."""
        found = self.remote_engines.get(id(fact))
        if found is None:
            where = (created.path, created.line, created.column) if created is not None else None
            tests_stage = isinstance(fact, ParameterFact) and fact.caller_tests_stage
            found = Engine(origin, site=site, created=where, config=config, caller_tests_stage=tests_stage)
            self.remote_engines[id(fact)] = found
        return found

    def answer(self, role: Role, engine: Engine) -> RoleAnswer:
        return RoleAnswer(role, engine, self.calls_of_engine.get(engine))

    def initialize_of(self, engine: Engine | None) -> InitializeCall | None:
        """The initialize call of this file that creates `engine` (None for an engine from elsewhere)."""
        return self.calls_of_engine.get(engine) if engine is not None else None

    def result_keys(self, engine: Engine, role: Role) -> list[str]:
        """The names (`engine`, `self.engine`) bound to `engine`'s result of `role` in this file."""
        return [b.key for b in self.result_bindings.get(engine, ()) if result_role(b) is role]

    def project_parameter(self, binding: Binding) -> ParameterFact | None:
        """What the project index knows this parameter receives at every call (an engine, engine.module...)."""
        return self.parameter_entry(self.project.parameters, binding) if self.project is not None else None

    def parameter_entry(self, table: Mapping[str, Mapping[str, Fact]], binding: Binding | None) -> Fact | None:
        """`table[function][parameter]` for a binding of a parameter: a project fact about what this function's
        callers pass into it (`ProjectFacts.parameters`, `cuda_parameters`, `partly_engine`); None for any other
        binding."""
        if binding is None or not table or binding.kind is not BindingKind.PARAMETER:
            return None
        function = self.qualname(binding.scope)
        return table.get(function, {}).get(binding.key) if function else None

    def parameter_fact(self, binding: Binding) -> RoleAnswer | None:
        """An engine (or engine.module) the project index sees passed into this parameter at every call."""
        fact = self.project_parameter(binding)
        if fact is None:
            return None
        role = next((r for r in Role if r.value == fact.role), None)
        if role is None:
            return None
        return self.answer(role, self.remote_engine(fact, Origin.CALLER, fact.origin, fact.config, fact.created))

    def value_at(self, expr: cst.BaseExpression) -> RoleAnswer | None:
        """What the project model knows `expr` holds where it is written (`pair.policy`, an engine a project
        class keeps in an attribute of the instance `pair`)."""
        if self.project is None or not self.project.values_at:
            return None
        where = self.positions.get(expr)
        if where is None:
            return None
        key = (where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)
        fact = self.project.values_at.get(key)
        role = next((r for r in Role if fact is not None and r.value == fact.role), None)
        if fact is None or role is None:
            return None
        return self.answer(role, self.remote_engine(fact, Origin.ATTRIBUTE, fact.origin, fact.config, fact.origin))

    def qualname(self, scope: Scope) -> str | None:
        """`Trainer.train`, `main`, `outer.inner` for a function scope (as the project index names it)."""
        parts: list[str] = []
        current: Scope | None = scope
        while current is not None and current.kind is not ScopeKind.MODULE:
            node = current.node
            if not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                return None
            parts.append(node.name.value)
            current = current.parent
        return ".".join(reversed(parts)) if parts else None

    def in_plain_branch(self, node: cst.CSTNode) -> bool:
        if not self.plain_ranges:
            return False
        return self._within(self.start(node), self.plain_ranges)

    @staticmethod
    def _within(pos: Pos, ranges: Iterable[tuple[Pos, Pos]]) -> bool:
        return any(lo <= pos < hi for lo, hi in ranges)

    def qualified(self, node: cst.CSTNode) -> str | None:
        return self.imports.qualified(node)

    def scope_at(self, node: cst.CSTNode) -> Scope:
        """The innermost scope holding `node` (recorded for calls, names and attributes)."""
        return self.scope_of_node.get(node, self.module_scope)

    def initialize_call_for(self, call: cst.Call) -> InitializeCall | None:
        for init in self.initialize_calls:
            if init.call is call:
                return init
        return None

    def role_of(self, expr: cst.CSTNode, at: cst.CSTNode | None = None) -> RoleAnswer | None:
        """What `expr` stands for at the position of `at` (default: `expr` itself), or None if unknown."""
        if self.project is not None and self.project.values_at and isinstance(expr, cst.Attribute):
            found = self.value_at(expr)
            if found is not None:
                return found
        at = at if at is not None else expr
        scope = self.scope_at(at)
        pos = self.start(at)
        if isinstance(expr, cst.Subscript):
            key = _constant_key(expr)
            if key is not None:
                return self._keyed_role(expr.value, key, scope, pos)
            base = self.role_of(expr.value, at)
            index = constant_index(expr)
            if base is not None and base.role is Role.INIT_RESULT and index is not None:
                index = index % RESULT_ARITY
                return RoleAnswer(RESULT_ROLES[index], base.engine, base.init)
            return None
        key = dotted_name(expr)
        if key is None:
            return None
        head, _, attribute = key.rpartition(".")
        held = library.ENGINE_ATTRIBUTES.get(attribute) if head else None
        if held is not None:  # `engine.module`, `engine.optimizer`, `engine.lr_scheduler`
            base = self.role_of_key(head, scope, pos)
            if base is not None and base.role is Role.ENGINE:
                return RoleAnswer(Role(held), base.engine, base.init)
        return self.role_of_key(key, scope, pos)

    def role_of_key(self, key: str, scope: Scope, pos: Pos, depth: int = 0) -> RoleAnswer | None:
        binding = self._through_self_returning(self.binding_at(key, scope, pos))
        if binding is None:
            return None
        role = result_role(binding)
        if role is not None and binding.engine is not None:
            return self.answer(role, binding.engine)
        if self.project is not None:
            remote = self.parameter_fact(binding) or self._alias_of_remote(binding, depth)
            if remote is not None:
                return remote
        for init in self.initialize_calls:
            for argument, argument_role in (
                ("model", Role.RAW_MODEL),
                ("optimizer", Role.CLIENT_OPTIMIZER),
                ("lr_scheduler", Role.CLIENT_SCHEDULER),
            ):
                passed = init.argument(argument)
                if passed is None or dotted_name(passed) != key:
                    continue
                if self._through_self_returning(self.binding_at(key, init.scope, init.start)) is binding:
                    return RoleAnswer(argument_role, init.engine, init)
        return None

    def _keyed_role(self, expr: cst.BaseExpression, key: str, scope: Scope, pos: Pos) -> RoleAnswer | None:
        """`state["engine"]` where `state` (or the call itself) is a helper's dict of initialize's results."""
        if self.project is None or not self.project.returns:
            return None
        call = expr
        name = dotted_name(expr)
        if name is not None:
            binding = self.binding_at(name, scope, pos)
            if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
                return None
            call = binding.value
        if not isinstance(call, cst.Call):
            return None
        fact = self.call_fact(call, self.project.returns)
        if fact is None or key not in fact.keys:
            return None
        role = next((r for r in Role if r.value == fact.roles[fact.keys.index(key)]), None)
        if role is None:
            return None
        return self.answer(role, self.remote_engine(fact, Origin.RETURN, fact.origin, fact.config, fact.origin))

    def _alias_of_remote(self, binding: Binding, depth: int) -> RoleAnswer | None:
        """`model = engine`, `m = engine.module if hasattr(engine, "module") else engine`, `m = m.module`,
        `m = _unwrap(engine)`, where the engine is one the project index brings from elsewhere."""
        value = binding.value
        if binding.kind is not BindingKind.OTHER or value is None or depth > 4:
            return None
        scope, pos = binding.scope, self.start(value)
        if isinstance(value, cst.IfExp):
            body = self._remote_role(value.body, scope, pos, depth)
            orelse = self._remote_role(value.orelse, scope, pos, depth)
            if body is None or orelse is None or body.engine is not orelse.engine:
                return None
            role = body.role if body.role is orelse.role else Role.ENGINE_MODULE
            return RoleAnswer(role, body.engine, body.init)
        return self._remote_role(value, scope, pos, depth)

    def _remote_role(self, expr: cst.BaseExpression, scope: Scope, pos: Pos, depth: int) -> RoleAnswer | None:
        if isinstance(expr, cst.Call) and self.project is not None and self.project.passthrough:
            passed = self.call_fact(expr, self.project.passthrough)
            if passed is None:
                return None
            position, name, unwrapped = passed
            argument = next((a.value for a in expr.args if a.keyword is not None and a.keyword.value == name), None)
            positional = [a for a in expr.args if a.keyword is None]
            if argument is None and position < len(positional) and not positional[position].star:
                argument = positional[position].value
            inner = self._remote_role(argument, scope, pos, depth + 1) if argument is not None else None
            if inner is None or not unwrapped:
                return inner
            return RoleAnswer(Role.ENGINE_MODULE, inner.engine, inner.init) if inner.role is Role.ENGINE else inner
        if isinstance(expr, cst.Attribute):
            held = self.value_at(expr)
            if held is not None:
                return held
        key = dotted_name(expr)
        if key is None:
            return None
        if key.endswith(".module"):
            base = self.role_of_key(key[: -len(".module")], scope, pos, depth + 1)
            if base is not None and base.role in (Role.ENGINE, Role.ENGINE_MODULE) and _is_remote(base):
                return RoleAnswer(Role.ENGINE_MODULE, base.engine, base.init)
            return None
        found = self.role_of_key(key, scope, pos, depth + 1)
        return found if found is not None and _is_remote(found) else None

    def _through_self_returning(self, binding: Binding | None) -> Binding | None:
        """`m = m.cuda()` keeps what `m` was: nn.Module's `.cuda()`, `.to()`, `.train()`... return the module; so
        does `m = torch.compile(m)`, whose wrapper forwards attribute reads to `m` (`library.FORWARDING_WRAPPERS`)."""
        seen = 0
        while binding is not None and binding.kind is BindingKind.OTHER and binding.value is not None and seen < 8:
            value = binding.value
            if isinstance(value, cst.Call) and value.args and self.qualified(value.func) in library.FORWARDING_WRAPPERS:
                root: cst.BaseExpression = value.args[0].value
            else:
                calls = list(iter_call_chain(value))
                if not calls or any(method_name(c) not in SELF_RETURNING_METHODS for c in calls):
                    return binding
                assert isinstance(calls[-1].func, cst.Attribute)
                root = calls[-1].func.value
            if dotted_name(root) != binding.key:
                return binding
            binding = self.binding_at(binding.key, binding.scope, self.start(value))
            seen += 1
        return binding

    def binding_at(self, key: str, scope: Scope, pos: Pos, on_path: bool = False) -> Binding | None:
        """The binding of `key` visible at `pos` in `scope` (`dslint.model.bindings`: the module's, read without
        the plain-PyTorch branches); None when it cannot be known. `on_path`: also skip bindings in an arm
        exclusive with `pos` (`if zero3: model = ...` / `else: <pos>`)."""
        if not on_path or not self.collected:
            return self.bindings.binding_at(key, scope, pos, self._usable)
        return self.bindings.binding_at(
            key,
            scope,
            pos,
            lambda b: self._usable(b) and (b.statement is None or not self.paths.exclusive(b.statement, pos)),
        )

    def _usable(self, binding: Binding) -> bool:
        return binding.statement is None or not self.in_plain_branch(binding.statement)

    def local_binding(self, expr: cst.CSTNode) -> Binding | None:
        """The plain binding (an assignment: not a parameter, an import or an initialize result) of a name or
        attribute chain that is visible at `expr` and made in `expr`'s own function (or at module level for
        module code); None otherwise."""
        key = dotted_name(expr)
        if key is None:
            return None
        scope = self.scope_at(expr)
        binding = self.binding_at(key, scope, self.start(expr))
        if binding is None or binding.kind is not BindingKind.OTHER or binding.scope is not scope:
            return None
        return binding

    def assigned_value(self, expr: cst.CSTNode, at: cst.CSTNode) -> cst.BaseExpression | None:
        """The value a name (or attribute chain) holds at `at`, when a plain assignment bound it there;
        None for parameters, initialize results, unknown names and anything not a name."""
        key = dotted_name(expr)
        if key is None:
            return None
        binding = self.binding_at(key, self.scope_at(at), self.start(at))
        if binding is None or binding.kind is not BindingKind.OTHER:
            return None
        value: cst.BaseExpression | None = binding.value
        return value

    def device_set_before(self, scope: Scope, pos: Pos) -> bool:
        """Whether the current device is set (explicitly, or by initialize) before `pos` in `scope`."""
        if any(s is scope and p <= pos for s, p in self.device_set_calls):
            return True
        return any(init.scope is scope and init.end <= pos for init in self.initialize_calls)

    def device_set_elsewhere(self, scope: Scope) -> bool:
        """Whether a device is set in another scope, which may run first: order cannot be known then."""
        return any(s is not scope for s, _ in self.device_set_calls)

    def statement_of(self, call: cst.Call) -> cst.CSTNode | None:
        return self.statement_of_call.get(call)

    def lone_expression_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The line holding `call` when the call is that line's only statement (`x.cuda()` alone)."""
        line = self.statement_of_call.get(call)
        small = self.small_statement_of_call.get(call)
        if (
            isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and isinstance(small, cst.Expr)
            and small.value is call
        ):
            return line
        return None

    def bound_to_name(self, call: cst.Call) -> tuple[cst.Assign, str] | None:
        """`name = call(...)`: the statement and the one plain name the call's result is bound to; else None."""
        small = self.small_statement_of_call.get(call)
        if (
            isinstance(small, cst.Assign)
            and small.value is call
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
        ):
            return small, small.targets[0].target.value
        return None

    def is_only_statement_of_block(self, line: cst.CSTNode) -> bool:
        return self.block_size_of_line.get(line, 0) == 1

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


def _is_remote(answer: RoleAnswer) -> bool:
    return answer.engine.elsewhere


def _constant_key(node: cst.Subscript) -> str | None:
    """`x["engine"]` -> "engine"."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.SimpleString):
        evaluated = value.evaluated_value
        return evaluated if isinstance(evaluated, str) else None
    return None


def constant_index(node: cst.Subscript) -> int | None:
    if len(node.slice) != 1:
        return None
    element = node.slice[0].slice
    if not isinstance(element, cst.Index):
        return None
    value = element.value
    negative = False
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        negative, value = True, value.expression
    if isinstance(value, cst.Integer):
        number = int(value.value, 0)
        return -number if negative else number
    return None


def iter_call_chain(node: cst.BaseExpression) -> Iterator[cst.Call]:
    """The method calls of a chain, outermost first: `Net().cuda().half()` yields `.half()`, `.cuda()`, `Net()`."""
    while isinstance(node, cst.Call):
        yield node
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        node = func.value


def method_name(call: cst.Call) -> str | None:
    """`x.cuda()` -> "cuda"; a plain function call -> None."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None

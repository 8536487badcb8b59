"""The two rewrites of `X.load_state_dict(<torch.load(...)>)` after `deepspeed.initialize` (DSL203's fixes).

- Into `engine.load_checkpoint(dir, tag=tag, load_module_only=True, load_optimizer_states=False)` with its result
  checked, when the loaded file lies in a DeepSpeed checkpoint directory (`dslint.script.checkpoint_paths`).
- Otherwise the load moves before `initialize`, into the model given to it, with `map_location="cpu"`.

Both are offered only where the rewrite keeps what the code means: the load is a statement of its own, the
loaded dict is used nowhere else, moved code reads names that mean the same at its new place and stays in the
same block (a load under `if args.resume:` is never moved out of its `if`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from dslint.diagnostics import Edit, Location
from dslint.script.checked_load import checked_load_edit
from dslint.script.checkpoint_paths import checkpoint_location, reads_same_names
from dslint.script.context import ScriptContext
from dslint.script.edits import delete_line
from dslint.script.facts import BindingKind, InitializeCall, Role, RoleAnswer, method_name
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name
from dslint.script.statement_removal import delete_statements, is_pure_test, statement_parents
from dslint.script.torch_load import has_star_arguments, is_torch_load, with_cpu_map_location
from dslint.script.value_flow import value_flow
from dslint.script.walk import visit_tree

MODULE_KEYS = frozenset({"module"})
SAVING_METHODS = frozenset({"save_checkpoint", "save_16bit_model", "save_pretrained", "save"})


@dataclass(frozen=True)
class LoadedState:
    """What `load_state_dict` is given: `torch.load(...)` (perhaps indexed), directly or through a variable."""

    load: cst.Call  # the torch.load call
    selector: cst.Subscript | None  # `state["module"]` / `torch.load(p)["module"]`
    variable: str | None
    assignment_line: cst.SimpleStatementLine | None
    shared: bool = False  # the variable is read elsewhere too: its assignment must stay where it is


@dataclass(frozen=True)
class Rewrite:
    edits: tuple[Edit, ...]
    message: str


class StateDictLoads:
    """Builds the rewrites for one file; `blocks` maps each statement to the block (body) holding it."""

    def __init__(self, context: ScriptContext, blocks: dict[cst.CSTNode, cst.CSTNode]) -> None:
        self.context = context
        self.facts = context.facts
        self.blocks = blocks
        self._lines = context.text.splitlines(keepends=True)
        self._name_counts: dict[str, int] | None = None

    # --- what is loaded ---------------------------------------------------------------------------------------
    def loaded_state(self, call: cst.Call) -> LoadedState | None:
        argument = _state_argument(call)
        if argument is None:
            return None
        selector: cst.Subscript | None = None
        if isinstance(argument, cst.Subscript):
            selector, argument = argument, argument.value
        if isinstance(argument, cst.Call):
            if not self._plain_torch_load(argument):
                return None
            return LoadedState(argument, selector, None, None)
        if not isinstance(argument, cst.Name):
            return None
        facts = self.facts
        binding = facts.binding_at(argument.value, facts.scope_at(call), facts.start(call))
        if binding is None or binding.kind is not BindingKind.OTHER or binding.scope is not facts.scope_at(call):
            return None
        value, line = binding.value, binding.statement
        if not (isinstance(value, cst.Call) and self._plain_torch_load(value)):
            return None
        line = self._assignment_line(binding.statement, argument.value)
        if line is None:
            return None
        return LoadedState(value, selector, argument.value, line, shared=not self._used_once(argument.value))

    def _plain_torch_load(self, call: cst.Call) -> bool:
        return is_torch_load(self.facts, call) and not has_star_arguments(call) and bool(call.args)

    def _assignment_line(self, statement: cst.CSTNode | None, name: str) -> cst.SimpleStatementLine | None:
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            return None
        if dotted_name(statement.targets[0].target) != name:
            return None
        for line, block in self.blocks.items():
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and line.body[0] is statement:
                return line if block is not None else None
        return None

    def _used_once(self, name: str) -> bool:
        """The variable is bound once and read once (by the load_state_dict call), anywhere in the file."""
        return self._name_count(name) == 2

    # --- rewrite (a): engine.load_checkpoint ------------------------------------------------------------------
    def to_load_checkpoint(self, call: cst.Call, answer: RoleAnswer, state: LoadedState) -> Rewrite | None:
        context, facts = self.context, self.facts
        line = facts.lone_expression_statement(call)
        if line is None or state.shared:
            return None
        if state.selector is not None and _subscript_key(state.selector) not in MODULE_KEYS:
            return None
        strict = _strict_argument(call)
        if strict is False:
            return None
        path = state.load.args[0].value
        if state.load.args[0].keyword is not None or not reads_same_names(context, path, call):
            return None
        location = checkpoint_location(context, path, state.load)
        if location is None:
            return None
        engine = self._engine_text(call, answer)
        if engine is None:
            return None
        options = f"tag={location.tag}, load_module_only=True, load_optimizer_states=False"
        if isinstance(strict, cst.BaseExpression):
            options += f", load_module_strict={context.code(strict)}"
        directory = location.directory
        call_text = f"{engine}.load_checkpoint({directory}, {options})"
        edits = [checked_load_edit(context, line, call_text, directory)]
        if state.assignment_line is not None:
            deletion = delete_line(context, state.assignment_line)
            if deletion is None:
                return None
            edits.append(deletion)
        return Rewrite(tuple(edits), f"Load with `{engine}.load_checkpoint({directory}, load_module_only=True)`")

    def _engine_text(self, call: cst.Call, answer: RoleAnswer) -> str | None:
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if receiver is None:
            return None
        if answer.role is Role.ENGINE:
            return self.context.code(receiver)
        if answer.role is Role.ENGINE_MODULE and isinstance(receiver, cst.Attribute):
            return self.context.code(receiver.value)
        facts = self.facts
        scope = facts.scope_at(call)
        for key in facts.result_keys(answer.engine, Role.ENGINE):
            found = facts.role_of_key(key, scope, facts.start(call))
            if found is not None and found.role is Role.ENGINE and found.engine is answer.engine:
                if key.startswith("self."):
                    if scope.self_name is None:
                        continue
                    return scope.self_name + key[len("self") :]
                return key
        return None

    # --- rewrite (b): load before initialize ------------------------------------------------------------------
    def before_initialize(self, call: cst.Call, answer: RoleAnswer, state: LoadedState) -> Rewrite | None:
        """Move the load before `initialize`, into the model given to it (`map_location="cpu"`).

        The receiver may be the engine (`model, *_ = deepspeed.initialize(model=model)`: before that line, `model`
        is the model itself), `engine.module` or the model. A load under `if args.resume:` (ifs without `else`,
        tests without side effects, whose names mean the same before `initialize`) keeps its guard: the guard is
        written again before `initialize`, and the original `if` goes if the load was all it held.
        """
        context, facts = self.context, self.facts
        init = answer.init
        line = facts.lone_expression_statement(call)
        if line is None or init is None or answer.role not in (Role.ENGINE, Role.ENGINE_MODULE, Role.RAW_MODEL):
            return None
        model = init.model
        if model is None or dotted_name(model) is None or facts.scope_at(call) is not init.scope:
            return None
        init_line = facts.statement_of(init.call)
        parents = statement_parents(context)
        init_block = parents.block_of.get(init_line) if init_line is not None else None
        if not isinstance(init_line, cst.SimpleStatementLine) or init_block is None:
            return None
        guards = self._guards(line, init_block)
        if guards is None or facts.start(guards[0] if guards else line) < init.end:
            return None
        if not reads_same_names(context, state.load, init.call) or self._saves_between(init, line):
            return None
        checked: list[cst.BaseExpression] = [arg.value for arg in call.args[1:]] + [g.test for g in guards]
        if not all(reads_same_names(context, value, init.call) for value in checked):
            return None
        load_block = parents.block_of.get(line)
        indent = self._indent(init_line)
        inner = indent + "".join(self._body_indent(guard) for guard in guards)
        newline = context.module.default_newline
        load_text = context.module.code_for_node(with_cpu_map_location(state.load))
        model_text = context.code(model)
        before: list[str] = []  # at the indentation of initialize, before the guards
        guarded: list[str] = []  # inside the guards
        deleted: list[cst.CSTNode] = [line]
        move_assignment = state.assignment_line is not None and facts.start(state.assignment_line) > init.start
        if state.variable is not None and state.assignment_line is not None:
            if move_assignment:
                where = parents.block_of.get(state.assignment_line)
                if where not in (load_block, init_block):
                    return None
                if state.shared and not self._read_only_after(state.assignment_line, state.variable, where):
                    return None
                assigned = f"{state.variable} = {load_text}{self._comment(state.assignment_line)}{newline}"
                if where is load_block:
                    guarded.append(inner + assigned)
                else:
                    before.append(indent + assigned)
                deleted.append(state.assignment_line)
            argument = state.variable
        else:
            argument = load_text
        if state.selector is not None:
            argument += context.code(state.selector)[len(context.code(state.selector.value)) :]
        rest = "".join(f", {context.code(arg).strip().rstrip(',')}" for arg in call.args[1:])
        guarded.append(f"{inner}{model_text}.load_state_dict({argument}{rest}){self._comment(line)}{newline}")
        headers = []
        current = indent
        for guard in guards:
            headers.append(f"{current}if {context.code(guard.test)}:{self._header_comment(guard)}{newline}")
            current += self._body_indent(guard)
        deletions = delete_statements(context, deleted)
        if deletions is None:
            return None
        start, _ = context.span(init_line)
        text = "".join(before + headers + guarded)
        edits = [Edit.insertion(Location(start.line, 1), text), *deletions]
        return Rewrite(tuple(edits), f'Load into `{model_text}` before deepspeed.initialize, map_location="cpu"')

    def _read_only_after(self, line: cst.SimpleStatementLine, name: str, block: cst.CSTNode | None) -> bool:
        """A dict read elsewhere too (`start_epoch = ckpt["epoch"]`) may be loaded earlier when its name is bound
        once in the function and read only after its assignment, in the block it moves with (under the same
        guard), so that every read still sees it and nothing reads it sooner."""
        facts = self.facts
        assignment = line.body[0]
        target = assignment.targets[0].target if isinstance(assignment, cst.Assign) else None
        if not isinstance(target, cst.Name):
            return False
        scope = facts.scope_at(target)
        if len(scope.bindings.get(name, ())) != 1:
            return False
        reads = value_flow(facts, scope.node).reads_reached_by(assignment, name)
        if reads is None or self._name_count(name) != len(reads) + 1:
            return False  # read where the flow does not follow it (another function), or not bound here
        lo, hi = (facts.start(block), facts.end(block)) if block is not None else (0, 0)
        return all(facts.start(read) > facts.start(line) and lo <= facts.start(read) < hi for read in reads)

    def _name_count(self, name: str) -> int:
        if self._name_counts is None:
            counter = _NameCounter()
            visit_tree(self.context.module, counter)
            self._name_counts = counter.counts
        return self._name_counts.get(name, 0)

    def _saves_between(self, init: InitializeCall, line: cst.CSTNode) -> bool:
        """Whether something between `initialize` and the load may write the file it reads (a `torch.save`, a
        `save_checkpoint`): then the load cannot move before `initialize`."""
        facts = self.facts
        lo, hi = init.end, facts.start(line)
        for call in loop_facts(facts).calls:
            if not lo <= facts.start(call) < hi:
                continue
            if facts.qualified(call.func) == "torch.save" or method_name(call) in SAVING_METHODS:
                return True
        return False

    def _guards(self, line: cst.CSTNode, init_block: cst.CSTNode) -> list[cst.If] | None:
        """The `if`s (outermost first) between `line` and the block of `initialize`; None when another compound
        statement (a loop, a `with`, a function, an `if` with `else`, a test with side effects) is in between."""
        parents = statement_parents(self.context)
        guards: list[cst.If] = []
        statement: cst.CSTNode = line
        while True:
            block = parents.block_of.get(statement)
            if block is None:
                return None
            if block is init_block:
                return guards
            owner = parents.owner_of.get(block)
            if not isinstance(owner, cst.If) or owner.orelse is not None or owner in parents.if_of_else:
                return None
            if not is_pure_test(owner.test):
                return None
            guards.insert(0, owner)
            statement = owner

    def _body_indent(self, guard: cst.If) -> str:
        body = guard.body
        indent = body.indent if isinstance(body, cst.IndentedBlock) else None
        return indent if indent is not None else self.context.module.default_indent

    @staticmethod
    def _header_comment(guard: cst.If) -> str:
        body = guard.body
        if isinstance(body, cst.IndentedBlock) and body.header.comment is not None:
            return f"{body.header.whitespace.value}{body.header.comment.value}"
        return ""

    # --- text helpers -----------------------------------------------------------------------------------------
    def _comment(self, line: cst.CSTNode) -> str:
        """The trailing comment of a statement line (with the spaces before it), kept when the line moves."""
        _, end = self.context.span(line)
        return self._lines[end.line - 1][end.column - 1 :].rstrip("\r\n")

    def _indent(self, line: cst.CSTNode) -> str:
        start, _ = self.context.span(line)
        return self._lines[start.line - 1][: start.column - 1]


class _NameCounter(cst.CSTVisitor):
    """How often each plain name occurs (reads and writes; not attribute names, not keyword names)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _state_argument(call: cst.Call) -> cst.BaseExpression | None:
    if not call.args:
        return None
    first = call.args[0]
    if first.star or (first.keyword is not None and first.keyword.value != "state_dict"):
        return None
    for arg in call.args[1:]:
        if arg.star or arg.keyword is None or arg.keyword.value not in ("strict", "assign"):
            return None
    return first.value


def _strict_argument(call: cst.Call) -> cst.BaseExpression | bool | None:
    """The `strict=` value: None when absent, False when literally False, else the expression."""
    for arg in call.args[1:]:
        if arg.keyword is not None and arg.keyword.value == "assign":
            return False  # load_checkpoint has no `assign`
        if arg.keyword is not None and arg.keyword.value == "strict":
            if isinstance(arg.value, cst.Name) and arg.value.value == "True":
                return None
            return arg.value
    return None


def _subscript_key(node: cst.Subscript) -> str | None:
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        value = index.value.evaluated_value
        return value if isinstance(value, str) else None
    return None

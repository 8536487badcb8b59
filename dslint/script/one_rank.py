"""Which parts of a script run on one rank only: the body of `if rank == 0:` (any comparison of a rank with small
literals: `args.local_rank in [-1, 0]`, `dist.get_rank() == 0`), of `if accelerator.is_main_process:` or
`if trainer.is_world_process_zero():` or Lightning's `if fabric.is_global_zero:`, a project helper named for rank 0
(`if is_rank_0():`), and of `with training_args.main_process_first():` (the main process runs it first while the
others wait at a barrier), a name bound to one of those tests (`master = rank == 0` ... `if master:`; or bound so
in one arm of an `if` and to a constant in the arms that exclude it), and
the body of a function whose decorator runs it on one rank (`@rank_zero_only`, a decorator of the module's own that
calls the function under such a test).
DSL426 (generate) and DSL428 (collective saves) ask it."""

from __future__ import annotations

import re

import libcst as cst

from dslint.model.bindings import Binding, BindingKind
from dslint.model.library import ONE_RANK_FIRST, ONE_RANK_PREDICATES  # the table's: CPython's tree reads them too
from dslint.script.facts import ScriptFacts
from dslint.script.names import dotted_name
from dslint.script.walk import visit_tree

# Project helpers whose name says "this is rank 0": `is_rank_0()`, `utils.is_rank_zero()`, `is_global_rank_0()`,
# `is_local_rank0()`. Only called in a test (`if is_rank_0():`); a bare name or a getter (`get_rank`) is no test.
_RANK_ZERO_HELPER = re.compile(r"is_(?:global_|local_)?rank_?(?:0|zero)")


def one_rank_test(test: cst.BaseExpression) -> bool:
    """`rank == 0`, `args.local_rank in [-1, 0]`, `dist.get_rank() == 0`, `accelerator.is_main_process`,
    `trainer.is_world_process_zero()`: true on one rank (or one a node) only."""
    if isinstance(test, cst.Call):
        helper = dotted_name(test.func)
        if helper is not None and _RANK_ZERO_HELPER.fullmatch(helper.rsplit(".", 1)[-1]):
            return True
        test = test.func
    name = dotted_name(test)
    if name is not None and name.rsplit(".", 1)[-1] in ONE_RANK_PREDICATES:
        # `args.should_save` is the Trainer's (true on the main process only); a script's own `should_save`
        # flag is no rank test, nor is the TrainerControl's (`self.control.should_save`: every rank sets it alike)
        return ("." in name or name != "should_save") and not name.endswith("control.should_save")
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.In)):
        return False
    left = test.left.func if isinstance(test.left, cst.Call) else test.left
    subject = dotted_name(left)
    return subject is not None and "rank" in subject.rsplit(".", 1)[-1] and _small_literal(target.comparator)


def one_rank_conjunction(test: cst.BaseExpression, facts: ScriptFacts | None = None) -> bool:
    """A one-rank test, or an `and` of tests one of which is (`args.should_save and args.local_rank == 0`); with
    `facts`, a name holding one counts too (`one_rank_flag`)."""
    if isinstance(test, cst.BooleanOperation):
        if not isinstance(test.operator, cst.And):
            return False
        return one_rank_conjunction(test.left, facts) or one_rank_conjunction(test.right, facts)
    return one_rank_test(test) or (facts is not None and one_rank_flag(facts, test))


def one_rank_flag(facts: ScriptFacts, test: cst.BaseExpression) -> bool:
    """A name the same function (or module) last bound to a one-rank test before `test`: `master = rank == 0`
    ... `if master:`; or bound so in one arm of an `if` and to a constant in the arms that exclude it (`if
    distributed: master = rank == 0` / `else: master = True`, the one-process default): on the distributed path
    the flag is the rank test (`_alternatives`)."""
    if not isinstance(test, cst.Name):
        return False
    value = facts.assigned_value(test, test)
    if value is not None and not isinstance(value, cst.Name) and one_rank_test(value):
        return True
    if not _constant(value):
        return False
    values = _alternatives(facts, test)
    return any(one_rank_test(v) for v in values) and all(one_rank_test(v) or _constant(v) for v in values)


def _constant(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Name) and value.value in ("True", "False")


def _alternatives(facts: ScriptFacts, name: cst.Name) -> list[cst.BaseExpression]:
    """The values of the bindings of `name` in its own scope before it, latest first, as long as each is made on
    a path that excludes every later one (the arms of one `if`/`elif`/`else`); [] when one of them is no plain
    assignment."""
    scope = facts.scope_at(name)
    pos = facts.start(name)
    latest = facts.binding_at(name.value, scope, pos)
    if latest is None or latest.scope is not scope:
        return []
    earlier = [b for b in scope.bindings.get(name.value, ()) if b.pos <= latest.pos and b.statement is not None]
    chosen: list[Binding] = []
    for binding in reversed(earlier):
        if chosen and not all(facts.paths.exclusive(binding.statement, later.statement) for later in chosen):
            break
        if binding.kind is not BindingKind.OTHER or binding.value is None:
            return []
        chosen.append(binding)
    return [binding.value for binding in chosen]


def other_ranks_test(test: cst.BaseExpression, facts: ScriptFacts | None = None) -> bool:
    """True on every rank but one: `rank != 0`, `args.local_rank not in [-1, 0]`, `rank > 0`,
    `not accelerator.is_main_process` (the negation of a one-rank test, or of a name holding one)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return one_rank_test(test.expression) or (facts is not None and one_rank_flag(facts, test.expression))
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    left = test.left.func if isinstance(test.left, cst.Call) else test.left
    subject = dotted_name(left)
    if subject is None or "rank" not in subject.rsplit(".", 1)[-1]:
        return False
    if isinstance(target.operator, (cst.NotEqual, cst.NotIn)):
        return _small_literal(target.comparator)
    # `rank > 0`, `rank >= 1`
    comparator = target.comparator
    return isinstance(comparator, cst.Integer) and (
        (isinstance(target.operator, cst.GreaterThan) and comparator.evaluated_value == 0)
        or (isinstance(target.operator, cst.GreaterThanEqual) and comparator.evaluated_value == 1)
    )


_EXITS = (cst.Continue, cst.Return, cst.Break)


def rest_on_one_rank(
    block: cst.IndentedBlock, facts: ScriptFacts | None = None
) -> tuple[cst.BaseStatement, cst.BaseStatement] | None:
    """The statements of `block` (first, last) after an `if` that sends every rank but one away: `if rank != 0:
    continue` (or `return`, `break`) in a loop or a function, with no `else`. Only the rest of that block: an
    exit nested deeper leaves more, which is not claimed."""
    body = block.body
    for index, statement in enumerate(body[:-1]):
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            continue
        if not other_ranks_test(statement.test, facts):
            continue
        inner = statement.body
        last = inner.body[-1] if isinstance(inner, cst.IndentedBlock) and inner.body else None
        if isinstance(last, cst.SimpleStatementLine):
            exits = isinstance(last.body[-1], _EXITS)
        else:
            exits = isinstance(inner, cst.SimpleStatementSuite) and isinstance(inner.body[-1], _EXITS)
        if exits:
            return body[index + 1], body[-1]
    return None


# Words of code that runs as several processes (a process group, ranks, a launcher's environment, accelerate, the
# HF Trainer, Lightning)
SEVERAL_PROCESSES = (
    "init_process_group",
    "init_distributed",
    "get_rank",
    "local_rank",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "torch.distributed",
    "DistributedDataParallel",
    "Accelerator(",
    "Trainer(",
    "Fabric(",
)


def within_one_rank(
    facts: ScriptFacts,
    node: cst.CSTNode,
    regions: list[cst.CSTNode],
    rests: list[tuple[cst.CSTNode, cst.CSTNode]],
) -> bool:
    """Whether `node` lies in one of `regions` (an `if` body under a one-rank test) or `rests` (the statements
    from `first` to `last` after an early return of the other ranks), by the traversal's order of entering and
    leaving nodes (no positions needed)."""
    start, end = facts.start(node), facts.end(node)
    return any(facts.start(region) <= start and end <= facts.end(region) for region in regions) or any(
        facts.start(first) <= start and end <= facts.end(last) for first, last in rests
    )


def presumed_one_process(facts: ScriptFacts, text: str) -> bool:
    """The script runs as one process though no launch of it says so: no launch in the project starts several
    processes (`ProjectFacts.one_process_project`: each is `python x.py`, or there is none), and its code shows no
    sign of several (`SEVERAL_PROCESSES`)."""
    project = facts.project
    return project is not None and project.one_process_project and not any(s in text for s in SEVERAL_PROCESSES)


def one_process_launches(facts: ScriptFacts) -> bool:
    """Every launch of this script the project holds starts one process in all (`deepspeed --num_gpus=1`), or, for
    a module no launch starts, every launch of the scripts importing it (`importer_launches`): rank 0 is the only
    rank, so a collective it enters alone waits for no one. Not where a launcher names the script in a launch the
    index does not read (`launches_partial`): the launches read may not be all."""
    project = facts.project
    if project is None:
        return False
    launches = project.launches or project.importer_launches
    return bool(launches) and not project.launches_partial and all(launch.ranks == 1 for launch in launches)


def one_rank_first(node: cst.With) -> bool:
    """`with x.main_process_first(...):`."""
    for item in node.items:
        call = item.item
        if isinstance(call, cst.Call):
            name = dotted_name(call.func)
            if name is not None and name.rsplit(".", 1)[-1].endswith(ONE_RANK_FIRST):
                return True
    return False


# Decorators that run the function they wrap on one rank only: Lightning's `rank_zero_only`, accelerate's
# `@accelerator.on_main_process` / `on_local_main_process`.
ONE_RANK_DECORATORS = frozenset({"rank_zero_only", "on_main_process", "on_local_main_process"})


def one_rank_decorators(module: cst.Module) -> frozenset[str]:
    """The module's own decorators that call the function they wrap only under a one-rank test:

    def can_log(func):
        def wrapper(self, *args, **kwargs):
            if self.global_rank == 0:
                return func(self, *args, **kwargs)
        return wrapper
    """
    found: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef) or not statement.params.params:
            continue
        wrapped = statement.params.params[0].name.value
        finder = _GuardedCall(wrapped)
        visit_tree(statement.body, finder)
        if finder.found:
            found.add(statement.name.value)
    return frozenset(found)


def runs_on_one_rank(function: cst.FunctionDef, own: frozenset[str]) -> bool:
    """Whether a decorator of `function` runs it on one rank only (`@rank_zero_only`, a decorator of
    `one_rank_decorators`)."""
    for decorator in function.decorators:
        expression = decorator.decorator
        name = dotted_name(expression.func if isinstance(expression, cst.Call) else expression)
        if name is not None and (name.rsplit(".", 1)[-1] in ONE_RANK_DECORATORS or name in own):
            return True
    return False


class _GuardedCall(cst.CSTVisitor):
    """Finds a call of `name` inside the body of a one-rank `if`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False
        self.depth = 0

    def visit_If(self, node: cst.If) -> bool:
        if not one_rank_conjunction(node.test):
            return True
        self.depth += 1
        visit_tree(node.body, self)
        self.depth -= 1
        if node.orelse is not None:
            visit_tree(node.orelse, self)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if self.depth and isinstance(node.func, cst.Name) and node.func.value == self.name:
            self.found = True


def _small_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer):
        return True
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return bool(node.elements) and all(_small_literal(e.value) for e in node.elements)
    return False

"""The plain-PyTorch side of the `if`s that choose between DeepSpeed and plain PyTorch, where no rule reports
(`ScriptFacts.plain_ranges`, read by `ScriptFacts.in_plain_branch`); and, the same way, the side of an `if` that a
switch of the script's parser no launch turns on rules out (`if args.use_amp:`, `--use_amp` off by default and on
no launch the project holds: `ProjectFacts.switches_never_on`).

An `if` chooses when its test is a DeepSpeed flag (`args.deepspeed`, `backend == "ddp"`), when it tests the engine
itself (`if self.engine:`, `if model_engine is None:`), when exactly one side holds a `deepspeed.initialize` call, or
when its test reads the same as the test of such an `if`. An arm that always leaves its block (`return`, `raise`,
`continue`, `break`, `sys.exit()`) and has no `else` makes the rest of that block the other side: after `if
self.deepspeed: ...; return`, the code is the plain path. The body of `if accumulating and not self.deepspeed:` is
plain too (its `else` runs on both paths).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import libcst as cst

from dslint.model.bindings import Pos
from dslint.model.conditions import PLAIN_BACKENDS, deepspeed_flag_word
from dslint.model.library import ENGINE_ONLY_METHODS, PROCESS_EXITS
from dslint.script.facts import Role, ScriptFacts
from dslint.script.names import dotted_name
from dslint.script.walk import all_nodes, walk


def deepspeed_flag_polarity(test: cst.BaseExpression) -> bool | None:
    """For `if <test>:`, True if the body is the DeepSpeed branch, False if the else branch is, None if
    `<test>` is not a DeepSpeed on/off flag (`args.deepspeed`, `not use_ds`, `args.backend == "deepspeed"`)."""
    test, positive = _unnegated(test)
    name = dotted_name(test)
    if name is not None:
        return positive if deepspeed_flag_word(name.split(".")[-1]) else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left = dotted_name(test.left)
        target = test.comparisons[0]
        operator = target.operator
        right = target.comparator
        if left is not None and isinstance(right, cst.SimpleString) and right.evaluated_value == "deepspeed":
            if isinstance(operator, cst.Equal):
                return positive
            if isinstance(operator, cst.NotEqual):
                return not positive
        # `if env_type == "pytorchDDP":` selects another backend: its body is plain PyTorch
        if (
            left is not None
            and isinstance(right, cst.SimpleString)
            and str(right.evaluated_value).lower() in PLAIN_BACKENDS
            and isinstance(operator, cst.Equal)
        ):
            return not positive
        if left is not None and deepspeed_flag_word(left.split(".")[-1]) and isinstance(right, cst.Name):
            if right.value == "None" and isinstance(operator, cst.IsNot):
                return positive
            if right.value == "None" and isinstance(operator, cst.Is):
                return not positive
    return None


# calls whose result says what files there are, not which backend runs (`has_deepspeed = "latest" in os.listdir(d)`)
_FILE_FACTS = frozenset({"listdir", "exists", "isfile", "isdir", "glob", "iterdir", "scandir", "walk"})
# a flag's name that says what is there, not what to use
_HOLDING_WORDS = re.compile(r"^(has|have|found)_|_(found|exists?|present|files?|ckpt|checkpoint)$")


def _fact_about_files(facts: ScriptFacts, test: cst.BaseExpression) -> bool:
    """The test is a name that says what a folder holds (`has_deepspeed`, `ds_ckpt_found`: not `use_deepspeed`)
    bound in its scope from a look at the file system (directly, or through a name its value reads: `files =
    os.listdir(d)`, `has_deepspeed = "latest" in files`): a fact about a checkpoint folder, not a DeepSpeed on/off
    switch (`use_ds = os.path.exists(ds_config)` stays one)."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if not isinstance(test, cst.Name) or not _HOLDING_WORDS.search(test.value.lower()):
        return False
    value = facts.assigned_value(test, test)
    if value is None:
        return False
    calls, names = _calls_and_names(value)
    if calls & _FILE_FACTS:
        return True
    for name in names[:8]:  # one level: the names the value reads
        read = facts.assigned_value(name, name) if name.value != test.value and name in facts.entered else None
        if read is not None and _calls_and_names(read)[0] & _FILE_FACTS:
            return True
    return False


def _calls_and_names(value: cst.CSTNode) -> tuple[set[str], list[cst.Name]]:
    """The last names of the calls in `value`, and the names it reads."""
    calls: set[str] = set()
    names: list[cst.Name] = []

    def enter(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            calls.add((dotted_name(node.func) or "").rsplit(".", 1)[-1])
        elif isinstance(node, cst.Name):
            names.append(node)
        return True

    walk(value, enter, lambda node: None)
    return calls, names


def resolve_branches(
    facts: ScriptFacts,
    branches: Sequence[tuple[cst.If, bool | None]],
    expressions: Sequence[tuple[cst.IfExp, bool]],
    if_blocks: Mapping[cst.If, cst.IndentedBlock | cst.Module],
) -> None:
    """Mark the plain-PyTorch side of every `if` that chooses between DeepSpeed and plain PyTorch, and of every
    conditional expression whose test is a DeepSpeed flag (`expressions`, with the flag's polarity). Where the
    DeepSpeed arm has no `else` and ends the block (`if self.deepspeed: ...; return`, a `raise`, a `continue`), the
    rest of the `if`'s own block (`if_blocks`) is the plain side: a DeepSpeed run leaves before it.

    An `if` chooses when its test is a DeepSpeed flag or the engine itself (`if self.engine is not None:`), when
    exactly one side holds a `deepspeed.initialize` call or uses a conditional engine parameter as the engine
    (`ParameterFact.conditional`: `model.backward(loss)` in one arm, the plain model's loss scaler in the other),
    or when its test reads the same as the test of such an `if` with an `else` (`not` in front of it turns the
    sides); the body of an `and` one of whose conditions rules DeepSpeed out is plain.
    """
    _never_on_sides(facts, branches)
    init_positions = [init.start for init in facts.initialize_calls] + _conditional_engine_uses(facts)

    def holds_init(span: tuple[Pos, Pos] | None) -> bool:
        return span is not None and any(span[0] <= p < span[1] for p in init_positions)

    sides: list[tuple[cst.If, tuple[Pos, Pos], tuple[Pos, Pos] | None, bool | None]] = []
    guards: list[tuple[cst.BaseExpression, bool]] = []
    for node, polarity in branches:
        if polarity is not None and _fact_about_files(facts, node.test):
            polarity = None
        if polarity is None:
            polarity = _engine_test_polarity(facts, node.test)
        body = (facts.start(node.body), facts.end(node.body))
        if polarity is None and _requires_deepspeed_off(facts, node.test):
            # `if accumulating and not self.deepspeed:` is plain; its `else` runs on both paths: nothing more is known
            facts.plain_ranges.append(body)
            continue
        if node.orelse is not None:
            other = (facts.start(node.orelse), facts.end(node.orelse))
        elif node in if_blocks and _leaves(node.body):  # the rest of the block is the other side
            other = (facts.end(node), facts.end(if_blocks[node]))
        else:
            other = None
        if polarity is None and init_positions:
            in_body, in_other = holds_init(body), holds_init(other)
            if in_body != in_other:
                polarity = in_body
                if node.orelse is not None:  # an early exit tells of its own function's paths, not of the test
                    test, positive = _unnegated(node.test)
                    guards.append((test, polarity if positive else not polarity))
        sides.append((node, body, other, polarity))
    for expression, positive in expressions:
        if not _fact_about_files(facts, expression.test):
            plain = expression.orelse if positive else expression.body
            facts.plain_ranges.append((facts.start(plain), facts.end(plain)))
    for node, body, other, polarity in sides:
        if polarity is None and guards:
            # Code generation is costly: compare tests only where an initialize guard exists.
            # `if not self.is_distributed:` reads the test of `if self.is_distributed: <initialize>` negated
            test, positive = _unnegated(node.test)
            polarity = next((p if positive else not p for seen, p in guards if seen.deep_equals(test)), None)
        if polarity is None:
            continue
        plain_side = other if polarity else body
        if plain_side is not None and not (polarity and node.orelse is None and holds_init(plain_side)):
            facts.plain_ranges.append(plain_side)
    if facts.plain_ranges:
        _mark_plain_functions(facts, holds_init)


def _mark_plain_functions(facts: ScriptFacts, holds_init: Callable[[tuple[Pos, Pos] | None], bool]) -> None:
    """A function of the file that the file calls only from plain code (`self._setup_training()` in the `else` of
    `if args.deepspeed:`, a method reached only past the DeepSpeed arm's `exit(0)`) is plain code too, to any
    depth. Only where the file names it solely in calls (no reference handed on, no decorator), none of them in
    the function itself, no project caller hands it the engine (`ProjectFacts.parameters`), it makes no engine and
    it is no method of a class deriving from another module's (whose base may call it: `_framework_hooks`)."""
    functions: dict[str, list[cst.FunctionDef]] = {}
    references: dict[str, list[cst.CSTNode]] = {}
    called: set[cst.CSTNode] = set()
    classes: list[cst.ClassDef] = []
    nodes: Iterator[Any] = all_nodes(facts.module)  # told apart by exact type: libcst's classes have no subclasses
    for node in nodes:
        kind = type(node)
        if kind is cst.FunctionDef:
            functions.setdefault(node.name.value, []).append(node)
        elif kind is cst.ClassDef:
            classes.append(node)
        elif kind is cst.Call:
            called.add(node.func.attr if type(node.func) is cst.Attribute else node.func)
        elif kind is cst.Name:  # an attribute's name too (`self.setup`: its `attr`)
            references.setdefault(node.value, []).append(node)
    engine_parameters = facts.project.parameters if facts.project is not None else {}
    hooks = _framework_hooks(classes)
    candidates = {
        name: defs[0]
        for name, defs in functions.items()
        if len(defs) == 1
        and defs[0] not in hooks
        and not defs[0].decorators
        and not name.startswith("__")
        and not any(qualified.rsplit(".", 1)[-1] == name for qualified in engine_parameters)
    }
    changed = True
    while changed and candidates:
        changed = False
        for name, function in list(candidates.items()):
            span = (facts.start(function), facts.end(function))
            uses = [use for use in references.get(name, ()) if use is not function.name]
            if not uses or holds_init(span):
                del candidates[name]
                continue
            if all(
                use in called and not span[0] <= facts.start(use) < span[1] and facts.in_plain_branch(use)
                for use in uses
            ):
                facts.plain_ranges.append((facts.start(function.body), span[1]))
                del candidates[name]
                changed = True


def _framework_hooks(classes: Sequence[cst.ClassDef]) -> set[cst.FunctionDef]:
    """The methods of the classes with a base that is not the file's own (a Trainer's `training_step`, a Lightning
    module's `configure_optimizers`): the base class may call them on any path, unseen in this file."""
    own = {cls.name.value for cls in classes}
    hooks: set[cst.FunctionDef] = set()
    for cls in classes:
        bases = [dotted_name(base.value) for base in cls.bases]
        if cls.keywords or any(base is None or (base not in own and base != "object") for base in bases):
            body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
            hooks.update(item for item in body if isinstance(item, cst.FunctionDef))
    return hooks


def _requires_deepspeed_off(facts: ScriptFacts, test: cst.BaseExpression) -> bool:
    """An `and` one of whose conditions holds only with DeepSpeed off (`optimizer_was_run and not
    self.deepspeed`, `step > 0 and args.backend == "ddp"`): its body is plain PyTorch."""
    if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)):
        return False
    for part in (test.left, test.right):
        if isinstance(part, cst.BooleanOperation):
            if _requires_deepspeed_off(facts, part):
                return True
            continue
        polarity = deepspeed_flag_polarity(part)
        if polarity is not None and _fact_about_files(facts, part):
            polarity = None
        if polarity is None:
            polarity = _engine_test_polarity(facts, part)
        if polarity is False:
            return True
    return False


def _never_on_sides(facts: ScriptFacts, branches: Sequence[tuple[cst.If, bool | None]]) -> None:
    """The side of an `if` that a switch of the script's parser rules out: one no launch turns on (`if
    args.use_amp:` with `--use_amp` off by default and on no launch, `ProjectFacts.switches_never_on`), or one every
    launch leaves on (the `else` of `if args.use_peft:`, `switches_always_on`); a test may compare the switch with
    `True` or `False` (`== True`, `is False`). No run the project holds takes that side, so nothing there is
    reported, as on the plain-PyTorch side."""
    project = facts.project
    never = _kept(project.switches_never_on) if project is not None else frozenset()
    always = _kept(project.switches_always_on) if project is not None else frozenset()
    if not never and not always:
        return
    for node, polarity in branches:
        if polarity is not None:
            continue  # a DeepSpeed switch (`--deepspeed`): a run the project documents without it is not all runs
        test, positive = _unnegated(node.test)
        values = [_switch_value(c, never, always) for c in (_conjuncts(test) if positive else [test])]
        if positive:
            dead = node.body if False in values else node.orelse if values and None not in values else None
        else:
            dead = node.body if values[0] is True else node.orelse if values[0] is False else None
        if dead is not None:
            facts.plain_ranges.append((facts.start(dead), facts.end(dead)))


def _kept(names: frozenset[str]) -> frozenset[str]:
    """The switches that decide nothing about DeepSpeed itself: what turns DeepSpeed or ZeRO on is kept out."""
    return frozenset(name for name in names if "deepspeed" not in name and "zero" not in name)


def _switch_value(test: cst.BaseExpression, never: frozenset[str], always: frozenset[str]) -> bool | None:
    """What `test` is on every launch: a switch (`args.use_amp`), or one compared with `True`/`False` (`==`, `!=`,
    `is`, `is not`); None when not known."""
    if isinstance(test, cst.Attribute):
        name = test.attr.value
        return False if name in never else True if name in always else None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    constant = target.comparator.value if isinstance(target.comparator, cst.Name) else None
    if constant not in ("True", "False"):
        return None
    value = _switch_value(test.left, never, always) if isinstance(test.left, cst.Attribute) else None
    if value is None:
        return None
    if isinstance(target.operator, (cst.Equal, cst.Is)):
        return value == (constant == "True")
    if isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
        return value != (constant == "True")
    return None


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and b and c`: each of them; any other test: itself."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _unnegated(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """`test` without its `not`s, and whether it keeps its truth (an even number of them)."""
    positive = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        positive = not positive
        test = test.expression
    return test, positive


_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _engine_test_polarity(facts: ScriptFacts, test: cst.BaseExpression) -> bool | None:
    """For `if self.engine:`, `if engine is None:`, `if not model_engine:` where the tested name or attribute
    holds the engine (set only when DeepSpeed runs): True if the body is the DeepSpeed side, False if the `else`."""
    test, positive = _unnegated(test)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
            return None
        if isinstance(target.operator, cst.Is):
            positive = not positive
        elif not isinstance(target.operator, cst.IsNot):
            return None
        test = test.left
    if not isinstance(test, (cst.Name, cst.Attribute)):
        return None
    answer = facts.role_of(test)
    return positive if answer is not None and answer.role is Role.ENGINE else None


def _leaves(body: cst.BaseSuite) -> bool:
    """Whether an arm always leaves its block: its last statement returns, raises, continues or breaks, or ends the
    process (`sys.exit(0)`, `exit()`: `library.PROCESS_EXITS`)."""
    last: cst.CSTNode | None = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
        return dotted_name(last.value.func) in PROCESS_EXITS
    return isinstance(last, _EXITS)


def _conditional_engine_uses(facts: ScriptFacts) -> list[Pos]:
    """Where a method only the engine has (`backward`) is called on a parameter the callers fill with the engine
    on some of their paths only (`ParameterFact.conditional`)."""
    project = facts.project
    if project is None or not any(fact.conditional for found in project.parameters.values() for fact in found.values()):
        return []
    uses: list[Pos] = []
    for call in facts.statement_of_call:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ENGINE_ONLY_METHODS):
            continue
        if not isinstance(func.value, cst.Name):
            continue
        binding = facts.binding_at(func.value.value, facts.scope_at(call), facts.start(call))
        fact = facts.project_parameter(binding) if binding is not None else None
        if fact is not None and fact.conditional:
            uses.append(facts.start(call))
    return uses

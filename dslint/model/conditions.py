"""Path conditions: what must hold for a statement to run, read from the `if`s around it in its function.

A `Guard` is one simple test with the truth it must have on the path: `args.deepspeed` true, `args.train_engine
== "torch_ddp"` true, `enable_zero3` false (the `else` arm), `args.backend == "ddp"` false (after `if
args.backend == "ddp": ...; return`). Two places are on exclusive paths when their guards contradict: the same
test with opposite truth, or one subject equal to two different constants. Tests are compared by their text
(a dotted name, `name()` for a call without arguments, a constant subscript), so `args.train_engine` in one
function and in another are taken as the same value: a script that tests one flag in several functions tests
the same option. Only these simple shapes become guards; any other test (`x > 1`, `f(a)`) tells nothing.

Guards are read once, from CPython's tree, here: `statement_guards` for every statement of a module (the
per-file facts look them up by the statement paired with libcst's, `dslint/script/paths.py`), `guards_of` for one
call of the project model's functions; both read them in one walk (`_walk`), so a fact from another module
compares with one of this file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

# The constant's repr for `subject == constant`, or "" for the subject's own truth (`if args.deepspeed:`).
TRUTHINESS = ""

# Backend names compared against in `if backend == "...":` that are not DeepSpeed.
PLAIN_BACKENDS = frozenset({"pytorch", "pytorchddp", "torch", "ddp", "fsdp", "bmtrain", "horovod", "apex", "cpu"})

_FLAG_EXCLUDES = ("zero", "stage", "offload", "fp16", "bf16", "checkpoint")
# Words of a utility mode that does something with a DeepSpeed config and stops (`--generate_ds_config`,
# `--dump_ds_config`), not a switch that runs training with DeepSpeed or without.
_UTILITY_MODES = ("generate", "dump", "export", "convert", "print", "show", "write", "save")


def deepspeed_flag_word(text: str) -> bool:
    """A name that switches DeepSpeed on or off (`deepspeed`, `use_ds`), not one of its settings (`zero_stage`)."""
    lowered = text.lower()
    if any(word in lowered for word in (*_FLAG_EXCLUDES, *_UTILITY_MODES)):
        return False
    tokens = set(re.split(r"[^a-z0-9]+", lowered))
    return "deepspeed" in lowered or bool(tokens & {"ds", "use_ds", "with_ds", "enable_ds", "is_ds"})


@dataclass(frozen=True)
class Guard:
    subject: str  # `args.train_engine`, `is_deepspeed_zero3_enabled()`, `cfg['zero3']`
    value: str  # the constant's repr (`'torch_ddp'`, `None`, `3`), or TRUTHINESS
    truth: bool  # whether `subject == value` (or the subject's truth) holds on the path
    truthy: bool | None = None  # the constant's own truth (None for TRUTHINESS)
    # the guard holds because the other arm raises (`if not os.path.exists(cfg): raise ...`): the path where it
    # fails ends there, so the test splits off no path that goes on without it (not part of the guard's identity)
    raised: bool = field(default=False, compare=False)


def contradicts(first: Guard, second: Guard) -> bool:
    """Whether no path satisfies both guards."""
    if first.subject != second.subject:
        return False
    if first.value == second.value:
        return first.truth != second.truth
    if first.value != TRUTHINESS and second.value != TRUTHINESS:
        return first.truth and second.truth  # one subject equal to two different constants
    # `subject` false while `subject == "ddp"` (a true constant) holds, or the reverse
    plain, equal = (first, second) if first.value == TRUTHINESS else (second, first)
    return equal.truth and equal.truthy is not None and equal.truthy != plain.truth


def without_deepspeed(guard: Guard) -> bool:
    """A path DeepSpeed is off on: a DeepSpeed switch false (`else` of `if args.deepspeed:`), a backend other than
    DeepSpeed chosen (`args.backend == "ddp"`), or DeepSpeed not chosen (`args.backend != "deepspeed"`)."""
    if guard.value == TRUTHINESS:
        return not guard.truth and deepspeed_flag_word(guard.subject.rsplit(".", 1)[-1])
    constant = guard.value.strip("'\"").lower()
    if constant == "deepspeed":
        return not guard.truth
    return guard.truth and constant in PLAIN_BACKENDS


def exclusive(first: Iterable[Guard], second: Iterable[Guard]) -> bool:
    """Whether the two sets of path conditions can never hold together."""
    others = tuple(second)
    return any(contradicts(a, b) for a in first for b in others)


def constant_guard(subject: str, value: object, truth: bool) -> Guard | None:
    if value is None or isinstance(value, (str, int, float, bool)):
        return Guard(subject, repr(value), truth, bool(value))
    return None


# --- CPython's tree -----------------------------------------------------------------------------------------
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off", "none"})


def settled(launches: Sequence[Mapping[str, str | None]], guard: Guard) -> bool:
    """Whether every launch (the `--name value` options each gives a script, literal; a value built at run time
    starts with NUL, `shell_directories.UNKNOWN_VALUE`) makes `guard` hold: `args.deepspeed` true when each passes
    `--deepspeed` (a flag, or a value that is not false), `args.backend == "deepspeed"` when each passes `--backend
    deepspeed`. No launch: nothing is settled."""
    head, dot, option = guard.subject.rpartition(".")
    if not launches or not dot or not head.isidentifier():
        return False
    for options in launches:
        if option not in options:
            return False
        given = options[option]
        if given is not None and given.startswith("\x00"):  # built at run time
            return False
        if guard.value == TRUTHINESS:
            holds = (given is None or given.strip("'\"").lower() not in _FALSE_WORDS) == guard.truth
        elif guard.value[:1] in "'\"" and given is not None:  # a string constant: the launch's word is the value
            holds = (given == guard.value[1:-1]) == guard.truth
        else:
            holds = False
        if not holds:
            return False
    return True


def _subject(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return repr(node.value)  # `if True:` / `else:` never both run
    if isinstance(node, ast.Attribute):
        base = _subject(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and len(node.args) in (1, 2)
        and not node.keywords
        and isinstance(key := _constant(node.args[0]), str)
        and (len(node.args) == 1 or _constant(node.args[1]) is None)
    ):
        base = _subject(node.func.value)  # `cfg.get("k")` is true exactly where `cfg["k"]` is there and true
        return f"{base}[{key!r}]" if base is not None else None
    if isinstance(node, ast.Call) and not node.keywords:
        base = _subject(node.func)
        if base is None or base.endswith(")"):
            return None
        # a test of plain values (`os.path.isdir(ckpt_dir)`, `hasattr(model, "module")`), never of a call's result
        # but a pure path join of plain values (`os.path.isfile(os.path.join(ckpt_dir, "latest"))`)
        arguments = [_subject(arg) if not isinstance(arg, ast.Constant) else repr(arg.value) for arg in node.args]
        if any(argument is None or (argument.endswith(")") and not _path_join(argument)) for argument in arguments):
            return None
        return f"{base}({', '.join(a for a in arguments if a is not None)})"
    if isinstance(node, ast.Subscript):
        key = _constant(node.slice)
        base = _subject(node.value)
        if base is not None and isinstance(key, (str, int)) and not isinstance(key, bool):
            return f"{base}[{key!r}]"
    return None


_PATH_JOINS = ("os.path.join(", "osp.join(", "path.join(", "join(")


def _path_join(subject: str) -> bool:
    """A subject that is a join of plain values (`os.path.join(d, 'latest')`): a pure function of them."""
    return subject.startswith(_PATH_JOINS) and subject.count("(") == 1


_UNKNOWN = object()


def _constant(node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        inner = node.operand.value
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return _UNKNOWN


def test_guards(test: ast.expr, truth: bool) -> tuple[Guard, ...]:
    """What `test` having `truth` tells, as guards (`a and b` true: both; `a or b` false: both false)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test_guards(test.operand, not truth)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == truth:
            return tuple(g for value in test.values for g in test_guards(value, truth))
        return ()
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        subject = _subject(test.left)
        op = test.ops[0]
        value = _constant(test.comparators[0])
        if subject is None or value is _UNKNOWN:
            return ()
        if isinstance(op, (ast.Eq, ast.Is)):
            found = constant_guard(subject, value, truth)
        elif isinstance(op, (ast.NotEq, ast.IsNot)):
            found = constant_guard(subject, value, not truth)
        else:
            found = None
        return (found,) if found is not None else ()
    subject = _subject(test)
    return (Guard(subject, TRUTHINESS, truth),) if subject is not None else ()


def _terminates(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _holds(node: ast.AST, target: ast.AST) -> bool:
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = (getattr(node, "end_lineno", None) or node.lineno, getattr(node, "end_col_offset", None) or 0)  # type: ignore[attr-defined]
    return start <= (target.lineno, target.col_offset) < end  # type: ignore[attr-defined]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def statement_guards(body: Sequence[ast.stmt]) -> dict[int, tuple[Guard, ...]]:
    """The guards of every statement of `body` (a module's), by the statement's id: the one reading of path
    guards, which the per-file facts (`dslint.script.paths.PathGuards`) lay over libcst's statements. A `def` or
    `class` statement has the guards of its place; its body starts with none."""
    found: dict[int, tuple[Guard, ...]] = {}

    def enter(statement: ast.stmt, guards: tuple[Guard, ...]) -> bool:
        found[id(statement)] = guards
        return True

    _walk(body, (), enter)
    return found


def _constant_names(body: Sequence[ast.stmt]) -> frozenset[str]:
    """Names the function binds once, to a constant (`use_deepspeed = True`): a test of one chooses no path."""
    bound: dict[str, int] = {}
    constant: set[str] = set()
    for node in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    bound[name.id] = bound.get(name.id, 0) + 1
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            constant.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(name for name in constant if bound.get(name) == 1)


def guards_of(body: Sequence[ast.stmt], target: ast.AST) -> tuple[Guard, ...]:
    """The guards on the path to `target` inside `body` (a function's body): those of the innermost statement
    holding it, as `statement_guards` reads them; none inside a nested `def` or `class`."""
    found: tuple[Guard, ...] = ()

    def enter(statement: ast.stmt, guards: tuple[Guard, ...]) -> bool:
        nonlocal found
        if not _holds(statement, target):
            return False
        found = () if isinstance(statement, _SCOPES) else guards
        return not isinstance(statement, _SCOPES)

    _walk(body, (), enter)
    fixed = _constant_names(body)
    return tuple(guard for guard in found if guard.subject not in fixed)


def _walk(
    body: Sequence[ast.stmt],
    active: tuple[Guard, ...],
    enter: Callable[[ast.stmt, tuple[Guard, ...]], bool],
) -> None:
    """Hand `enter` each statement of `body` with the guards on its path (`active`, and the `if`s before it whose
    arm ends the block: `return`, `raise`, `continue`, `break`); into its blocks when `enter` says so."""
    for statement in body:
        if enter(statement, active):
            if isinstance(statement, _SCOPES):
                _walk(statement.body, (), enter)
            elif isinstance(statement, ast.If):
                _walk(statement.body, active + test_guards(statement.test, True), enter)
                _walk(statement.orelse, active + test_guards(statement.test, False), enter)  # `elif`s too
            else:
                for inner in _blocks(statement):
                    _walk(inner, active, enter)
        if isinstance(statement, ast.If):
            if _terminates(statement.body) and not _terminates(statement.orelse):
                active += _after(test_guards(statement.test, False), statement.body)
            elif statement.orelse and _terminates(statement.orelse) and not _terminates(statement.body):
                active += _after(test_guards(statement.test, True), statement.orelse)


def _after(guards: tuple[Guard, ...], ended: Sequence[ast.stmt]) -> tuple[Guard, ...]:
    """The guards after an `if` whose arm `ended` ends the block: marked `raised` when that arm raises."""
    return tuple(replace(guard, raised=True) for guard in guards) if isinstance(ended[-1], ast.Raise) else guards


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    found: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            found.append(block)
    for handler in getattr(statement, "handlers", ()) or ():
        found.append(handler.body)
    for case in getattr(statement, "cases", ()) or ():
        found.append(case.body)
    return found

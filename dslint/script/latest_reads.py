"""Whether a `load_checkpoint` without a tag is followed, on its own path, by a read of the checkpoint's `latest`
file (DSL205).

`engine.load_checkpoint(dir)` returns `(None, None)` when `{dir}/latest` is missing; a script that opens that same
file right after (`open(os.path.join(dir, "latest"))`, to read the step from the tag) raises `FileNotFoundError`
there, so a missing checkpoint does not pass silently. Counted: the statements after the load in its own block,
up to the first one that may leave it (`return`, `raise`, `break`, `continue`), without entering `if`, `try`,
loops or definitions (their body may not run); a `with` statement's items and body run. The read: `open(p)`,
`io.open(p)`, `Path(p).open()`/`.read_text()`, where `p` is the path or a name bound once before in the same
function to it: `os.path.join(..., "latest")`, `x + "/latest"`, an f-string ending in `/latest`, or
`Path(...) / "latest"`. The directory must name what the load's directory names (the same names and attributes,
strings aside): `f"./{cfg.ckpt}/"` and `os.path.join(cfg.ckpt, "latest")` agree.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from dslint.script.facts import ScriptFacts
from dslint.script.names import dotted_name

_OPENERS = frozenset({"open", "io.open", "builtins.open", "codecs.open"})
_PATH_READERS = frozenset({"open", "read_text", "read_bytes"})
_LEAVES = (cst.Return, cst.Raise, cst.Break, cst.Continue)
_LATEST = "latest"


def latest_read_after(facts: ScriptFacts, load: cst.Call, line: cst.CSTNode) -> bool:
    """Whether `line` (the statement holding `load`) is followed in its block by a read of `{dir}/latest`."""
    given = [a.value for a in load.args if not a.star and (a.keyword is None or a.keyword.value == "load_dir")]
    if not given or (load.args[0].keyword is not None and load.args[0].keyword.value != "load_dir"):
        return False
    directory = _names(given[0])
    if not directory:
        return False
    body = _block_of(facts.module, line)
    if body is None:
        return False
    after = list(body)[list(body).index(line) + 1 :]
    for statement in after:
        for call in _unconditional_calls(statement):
            path = _read_path(facts, call)
            if path is not None and _names_latest_in(facts, path, call, directory, 0):
                return True
        if _may_leave(statement):
            return False
    return False


def _block_of(module: cst.Module, line: cst.CSTNode) -> tuple[cst.CSTNode, ...] | None:
    finder = _BlockFinder(line)
    module.visit(finder)
    return finder.found


class _BlockFinder(cst.CSTVisitor):
    def __init__(self, line: cst.CSTNode) -> None:
        super().__init__()
        self.line = line
        self.found: tuple[cst.CSTNode, ...] | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None:
            return False
        body = getattr(node, "body", None) if isinstance(node, (cst.Module, cst.IndentedBlock)) else None
        if isinstance(body, (tuple, list)) and any(statement is self.line for statement in body):
            self.found = tuple(body)
            return False
        return not isinstance(node, cst.BaseExpression)


def _unconditional_calls(statement: cst.CSTNode) -> Iterator[cst.Call]:
    """The calls a statement surely makes when it runs: a simple line's, a `with`'s items and body."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            yield from _calls(small)
    elif isinstance(statement, cst.With):
        for item in statement.items:
            yield from _calls(item.item)
        if isinstance(statement.body, cst.IndentedBlock):
            for inner in statement.body.body:
                yield from _unconditional_calls(inner)
                if _may_leave(inner):
                    return
        else:
            yield from _unconditional_calls(statement.body)


def _calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    collector = _CallCollector()
    node.visit(collector)
    yield from collector.calls


class _CallCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        return False  # one arm may not run

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        return False  # `and`/`or`: the right side may not run


def _may_leave(statement: cst.CSTNode) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return any(isinstance(small, _LEAVES) for small in statement.body)
    return False


def _read_path(facts: ScriptFacts, call: cst.Call) -> cst.BaseExpression | None:
    """The path a call opens for reading: `open(p)`, `Path(p).read_text()`, `(d / "latest").open()`."""
    name = facts.qualified(call.func) or (call.func.value if isinstance(call.func, cst.Name) else None)
    if name in _OPENERS:
        first = call.args[0] if call.args else None
        return first.value if first is not None and first.keyword is None and not first.star else None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _PATH_READERS:
        owner = func.value
        if isinstance(owner, cst.Call) and (facts.qualified(owner.func) or "").endswith("Path") and owner.args:
            return owner.args[0].value
        if isinstance(owner, (cst.BinaryOperation, cst.Name)):
            return owner
    return None


def _names_latest_in(
    facts: ScriptFacts, path: cst.BaseExpression, at: cst.CSTNode, directory: frozenset[str], depth: int
) -> bool:
    """Whether `path` is `{directory}/latest` (the directory told by the names it mentions)."""
    if depth > 3:
        return False
    if isinstance(path, cst.Name):
        value = facts.assigned_value(path, at)
        return value is not None and _names_latest_in(facts, value, at, directory, depth + 1)
    head: cst.BaseExpression | None = None
    if isinstance(path, cst.Call) and facts.qualified(path.func) == "os.path.join" and len(path.args) >= 2:
        if _string(path.args[-1].value) == _LATEST:
            return directory <= frozenset().union(*(_names(a.value) for a in path.args[:-1]))
    elif isinstance(path, cst.BinaryOperation) and isinstance(path.operator, (cst.Add, cst.Divide)):
        tail = _string(path.right)
        if tail is not None and tail.strip("/") == _LATEST:
            head = path.left
    elif isinstance(path, cst.FormattedString):
        last = path.parts[-1] if path.parts else None
        if isinstance(last, cst.FormattedStringText) and last.value.endswith("/" + _LATEST):
            head = path
    return head is not None and directory <= _names(head)


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def _names(node: cst.CSTNode) -> frozenset[str]:
    """The names and attribute chains an expression mentions (`f"./{cfg.ckpt}/"` -> {"cfg.ckpt"})."""
    collector = _NameCollector()
    node.visit(collector)
    return frozenset(collector.names)


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = dotted_name(node)
        if name is not None:
            self.names.add(name)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Call(self, node: cst.Call) -> bool:
        for arg in node.args:
            arg.value.visit(self)
        return False  # `os.path.join(...)`: its function is not part of the directory

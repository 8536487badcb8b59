"""One module's summary, from ONE `ast` parse: imports (relative ones resolved against the package, star imports,
re-exports), the functions and classes it defines (with their parameters, owners and bases), and walkers over
its statements and calls. Summaries are cached by the module's content (`SummaryStore`), so a project rebuilt
after one edit (the language server after a save) parses only the edited module again.
"""

from __future__ import annotations

import ast
import hashlib
import os
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from dslint.model.source_words import SourceWords

# Summaries kept in one process, the oldest going first: between builds (the language server rebuilds the project
# after each save), and from the project index to the linting of the files (`known_tree`: a worker forked after the
# index finds the tree of each module the index read, instead of compiling it again). Only modules the index
# needed are summarised (on a dozen real projects, a third of their 11,844 modules); the index holds them all
# while it is built, so keeping them costs no more than its peak.
MAX_CACHED_SUMMARIES = 8192


@dataclass
class FunctionInfo:
    """One `def`, at any depth: `Trainer.train`, `main.inner`."""

    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    owner: str  # the class holding it directly ("" when not a method)
    params: list[str]  # every named parameter, keyword-only ones included
    positional: list[str]  # the parameters a call fills by position, `self` of a method excluded
    is_method: bool  # called on an instance: its first parameter is `self`

    @property
    def start(self) -> int:
        return self.node.lineno

    @property
    def end(self) -> int:
        return self.node.end_lineno or self.node.lineno

    def position_of(self, name: str) -> int | None:
        return self.positional.index(name) if name in self.positional else None


@dataclass
class ModuleSummary:
    path: str
    tree: ast.Module
    imports: dict[str, str]  # local name -> dotted path (relative imports resolved against the package)
    stars: list[str] = field(default_factory=list)  # modules imported with `from X import *` (dotted, resolved)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, list[str]] = field(default_factory=dict)  # qualname -> its bases as written (dotted)
    _calls: list[tuple[str, list[ast.Call]]] | None = field(default=None, repr=False)
    _callers: dict[str, list[str]] | None = field(default=None, repr=False)

    def body_calls(self) -> list[tuple[str, list[ast.Call]]]:
        """Each body ("" for the module's own code, then every function) with the calls in its own statements,
        walked once per summary."""
        if self._calls is None:
            bodies = [("", self.tree.body), *((q, f.node.body) for q, f in self.functions.items())]
            self._calls = [(q, [c for s in statements(body) for c in calls(s)]) for q, body in bodies]
        return self._calls

    def callers_of(self, name: str) -> list[str]:
        """The bodies holding a call of something whose last name is `name` (`utils.setup(...)` for "setup")."""
        if self._callers is None:
            self._callers = {}
            for qualname, found in self.body_calls():
                for call in found:
                    last = (dotted(call.func) or "").rpartition(".")[2]
                    holders = self._callers.setdefault(last, [])
                    if not holders or holders[-1] != qualname:
                        holders.append(qualname)
        return self._callers.get(name, [])

    def function_at(self, line: int) -> str | None:
        """The innermost-starting function holding `line` (None at module level)."""
        best: tuple[int, str] | None = None
        for qualname, function in self.functions.items():
            if function.start <= line <= function.end and (best is None or function.start > best[0]):
                best = (function.start, qualname)
        return best[1] if best is not None else None

    def qualified(self, node: ast.expr) -> str | None:
        """What a dotted expression names through the module's imports (`ds.initialize` -> `deepspeed.initialize`)."""
        return qualified_name(self.imports, node)


def qualified_name(imports: dict[str, str], node: ast.expr) -> str | None:
    """What a dotted expression names through a module's imports (`module_imports`); None when its head is not
    imported."""
    name = dotted(node)
    return qualified_dotted(imports, name) if name is not None else None


def qualified_dotted(imports: Mapping[str, str], name: str) -> str | None:
    """What a dotted name written in a module (`nn.Module`, a class statement's base) names through its imports;
    None when its head is not imported."""
    head, _, rest = name.partition(".")
    full = imports.get(head)
    if full is None:
        return None
    return f"{full}.{rest}" if rest else full


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def package_of(path: str, exists: Callable[[Path], bool]) -> tuple[str, ...]:
    """The dotted package a file sits in, as far as `__init__.py` files go up (for relative imports)."""
    parts: list[str] = []
    directory = Path(path).parent
    while exists(directory / "__init__.py") and directory.parent != directory:
        parts.append(directory.name)
        directory = directory.parent
    return tuple(reversed(parts))


def summarize(path: str, data: bytes, package: Callable[[], tuple[str, ...]]) -> ModuleSummary | None:
    """The summary of one module; `package` is asked only when a relative import needs it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the user's SyntaxWarnings are not dslint's to print
            tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # MemoryError: CPython on deep nesting
        return None
    imports, stars = module_imports(tree, package)
    module = ModuleSummary(path, tree, imports, stars)
    _collect(module, tree.body, "", "")
    return module


def module_imports(tree: ast.Module, package: Callable[[], tuple[str, ...]] | None) -> tuple[dict[str, str], list[str]]:
    """The one reading of a module's imports, for the project model and for one file's script facts: local name ->
    the dotted path it stands for (the last import of a name wins, every import anywhere in the module counts),
    and the modules imported with `*`. Relative imports are resolved against `package` (asked once, when one is
    met); without a `package` they are left out."""
    imports: dict[str, str] = {}
    stars: list[str] = []
    known: tuple[str, ...] | None = None
    for node in all_statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    imports[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                if known is None:
                    known = package()
                keep = list(known[: len(known) - (node.level - 1)]) if node.level - 1 <= len(known) else []
                base = ".".join([*keep, base] if base else keep)
            for alias in node.names:
                if alias.name != "*":
                    imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
                elif base:
                    stars.append(base)
    return imports, stars


def _collect(module: ModuleSummary, body: list[ast.stmt], prefix: str, owner: str) -> None:
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = prefix + statement.name
            args = statement.args
            params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
            positional = [a.arg for a in [*args.posonlyargs, *args.args]]
            is_method = bool(owner) and not any(dotted(d) == "staticmethod" for d in statement.decorator_list)
            if owner and positional:
                positional = positional[1:]  # `self` (or `cls`) is bound by the call
            module.functions[qualname] = FunctionInfo(qualname, statement, owner, params, positional, is_method)
            _collect(module, statement.body, qualname + ".", "")
        elif isinstance(statement, ast.ClassDef):
            qualname = prefix + statement.name
            module.classes[qualname] = [name for name in map(dotted, statement.bases) if name is not None]
            _collect(module, statement.body, qualname + ".", qualname)


class ModuleFinder:
    """Dotted module names -> files of the project (by path suffix): the one under the importing file's folder,
    else the nearest file."""

    def __init__(self, files: Iterable[str]) -> None:
        self.by_stem: dict[str, list[tuple[str, tuple[str, ...]]]] = {}  # with each file's dotted pieces
        self._found: dict[tuple[str, str], str | None] = {}
        for path in files:
            stem = Path(path).stem
            if stem == "__init__":
                stem = Path(path).parent.name
            self.by_stem.setdefault(stem, []).append((path, ()))

    def find(self, dotted_name: str, near: str) -> str | None:
        key = (dotted_name, near)
        if key not in self._found:
            self._found[key] = self._find(dotted_name, near)
        return self._found[key]

    def _find(self, dotted_name: str, near: str) -> str | None:
        parts = tuple(dotted_name.split("."))
        files = self.by_stem.get(parts[-1])
        if not files:
            return None
        if files[0][1] == ():  # each file's pieces, once
            files[:] = [(path, _pieces(path)) for path, _ in files]
        candidates = [path for path, pieces in files if pieces[-len(parts) :] == parts]
        if not candidates:
            return None
        # Python's own answer first: the module under the importing file's folder (`sys.path[0]` for a script)
        here = os.path.join(os.path.dirname(near), *parts)
        for candidate in candidates:
            if candidate in (here + ".py", os.path.join(here, "__init__.py")):
                return candidate
        return max(candidates, key=lambda c: len(os.path.commonpath([c, near])))


def _pieces(path: str) -> tuple[str, ...]:
    pieces = Path(path).with_suffix("").parts
    return pieces[:-1] if pieces[-1] == "__init__" else pieces


_CACHE: OrderedDict[tuple[str, bytes], tuple[ModuleSummary | None, tuple[str, ...] | None]] = OrderedDict()


class SummaryStore:
    """The summaries of a project's modules, made on first need, one parse each; kept across stores (in this
    process) by path and content hash, and re-used while the module's package is the same."""

    def __init__(self, sources: dict[str, bytes], exists: Callable[[Path], bool]) -> None:
        self.sources = sources
        self.exists = exists
        self.finder = ModuleFinder(sources)
        self.words = SourceWords(sources)  # which sources hold a name: one pass, on the first question
        self.summaries: dict[str, ModuleSummary | None] = {}

    def get(self, path: str) -> ModuleSummary | None:
        if path in self.summaries:
            return self.summaries[path]
        data = self.sources.get(path)
        summary = self._cached(path, data) if data is not None else None
        self.summaries[path] = summary
        return summary

    def imported_modules(self, path: str, levels: int) -> list[str]:
        """The project modules `path` imports, directly or through other project modules to `levels` levels,
        nearest level first (each level sorted), `path` itself left out. `from pkg.mod import f` counts `pkg.mod`
        (and `pkg.mod.f` where that is a module); star imports count."""
        seen = {path}
        found: list[str] = []
        level = [path]
        for _ in range(levels):
            following: list[str] = []
            for current in level:
                module = self.get(current)
                if module is None:
                    continue
                for dotted in [*module.imports.values(), *module.stars]:
                    for name in (dotted, dotted.rpartition(".")[0]):
                        target = self.finder.find(name, current) if name else None
                        if target is not None and target not in seen:
                            seen.add(target)
                            following.append(target)
            level = sorted(following)
            found.extend(level)
        return found

    def _cached(self, path: str, data: bytes) -> ModuleSummary | None:
        key = (path, hashlib.blake2b(data, digest_size=16).digest())
        hit = _CACHE.get(key)
        if hit is not None:
            summary, resolved_in = hit
            # a cached summary that resolved relative imports stands while the package is the same
            if resolved_in is None or package_of(path, self.exists) == resolved_in:
                _CACHE.move_to_end(key)
                return summary
        asked: list[tuple[str, ...]] = []

        def package() -> tuple[str, ...]:
            if not asked:
                asked.append(package_of(path, self.exists))
            return asked[0]

        summary = summarize(path, data, package)
        _CACHE[key] = (summary, asked[0] if asked else None)
        if len(_CACHE) > MAX_CACHED_SUMMARIES:
            _CACHE.popitem(last=False)
        return summary


def known_tree(path: str, data: bytes) -> ast.Module | None:
    """CPython's tree of `data` when a summary of exactly these bytes at `path` (absolute, as the index names it)
    was made in this process (or in the parent a worker was forked from: the project index summarises the modules
    before the files are linted), so a file is not compiled a second time; None otherwise."""
    hit = _CACHE.get((os.path.abspath(path), hashlib.blake2b(data, digest_size=16).digest()))
    return hit[0].tree if hit is not None and hit[0] is not None else None


def all_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, into nested definitions too (for imports; expressions are not entered)."""
    for statement in statements(body):
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from all_statements(statement.body)


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body in source order, into compound statements, not into nested definitions."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from statements(inner)
        if isinstance(statement, ast.Try):
            for handler in statement.handlers:
                yield from statements(handler.body)
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from statements(case.body)


def calls(statement: ast.stmt) -> list[ast.Call]:
    """The calls in a statement's own expressions (not in its nested blocks or definitions), outermost first
    along each expression (a depth-first walk that takes a node's last child first).

    The model's hottest loop on a large project (every body of every module the fixpoint reads): the common
    expression nodes are stepped into by hand, leaves (names, constants, contexts, operators) are not entered,
    and the walk is kept on the statement for the next question about it."""
    cached: list[ast.Call] | None = getattr(statement, _MEMO, None)
    if cached is not None:
        return cached
    found: list[ast.Call] = []
    setattr(statement, _MEMO, found)  # filled below (a definition's own expressions hold none we count)
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return found
    stack: list[ast.AST] = []
    for name, child in ast.iter_fields(statement):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        if isinstance(child, ast.AST):
            stack.append(child)
        elif isinstance(child, list):
            stack.extend(c for c in child if isinstance(c, ast.AST))
    append, pop = stack.append, stack.pop
    while stack:
        node = pop()
        kind = type(node)
        if kind in _LEAVES:
            continue
        if kind is _ATTRIBUTE:
            append(node.value)  # type: ignore[attr-defined]
        elif kind is _CALL:
            found.append(node)  # type: ignore[arg-type]
            append(node.func)  # type: ignore[attr-defined]
            stack.extend(node.args)  # type: ignore[attr-defined]
            stack.extend(node.keywords)  # type: ignore[attr-defined]
        elif kind is _KEYWORD:
            append(node.value)  # type: ignore[attr-defined]
        elif kind is not _LAMBDA:
            for field_name in node._fields:  # `ast.iter_child_nodes`, inline: the same children, same order
                child = getattr(node, field_name, None)
                if isinstance(child, _AST):
                    append(child)
                elif isinstance(child, list):
                    stack.extend([c for c in child if isinstance(c, _AST)])
    return found


_MEMO = "_dslint_calls"  # the attribute of a statement node holding its calls
_AST, _ATTRIBUTE, _CALL, _KEYWORD, _LAMBDA = ast.AST, ast.Attribute, ast.Call, ast.keyword, ast.Lambda
# nodes with no expression below them: entering them finds no call
_LEAVES = frozenset(
    {ast.Name, ast.Constant, *ast.expr_context.__subclasses__(), *ast.operator.__subclasses__()}
    | {*ast.unaryop.__subclasses__(), *ast.cmpop.__subclasses__(), *ast.boolop.__subclasses__()}
)


def named_values_and_returns(function: ast.AST) -> tuple[dict[str, list[ast.expr]], list[ast.expr]] | None:
    """What a function's own body binds to plain names (`x = value`, every value by name) and what each of its
    `return` statements returns; None when it has no `return` or a bare one (it may return None)."""
    nodes = own_nodes(function)
    bound: dict[str, list[ast.expr]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node.value)
    returns = [node.value for node in nodes if isinstance(node, ast.Return)]
    if not returns or any(value is None for value in returns):
        return None
    return bound, [value for value in returns if value is not None]


def own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a function (or module) body, not those of functions, lambdas or classes nested in it; walked
    once per scope node and kept on it (the model's passes ask of the same functions again and again)."""
    cached: list[ast.AST] | None = getattr(scope, _OWN_MEMO, None)
    if cached is not None:
        return cached
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        if isinstance(node, _NESTED_SCOPES):
            continue
        found.append(node)
        for name in node._fields:  # `ast.iter_child_nodes`, inline (a generator per node): the same children
            child = getattr(node, name, None)
            if isinstance(child, _AST):
                push(child)
            elif isinstance(child, list):
                extend([item for item in child if isinstance(item, _AST)])
    setattr(scope, _OWN_MEMO, found)
    return found


def walk(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` in `ast.walk`'s order (breadth first), without its generator per node: the index's
    passes over whole modules (the functions of a module, its argparse options) ask it of large files."""
    todo = deque([tree])
    popleft, push, extend = todo.popleft, todo.append, todo.extend
    while todo:
        node = popleft()
        for name in node._fields:
            child = getattr(node, name, None)
            if isinstance(child, _AST):
                push(child)
            elif isinstance(child, list):
                extend([item for item in child if isinstance(item, _AST)])
        yield node


N = TypeVar("N", bound=ast.AST)


def nodes_of(tree: ast.AST, kind: type[N]) -> list[N]:
    """The nodes of `tree` (itself included) of exactly the type `kind`, in `walk`'s order: one walk sorts all of
    a tree's nodes by type, kept on the tree (CPython's parser makes no subclasses, and a parsed tree is never
    changed), so that the whole-module questions the index asks of one module (its argparse options, its calls,
    per launch of a script) do not walk it again each. The list is shared: never change it."""
    kinds: dict[type, list[ast.AST]] | None = getattr(tree, _KINDS_MEMO, None)
    if kinds is None:
        kinds = {}
        for node in walk(tree):
            found = kinds.get(type(node))
            if found is None:
                kinds[type(node)] = [node]
            else:
                found.append(node)
        setattr(tree, _KINDS_MEMO, kinds)
    return kinds.get(kind, [])  # type: ignore[return-value]


_KINDS_MEMO = "_dslint_nodes_by_kind"  # the attribute of a tree holding its nodes by type
_OWN_MEMO = "_dslint_own_nodes"  # the attribute of a scope node holding its own nodes
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def character_column(lines: list[bytes], line: int, offset: int) -> int:
    """A column as `ast` gives it (UTF-8 bytes) in characters, as libcst's positions count it."""
    if not 0 < line <= len(lines):
        return offset
    before = lines[line - 1][:offset]
    return offset if before.isascii() else len(before.decode("utf-8", errors="replace"))

"""Code nothing calls: a function of a module, or a method of a class of the project's own, whose name nothing in the
project names outside its own definition and comments (no call, no reference, no string, no launcher, no config,
no notebook, no document). A finding there describes a mistake no run of the project makes (a helper whose only
call was commented out, a copy of a loader left beside the one in use), so `dslint check` drops it, as the
script's lint drops code after an exit (`unreachable.py`).

Judged from the text of every file under the checked roots, so it holds only for a whole-project check: a file
linted alone (the editor, flake8) keeps its findings. Left alone, as things something outside the text may call:
a decorated function (a registration, a command, a route), any function of a test module (`test_*.py`,
`*_test.py`, `conftest.py`: pytest collects them), a method of a class with a base that is not the file's own
(a framework's hook: `forward`, `training_step`, `compute_loss`; but such a class nothing names at all, whole:
no instance of it is made), dunder methods, and every function of a file
that hands its functions to a command-line builder that exposes them all (`fire.Fire()` with no argument). A class
deriving from another module's class (a framework's hook holder: a copied `DPOTrainer(Trainer)`) is dropped whole
only where its module runs nothing, belongs to no installable package and no file of the project mentions it.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeGuard

from dslint.diagnostics import Diagnostic
from dslint.lint.cache import ResultCache, code_fingerprint, digest
from dslint.lint.result import FileResult
from dslint.project.project_index import skipped_directory

# Findings about the file as a whole (it does not parse, it is too deep): not about code that runs.
_FILE_CODES = frozenset({"DSL001", "DSL002"})
# The files whose text may name a function: code, launchers, configs (hydra `_target_`), notebooks, documents (not
# JSON or plain text: a project's data, often thousands of files, names no function).
_TEXT_SUFFIXES = (
    ".py",
    ".pyi",
    ".sh",
    ".bash",
    ".slurm",
    ".sbatch",
    ".lsf",
    ".bsub",
    ".pbs",
    ".qsub",
    ".yaml",
    ".yml",
    ".toml",
    ".cfg",
    ".ini",
    ".ipynb",
    ".md",
    ".rst",
    ".mk",
)
_TEXT_NAMES = frozenset({"Makefile", "makefile", "Dockerfile", "Procfile"})
_MAX_TEXT_BYTES = 4 * 1024 * 1024  # larger files are data, not code that calls a function
_EXPOSE_ALL = re.compile(rb"\bFire\(\s*\)")
# Python's comments and string literals, for `_code_text`
_PYTHON_NOISE = re.compile(
    rb"(?P<comment>#[^\n]*)"
    rb"|(?P<string>[rRbBuUfF]{0,2}(?:\'\'\'[\s\S]*?\'\'\'|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))"
)
_PATH_LIKE = re.compile(rb"[A-Za-z_]\w*(?:[.:][A-Za-z_]\w*)*")
_LOOKUP = re.compile(rb"getattr|hasattr|setattr|__all__|import_module|register")


@dataclass(frozen=True)
class _Definition:
    name: bytes
    first: int
    last: int
    owner: bytes = b""  # the class of a method (its name), else empty
    # the module's own name, when the module runs nothing itself: the definition counts as uncalled only where
    # the project uses the module (names it) but not the definition
    module: bytes = b""
    # a definition of a module that runs nothing and is no installable package's: uncalled when nothing in the
    # project mentions the module at all (a copy of a library's trainer left beside the one in use)
    orphan: bool = False


def uncalled(
    results: Iterable[object], paths: Sequence[str], cache: ResultCache | None = None
) -> dict[str, frozenset[tuple[bytes, bytes]]]:
    """The definitions, by file (as its result names it), that hold a finding of `results` and that nothing in the
    project calls, as (class, name) pairs (the class empty for a function). The project of each checked path
    (`paths`, as named on the command line) is the repository holding it (the nearest folder above with `.git`),
    else the folder itself when a folder was named; a file named alone, outside a repository, shows too little of
    its project to judge. `cache`: where the scan of the project's text for the names is kept, by the names and
    the states of the files read (a warm run reads none of them again)."""
    roots = _project_roots(paths)
    if not roots:
        return {}
    by_root: dict[str, dict[str, list[_Definition]]] = {}
    for result in results:
        if not isinstance(result, FileResult):
            continue
        lines = [d.start.line for d in result.diagnostics if _about_code(result.path, d)]
        if not lines:
            continue
        absolute = os.path.abspath(result.path)
        root = next((r for r in roots if absolute.startswith(r.rstrip(os.sep) + os.sep)), None)
        found = _uncalled_here_cached(result.path, lines, cache) if root is not None else []
        if root is not None and found:
            by_root.setdefault(root, {})[result.path] = found
    dead: dict[str, frozenset[tuple[bytes, bytes]]] = {}
    for root, candidates in by_root.items():
        names = {n for definitions in candidates.values() for d in definitions for n in (d.name, d.owner) if n}
        modules = {d.module for definitions in candidates.values() for d in definitions if d.module}
        named, used = _mentioned_cached(names, modules, root, cache)
        for path, definitions in candidates.items():
            pairs = frozenset(
                (d.owner, d.name)
                for d in definitions
                if (d.orphan and d.module not in used)
                or (
                    not d.orphan
                    and (d.name not in named or (d.owner and d.owner not in named))
                    and (not d.module or d.module in used)
                )
            )
            if pairs:
                dead[path] = pairs
    return dead


def without_uncalled(
    results: Sequence[object],
    paths: Sequence[str],
    cache: ResultCache | None = None,
    known: Mapping[str, frozenset[tuple[bytes, bytes]]] | None = None,
) -> int:
    """Drop, in place, the findings of `results` that lie in a definition nothing in the project calls
    (`uncalled`, or `known`: what it answered for these same results); the number dropped."""
    dropped = 0
    for path, dead in (uncalled(results, paths, cache) if known is None else known).items():
        for result in results:
            if isinstance(result, FileResult) and result.path == path:
                kept = outside(path, _source(path), result.diagnostics, dead)
                dropped += len(result.diagnostics) - len(kept)
                result.diagnostics = kept
    return dropped


def outside(
    path: str, source: bytes | str | None, diagnostics: list[Diagnostic], dead: frozenset[tuple[bytes, bytes]]
) -> list[Diagnostic]:
    """`diagnostics` less those of `path`'s code inside the definitions `dead` names, found in `source` (the
    file's text now: after a fix has moved its lines, the definitions are found again by their names)."""
    if not dead or source is None:
        return diagnostics
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return diagnostics
    top = [_Definition(n.name.encode(), n.lineno, n.end_lineno or n.lineno) for n in tree.body if _defines(n)]
    spans = [(d.first, d.last) for d in [*_definitions(tree), *top] if (d.owner, d.name) in dead]
    return [
        d
        for d in diagnostics
        if not (_about_code(path, d) and any(first <= d.start.line <= last for first, last in spans))
    ]


def _source(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _project_roots(paths: Sequence[str]) -> list[str]:
    roots: list[str] = []
    for path in paths:
        absolute = os.path.abspath(path)
        folder = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        repository = next((str(f) for f in [Path(folder), *Path(folder).parents] if (f / ".git").exists()), None)
        root = repository or (absolute if os.path.isdir(absolute) else None)
        if root is not None and not any(_under(root, other) for other in roots):
            roots = [other for other in roots if not _under(other, root)] + [root]
    return roots


def _under(path: str, root: str) -> bool:
    absolute = os.path.abspath(path)
    return absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep)


def _about_code(path: str, diagnostic: Diagnostic) -> bool:
    return (
        path.endswith(".py")
        and diagnostic.cell is None
        and diagnostic.code not in _FILE_CODES
        and os.path.abspath(diagnostic.path) == os.path.abspath(path)
    )


def _uncalled_here_cached(path: str, lines: list[int], cache: ResultCache | None) -> list[_Definition]:
    """`_uncalled_here`, kept in `cache` by the file's state and the lines asked about."""
    if cache is None:
        return _uncalled_here(path, lines)
    key = digest("uncalled-here", code_fingerprint(), os.path.abspath(path), sorted(set(lines)))
    hit = cache.get(key)
    if isinstance(hit, list) and all(isinstance(item, list) and len(item) == 6 for item in hit):
        return [
            _Definition(n.encode("latin-1"), first, last, o.encode("latin-1"), m.encode("latin-1"), orphan)
            for n, first, last, o, m, orphan in hit
        ]
    found = _uncalled_here(path, lines)
    encoded = [
        [d.name.decode("latin-1"), d.first, d.last, d.owner.decode("latin-1"), d.module.decode("latin-1"), d.orphan]
        for d in found
    ]
    cache.put(key, encoded, [path])
    return found


def _uncalled_here(path: str, lines: Iterable[int]) -> list[_Definition]:
    """The definitions of `path` holding one of `lines` whose name the file itself names nowhere else (nor, for a
    method, its class's name): the candidates to look for in the rest of the project."""
    base = os.path.basename(path)
    if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
        return []
    from dslint.model.summary import known_tree  # the project model's: not imported by a run the cache serves

    try:
        with open(path, "rb") as handle:
            data = handle.read()
        # the tree the project index made of these bytes, in this process, when it summarised the module
        tree = known_tree(path, data) or ast.parse(data)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if _EXPOSE_ALL.search(data):
        return []
    wanted = sorted(set(lines))
    orphans = [] if _runs(tree) or _runs_own_code(tree) else _orphan_definitions(path, tree, wanted)
    found = [d for d in _definitions(tree) if any(d.first <= line <= d.last for line in wanted)]
    if _packaged(path):  # a library's public functions are its users' to call
        found = [d for d in found if (d.owner or d.name).startswith(b"_")]
    text = _code_text(data)
    found = [d for d in found if not _named(d.name, text) or (d.owner and not _named(d.owner, text))]
    if found and not _runs(tree):
        # a module of definitions only: whoever imports it calls them; unless nothing in the project does, in
        # which case it is no part of any run here that dslint can see (an API, an example to copy): left alone
        found = [replace(d, module=os.fsencode(os.path.splitext(base)[0])) for d in found]
    return found + orphans


def _orphan_definitions(path: str, tree: ast.Module, lines: list[int]) -> list[_Definition]:
    """The classes deriving from another module's class (a framework's subclass, whole) of a module that runs
    nothing and is no installable package's, holding one of `lines`: the framework calls their methods by name, so
    they are no definitions nothing calls, but no run of the project reaches them unless some file mentions the
    module (an import, `python -m`, a hydra `_target_`): a copy of a library's trainer left beside the one in use.
    A package's `__init__` (imported under the package's name) is left alone."""
    base = os.path.basename(path)
    if base in ("__init__.py", "__main__.py") or _packaged(path):
        return []
    module = os.fsencode(os.path.splitext(base)[0])
    own = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    return [
        _Definition(node.name.encode(), node.lineno, node.end_lineno or node.lineno, module=module, orphan=True)
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and _derives_from_another_module(node, own)
        and any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in lines)
    ]


def _runs(tree: ast.Module) -> bool:
    """Whether the module runs something when it is run: an `if __name__ == "__main__":` block, or a call at its
    top level (`main()`, `fire.Fire(train)`)."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.dump(node.test):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
    return False


def _derives_from_another_module(node: ast.ClassDef, own: set[str]) -> bool:
    """A class with a base that is not the module's own: a framework's subclass (a copied `DPOTrainer(Trainer)`),
    whose methods the framework calls by their names."""
    return any(not (isinstance(b, ast.Name) and (b.id in own or b.id == "object")) for b in node.bases)


def _runs_own_code(tree: ast.Module) -> bool:
    """Whether top-level code beyond imports and definitions may run the module's own code: a loop or a `with`
    block, or a statement calling a function or class the module defines (`result = train()`)."""
    own = {node.name for node in tree.body if _defines(node)}
    for node in tree.body:
        if _defines(node) or isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            return True
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in own:
                return True
    return False


def _defines(node: ast.stmt) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def _packaged(path: str) -> bool:
    """Whether `path` is a module of an installable package: its folder holds `__init__.py` and a folder above it
    up to the repository root holds packaging metadata (`setup.py`, `setup.cfg`, `pyproject.toml`)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(os.path.join(folder, "__init__.py")):
        return False
    for above in [folder, *map(str, Path(folder).parents)]:
        if any(os.path.exists(os.path.join(above, name)) for name in ("setup.py", "setup.cfg", "pyproject.toml")):
            return True
        if os.path.exists(os.path.join(above, ".git")):
            return False
    return False


def _module_mention(module: bytes, python: bool) -> bytes:
    """A pattern for a mention of `module` as a module: in code an import (`import m`, `from pkg.m import f`,
    `importlib.import_module("pkg.m")`); elsewhere a dotted path holding it (`_target_: pkg.m.f`, `python -m
    pkg.m`), not a file's path (`python m.py`, `logs/m.txt`)."""
    escaped = re.escape(module)
    if python:  # an import of it (`import pkg.m`, `from pkg.m import f`, `from pkg import m`), or by its name
        word = rb"(?<![\w])" + escaped + rb"(?![\w])"
        return rb"(?m)^[ \t]*(?:from|import)[ \t][^\n]*" + word + rb"|import_module\(\s*[^)]*" + word
    files = rb"(?!(?:py|sh|ya?ml|json|txt|log|md)\b)"
    return rb"\w\." + escaped + rb"(?![\w/])|(?<![\w/.])" + escaped + rb"\." + files + rb"[A-Za-z_]"


def _definitions(tree: ast.Module) -> Iterator[_Definition]:
    """The module's functions and the methods of its classes whose bases are none or the module's own classes; a
    class deriving from another module's class, whole (a framework calls its methods by name, but only on an
    instance: a class nothing names is never made one)."""
    own = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _may_run_unnamed(node):
                continue
            yield _Definition(node.name.encode(), node.lineno, node.end_lineno or node.lineno)
        elif isinstance(node, ast.ClassDef) and not node.decorator_list and not node.keywords:
            if not all(isinstance(b, ast.Name) and (b.id in own or b.id == "object") for b in node.bases):
                yield _Definition(node.name.encode(), node.lineno, node.end_lineno or node.lineno)
                continue
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _may_run_unnamed(item):
                    if item.name.startswith("__") and item.name.endswith("__"):
                        continue
                    last = item.end_lineno or item.lineno
                    yield _Definition(item.name.encode(), item.lineno, last, node.name.encode())


def _may_run_unnamed(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return bool(node.decorator_list)


def _code_text(data: bytes) -> bytes:
    """Python source with its comments dropped and each string literal reduced to what may name a function: the
    string itself when it is a name that code looks up (`getattr(module, "main")`, `__all__`), the last part of a
    dotted path (`"pkg.train.main"`, `"pkg.train:main"`), else nothing (`"test.fasta"`, `split="test"`, a message)."""

    def reduced(match: re.Match[bytes]) -> bytes:
        if match.group("comment") is not None:
            return b""
        literal = match.group("string").lstrip(b"rRbBuUfF")
        quote = literal[:3] if literal[:3] in (b"'''", b'"""') else literal[:1]
        body = literal[len(quote) : len(literal) - len(quote)].strip()
        if _PATH_LIKE.fullmatch(body) is None:
            return b" "
        if b"." in body or b":" in body:
            return b" " + re.split(rb"[.:]", body)[-1] + b" "
        # a bare word names a function only where code looks a name up by its string (`getattr(module, "main")`,
        # `__all__`): elsewhere it is data (`split="test"`)
        line_start = match.string.rfind(b"\n", 0, match.start()) + 1
        return b" " + body + b" " if _LOOKUP.search(match.string, line_start, match.start()) else b" "

    return _PYTHON_NOISE.sub(reduced, data)


def _named(name: bytes, text: bytes, python: bool = True, own: bool = False) -> bool:
    """Whether `text` names `name` other than where it defines it (`def name`, `class name`). Python text comes
    through `_code_text`: any mention of the name counts (a call, a reference, an import, a string naming it).
    Other text (a launcher, a config, a notebook, a document) must call it (`name(`) or end a dotted path with it
    (`_target_: pkg.mod.name`, `pkg.mod:name`). `own`: the text defines a `name` of its own, so only an attribute
    (`module.name`) may be another's."""
    if name not in text:
        return False
    escaped = re.escape(name)
    if own:
        pattern = rb"\." + escaped + rb"(?!\w)"
    elif python:
        pattern = rb"(?<![\w.])" + escaped + rb"(?!\w)|\." + escaped + rb"(?!\w)"
    else:
        pattern = rb"(?<![\w.])" + escaped + rb"\s*\(|[\w)\]][.:]" + escaped + rb"(?![\w.])"
    for match in re.finditer(pattern, text):
        before = text[max(0, match.start() - 6) : match.start()]
        if not re.search(rb"(?:def|class)\s+$", before):
            return True
    return False


def _mentioned_cached(
    names: set[bytes], modules: set[bytes], root: str, cache: ResultCache | None
) -> tuple[set[bytes], set[bytes]]:
    """`_mentioned`, kept in `cache` by the names, the modules and the project's text files (their list in the key,
    their states as the entry's inputs)."""
    if cache is None:
        return _mentioned(names, modules, root)
    listing = list(_text_files((root,)))
    key = digest("uncalled", code_fingerprint(), root, sorted(names), sorted(modules), listing)
    hit = cache.get(key)
    if isinstance(hit, list) and len(hit) == 2 and all(isinstance(part, list) for part in hit):
        return {n.encode("latin-1") for n in hit[0]}, {m.encode("latin-1") for m in hit[1]}
    named, used = _mentioned(names, modules, root, listing)
    cache.put(key, [sorted(n.decode("latin-1") for n in named), sorted(m.decode("latin-1") for m in used)], listing)
    return named, used


def _mentioned(
    names: set[bytes], modules: set[bytes], root: str, listing: Iterable[str] | None = None
) -> tuple[set[bytes], set[bytes]]:
    """Of `names`, those some text file under `root` names outside a definition (`_named`); of `modules`, those a
    file of another name mentions as a module (`_module_mention`). Each file is read once, and only while some
    name or module is still unsettled."""
    named: set[bytes] = set()
    used: set[bytes] = set()
    for path in listing if listing is not None else _text_files((root,)):
        left = [name for name in names if name not in named]
        unused = [module for module in modules if module not in used]
        if not left and not unused:
            break
        try:
            if os.path.getsize(path) > _MAX_TEXT_BYTES:
                continue
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        present = [name for name in left if name in data]
        stem = os.path.splitext(os.path.basename(path))[0].encode()
        importing = [module for module in unused if module != stem and module in data]
        if not present and not importing:
            continue
        python = path.endswith((".py", ".pyi"))
        text = _code_text(data) if python else data
        named.update(name for name in present if _named(name, text, python, python and _own(name, data)))
        used.update(module for module in importing if re.search(_module_mention(module, python), text))
    return named, used


def _own(name: bytes, data: bytes) -> bool:
    """Whether a module defines a function or class `name` of its own, without importing one of that name: its
    bare mentions of the name are its own definition's (`train(args)` under `def train`), not another module's."""
    escaped = re.escape(name)
    if re.search(rb"(?m)^(?:async[ \t]+)?(?:def|class)[ \t]+" + escaped + rb"\b", data) is None:
        return False
    return re.search(rb"import[^\n]*\b" + escaped + rb"\b", data) is None


def _text_files(roots: Sequence[str]) -> Iterator[str]:
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if not skipped_directory(d)]
            for file in files:
                if file.endswith(_TEXT_SUFFIXES) or file in _TEXT_NAMES:
                    yield os.path.join(directory, file)

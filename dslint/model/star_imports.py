"""The imported names a module receives through `from m import *` of a project module (`header.py` holding
`import torch`, `import deepspeed`, read by `from header import *`), so that `deepspeed.initialize(...)` in the
star-importing module is known for what it is.

Python copies every public name of `m` (those not starting with `_`, or exactly those `m.__all__` lists when
it is a literal list or tuple of strings), the names `m` imports included, and those `m` itself receives by a
star import. A name the module imports itself wins over one a star brings (kept out of the answer); between
two stars, the later one wins, as at run time when both run at the top of the module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from dslint.model.source_words import word_led_matches
from dslint.model.summary import ModuleSummary, SummaryStore, walk

_DEPTH = 4  # star imports of star imports followed this far


def star_aliases(store: SummaryStore, path: str) -> dict[str, str]:
    """Local name -> dotted path, for the imports that reach `path` only through its star imports of project
    modules; empty when it has none. Only names the module writes somewhere are answered (every question asked of
    them is about a name in its code: `deepspeed` in `deepspeed.initialize(...)`), so a module the stars reach is
    read only when it may bring one of those names (`_may_bring`: a package's `__init__.py` star-importing every
    model of a library is not read model by model)."""
    summary = store.get(path)
    if summary is None or not summary.stars:
        return {}
    wanted = _names(summary.tree) - summary.imports.keys()
    if not wanted:
        return {}
    encoded = {name.encode() for name in wanted} if all(name.isascii() for name in wanted) else None
    brought = _through_stars(store, summary, _DEPTH, {path}, encoded)
    return {name: target for name, target in brought.items() if name in wanted}


def _names(tree: ast.Module) -> set[str]:
    """The identifiers of every `ast.Name` in `tree` (the model's one hand-written walk, `summary.walk`)."""
    return {node.id for node in walk(tree) if type(node) is ast.Name}


_STAR_IMPORT = re.compile(rb"import[\s\\]*\*")
# what follows the word `import`, with the lines a backslash continues (a `from` import's names, or the modules of
# a plain import: the names either binds are among these words)
_IMPORTED = re.compile(rb"import\b((?:[^\n\\]|\\[\s\S])*)")  # led by the literal: `re` skips to each `import`
_WORD = re.compile(rb"\w+")


def _may_bring(data: bytes, wanted: set[str]) -> bool:
    """Whether the module `data` may bring one of the names `wanted` to a star import of it: a star import of its
    own, or one of the names among the words of its import statements (`_import_words`). Cheaper than the parse it
    saves."""
    return _brings(data, {name.encode() for name in wanted})


def _brings(data: bytes, wanted: set[bytes]) -> bool:
    """`_may_bring` with the names encoded once per question (a package's `__init__.py` asks it of hundreds of
    modules)."""
    words = _import_words(data)
    return words is None or not words.isdisjoint(wanted)


def _import_words(data: bytes) -> frozenset[bytes] | None:
    """The words of the module's import statements (a name it imports is written there: `import a.b` binds `a`,
    `import x as y` and `from m import x as y` bind `y`), read from each `import` to the end of its line and the
    lines a backslash continues, and on to the `)` of a parenthesized list; None when it may bring any name (a star
    import of its own, or a comment inside a parenthesized list, which might hold the `)`)."""
    if _STAR_IMPORT.search(data):
        return None
    words: set[bytes] = set()
    for match in _imports(data):
        rest = match.group(1)
        if b"(" in rest:
            if b"#" in rest:
                return None  # a comment might hold the `)`
            if rest.count(b"(") > rest.count(b")"):  # a parenthesized list goes on: to its `)`
                close = data.find(b")", match.end(1))
                more = data[match.end(1) : close if close >= 0 else len(data)]
                if b"#" in more:
                    return None
                rest += more
        words.update(_WORD.findall(rest))
    return frozenset(words)


def _imports(data: bytes) -> Iterator[re.Match[bytes]]:
    """The matches of `\bimport\b(...)` that `finditer` would give, found by the literal-led `_IMPORTED`: a pattern
    that starts with `\b` is tried at every byte, many times slower on the megabytes a package's star imports
    reach. An `import` inside a longer word (`reimport`) is no match, and the search goes on right after its start,
    as `finditer` would."""
    return word_led_matches(_IMPORTED, data)


def _through_stars(
    store: SummaryStore, summary: ModuleSummary, depth: int, seen: set[str], wanted: set[bytes] | None
) -> dict[str, str]:
    """`wanted`: the names, encoded, when all are ASCII (the same bytes in a source of any encoding); None: every
    module a star reaches is read."""
    found: dict[str, str] = {}
    if depth == 0:
        return found
    for star in summary.stars:
        target_path = store.finder.find(star, summary.path)
        if target_path is None or target_path in seen:
            continue
        if wanted is not None and not _brings(store.sources.get(target_path, b""), wanted):
            continue
        target = store.get(target_path)
        if target is None:
            continue
        names = {**_through_stars(store, target, depth - 1, seen | {target_path}, wanted), **target.imports}
        public = _all_names(target.tree)
        found.update({n: v for n, v in names.items() if (n in public if public is not None else not n.startswith("_"))})
    return found


def _all_names(tree: ast.Module) -> set[str] | None:
    """`__all__ = [...]` (a literal of strings) at the module's top level; None when there is none."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets
        ):
            items = statement.value.elts if isinstance(statement.value, (ast.List, ast.Tuple)) else []
            names = [e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return set(names) if len(names) == len(items) else set()  # computed: nothing known to be exported
    return None

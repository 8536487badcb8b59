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

from dslint.model.summary import ModuleSummary, SummaryStore

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
    wanted = {node.id for node in ast.walk(summary.tree) if isinstance(node, ast.Name)} - summary.imports.keys()
    if not wanted:
        return {}
    brought = _through_stars(store, summary, _DEPTH, {path}, wanted)
    return {name: target for name, target in brought.items() if name in wanted}


_STAR_IMPORT = re.compile(rb"import[\s\\]*\*")
# what follows the word `import`, with the lines a backslash continues (a `from` import's names, or the modules of
# a plain import: the names either binds are among these words)
_IMPORTED = re.compile(rb"\bimport\b((?:[^\n\\]|\\[\s\S])*)")
_WORD = re.compile(rb"\w+")


def _may_bring(data: bytes, wanted: set[str]) -> bool:
    """Whether the module `data` may bring one of the names `wanted` to a star import of it: a star import of its
    own, or one of the names among the words of its import statements (a name it imports is written there: `import
    a.b` binds `a`, `import x as y` and `from m import x as y` bind `y`), read from each `import` to the end of its
    line and the lines a backslash continues, and on to the `)` of a parenthesized list (a comment there might
    hold one: then it may). Cheaper than the parse it saves."""
    if _STAR_IMPORT.search(data):
        return True
    words: set[bytes] = set()
    for match in _IMPORTED.finditer(data):
        rest = match.group(1)
        if b"(" in rest:
            if b"#" in rest:
                return True  # a comment might hold the `)`
            if rest.count(b"(") > rest.count(b")"):  # a parenthesized list goes on: to its `)`
                close = data.find(b")", match.end(1))
                more = data[match.end(1) : close if close >= 0 else len(data)]
                if b"#" in more:
                    return True
                rest += more
        words.update(_WORD.findall(rest))
    return any(name.encode() in words for name in wanted)


def _through_stars(
    store: SummaryStore, summary: ModuleSummary, depth: int, seen: set[str], wanted: set[str]
) -> dict[str, str]:
    found: dict[str, str] = {}
    if depth == 0:
        return found
    ascii_names = all(name.isascii() for name in wanted)  # the same bytes in a source of any encoding
    for star in summary.stars:
        target_path = store.finder.find(star, summary.path)
        if target_path is None or target_path in seen:
            continue
        if ascii_names and not _may_bring(store.sources.get(target_path, b""), wanted):
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

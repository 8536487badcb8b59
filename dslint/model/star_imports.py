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

from dslint.model.summary import ModuleSummary, SummaryStore

_DEPTH = 4  # star imports of star imports followed this far


def star_aliases(store: SummaryStore, path: str) -> dict[str, str]:
    """Local name -> dotted path, for the imports that reach `path` only through its star imports of project
    modules; empty when it has none."""
    summary = store.get(path)
    if summary is None or not summary.stars:
        return {}
    brought = _through_stars(store, summary, _DEPTH, {path})
    return {name: target for name, target in brought.items() if name not in summary.imports}


def _through_stars(store: SummaryStore, summary: ModuleSummary, depth: int, seen: set[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    if depth == 0:
        return found
    for star in summary.stars:
        target_path = store.finder.find(star, summary.path)
        if target_path is None or target_path in seen:
            continue
        target = store.get(target_path)
        if target is None:
            continue
        names = {**_through_stars(store, target, depth - 1, seen | {target_path}), **target.imports}
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

"""Resolving the few names dslint cares about, without libcst's (slow) qualified-name metadata.

`ImportTable` maps each local name bound by an import to the dotted path it stands for, so that
`ds.initialize`, `initialize` (after `from deepspeed import initialize`) and `deepspeed.initialize` all resolve
to `deepspeed.initialize`. The imports are the module summary's (`dslint.model.summary.module_imports`); this
module only resolves libcst expressions through them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

import libcst as cst

from dslint.model.summary import module_imports

# libcst's node classes have no subclasses: a node's exact type answers `isinstance`, without ABCMeta's Python-level
# check (these two functions run on every name and attribute the rules and the facts resolve)
_ATTRIBUTE, _CALL, _NAME = cst.Attribute, cst.Call, cst.Name


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a` -> "a", `a.b.c` -> "a.b.c"; anything else (calls, subscripts) -> None."""
    parts: list[str] = []
    while type(node) is _ATTRIBUTE:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not _NAME:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


class ImportTable:
    """Local name -> the dotted path it was imported as, as the module's summary reads them
    (`dslint.model.summary.module_imports`, the one reading of imports, shared with the project model); relative
    imports only where the file's package is known."""

    def __init__(self, aliases: Mapping[str, str] | None = None) -> None:
        self.aliases: Mapping[str, str] = aliases if aliases is not None else {}

    @classmethod
    def of(cls, tree: ast.Module, package: Callable[[], tuple[str, ...]] | None = None) -> ImportTable:
        return cls(module_imports(tree, package)[0])

    def qualified(self, node: cst.CSTNode) -> str | None:
        """The dotted path an expression refers to, through imports.

        `get_accelerator().set_device` resolves to "deepspeed.accelerator.get_accelerator().set_device": a call
        in the middle of a chain is kept as "()".
        """
        kind = type(node)
        if kind is _ATTRIBUTE:
            base = self.qualified(node.value)  # type: ignore[attr-defined]
            return None if base is None else f"{base}.{node.attr.value}"  # type: ignore[attr-defined]
        if kind is _CALL:
            base = self.qualified(node.func)  # type: ignore[attr-defined]
            return None if base is None else f"{base}()"
        if kind is _NAME:
            return self.aliases.get(node.value)  # type: ignore[attr-defined]
        return None


def literally_enabled(call: cst.Call) -> bool:
    """A context manager such as `torch.autocast(...)` or `deepspeed.zero.Init(...)` is on unless its
    `enabled=` argument is something other than the literal `True` (a variable could be False)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "enabled":
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return True

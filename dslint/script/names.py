"""Resolving the few names dslint cares about, without libcst's (slow) qualified-name metadata.

`ImportTable` maps each local name bound by an import to the dotted path it stands for, so that
`ds.initialize`, `initialize` (after `from deepspeed import initialize`) and `deepspeed.initialize` all resolve
to `deepspeed.initialize`.
"""

from __future__ import annotations

import libcst as cst


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a` -> "a", `a.b.c` -> "a.b.c"; anything else (calls, subscripts) -> None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def module_path(node: cst.BaseExpression) -> str:
    """The dotted text of an import's module expression (`torch.nn`)."""
    name = dotted_name(node)
    return name or ""


class ImportTable:
    """Local name -> the dotted path it was imported as. Relative and star imports are not resolved."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = module_path(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                self.aliases[head] = head

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = module_path(node.module)
        for alias in node.names:
            imported = dotted_name(alias.name)
            if imported is None:
                continue
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{imported}"

    def qualified(self, node: cst.CSTNode) -> str | None:
        """The dotted path an expression refers to, through imports.

        `get_accelerator().set_device` resolves to "deepspeed.accelerator.get_accelerator().set_device": a call
        in the middle of a chain is kept as "()".
        """
        if isinstance(node, cst.Attribute):
            base = self.qualified(node.value)
            return None if base is None else f"{base}.{node.attr.value}"
        if isinstance(node, cst.Call):
            base = self.qualified(node.func)
            return None if base is None else f"{base}()"
        if isinstance(node, cst.Name):
            return self.aliases.get(node.value)
        return None


def literally_enabled(call: cst.Call) -> bool:
    """A context manager such as `torch.autocast(...)` or `deepspeed.zero.Init(...)` is on unless its
    `enabled=` argument is something other than the literal `True` (a variable could be False)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "enabled":
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return True

"""Classes across the project: what a base written in a `class` statement names, the methods an instance finds
along its bases, and the overrides in subclasses that a base class's `self.method(...)` call reaches."""

from __future__ import annotations

import re

from dslint.model.library import LIBRARY_ROOTS
from dslint.model.summary import ModuleSummary, SummaryStore

# How many re-exports a name is followed through, and how many bases up or subclasses down a lookup goes.
MAX_REEXPORTS = 3
MAX_DEPTH = 6
# A class name found in more files than this is too common to look for its subclasses everywhere.
MAX_SUBCLASS_FILES = 24

ClassRef = tuple[str, str]  # (module path, class qualname)


class Hierarchy:
    def __init__(self, store: SummaryStore) -> None:
        self.store = store
        self._subclasses: dict[ClassRef, list[ClassRef]] = {}

    def follow(self, dotted_name: str, near: str) -> tuple[ModuleSummary, str] | None:
        """The project module defining the top-level name `dotted_name` points at (`pkg.mod.Name`), through
        re-exports in packages' `__init__.py` (`from .mod import Name`, `from .mod import *`); with the name there."""
        for _ in range(MAX_REEXPORTS + 1):
            module_name, _, name = dotted_name.rpartition(".")
            if not module_name or module_name.split(".")[0] in LIBRARY_ROOTS:
                return None
            path = self.store.finder.find(module_name, near)
            target = self.store.get(path) if path is not None else None
            if target is None:
                return None
            if name in target.functions or name in target.classes:
                return target, name
            reexported = target.imports.get(name)
            if reexported is None:  # `from .loaders import *` in a package's `__init__.py`
                reexported = next((f"{star}.{name}" for star in target.stars if self._names(star, name, target)), None)
            if reexported is None or reexported == dotted_name:
                return None
            dotted_name, near = reexported, target.path
        return None

    def _names(self, star: str, name: str, importer: ModuleSummary) -> bool:
        """Whether the project module `star` (star-imported by `importer`) defines or imports `name`."""
        path = self.store.finder.find(star, importer.path)
        module = self.store.get(path) if path is not None and path != importer.path else None
        return module is not None and (name in module.functions or name in module.classes or name in module.imports)

    def resolve_class(self, module: ModuleSummary, written: str) -> ClassRef | None:
        """The project class a base written in `module` names (`Base`, `base.Base`, `from .base import Base`)."""
        if written in module.classes:
            return (module.path, written)
        head, _, rest = written.partition(".")
        imported = module.imports.get(head)
        if imported is None:
            for star in module.stars:
                path = self.store.finder.find(star, module.path)
                target = self.store.get(path) if path is not None else None
                if target is not None and written in target.classes:
                    return (target.path, written)
            return None
        found = self.follow(f"{imported}.{rest}" if rest else imported, module.path)
        if found is None or found[1] not in found[0].classes:
            return None
        return (found[0].path, found[1])

    def method(self, cls: ClassRef, name: str, depth: int = 0) -> tuple[str, str] | None:
        """The method `name` an instance of `cls` finds: its own, else the first of its bases' (in order)."""
        module = self.store.get(cls[0])
        if module is None or depth > MAX_DEPTH:
            return None
        if f"{cls[1]}.{name}" in module.functions:
            return (cls[0], f"{cls[1]}.{name}")
        for written in module.classes.get(cls[1], ()):
            base = self.resolve_class(module, written)
            found = self.method(base, name, depth + 1) if base is not None else None
            if found is not None:
                return found
        return None

    def subclasses(self, cls: ClassRef) -> list[ClassRef]:
        """The project classes deriving from `cls`, at any depth (looked for in files that write its name)."""
        if cls in self._subclasses:
            return self._subclasses[cls]
        self._subclasses[cls] = []  # a cycle of bases ends here
        found: list[ClassRef] = []
        name = cls[1].rpartition(".")[2]
        needle = name.encode()
        # a `class X(... Name ...)` statement, or an import of the name under another (`import Name as Other`,
        # which a class statement then names), by text first: only those files are parsed
        statement = re.compile(rb"^[ \t]*class\s+\w+\s*\([^)]*\b" + re.escape(needle) + rb"\b", re.MULTILINE)
        renamed = re.compile(rb"\b" + re.escape(needle) + rb"\s+as\s+\w+")
        # (the store's index names the files whose class statements or `as` clauses hold the name as a word)
        candidates = self.store.words.class_word(name)
        sources = self.store.sources
        matched = [
            path
            for path in (candidates if candidates is not None else sources)
            if needle in sources[path] and (statement.search(sources[path]) or renamed.search(sources[path]))
        ]
        if len(matched) <= MAX_SUBCLASS_FILES:
            for path in matched:
                module = self.store.get(path)
                if module is None:
                    continue
                for qualname, bases in module.classes.items():
                    if any(self.resolve_class(module, b) == cls for b in bases):
                        sub = (path, qualname)
                        found.append(sub)
                        found.extend(s for s in self.subclasses(sub) if s not in found)
        self._subclasses[cls] = found
        return found

    def overrides(self, cls: ClassRef, name: str) -> list[tuple[str, str]]:
        """The methods `name` that subclasses of `cls` define themselves: where `self.name(...)` in `cls` may go."""
        found: list[tuple[str, str]] = []
        for sub in self.subclasses(cls):
            module = self.store.get(sub[0])
            qualname = f"{sub[1]}.{name}"
            if module is not None and qualname in module.functions:
                found.append((sub[0], qualname))
        return found

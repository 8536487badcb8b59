"""Which project function a call names, read from the module summaries: the same module (nested functions
too), an import (relative, star), `self.method` along the class hierarchy, a method of a project class's instance.
The evaluator (`model/evaluate.py`) reads functions on top of it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from dslint.model.classes import ClassRef, Hierarchy
from dslint.model.summary import FunctionInfo, ModuleSummary, SummaryStore, dotted, own_nodes, statements
from dslint.model.values import Value

Callee = tuple[str, str]  # (module path, qualname)


@dataclass
class CallSite:
    caller_path: str
    line: int
    column: int
    callee: Callee
    arguments: dict[str, Value]  # callee parameter name -> value passed (None: unknown)


@dataclass
class FunctionSummary:
    path: str
    qualname: str
    params: list[str]
    is_method: bool
    returns: list[Value] = field(default_factory=list)


def scope_of(module: ModuleSummary, qualname: str) -> FunctionSummary:
    """The scope calls in `qualname` of `module` are resolved in (module-level code for "" or a name that is not
    a function of the module)."""
    function = module.functions.get(qualname) if qualname else None
    if function is None:
        return FunctionSummary(module.path, "", [], False)
    return FunctionSummary(module.path, qualname, list(function.params), function.is_method)


class Resolver:
    """Name resolution over the summaries, with what it found kept for the answers."""

    def __init__(self, store: SummaryStore) -> None:
        self.store = store
        self.hierarchy = Hierarchy(store)
        self.call_texts: dict[tuple[str, str], Callee] = {}  # (path, callee as written) -> callee
        # per body: names holding a project class's instance (read from the code alone: kept when the fixpoint
        # starts again)
        self.instances: dict[Callee, dict[str, ClassRef]] = {}
        # per body: names every assignment of which names project classes, with their constructors
        self.class_aliases: dict[Callee, dict[str, list[Callee]]] = {}

    def module(self, path: str) -> ModuleSummary | None:
        return self.store.get(path)

    def function(self, callee: Callee) -> FunctionInfo | None:
        module = self.module(callee[0])
        return module.functions.get(callee[1]) if module is not None else None

    def resolve(self, module: ModuleSummary, summary: FunctionSummary, func: ast.expr) -> Callee | None:
        """The project function a call's callee names (same module, imported, `self.method`, `super().method`)."""
        name = dotted(func)
        if name is None:
            return self._super_method(module, summary, func)
        found = self._resolve_name(module, summary, name)
        if found is not None:
            self.call_texts[(module.path, name)] = found
        return found

    def _super_method(self, module: ModuleSummary, summary: FunctionSummary, func: ast.expr) -> Callee | None:
        """`super().name` (or `super(Cls, self).name`) in a method: the first of the class's bases' methods."""
        if not (
            summary.is_method
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            return None
        owner = summary.qualname.rpartition(".")[0]
        for written in module.classes.get(owner, ()):
            base = self.hierarchy.resolve_class(module, written)
            found = self.hierarchy.method(base, func.attr) if base is not None else None
            if found is not None:
                return found
        return None

    def _resolve_name(self, module: ModuleSummary, summary: FunctionSummary, name: str) -> Callee | None:
        head, _, rest = name.partition(".")
        if summary.is_method and summary.params and head == summary.params[0] and rest and "." not in rest:
            # the method of this class, or the one it inherits from a project base class
            return self.hierarchy.method((module.path, summary.qualname.rpartition(".")[0]), rest)
        if not rest:
            # A function nested in the caller or in a function around it (`def main(): def training(model):
            # ...; training(model)`); class bodies are not scopes a method sees.
            scope = summary.qualname
            while scope and scope in module.functions:
                if f"{scope}.{name}" in module.functions:
                    return (module.path, f"{scope}.{name}")
                scope = scope.rpartition(".")[0]
            if name in module.functions:
                return (module.path, name)
            if name in module.classes and f"{name}.__init__" in module.functions:
                return (module.path, f"{name}.__init__")
        if rest and "." not in rest and head not in module.imports:
            cls = self._instances(module, summary).get(head)
            if cls is not None:  # `config = ModelConfig(); config.load(...)`: the method of that project class
                return self.hierarchy.method(cls, rest)
        imported = module.imports.get(head)
        if imported is None and not rest:
            # `from util import *`: the first star-imported project module that defines the name
            for star in module.stars:
                path = self.store.finder.find(star, module.path)
                target = self.module(path) if path is not None else None
                if target is not None and name in target.functions:
                    return (target.path, name)
            return None
        if imported is None:
            return None
        return self._follow_import(f"{imported}.{rest}" if rest else imported, module.path)

    def _instances(self, module: ModuleSummary, summary: FunctionSummary) -> dict[str, ClassRef]:
        """The names that hold an instance of one project class in the caller's own body (or the module's code):
        every assignment of the name there is `Class(...)` of that class."""
        key = (module.path, summary.qualname)
        if key in self.instances:
            return self.instances[key]
        self.instances[key] = {}  # while the body is read (a factory's name resolved from it): no instance yet
        function = module.functions.get(summary.qualname) if summary.qualname else None
        found: dict[str, set[ClassRef | None]] = {}
        for node in statements(function.node.body if function is not None else module.tree.body):
            if not isinstance(node, ast.Assign):
                continue
            written = dotted(node.value.func) if isinstance(node.value, ast.Call) else None
            cls = self.hierarchy.resolve_class(module, written) if written is not None else None
            if cls is None and written is not None:
                cls = self._made_by(self._resolve_name(module, summary, written))
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, set()).add(cls)
        answer: dict[str, ClassRef] = {}
        for name, classes in found.items():
            (cls,) = classes if len(classes) == 1 else (None,)
            if cls is not None:
                answer[name] = cls
        self.instances[key] = answer
        return answer

    def aliased_constructors(self, module: ModuleSummary, summary: FunctionSummary, func: ast.expr) -> list[Callee]:
        """`cls(...)` where every assignment of the name `cls` in the caller's own body names project classes
        (`trainer_cls = PPOTrainerUnsupervised if unsupervised else PPOTrainer`): each one's constructor."""
        if not isinstance(func, ast.Name):
            return []
        key = (module.path, summary.qualname)
        if key not in self.class_aliases:  # the body read once for every call in it
            self.class_aliases[key] = self._class_aliases(module, summary)
        return self.class_aliases[key].get(func.id, [])

    def _class_aliases(self, module: ModuleSummary, summary: FunctionSummary) -> dict[str, list[Callee]]:
        """The names of a body every assignment of which names project classes, with their constructors (a name
        some assignment binds to anything else is left out)."""
        function = module.functions.get(summary.qualname) if summary.qualname else None
        found: dict[str, list[Callee] | None] = {}
        for node in statements(function.node.body if function is not None else module.tree.body):
            if not isinstance(node, ast.Assign):
                continue
            arms = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            constructors: list[Callee] | None = []
            for arm in arms:
                written = dotted(arm)
                cls = self.hierarchy.resolve_class(module, written) if written is not None else None
                constructor = self.hierarchy.method(cls, "__init__") if cls is not None else None
                if constructor is None or constructors is None:
                    constructors = None  # an arm that is no project class (with a constructor): not known
                else:
                    constructors.append(constructor)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    before = found.get(target.id, [])
                    found[target.id] = None if before is None or constructors is None else [*before, *constructors]
        return {name: list(dict.fromkeys(c)) for name, c in found.items() if c}

    def _made_by(self, factory: Callee | None) -> ClassRef | None:
        """The one project class every `return` of the project function `factory` builds (`return Cls(...)`,
        `def create_diffusion(...): return SpacedDiffusion(...)`); None otherwise."""
        function = self.function(factory) if factory is not None else None
        target = self.module(factory[0]) if factory is not None else None
        if function is None or target is None or function.is_method:
            return None
        made: set[ClassRef | None] = set()
        for node in own_nodes(function.node):
            if isinstance(node, ast.Return):
                written = dotted(node.value.func) if isinstance(node.value, ast.Call) else None
                made.add(self.hierarchy.resolve_class(target, written) if written is not None else None)
        (cls,) = made if len(made) == 1 else (None,)
        return cls

    def _follow_import(self, dotted_name: str, near: str) -> Callee | None:
        """A project function, or the `__init__` of a project class, that an imported name points at."""
        found = self.hierarchy.follow(dotted_name, near)
        if found is None:
            return None
        target, name = found
        if name in target.functions:
            return (target.path, name)
        if name in target.classes and f"{name}.__init__" in target.functions:
            return (target.path, f"{name}.__init__")
        return None

    def annotated_classes(self, module: ModuleSummary, qualname: str) -> dict[str, ClassRef]:
        """The parameters of a function whose annotation names a project class (`engine: RLHFEngine`,
        `Optional[RLHFEngine]`, `RLHFEngine | None`, `"RLHFEngine"`): parameter -> the class."""
        function = module.functions.get(qualname) if qualname else None
        if function is None:
            return {}
        args = function.node.args
        found: dict[str, ClassRef] = {}
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            written = _annotated_name(arg.annotation) if arg.annotation is not None else None
            cls = self._project_class(module, written) if written is not None else None
            if cls is not None:
                found[arg.arg] = cls
        return found

    def _project_class(self, module: ModuleSummary, func: ast.expr) -> tuple[str, str] | None:
        """The project class a callee names (`Backend`, `backends.Backend`): (its module's path, its name)."""
        name = dotted(func)
        if name is None:
            return None
        if name in module.classes:
            return (module.path, name)
        head, _, rest = name.partition(".")
        imported = module.imports.get(head)
        found = self.hierarchy.follow(f"{imported}.{rest}" if rest else imported, module.path) if imported else None
        return (found[0].path, found[1]) if found is not None and found[1] in found[0].classes else None

    def argument_for(self, callee: Callee, call: ast.Call, param: str) -> ast.expr | None:
        """The expression a call passes to the callee's parameter `param`."""
        function = self.function(callee)
        if function is None:
            return None
        for keyword in call.keywords:
            if keyword.arg == param:
                return keyword.value
        index = function.position_of(param)
        if index is not None and index < len(call.args):
            argument = call.args[index]
            return None if isinstance(argument, ast.Starred) else argument
        return None


def _annotated_name(annotation: ast.expr) -> ast.expr | None:
    """The class an annotation names, as an expression: `X`, `mod.X`, `Optional[X]`, `X | None`, `"X"`."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return None
    if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("Optional", "typing.Optional"):
        annotation = annotation.slice
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [side for side in (annotation.left, annotation.right) if not _is_none(side)]
        annotation = sides[0] if len(sides) == 1 else annotation
    return annotation if isinstance(annotation, (ast.Name, ast.Attribute)) else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None

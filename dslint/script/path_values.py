"""The path a script builds from literals and its own location, as the script's folder sees it:
`Path(__file__).parent.parent / "configs" / "ds.json"` -> "../configs/ds.json" (from `pkg/train/train.py`),
`os.path.join(os.path.dirname(os.path.abspath(__file__)), "ds.json")` -> "ds.json", `str(path)`, a name bound to
one of these. Anything read at run time (an option, the working directory, an environment variable) is None: not
guessed. The answer is relative to the folder holding the script (`config_access.config_path` reads it so), or
absolute when a literal part is."""

from __future__ import annotations

import os
import posixpath

import libcst as cst

from dslint.model.bindings import Binding
from dslint.script.facts import BindingKind, ScriptFacts
from dslint.script.names import dotted_name

# Calls that hand back the path they are given (as a string or a `Path`), by their last dotted part.
_SAME_PATH = frozenset({"str", "fspath", "Path", "PurePath", "PosixPath", "abspath", "realpath", "normpath"})
_SAME_PATH_METHODS = frozenset({"resolve", "absolute"})
_DEPTH = 16  # nested parts and names followed, at most


def path_value(facts: ScriptFacts, node: cst.BaseExpression, script: str, depth: int = 0) -> str | None:
    """The path `node` evaluates to, relative to the folder of the script at `script` (see the module's docstring);
    None when any part of it is not known before the run."""
    if depth > _DEPTH:
        return None
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.Name):
        if node.value == "__file__":
            return posixpath.basename(script.replace("\\", "/"))
        binding = facts.binding_at(node.value, facts.scope_at(node), facts.start(node))
        if binding is not None and binding.kind is BindingKind.PARAMETER:
            return _parameter_path(facts, binding, script)
        if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
            return None
        return path_value(facts, binding.value, script, depth + 1)
    stored = _stored_by_another_method(facts, node)  # `self.ds_config_path`, set in `__init__`
    if stored is not None:
        return path_value(facts, stored, script, depth + 1)
    if isinstance(node, cst.Attribute) and node.attr.value == "parent":
        inner = path_value(facts, node.value, script, depth + 1)
        return _parent(inner) if inner is not None else None
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return _field_default(facts, node.value, node.attr.value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return _joined([path_value(facts, side, script, depth + 1) for side in (node.left, node.right)])
    if isinstance(node, cst.Call):
        return _called(facts, node, script, depth)
    return None


def _called(facts: ScriptFacts, node: cst.Call, script: str, depth: int) -> str | None:
    if any(arg.keyword is not None or arg.star for arg in node.args):
        return None
    args = [arg.value for arg in node.args]
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in _SAME_PATH_METHODS and not args:
        return path_value(facts, node.func.value, script, depth + 1)  # `Path(__file__).resolve()`
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "joinpath":
        parts = [node.func.value, *args]
        return _joined([path_value(facts, part, script, depth + 1) for part in parts])
    name = dotted_name(node.func) or ""
    last = name.rpartition(".")[2]
    if last in _SAME_PATH and len(args) == 1:
        return path_value(facts, args[0], script, depth + 1)
    if last == "dirname" and len(args) == 1:
        inner = path_value(facts, args[0], script, depth + 1)
        return _parent(inner) if inner is not None else None
    if name in ("os.path.join", "path.join", "osp.join", "join") and args:
        return _joined([path_value(facts, arg, script, depth + 1) for arg in args])
    return None


def _parameter_path(facts: ScriptFacts, binding: Binding, script: str) -> str | None:
    """The file every call of the project passes for the parameter (`ProjectFacts.parameter_paths`), from the
    script's folder."""
    function = facts.qualname(binding.scope)
    project = facts.project
    found = project.parameter_paths.get(function, {}).get(binding.key) if function and project else None
    return os.path.relpath(found, os.path.dirname(os.path.abspath(script))) if found is not None else None


def _stored_by_another_method(facts: ScriptFacts, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`self.x` read in a method that does not bind it: the name another method of the class (its only binding of
    `self.x`) stores there (`self.x = x` in `__init__`)."""
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return None
    scope = facts.scope_at(node)
    if scope.self_name != node.value.value:
        return None
    key = f"self.{node.attr.value}"
    others = scope.bindings_in_other_methods(key)
    if len(others) != 1 or others[0].kind is not BindingKind.OTHER or not isinstance(others[0].value, cst.Name):
        return None
    if facts.binding_at(key, scope, facts.start(node)) is not others[0]:
        return None  # this method binds it too
    return others[0].value


def _field_default(facts: ScriptFacts, owner: cst.Name, field: str) -> str | None:
    """`cfg.<field>` of `cfg = Cfg()` (a dataclass of the project, built without that field and never given it
    afterwards): the field's literal default (`ProjectFacts.class_defaults`)."""
    project = facts.project
    binding = facts.binding_at(owner.value, facts.scope_at(owner), facts.start(owner))
    if project is None or binding is None or binding.kind is not BindingKind.OTHER:
        return None
    built = binding.value
    if isinstance(built, cst.Call) and isinstance(built.func, cst.Name):
        if any(arg.star or arg.keyword is None or arg.keyword.value == field for arg in built.args):
            return None
        name: str | None = built.func.value
    else:
        name = _parsed_dataclass(facts, binding)
        options = {option for launch in project.launches for option in launch.options}
        if field in options or field.replace("_", "-") in options:
            return None  # `--ds_config_path x` on a launch of the script
    if name is None or facts.binding_at(f"{owner.value}.{field}", binding.scope, facts.start(owner)) is not None:
        return None  # `cfg.ds_config_path = args.x` before the use
    return project.class_defaults.get(name, {}).get(field)


def _parsed_dataclass(facts: ScriptFacts, binding: Binding) -> str | None:
    """The dataclass an element of `a, b = parser.parse_args_into_dataclasses()` holds, `parser` bound to
    `HfArgumentParser((A, B))` (or the call made in place): the class at the element's index."""
    statement, element = binding.statement, binding.element
    if element is None or element[2] is not None or not isinstance(statement, cst.Assign):
        return None
    call = statement.value
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "parse_args_into_dataclasses"
        and not any(arg.keyword is None or arg.keyword.value == "args" for arg in call.args)
    ):
        return None
    parser: cst.BaseExpression | None = call.func.value
    if isinstance(parser, cst.Name):
        bound = facts.binding_at(parser.value, binding.scope, facts.start(parser))
        parser = bound.value if bound is not None and bound.kind is BindingKind.OTHER else None
    if not isinstance(parser, cst.Call) or (dotted_name(parser.func) or "").rpartition(".")[2] != "HfArgumentParser":
        return None
    handed = parser.args[0].value if parser.args and parser.args[0].keyword is None else None
    classes = handed.elements if isinstance(handed, (cst.Tuple, cst.List)) else [handed] if handed else []
    index, count, _ = element
    if len(classes) not in (count, count - 1) or index >= len(classes):
        return None  # `count - 1`: `return_remaining_strings=True` adds the strings last
    chosen = classes[index]
    value = chosen.value if isinstance(chosen, cst.Element) else chosen
    return value.value if isinstance(value, cst.Name) else None


def _parent(path: str) -> str:
    """The folder holding `path` (relative paths stay relative: the script's folder is ".", above it "..")."""
    normal = posixpath.normpath(path)
    if normal == ".":
        return ".."
    if normal == ".." or normal.endswith("/.."):
        return posixpath.join(normal, "..")
    head = posixpath.dirname(normal)
    return head or "."


def _joined(parts: list[str | None]) -> str | None:
    if any(part is None for part in parts):
        return None
    known = [part for part in parts if part is not None]
    return posixpath.normpath(posixpath.join(*known)) if known else None

"""Is a path a file inside a DeepSpeed checkpoint directory? Then `engine.load_checkpoint` can read it.

DeepSpeed's own layout (runtime/engine.py `_get_ckpt_name`): `{dir}/{tag}/mp_rank_00_model_states.pt`, or
`{dir}/{tag}/zero_pp_rank_0_mp_rank_00_model_states.pt` under ZeRO-3, with `{dir}/latest` naming the newest tag.
A path recognised here is split into the directory and the tag, as source text, so that a fix can write
`engine.load_checkpoint(<dir>, tag=<tag>, ...)`. Recognised spellings:

- `os.path.join(dir, tag, "mp_rank_00_model_states.pt")` (more leading parts are joined again);
- `Path(dir) / tag / "mp_rank_00_model_states.pt"`;
- `f"{dir}/{tag}/mp_rank_00_model_states.pt"` and plain string literals;
- the same with a non-literal file name when `dir` is what the script passes to `engine.save_checkpoint`;
- a name bound to any of these, when the names it reads mean the same at the place of use.

Anything else (a plain `torch.save` file, an HF `pytorch_model.bin`) is not a DeepSpeed checkpoint directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from dslint.script.context import ScriptContext
from dslint.script.facts import Role
from dslint.script.names import dotted_name
from dslint.script.walk import visit_tree

MODEL_STATES_FILE = re.compile(r"^(zero_pp_rank_\d+_)?mp_rank_\d+_model_states\.pt$")
OS_PATH_JOIN = "os.path.join"
PATH_CLASSES = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})


@dataclass(frozen=True)
class CheckpointLocation:
    """Where `engine.load_checkpoint` should look: the directory and the tag, as source text."""

    directory: str
    tag: str


def is_model_states_name(name: str) -> bool:
    return bool(MODEL_STATES_FILE.match(name))


def checkpoint_location(context: ScriptContext, path: cst.BaseExpression, at: cst.CSTNode) -> CheckpointLocation | None:
    """The DeepSpeed checkpoint directory and tag that `path` (read at `at`) points into, or None."""
    return _location(context, path, at, depth=0)


def _location(
    context: ScriptContext, path: cst.BaseExpression, at: cst.CSTNode, depth: int
) -> CheckpointLocation | None:
    if depth > 3:
        return None
    if isinstance(path, cst.Call) and context.facts.qualified(path.func) == OS_PATH_JOIN:
        return _from_join(context, path)
    if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Divide):
        return _from_path_division(context, path)
    if isinstance(path, cst.FormattedString):
        return _from_formatted(context, path)
    if isinstance(path, cst.SimpleString):
        return _from_literal(path)
    value = context.facts.assigned_value(path, at)
    if value is None:
        return None
    if not reads_same_names(context, value, at):
        return None
    return _location(context, value, at, depth + 1)


def _literal(node: cst.BaseExpression) -> str | None:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.FormattedString):
        # f"mp_rank_{mp_rank:02d}_model_states.pt": judge the shape with each placeholder read as a number
        text = "".join(p.value if isinstance(p, cst.FormattedStringText) else "00" for p in node.parts)
        return text
    return None


def _file_part_matches(context: ScriptContext, file_part: cst.BaseExpression, directory: str) -> bool:
    name = _literal(file_part)
    if name is not None:
        return is_model_states_name(name)
    return directory in saved_checkpoint_directories(context)


def _from_join(context: ScriptContext, call: cst.Call) -> CheckpointLocation | None:
    if any(arg.star or arg.keyword is not None for arg in call.args) or len(call.args) < 3:
        return None
    parts = [arg.value for arg in call.args]
    leading = [context.code(p) for p in parts[:-2]]
    directory = leading[0] if len(leading) == 1 else f"{context.code(call.func)}({', '.join(leading)})"
    if not _file_part_matches(context, parts[-1], directory):
        return None
    return CheckpointLocation(directory, context.code(parts[-2]))


def _from_path_division(context: ScriptContext, node: cst.BinaryOperation) -> CheckpointLocation | None:
    parts: list[cst.BaseExpression] = []
    current: cst.BaseExpression = node
    while isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Divide):
        parts.insert(0, current.right)
        current = current.left
    parts.insert(0, current)
    if len(parts) < 3:
        return None
    first = parts[0]
    if not (isinstance(first, cst.Call) and context.facts.qualified(first.func) in PATH_CLASSES):
        return None
    leading = [context.code(p) for p in parts[:-2]]
    directory = " / ".join(leading)
    if not _file_part_matches(context, parts[-1], directory):
        return None
    return CheckpointLocation(directory, context.code(parts[-2]))


def _from_literal(node: cst.SimpleString) -> CheckpointLocation | None:
    value = node.evaluated_value
    if not isinstance(value, str):
        return None
    segments = value.split("/")
    if len(segments) < 3 or not is_model_states_name(segments[-1]) or not all(segments[:-1]):
        return None
    directory, tag = "/".join(segments[:-2]), segments[-2]
    return CheckpointLocation(_quote(directory), _quote(tag))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _from_formatted(context: ScriptContext, node: cst.FormattedString) -> CheckpointLocation | None:
    """Split `f"{a}/{b}/mp_rank_00_model_states.pt"` at its slashes into whole segments."""
    segments: list[list[cst.BaseFormattedStringContent | str]] = [[]]
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            pieces = part.value.split("/")
            for i, piece in enumerate(pieces):
                if i > 0:
                    segments.append([])
                if piece:
                    segments[-1].append(piece)
        else:
            segments[-1].append(part)
    if len(segments) < 3 or any(not s for s in segments[:-1]):
        return None
    file_segment = segments[-1]
    if len(file_segment) != 1 or not isinstance(file_segment[0], str) or not is_model_states_name(file_segment[0]):
        return None

    def render(group: list[list[cst.BaseFormattedStringContent | str]]) -> str:
        if len(group) == 1 and len(group[0]) == 1:
            only = group[0][0]
            if isinstance(only, str):
                return _quote(only)
            if isinstance(only, cst.FormattedStringExpression) and only.conversion is None and only.format_spec is None:
                return context.code(only.expression)
        body = "/".join("".join(p if isinstance(p, str) else context.code(p) for p in s) for s in group)
        return f"{node.start}{body}{node.end}"

    return CheckpointLocation(render(segments[:-2]), render([segments[-2]]))


def saved_checkpoint_directories(context: ScriptContext) -> frozenset[str]:
    """The source text of every directory the script passes to `<engine>.save_checkpoint(...)`."""
    # Asked only for a path whose file name is not a literal (rare), so the search is not cached.
    finder = _SaveCheckpointFinder(context)
    visit_tree(context.module, finder)
    return frozenset(finder.directories)


class _SaveCheckpointFinder(cst.CSTVisitor):
    def __init__(self, context: ScriptContext) -> None:
        super().__init__()
        self.context = context
        self.directories: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "save_checkpoint" and node.args):
            return
        answer = self.context.facts.role_of(func.value, at=node)
        if answer is None or answer.role is not Role.ENGINE:
            return
        first = node.args[0]
        if first.star or (first.keyword is not None and first.keyword.value != "save_dir"):
            return
        self.directories.add(self.context.code(first.value))


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.roots: list[cst.CSTNode] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if dotted_name(node) is not None:
            self.roots.append(node)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.roots.append(node)

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.roots.append(node)  # its parameters are not the script's names: refuse below
        return False


def reads_same_names(context: ScriptContext, value: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """Whether every name `value` reads has, at `at`, the binding it had where `value` was evaluated."""
    collector = _NameCollector()
    value.visit(collector)
    facts = context.facts
    for root in collector.roots:
        key = dotted_name(root)
        if key is None:
            return False
        if facts.imports.aliases.get(key.split(".")[0]) is not None:
            continue
        there = facts.binding_at(key, facts.scope_at(root), facts.start(root))
        here = facts.binding_at(key, facts.scope_at(at), facts.start(at))
        if there is not here:
            return False
    return True

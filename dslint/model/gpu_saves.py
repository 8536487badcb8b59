"""`torch.load` calls of files that hold GPU tensors, found across the project (DSL202 asks, through
`ProjectFacts.gpu_loads`, in modules that hold no engine themselves).

Two kinds of file hold GPU tensors for certain:
- a file the project writes with `torch.save` from a DeepSpeed engine's state: `E.state_dict()`,
  `E.module.state_dict()`, a name bound to one, or a dict the function fills by key inside a `for` over
  `E(.module).named_parameters()` / `.state_dict().items()` with the loop's own tensors (no `.cpu()`), where `E`
  is the first target of `deepspeed.initialize(...)` in that module (`engine`, `self.ds_engine`): the engine has
  moved its module to the rank's device;
- DeepSpeed's own checkpoint files (`mp_rank_*_model_states.pt`, `*zero_pp_rank_*_optim_states.pt`, or the path
  `deepspeed.utils.zero_to_fp32.get_model_state_file(...)` / `get_optim_files(...)` returns): the engine's
  `save_checkpoint` writes its module's and optimizer's state as they are, on the device.
A load is matched to a save by the last component of its path (a string constant, the last part of an
`os.path.join(...)`, an f-string or `"...".format(...)` with its values left open, `a + "/name.pt"`), which must
name the file literally (`"*.pt"` does not), directly or through a name bound to such a path earlier in the
load's function. A load with a `map_location` (other than `None`) is not one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dslint.model.summary import ModuleSummary, SummaryStore, dotted

# The engine's own files, written from the device (`runtime/engine.py: _save_checkpoint` saves the module's
# state dict as it is; `_save_zero_checkpoint` the optimizer's, whose fp32 partitions live on the GPU unless
# offloaded). A pipeline module's `layer_NN-model_NN-model_states.pt` files are cloned to the CPU first
# (`runtime/pipe/module.py: save_state_dict`, `clone_tensors_for_torch_save`): not these.
_DS_FILES = re.compile(r"^(?:mp_rank_[^/]*_model_states|[^/]*zero_pp_rank_[^/]*_optim_states)\.pt$")
_DS_PATH_HELPERS = frozenset({"get_model_state_file", "get_model_state_files", "get_optim_files"})


@dataclass(frozen=True)
class GpuFile:
    """Where a file name is written from GPU tensors: the module and line of the `torch.save`; `path` None for
    DeepSpeed's own checkpoint files."""

    name: str
    path: str | None
    line: int


def gpu_loads(store: SummaryStore, paths: list[str]) -> dict[str, dict[int, GpuFile]]:
    """For each module: the lines of its `torch.load` calls without a map location that read a file holding
    GPU tensors, with where that file is written."""
    saved: dict[str, GpuFile] = {}
    for path in paths:
        data = store.sources.get(path, b"")
        engine_text = b"initialize" in data and b"save" in data and ENGINE_ASSIGNED.search(data) is not None
        if engine_text and may_call(data, "torch", "save", path) and may_name(data, "deepspeed", path):
            summary = store.get(path)
            if summary is not None:
                for found in _engine_saves(summary):
                    saved.setdefault(found.name, found)
    pieces = [[piece.encode("utf-8") for piece in name.split("*") if piece] for name in saved]
    answers: dict[str, dict[int, GpuFile]] = {}
    for path in paths:
        data = store.sources.get(path, b"")
        if b"load" not in data or not may_call(data, "torch", "load", path) or not _may_read_gpu_file(data, pieces):
            continue
        summary = store.get(path)
        if summary is None:
            continue
        for call, function in calls_named(summary, "torch.load"):
            if not call.args or has_map_location(call) or any(isinstance(a, ast.Starred) for a in call.args):
                continue
            read = _loaded_file(summary, call.args[0], function, saved)
            if read is not None:
                answers.setdefault(path, {})[call.lineno] = read
    return answers


# What an assignment from `deepspeed.initialize(...)` needs in the text (`_engine_names`: the callee qualified
# through the imports): `initialize` before the call's parenthesis (after white space, a line continuation, the
# parenthesis closing a parenthesized callee, or a comment inside brackets, read to its line's end: one way to match
# a line of `#`s, never exponentially many), or imported under another name (`from deepspeed import initialize as
# ds_init`)
INITIALIZE_CALLED = re.compile(rb"initialize(?:(?:[\s\\)]|#[^\n]*\n)*\(|\s+as\b)")
# The same, as the value of an assignment (`engine, *_ = deepspeed.initialize(`: `_engine_names` reads nothing
# else): `=`, then the callee's words, dots, white space, opening parentheses and comments, then the call; or the
# import under another name. A mention in prose (`"...after deepspeed.initialize()."`) is no such text.
ENGINE_ASSIGNED = re.compile(rb"=(?:[\w.\s\\(]|#[^\n]*\n)*" + INITIALIZE_CALLED.pattern + rb"|initialize\s+as\b")

# `from` as a word (the look-behind: no word character before it), then `.`: the literal leads so that `re` skips to
# each `from` instead of trying `\bfrom` at every byte (the same matches)
_RELATIVE_IMPORT = re.compile(rb"from(?<!\wfrom)[\s\\]*\.")


def may_name(data: bytes, module: str, path: str) -> bool:
    """Whether the text could import `module` (the summary's imports qualify a call only through the module's own
    import statements: the name written, or a relative import resolved against the package, whose dotted name is
    made of the folders the file sits in: `module` must be one of them)."""
    return module.encode() in data or (module in Path(path).parts[:-1] and _RELATIVE_IMPORT.search(data) is not None)


def may_call(data: bytes, module: str, attribute: str, path: str) -> bool:
    """Whether the text could call `module.attribute` as the summary qualifies a callee: written so (`torch.load`,
    white space around the dot allowed), through the module imported under another name (`import torch as th`),
    or through the attribute imported by name (`from torch import load`, in parentheses or not); inside the
    module's own package (relative imports), whenever `may_name` allows."""
    if module in Path(path).parts[:-1]:
        return may_name(data, module, path)
    name, attr = module.encode(), attribute.encode()
    if name not in data or attr not in data:
        return False
    name, attr = re.escape(name), re.escape(attr)  # each pattern leads with a literal: `re` skips to it
    return (
        re.search(name + rb"\s*\.\s*" + attr + rb"\b", data) is not None
        or re.search(name + rb"\s+as\b", data) is not None
        or re.search(rb"from\s+" + name + rb"\s+import\b[^;]*?\b" + attr + rb"\b", data) is not None
    )


def _may_read_gpu_file(data: bytes, saved: list[list[bytes]]) -> bool:
    """A cheap test before a parse: the text holds what a GPU file's name needs (DeepSpeed's file names or path
    helpers, or every literal piece of a name the project saves from an engine)."""
    if any(word in data for word in (b"_model_states", b"_optim_states", b"get_model_state_file", b"get_optim_files")):
        return True
    return any(all(piece in data for piece in pieces) for pieces in saved)


def calls_named(summary: ModuleSummary, name: str) -> list[tuple[ast.Call, ast.AST]]:
    """Calls of `name` (through the module's imports), each with the body it sits in (a function, or the module)."""
    found: list[tuple[ast.Call, ast.AST]] = []
    for qualname, calls in summary.body_calls():
        holder: ast.AST = summary.functions[qualname].node if qualname else summary.tree
        found.extend((call, holder) for call in calls if summary.qualified(call.func) == name)
    return found


def has_map_location(call: ast.Call) -> bool:
    given = next((k.value for k in call.keywords if k.arg == "map_location"), None)
    if given is None and len(call.args) >= 2:
        given = call.args[1]
    if given is None and any(k.arg is None for k in call.keywords):
        return True  # `**kwargs` may carry one
    return given is not None and not (isinstance(given, ast.Constant) and given.value is None)


def file_name(node: ast.AST) -> str | None:
    """The last component of a path expression, its run-time values as `*` (`f"{d}/step_{n}.pt"` ->
    "step_*.pt"); None when nothing literal names the file (`"*.pt"`, a name, a call)."""
    template = _template(node)
    if template is None:
        return None
    tail = template.replace("\\", "/").rsplit("/", 1)[-1]
    stem = tail.rsplit(".", 1)[0].replace("*", "") if "." in tail else ""
    return tail if stem else None


def _template(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "*" for v in node.values]
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        right = _template(node.right)
        return None if right is None else ("*" if "/" not in right else "") + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # `Path(d) / "metadata.pt"`: a component
        right = _template(node.right)
        return None if right is None else "/" + right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" and node.args:
        return _template(node.args[-1])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _template(node.func.value)  # "mp_rank_{:02d}_model_states.pt".format(rank)
    return None


def bound_values(function: ast.AST, name: str, before: int) -> list[ast.expr]:
    """What `name` is assigned in `function`'s own statements before line `before`."""
    values: list[ast.expr] = []
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < before
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ):
            values.append(node.value)
    return values


def _loaded_file(
    summary: ModuleSummary, target: ast.expr, function: ast.AST, saved: dict[str, GpuFile]
) -> GpuFile | None:
    candidates = [target]
    if isinstance(target, ast.Name):
        candidates = bound_values(function, target.id, target.lineno)
        if len(candidates) != 1:
            return None
    for value in candidates:
        if isinstance(value, ast.Call):
            callee = summary.qualified(value.func) or ""
            if callee.rpartition(".")[2] in _DS_PATH_HELPERS and "zero_to_fp32" in callee:
                return GpuFile(callee.rpartition(".")[2] + "()", None, 0)
        name = file_name(value)
        if name is None:
            continue
        if _DS_FILES.match(name.replace("*", "0")):
            return GpuFile(name, None, 0)
        if name in saved:
            return saved[name]
    return None


# --- saves from an engine's state ----------------------------------------------------------------------------


def _engine_names(summary: ModuleSummary) -> dict[str, list[tuple[str | None, int]]]:
    """The first targets of `deepspeed.initialize(...)` in the module (`engine`, `self.ds_engine`), each with
    where it is assigned (the holding function's qualname, None at module level, and the line)."""
    names: dict[str, list[tuple[str | None, int]]] = {}
    for node in _every_statement(summary.tree.body):  # an assignment is a statement: expressions not entered
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and summary.qualified(node.value.func) == "deepspeed.initialize"
        ):
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)) and target.elts:
                    first = dotted(target.elts[0])
                    if first is not None:
                        names.setdefault(first, []).append((summary.function_at(node.lineno), node.lineno))
    return names


def _every_statement(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement under `body`, into compound statements (their handlers and cases too) and definitions."""
    for statement in body:
        yield statement
        for _, value in ast.iter_fields(statement):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.stmt):
                        yield from _every_statement([item])
                    elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                        yield from _every_statement(item.body)


def _engines_at(
    summary: ModuleSummary, names: dict[str, list[tuple[str | None, int]]], function: ast.AST, line: int
) -> set[str]:
    """The engine names that hold the engine at `line`: assigned by initialize earlier in the same function, or,
    in another function, a name that function never rebinds (a parameter, `self.engine`)."""
    holder = summary.function_at(line)
    rebound = {
        t.id
        for node in ast.walk(function)
        if isinstance(node, (ast.Assign, ast.For, ast.With, ast.AnnAssign, ast.AugAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
        if target is not None
        for t in ast.walk(target)
        if isinstance(t, ast.Name)
    }
    usable: set[str] = set()
    for name, sites in names.items():
        here = [site_line for site_holder, site_line in sites if site_holder == holder]
        if here:
            if min(here) < line:
                usable.add(name)
        elif name.split(".")[0] not in rebound:
            usable.add(name)
    return usable


def _engine_state(node: ast.AST, engines: set[str], methods: tuple[str, ...] = ("state_dict",)) -> bool:
    """`E.state_dict()` / `E.module.state_dict()` (or the named method) for an engine name `E`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods):
        return False
    owner = dotted(node.func.value)
    if owner is None:
        return False
    return owner in engines or (owner.endswith(".module") and owner[: -len(".module")] in engines)


def _engine_saves(summary: ModuleSummary) -> list[GpuFile]:
    engines = _engine_names(summary)
    if not engines:
        return []
    found: list[GpuFile] = []
    for call, function in calls_named(summary, "torch.save"):
        if len(call.args) < 2:
            continue
        name = file_name(call.args[1])
        usable = _engines_at(summary, engines, function, call.lineno) if name is not None else set()
        if name is not None and usable and _from_engine(call.args[0], function, usable, call.lineno):
            found.append(GpuFile(name, summary.path, call.lineno))
    return found


def _from_engine(saved: ast.expr, function: ast.AST, engines: set[str], line: int) -> bool:
    if _engine_state(saved, engines):
        return True
    if not isinstance(saved, ast.Name):
        return False
    values = bound_values(function, saved.id, line)
    if len(values) != 1:
        return False
    value = values[0]
    if _engine_state(value, engines):
        return True
    empty = (isinstance(value, ast.Dict) and not value.keys) or (
        isinstance(value, ast.Call) and not value.args and dotted(value.func) in ("dict", "OrderedDict")
    )
    return empty and _filled_from_engine(function, saved.id, engines, line)


def _filled_from_engine(function: ast.AST, name: str, engines: set[str], line: int) -> bool:
    """`for k, v in E.module.named_parameters(): ... name[k] = v` before `line`, every store of that kind, and
    nothing moved to the CPU on the way."""
    stores = 0
    for loop in ast.walk(function):
        if not isinstance(loop, ast.For) or loop.lineno >= line:
            continue
        source = loop.iter
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "items":
            source = source.func.value  # `E.state_dict().items()`
        if not (_engine_state(source, engines, ("named_parameters", "state_dict"))):
            continue
        if not (isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2):
            continue
        tensor = loop.target.elts[1]
        for node in ast.walk(loop):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Subscript)
                and isinstance(node.targets[0].value, ast.Name)
                and node.targets[0].value.id == name
            ):
                if not (
                    isinstance(node.value, ast.Name) and isinstance(tensor, ast.Name) and node.value.id == tensor.id
                ):
                    return False
                stores += 1
    return stores > 0

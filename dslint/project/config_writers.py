"""Project functions that write a config dict to a JSON file and return the file's path:

    def save_ds_config(cfg, file_path):
        file_path = Path(file_path)
        file_path.write_text(json.dumps(cfg, indent=2))
        return str(file_path)

    args = SFTConfig(output_dir="out", deepspeed=save_ds_config(ds_cfg, "ds_zero3.json"))

The reader receives a path, and reads the dict: a config reader handed such a call (or a name bound to one) reads
the argument the function dumps (`ProjectFacts.config_writers`, per call of the calling file; read by
`config_link`). A writer dumps one of its parameters with `json.dump(P, ...)` or `json.dumps(P, ...)`, writes (a
`write`, `write_text` or `open` in its body), and returns another parameter, as it is or through `str(...)`,
`Path(...)` or `os.path` functions. Read with `ast`, only in files whose text names a writer and DeepSpeed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dslint.diagnostics import Related
from dslint.model.source_words import word_led_matches
from dslint.model.summary import SummaryStore, character_column, own_nodes
from dslint.project.inputs import shown_path
from dslint.project.reader_calls import ParsedModules

if TYPE_CHECKING:
    import libcst as cst  # only the lint's side (`written_argument`) holds libcst nodes: the index never imports it

    from dslint.script.context import ScriptContext

# What may wrap the path parameter in the returned value
_PATH_WRAPPERS = frozenset({"str", "Path", "abspath", "realpath", "normpath", "expanduser", "fspath"})
_WRITES = frozenset({"write", "write_text", "open"})
_DEF = re.compile(rb"^def[ \t]+(\w+)[ \t]*\(", re.M)  # a module-level function


# each led by a literal, so that `re` skips to it (`config` covers `config_params=` and `hf_ds_config=` too)
_KEYWORD_VALUES = (
    re.compile(rb"deepspeed\s*=\s*(\w+)\s*(\()?"),
    re.compile(rb"config(?:_params)?\s*=\s*(\w+)\s*(\()?"),
)


def _handed_calls(data: bytes) -> set[bytes]:
    """The functions whose result a config keyword receives: called there (`deepspeed=save(cfg, p)`), or bound to
    the name it receives (`DS = save(cfg, p)` ... `deepspeed=DS`)."""
    found: set[bytes] = set()
    searched: set[bytes] = set()  # a name handed many times (`config=config` in every layer of a model) read once
    for value, called in (pair for pattern in _KEYWORD_VALUES for pair in pattern.findall(data)):
        if called:
            found.add(value)
        elif value not in searched:
            searched.add(value)
            found.update(_bound_calls(data, value))
    return found


def _bound_calls(data: bytes, name: bytes) -> list[bytes]:
    """What `re.findall(rb"\\bNAME\\s*=\\s*(\\w+)\\s*\\(", data)` gives, searched with the pattern led by the name
    itself (a pattern that starts with `\\b` is tried at every byte of the file); a match inside a longer word is
    skipped and the search goes on right after its start, as `findall` would."""
    bound = re.compile(re.escape(name) + rb"\s*=\s*(\w+)\s*\(")
    return [match.group(1) for match in word_led_matches(bound, data)]


def _may_hand_config(data: bytes) -> bool:
    """The text may hand DeepSpeed a config: it says DeepSpeed and gives one of its readers' config keywords."""
    return (b"eepspeed" in data or b"eepSpeed" in data) and any(p.search(data) for p in _KEYWORD_VALUES)


Writer = tuple[int, str]  # the dumped parameter's position and name


def config_writer_calls(
    sources: Mapping[str, bytes], store: SummaryStore
) -> dict[str, dict[tuple[int, int], tuple[int, str, Related]]]:
    """For each module: its calls of project config writers, by (line, 1-based column in characters), with the
    dumped parameter's position and name and where the writer is defined."""
    modules = ParsedModules(dict(sources), store)
    candidates = [
        (path, data)
        for path, data in sources.items()
        if b"json.dump" in data and b"return" in data and (b"write" in data or b"open(" in data)
    ]
    if not candidates:
        return {}
    # only modules defining a function that a file which may hand DeepSpeed a config calls by name are parsed
    named = {name for data in sources.values() if _may_hand_config(data) for name in _handed_calls(data)}
    writers: dict[tuple[str, str], Writer] = {}
    for path, data in candidates:
        called = set(_DEF.findall(data)) & named
        if not called:
            continue
        summary = store.get(path)
        for name, function in summary.functions.items() if summary is not None else ():
            if name.encode() not in called:
                continue
            if not function.owner and "." not in name and isinstance(function.node, ast.FunctionDef):
                writer_of = _writer(function.node)
                if writer_of is not None:
                    writers[(path, name)] = writer_of
    if not writers:
        return {}
    names = {name for _, name in writers}
    calls: dict[str, dict[tuple[int, int], tuple[int, str, Related]]] = {}
    for path, data in sources.items():
        if (b"eepspeed" not in data and b"eepSpeed" not in data) or not any(n.encode() in data for n in names):
            continue
        tree = modules.tree(path)
        lines = data.splitlines()
        for node in ast.walk(tree) if tree is not None else ():
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.func.id not in names:
                continue
            defined = modules.function(path, node.func.id)
            writer = writers.get((defined[0], node.func.id)) if defined is not None else None
            if defined is None or writer is None:
                continue
            where = Related(shown_path(defined[0]), defined[1].lineno, 1, f"{node.func.id}() writes its dict to a file")
            at = (node.lineno, character_column(lines, node.lineno, node.col_offset) + 1)
            calls.setdefault(path, {})[at] = (*writer, where)
    return calls


def _writer(function: ast.FunctionDef) -> Writer | None:
    parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    dumped: str | None = None
    writes = False
    returned: list[ast.expr] = []
    for node in own_nodes(function):
        if isinstance(node, ast.Return):
            returned.append(node.value) if node.value is not None else returned.append(ast.Constant(None))
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        writes = writes or called in _WRITES
        first = node.args[0] if node.args else None
        if called in ("dump", "dumps") and isinstance(first, ast.Name) and first.id in parameters:
            dumped = first.id
    if dumped is None or not writes or not returned:
        return None
    roots = {_path_root(value) for value in returned}
    if len(roots) != 1:
        return None
    root = roots.pop()
    if root is None or root == dumped or root not in parameters:
        return None
    return parameters.index(dumped), dumped


def _path_root(value: ast.expr) -> str | None:
    """The name a returned path is made of: `file_path`, `str(file_path)`, `os.path.abspath(file_path)`."""
    while isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        called = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", None)
        if called not in _PATH_WRAPPERS:
            return None
        value = value.args[0]
    return value.id if isinstance(value, ast.Name) else None


def written_argument(context: ScriptContext, call: cst.Call) -> cst.BaseExpression | None:
    """The dict argument of a call of a project function that writes it to a JSON file and returns the path."""
    facts = context.facts
    found = facts.call_fact(call, facts.project.config_writers) if facts.project is not None else None
    if found is None:
        return None
    index, name, _ = found
    for position, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is None and position == index) or (arg.keyword is not None and arg.keyword.value == name):
            return arg.value
    return None

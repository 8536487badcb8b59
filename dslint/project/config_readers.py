"""Configs handed to a framework that reads DeepSpeed's config for you, through a loader helper.

`DeepSpeedStrategy(config=cfg)` (PyTorch Lightning), `TrainingArguments(deepspeed=cfg)` and
`DeepSpeedPlugin(hf_ds_config=cfg)` (Hugging Face) are readers that fill some values before DeepSpeed sees the
config: the HF integrations fill "auto", Lightning sets `train_micro_batch_size_per_gpu` from the data loader when
the config lacks it (and `gradient_accumulation_steps` from its Trainer). When `cfg` is a file path literal, or a
name bound in the same function to the result of a loader helper (`cfg = get_ds_config(precision)`, defined in the
module or imported, through `from m import *` re-exports), the JSON files that helper names (a literal ending in
`.json`, resolved from the helper's own directory: `os.path.join(os.path.dirname(__file__), "ds.json")`) are read
by that framework. Only files that exist are recorded; nothing is guessed.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dslint.model.summary import SummaryStore, dotted, own_nodes
from dslint.project.inputs import is_file
from dslint.project.reader_calls import ParsedModules, reader_call, scopes

TOKENS = (b"DeepSpeedStrategy", b"DeepSpeedPlugin", b"TrainingArguments")
# A text test before parsing: a reader call with its config keyword given a name or a call (a literal path is
# `config_reading.trainer_literals`'s), without a closing parenthesis between them.
_CANDIDATE = re.compile(
    rb"(?:DeepSpeedStrategy|DeepSpeedPlugin|TrainingArguments)\s*\([^)]*?\b(?:config|hf_ds_config|deepspeed)\s*=\s*\w"
)


def _json_literals(function: ast.AST) -> list[str]:
    return [
        node.value
        for node in ast.walk(function)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".json")
    ]


def _existing(name: str, directory: str) -> str | None:
    path = name if os.path.isabs(name) else os.path.join(directory, name)
    path = os.path.normpath(os.path.abspath(path))
    return path if is_file(path) else None


def framework_configs(sources: dict[str, bytes], store: SummaryStore | None = None) -> list[tuple[str, str, str]]:
    """(config path, reader, the script naming it) for each config file given to a framework reader through a
    literal or a loader helper; reader is "lightning" or "trainer"."""
    wanted = [
        path
        for path, data in sources.items()
        if any(token in data for token in TOKENS) and _CANDIDATE.search(data) is not None
    ]
    if not wanted:
        return []
    modules = ParsedModules(sources, store)
    found: list[tuple[str, str, str]] = []
    for path in wanted:
        tree = modules.tree(path)
        if tree is None:
            continue
        for scope in scopes(tree):
            nodes = list(own_nodes(scope))
            calls_by_name: dict[str, list[ast.Call]] = {}
            for node in nodes:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            calls_by_name.setdefault(target.id, []).append(node.value)
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                reader = reader_call(node, initialize=False)
                if reader is None:
                    continue
                value = next((k.value for k in node.keywords if k.arg == reader.keyword), None)
                for config in _configs_of(modules, path, value, calls_by_name):
                    found.append((config, reader.reader, path))
    return found


def _configs_of(
    modules: ParsedModules, path: str, value: ast.expr | None, calls_by_name: dict[str, list[ast.Call]]
) -> list[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        config = _existing(value.value, os.path.dirname(path))
        return [config] if config is not None else []
    calls: list[ast.Call] = []
    if isinstance(value, ast.Call):
        calls = [value]
    elif isinstance(value, ast.Name):
        calls = calls_by_name.get(value.id, [])
    configs: list[str] = []
    for call in calls:
        if not isinstance(call.func, ast.Name):
            continue
        helper = modules.function(path, call.func.id)
        if helper is None:
            continue
        helper_path, function = helper
        for name in _json_literals(function):
            config = _existing(name, os.path.dirname(helper_path))
            if config is not None:
                configs.append(config)
    return configs


# Calls that hand a path on unchanged (`os.path.abspath(args.ds_config)`): the value they return is the option's.
_PATH_KEEPING_CALLS = frozenset({"abspath", "expanduser", "realpath", "normpath", "str", "Path", "strip"})
# Attributes whose assignment hands a config to a filling reader (`training_args.deepspeed = args.ds_config`).
_FILLER_ATTRIBUTES = {"deepspeed": "trainer", "hf_ds_config": "trainer"}


@functools.lru_cache(maxsize=1024)  # a script is asked once per launch line and option: the same answer each time
def option_readers(data: bytes, option: str) -> frozenset[str]:
    """Where a script takes the value of its command-line option `--option` (read as `<x>.<option>`: an argparse
    namespace, or an `HfArgumentParser` dataclass's field): "trainer" when it reaches `*TrainingArguments(
    deepspeed=...)`, `DeepSpeedPlugin(hf_ds_config=...)` or an assignment to their attribute (`args.deepspeed =
    ...`), "lightning" for `DeepSpeedStrategy(config=...)`, "initialize" for `deepspeed.initialize(config=...)`
    (`config_params=`), for a file the script opens and hands to initialize (`replaced_keys`), and for
    `--deepspeed_config` when initialize receives `args=` (DeepSpeed reads that option itself). The value is
    followed through names bound in the same function (`path = args.ds_config`), both arms of a conditional and
    calls that keep a path (`os.path.abspath`). Empty when it goes nowhere dslint follows (another module, a
    folder it is joined to): the reader is not known."""
    if option.encode() not in data and not (option == "deepspeed_config" and b"initialize" in data):
        return frozenset()
    parsed = _parsed(data)
    if parsed is None:
        return frozenset()
    found: set[str] = set()
    for nodes in parsed[1]:
        carried: set[str] = set()
        changed = True
        while changed:  # names bound to the value, and names bound to those
            changed = False
            for node in nodes:
                if isinstance(node, ast.Assign) and _carries(node.value, option, carried):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in carried:
                            carried.add(target.id)
                            changed = True
        for node in nodes:
            if isinstance(node, ast.Assign) and _carries(node.value, option, carried):
                found.update(
                    _FILLER_ATTRIBUTES[t.attr]
                    for t in node.targets
                    if isinstance(t, ast.Attribute) and t.attr in _FILLER_ATTRIBUTES
                )
            if not isinstance(node, ast.Call):
                continue
            reader = reader_call(node, initialize=False)
            keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
            if reader is not None:
                if _carries(keywords.get(reader.keyword), option, carried):
                    found.add(reader.reader)
            elif _last_name(node.func) == "initialize":
                given = (keywords.get("config"), keywords.get("config_params"))
                if any(_carries(value, option, carried) for value in given):
                    found.add("initialize")
                elif option == "deepspeed_config" and "args" in keywords and not any(v is not None for v in given):
                    found.add("initialize")  # DeepSpeed reads args.deepspeed_config itself
    if replaced_keys(data, option) is not None:
        found.add("initialize")
    return frozenset(found)


def _last_name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _carries(node: ast.expr | None, option: str, carried: set[str]) -> bool:
    """`node` evaluates to the option's value (or, in one arm, may)."""
    if node is None:
        return False
    if isinstance(node, ast.Attribute):
        return node.attr == option
    if isinstance(node, ast.Name):
        return node.id in carried
    if isinstance(node, ast.IfExp):
        return _carries(node.body, option, carried) or _carries(node.orelse, option, carried)
    if isinstance(node, ast.BoolOp):
        return any(_carries(value, option, carried) for value in node.values)
    if isinstance(node, ast.Call) and _last_name(node.func) in _PATH_KEEPING_CALLS:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "strip":
            return _carries(node.func.value, option, carried)
        return bool(node.args) and _carries(node.args[0], option, carried)
    return False


PATH_SEPARATOR = "\x1f"  # between the keys of a nested path in `replaced_keys`' answer ("zero_optimization\x1fstage")


@functools.lru_cache(maxsize=1024)
def replaced_keys(data: bytes, option: str) -> frozenset[str] | None:
    """The keys a script replaces in the config file it is given as `--option`, before the dict reaches
    `deepspeed.initialize(config=...)`: the script loads the file itself (`with open(args.<option>) as f:
    cfg = json.load(f)`, or `json.load(open(args.<option>))`), writes `cfg["key"] = ...`,
    `cfg["zero_optimization"]["stage"] = ...` or `cfg.update({...})` later in the same function, and passes `cfg`
    as `config=` / `config_params=`. A nested key is its path joined by PATH_SEPARATOR. None when the script
    does not load the file so (DeepSpeed then reads the file as it stands)."""
    if option.encode() not in data or not (b"json" in data or b"yaml" in data or b"OmegaConf" in data):
        return None
    parsed = _parsed(data)
    if parsed is None:
        return None
    found: set[str] | None = None
    for keys in _replaced_in(parsed, lambda node: isinstance(node, ast.Attribute) and node.attr == option).values():
        found = set(keys) if found is None else found & keys
    return frozenset(found) if found is not None else None


# The batch keys DeepSpeed derives from one another (`_set_batch_related_parameters`): a script writing one into
# the config it loads settles the batch for whatever file it is given.
BATCH_KEYS = frozenset({"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})


def batch_filled(data: bytes) -> frozenset[str]:
    """The batch keys a script writes, on every way, into a config it loads from a path it does not write itself
    (`json.load(open(self.cfg.deepspeed_config))`, `open(args.deepspeed_config)`: any file it is given) before
    handing the dict to `deepspeed.initialize`: the files it may be given need not set them."""
    if b"initialize" not in data or not any(key.encode() in data for key in BATCH_KEYS):
        return frozenset()
    parsed = _parsed(data)
    if parsed is None:
        return frozenset()
    found: set[str] = set()
    for keys in _replaced_in(parsed, lambda node: not isinstance(node, ast.Constant)).values():
        found |= keys & BATCH_KEYS
    return frozenset(found)


# `deepspeed.initialize`'s client objects that take the place of a config section: the engine builds the section's
# optimizer or scheduler only when the call brings none (0.19.8 `_configure_optimizer`, `_configure_lr_scheduler`)
_CLIENT_SECTIONS = {"optimizer": "optimizer", "lr_scheduler": "scheduler"}


def client_sections(data: bytes) -> frozenset[str]:
    """The config sections (`optimizer`, `scheduler`) that every `deepspeed.initialize(...)` call of a script
    replaces with a client object it builds (`optimizer=torch.optim.AdamW(...)`, or a name every binding of which
    in the call's function is such a call): the file's section is never built, its "auto" values never read."""
    if b"initialize" not in data or b"optimizer" not in data:
        return frozenset()
    parsed = _parsed(data)
    if parsed is None:
        return frozenset()
    found: set[str] | None = None
    for nodes in parsed[1]:
        for node in nodes:
            func = node.func if isinstance(node, ast.Call) else None
            if not (
                isinstance(func, ast.Attribute) and func.attr == "initialize" and dotted(func.value) == "deepspeed"
            ):
                continue
            assert isinstance(node, ast.Call)
            before = [n for n in nodes if getattr(n, "lineno", node.lineno) < node.lineno]
            given = {
                _CLIENT_SECTIONS[k.arg] for k in node.keywords if k.arg in _CLIENT_SECTIONS and _built(k.value, before)
            }
            found = given if found is None else found & given
    return frozenset(found or ())


def _built(value: ast.expr, nodes: Sequence[ast.AST]) -> bool:
    """A call (a constructor or a builder), or a name (or an attribute chain: `self.optimizer`) whose every binding
    among `nodes` (those before the call:
    `engine, optimizer, _, _ = deepspeed.initialize(..., optimizer=optimizer)` rebinds it after) is one."""
    if isinstance(value, ast.Call):
        return True
    name = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
    if name is None:
        return False
    bound = [n.value for n in nodes if isinstance(n, ast.Assign) and any(_binds(t, name) for t in n.targets)]
    stored = [
        n
        for n in nodes
        if isinstance(n, (ast.Name, ast.Attribute)) and not isinstance(n.ctx, ast.Load) and dotted(n) == name
    ]
    return bool(bound) and len(bound) == len(stored) and all(isinstance(b, ast.Call) for b in bound)


def _binds(target: ast.expr, name: str) -> bool:
    """`target` stores `name`: a name, or an attribute chain of the function's (`self.optimizer`)."""
    return isinstance(target, (ast.Name, ast.Attribute)) and dotted(target) == name


def opened_configs(data: bytes) -> dict[str, frozenset[str]]:
    """The config files a script opens by a literal path (`with open("ds_config.json") as f: cfg =
    json.load(f)`; a YAML file: `yaml.safe_load(open("ds.yaml"))`, `OmegaConf.load("ds.yaml")`) and hands to
    `deepspeed.initialize(config=cfg)`: the literal -> the keys the script replaces first (as `replaced_keys`;
    several loads of one literal: the keys all of them replace)."""
    loads = (b"json" in data and b"open(" in data) or b"yaml" in data or b"OmegaConf" in data
    if b"initialize" not in data or not loads:
        return {}
    parsed = _parsed(data)
    if parsed is None:
        return {}
    return {
        literal: frozenset(keys)
        for literal, keys in _replaced_in(
            parsed, lambda node: isinstance(node, ast.Constant) and isinstance(node.value, str), by_literal=True
        ).items()
    }


# A script's tree, and the nodes of each of its scopes (the module, then every function: `reader_calls.scopes`),
# each its own (`own_nodes`). Read only, never changed: the answers share them.
_Parsed = tuple[ast.Module, tuple[tuple[ast.AST, ...], ...]]


@functools.lru_cache(maxsize=32)  # a script is asked for each of its options, by option_readers and replaced_keys
def _parsed(data: bytes) -> _Parsed | None:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree, tuple(tuple(own_nodes(scope)) for scope in scopes(tree))


def _replaced_in(parsed: _Parsed, opened: Callable[[ast.expr], bool], by_literal: bool = False) -> dict[str, set[str]]:
    """For each load of a file whose `open(...)` argument `opened` accepts and whose dict goes to initialize in
    the same function: the keys written first. Keyed by the literal path (`by_literal`), else by the load."""
    found: dict[str, set[str]] = {}
    tree, scoped = parsed
    helpers = _loader_helpers(tree)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and not f.decorator_list}
    for scope, nodes in zip(scopes(tree), scoped, strict=True):
        for name, (line, path) in _loaded_names(nodes, opened, helpers).items():
            given = _given_to_initialize(nodes, name)
            if given is None:
                continue
            keys = _always_written(getattr(scope, "body", []), _Between(name, line, given, functions))
            label = path if by_literal else f"{line}"
            found[label] = keys if label not in found else found[label] & keys
    return found


@dataclass(frozen=True)
class _Between:
    """The dict `name`, loaded at line `loaded` and handed to initialize at line `given`; the module's own
    functions (`functions`) that a call between may hand it to, `depth` helpers in."""

    name: str
    loaded: int
    given: int
    functions: Mapping[str, ast.FunctionDef] = field(default_factory=dict)
    depth: int = 0


def _always_written(statements: Sequence[ast.stmt], between: _Between) -> set[str]:
    """The keys written into the dict between its load and initialize on every way through `statements`: a
    write under an `if` whose test does not read the dict (`if "llama" in args.model: cfg["bf16"]["enabled"] =
    True`) counts only when every arm writes it (an `else` too); a test that reads the dict (`if
    cfg.get("lr") == "auto"`) only writes what it finds, and the arm holding the load or initialize is the way
    taken. Loops, `with` and `try` count as run."""
    keys: set[str] = set()
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.If):
            body = _always_written(statement.body, between)
            orelse = _always_written(statement.orelse, between)
            taken = (between.loaded, between.given)
            if _reads(statement.test, between.name) or any(_holds(statement, line) for line in taken):
                keys |= body | orelse
            else:
                keys |= body & orelse
            continue
        arms = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
        arms += [handler.body for handler in getattr(statement, "handlers", ())]
        arms += [case.body for case in getattr(statement, "cases", ())]
        blocks = [arm for arm in arms if isinstance(arm, list) and arm and isinstance(arm[0], ast.stmt)]
        if blocks:
            for arm in blocks:
                keys |= _always_written(arm, between)
            continue
        for node in ast.walk(statement):
            if between.loaded < getattr(node, "lineno", 0) < between.given:
                keys.update(written_paths(node, between.name))
                if type(node) is ast.Call:
                    keys.update(_helper_writes(node, between))
    return keys


_HELPER_DEPTH = 3  # a helper that hands the dict on to another: followed to this many functions in


def _helper_writes(call: ast.Call, between: _Between) -> set[str]:
    """The keys a function of the module writes into the dict a call hands it (`fill(cfg, args)` with `def
    fill(config, args): config["train_micro_batch_size_per_gpu"] = 1`): its parameter, read as the dict over the
    whole body, with the same rule for branches; a parameter the function binds anew (`config =
    copy.deepcopy(config)`) holds another dict, whose writes the caller's never sees."""
    function = between.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if function is None or between.depth >= _HELPER_DEPTH:
        return set()
    arguments = function.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    named = {a.arg for a in (*arguments.args, *arguments.kwonlyargs)}
    receivers: list[str] = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return set()  # the positions after it are not known
        if _is_name(argument, between.name) and index < len(positional):
            receivers.append(positional[index])
    receivers += [k.arg for k in call.keywords if k.arg in named and _is_name(k.value, between.name)]
    keys: set[str] = set()
    for parameter in receivers:
        rebound = any(
            isinstance(node, ast.Name) and node.id == parameter and not isinstance(node.ctx, ast.Load)
            for node in ast.walk(function)
        )
        if not rebound:
            end = (function.end_lineno or function.lineno) + 1
            inner = _Between(parameter, function.lineno, end, between.functions, between.depth + 1)
            keys |= _always_written(function.body, inner)
    return keys


def _reads(test: ast.expr, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(test))


def _holds(statement: ast.stmt, line: int) -> bool:
    return statement.lineno <= line <= (statement.end_lineno or statement.lineno)


def _subscript_path(node: ast.expr, name: str) -> list[str] | None:
    """`name["a"]["b"]` -> ["a", "b"]; None when not rooted at `name` or a key is not a literal string."""
    keys: list[str] = []
    while isinstance(node, ast.Subscript):
        if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return None
        keys.append(node.slice.value)
        node = node.value
    return keys[::-1] if isinstance(node, ast.Name) and node.id == name else None


def written_paths(node: ast.AST, name: str) -> set[str]:
    """The keys `node` writes into the dict `name`: an item assignment or deletion, or `update(...)` with a dict
    literal or keywords (the top keys of the update replace whole entries)."""
    if isinstance(node, (ast.Assign, ast.Delete)):  # `del cfg["train_batch_size"]`: gone from the dict too
        paths = (_subscript_path(t, name) for t in node.targets if isinstance(t, ast.Subscript))
        return {PATH_SEPARATOR.join(path) for path in paths if path}
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"):
        return set()
    prefix = _subscript_path(node.func.value, name)
    if prefix is None:
        return set()
    keys = [k.arg for k in node.keywords if k.arg is not None]
    if len(node.args) == 1 and isinstance(node.args[0], ast.Dict):
        keys += [k.value for k in node.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return {PATH_SEPARATOR.join([*prefix, key]) for key in keys}


def _opens(node: ast.expr | None, opened: Callable[[ast.expr], bool]) -> str | None:
    """`open(<x>, ...)` whose argument `opened` accepts: that argument's literal ("" when not a literal)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open" and node.args):
        return None
    return _path_literal(node.args[0], opened)


def _path_literal(first: ast.expr, opened: Callable[[ast.expr], bool]) -> str | None:
    """A path expression `opened` accepts: its literal ("" when not a literal). `os.path.join(os.getcwd(), "x")`
    and `os.path.join(os.path.dirname(__file__), "x")` are the literal "x" (beside the script, where it runs)."""
    if (
        isinstance(first, ast.Call)
        and _last_name(first.func) == "join"
        and len(first.args) == 2
        and isinstance(first.args[0], ast.Call)
        and _last_name(first.args[0].func) in ("getcwd", "dirname")
        and isinstance(first.args[1], ast.Constant)
    ):
        first = first.args[1]
    if not opened(first):
        return None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _loader_helpers(tree: ast.Module) -> dict[str, str]:
    """The module's functions that only read a config file from their one parameter and return its dict
    (`def get_ds_config(path): data = json.load(open(path)); return data`): name -> the parameter."""
    helpers: dict[str, str] = {}
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or len(function.args.args) != 1:
            continue
        param = function.args.args[0].arg
        nodes = list(own_nodes(function))
        loaded = _loaded_names(nodes, functools.partial(_is_name, name=param), {})
        returns = [n.value for n in nodes if isinstance(n, ast.Return)]
        if len(returns) == 1 and isinstance(returns[0], ast.Name) and returns[0].id in loaded:
            helpers[function.name] = param
    return helpers


def _loaded_names(
    nodes: Sequence[ast.AST], opened: Callable[[ast.expr], bool], helpers: dict[str, str]
) -> dict[str, tuple[int, str]]:
    """Names bound to `json.load(...)` of an opened file, or to a call of one of the module's loader `helpers`
    given the path: name -> (line of the load, the literal path or "")."""
    handles: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.With):
            for item in node.items:
                literal = _opens(item.context_expr, opened)
                if literal is not None and isinstance(item.optional_vars, ast.Name):
                    handles[item.optional_vars.id] = literal
    loaded: dict[str, tuple[int, str]] = {}
    for node in nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in helpers:
            literal = _path_literal(value.args[0], opened) if len(value.args) == 1 else None
            if literal is not None:
                loaded[node.targets[0].id] = (node.lineno, literal)
            continue
        wrapped = _is_call(value, "OmegaConf", ("to_container", "to_object")) and bool(value.args)  # type: ignore[attr-defined]
        if wrapped:
            value = value.args[0]  # type: ignore[attr-defined]  # OmegaConf.to_container(OmegaConf.load(...))
        if _loader(value) == "OmegaConf":  # a path; a DictConfig not made a dict is no config initialize takes
            assert isinstance(value, ast.Call)
            first = value.args[0]
            if wrapped and opened(first):
                path = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
                loaded[node.targets[0].id] = (node.lineno, path)
            continue
        if _loader(value) not in ("json", "yaml"):
            continue
        assert isinstance(value, ast.Call)
        source = value.args[0]
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "read":
            source = source.func.value  # json.loads(f.read())
        literal = handles.get(source.id) if isinstance(source, ast.Name) else _opens(source, opened)
        if literal is not None:
            loaded[node.targets[0].id] = (node.lineno, literal)
    return loaded


# Readers of an opened file (or, for OmegaConf, of a path) whose result is the config dict.
_LOADERS = {"json": ("load", "loads"), "yaml": ("safe_load", "load", "full_load"), "OmegaConf": ("load",)}


def _is_call(value: ast.expr, owner: str, methods: tuple[str, ...]) -> bool:
    func = value.func if isinstance(value, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == owner
        and (func.attr in methods)
    )


def _loader(value: ast.expr) -> str | None:
    """ "json", "yaml" or "OmegaConf" for `json.load(...)`, `yaml.safe_load(...)`, `OmegaConf.load(...)` (the
    latter only inside `OmegaConf.to_container`: a DictConfig is no dict to initialize)."""
    for owner, methods in _LOADERS.items():
        if _is_call(value, owner, methods) and isinstance(value, ast.Call) and value.args:
            return owner
    return None


def _given_to_initialize(nodes: Sequence[ast.AST], name: str) -> int | None:
    """The line of the first `initialize(config=name)` (or `config_params=name`) call; None when there is none."""
    lines = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last != "initialize":
            continue
        if any(
            k.arg in ("config", "config_params") and isinstance(k.value, ast.Name) and k.value.id == name
            for k in node.keywords
        ):
            lines.append(node.lineno)
    return min(lines) if lines else None

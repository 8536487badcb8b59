"""What a launched script's own `argparse` parser makes of its command line: whether it refuses the
`--local_rank=N` the `deepspeed` launcher appends (DSL434), and whether it takes `--deepspeed` only as the switch
`deepspeed.add_config_arguments` adds, so that a path written after it is an unrecognized argument (DSL443).

DeepSpeed's launcher (`launcher/launch.py`, 0.19.8) starts every rank as `python -u script --local_rank=N args...`
unless the command says `--no_local_rank`. A script whose `argparse` parser has no option that `--local_rank`
names (exactly, or as an abbreviation argparse accepts) and that parses strictly (`parser.parse_args()`) stops
on every rank with "unrecognized arguments: --local_rank=N".

The answer is conservative: the parser must be built in the script itself (`argparse.ArgumentParser(...)`, one
construction), every `add_argument` of the script must name its options by literal strings, the parser must not
be handed to any function but `deepspeed.add_config_arguments` (which adds only `--deepspeed`, `--deepspeed_config`
and the old `--deepscale` pair), and the script must not edit `sys.argv` or read it before the parse (counting
it, `len(sys.argv)`, is fine: under the launcher it always holds `--local_rank`; so is looking at it,
`" ".join(sys.argv)`, `"x" in sys.argv`, in a script that never writes `--local_rank`), nor parse with
`parse_known_args`. Any
doubt (a parent parser, subcommands, other prefix characters, options built at run time): no answer.

`add_config_arguments` adds `--deepspeed` as `action="store_true"` (0.19.8): `--deepspeed ds_config.json` leaves
the path over, and a strict parser with no positional argument stops with "unrecognized arguments:
ds_config.json" (the config option is `--deepspeed_config`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from dslint.model.summary import ModuleSummary, nodes_of

LAUNCHER_OPTION = "--local_rank"
# `deepspeed.add_config_arguments(parser)` adds these options and no other (runtime/config helpers, 0.19.8)
_CONFIG_ARGUMENTS = "deepspeed.add_config_arguments"


@dataclass(frozen=True)
class StrictParser:
    """A script's one parser, known whole, that parses its command line strictly."""

    parse: ast.Call  # the first `parser.parse_args()`
    options: tuple[str, ...]  # every name `add_argument` gives (a positional's has no dash)
    abbreviations: bool  # `allow_abbrev`
    config_arguments: bool  # handed to `deepspeed.add_config_arguments`
    # What the command line must give: the names of an option declared `required=True`, or of a mutually
    # exclusive group made `required=True` (one of them), each with the `add_argument` (or the group's) call
    required: tuple[tuple[tuple[str, ...], ast.Call], ...] = ()
    # the dashed names of the options that take exactly one value (no `action` that stores a constant, no
    # optional `nargs`): a bare `--x` there stops argparse ("expected one argument")
    valued: frozenset[str] = frozenset()


def refusing_parse(summary: ModuleSummary, data: bytes) -> ast.Call | None:
    """The `parser.parse_args()` call of the script that refuses `--local_rank=N` (or the call of its Hydra
    entry: `hydra_entry`), or None when the script accepts it or its parsing is not known well enough to say."""
    parser = strict_parser(summary, data)
    if parser is None:
        return hydra_entry(summary, data)
    if any(_accepts(option, parser.abbreviations) for option in parser.options):
        return None
    return parser.parse


# The script may rewrite its command line before a parser reads it (`sys.argv = [...]`, `sys.argv.pop(1)`).
_ARGV_EDITED = re.compile(rb"sys\.argv\s*(?:=(?!=)|\[|\.)|del\s+sys\.argv")


def hydra_entry(summary: ModuleSummary, data: bytes) -> ast.Call | None:
    """The call of a `@hydra.main` function of the script (`main()` under `if __name__ == "__main__":`): Hydra's
    parser takes `key=value` overrides and its own options, and stops at any other option ("unrecognized
    arguments: --local_rank=0"). None where the script names that option (to drop it, say) or may edit `sys.argv`
    first."""
    if b"hydra" not in data or b"--local" in data or _ARGV_EDITED.search(data):
        return None
    entries = {
        node.name
        for node in summary.tree.body
        if isinstance(node, ast.FunctionDef)
        and any(
            summary.qualified(d.func if isinstance(d, ast.Call) else d) == "hydra.main" for d in node.decorator_list
        )
    }
    for node in nodes_of(summary.tree, ast.Call) if entries else ():
        called = isinstance(node.func, ast.Name) and node.func.id in entries
        if called and not node.args and not node.keywords:
            return node  # the entry Hydra runs with the command line
    return None


def switch_only_parse(summary: ModuleSummary, data: bytes) -> ast.Call | None:
    """The `parser.parse_args()` call of a script whose `--deepspeed` is only `add_config_arguments`'s switch
    and that takes no positional argument: a value written after `--deepspeed` is an unrecognized argument."""
    parser = strict_parser(summary, data)
    if parser is None or not parser.config_arguments:
        return None
    if any(not option.startswith("-") or option == "--deepspeed" for option in parser.options):
        return None
    return parser.parse


def stored_name(option: str) -> str:
    """An option as written (`--max-gpus`) as argparse stores its value (`max_gpus`: `ScriptOption.name`)."""
    return option.lstrip("-").replace("-", "_")


# The options `deepspeed.add_config_arguments` adds (0.19.8 `_add_core_arguments`), as argparse stores them
_CONFIG_ARGUMENT_NAMES = frozenset({"deepspeed", "deepspeed_config", "deepscale", "deepscale_config"})


def unknown_options(summary: ModuleSummary, data: bytes, written: Iterable[str]) -> tuple[ast.Call, set[str]] | None:
    """The options among `written` (names as argparse stores them: `ScriptOption.name`) that the script's strict
    parser takes under no name, exactly or, with `allow_abbrev`, as the start of one, with its `parse_args` call;
    None when its parsing is not known whole or it takes them all. Names are compared as stored, so `--max-gpus`
    matches a declared `--max_gpus` (the lenient side); `--local_rank` is left to `refusing_parse`."""
    parser = strict_parser(summary, data)
    if parser is None:
        return None
    declared = {stored_name(option) for option in parser.options if option.startswith("-")}
    declared |= {"help", *(_CONFIG_ARGUMENT_NAMES if parser.config_arguments else ())}
    refused = {
        name
        for name in written
        if name != LAUNCHER_OPTION[2:]
        and name not in declared
        and not (parser.abbreviations and any(option.startswith(name) for option in declared))
    }
    return (parser.parse, refused) if refused else None


def strict_parser(summary: ModuleSummary, data: bytes) -> StrictParser | None:
    """The script's parser when it is known whole and parses strictly, else None (read once per module and text:
    four launch questions ask it for each launch of a script)."""
    known = _STRICT_PARSERS.get(id(summary))
    if known is not None and known[0] is summary and known[1] is data:
        return known[2]
    if len(_STRICT_PARSERS) >= _STRICT_PARSERS_KEPT:
        _STRICT_PARSERS.clear()
    # `argparse.ArgumentParser` is written somewhere in a script that builds one (called, imported, aliased)
    found = _strict_parser(summary, data) if b"ArgumentParser" in data else None
    _STRICT_PARSERS[id(summary)] = (summary, data, found)
    return found


_STRICT_PARSERS: dict[int, tuple[ModuleSummary, bytes, StrictParser | None]] = {}
_STRICT_PARSERS_KEPT = 4096


def _strict_parser(summary: ModuleSummary, data: bytes) -> StrictParser | None:
    if b"parse_known_args" in data or b"parse_intermixed" in data:
        return None
    if b"HfArgumentParser" in data:
        return None  # a second parser, of dataclass fields, that may be the one the script runs (an argparse kept
        # in a function nothing calls, the dataclasses parsed in `main`)
    tree = summary.tree
    constructions: list[tuple[str, ast.Call]] = []
    for assign in nodes_of(tree, ast.Assign):
        if isinstance(assign.value, ast.Call) and summary.qualified(assign.value.func) == "argparse.ArgumentParser":
            if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
                return None
            constructions.append((assign.targets[0].id, assign.value))
    root: ast.AST = tree
    if len(constructions) > 1:
        # several parsers: the one the entry function builds and parses first decides (argparse exits there)
        first = _first_parsing_function(tree, constructions)
        if first is None:
            return None
        root, construction = first
        constructions = [(n, c) for n, c in constructions if c is construction]
    if len(constructions) != 1:
        return None
    name, construction = constructions[0]
    if root is tree:
        builder = _building_function(tree, construction)
        if builder is not None and not _called(tree, builder.name):
            return None  # a parser in a function nothing calls (`main` parses another, imported one): not the run's
        root = builder or tree  # its own `parse_args()`, not another function's `parser` of the same name
    abbreviations = True
    for keyword in construction.keywords:
        if keyword.arg in (None, "parents", "prefix_chars", "fromfile_prefix_chars"):
            return None
        if keyword.arg == "allow_abbrev":
            if not isinstance(keyword.value, ast.Constant):
                return None
            abbreviations = bool(keyword.value.value)
    options: list[str] = []
    valued: list[str] = []
    parses: list[ast.Call] = []
    config_arguments = False
    for node in ast.walk(root):
        if isinstance(node, ast.Call):
            method = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if method == "add_argument":
                for argument in node.args:
                    if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
                        return None
                    options.append(argument.value)
                    if _takes_a_value(node) and argument.value.startswith("-"):
                        valued.append(argument.value)
                    if _negated(node) and argument.value.startswith("--"):
                        options.append("--no-" + argument.value[2:])  # `BooleanOptionalAction` adds `--no-x`
            elif method == "add_subparsers":
                return None
            elif method == "parse_args" and _is_name(node.func, name) and not node.args and not node.keywords:
                parses.append(node)  # not a list of its own (`parse_args(args=[])`)
            handed = any(_is_name(argument, name) for argument in (*node.args, *(k.value for k in node.keywords)))
            if handed and summary.qualified(node.func) != _CONFIG_ARGUMENTS:
                return None  # the parser goes to a function that may add any option
            config_arguments = config_arguments or handed
        elif isinstance(node, (ast.Return, ast.Yield)) and node.value is not None and _is_name(node.value, name):
            return None  # the parser itself leaves the function: its caller may add options
    if not parses:
        return None
    manual = LAUNCHER_OPTION.encode() in data and LAUNCHER_OPTION not in options
    if b"argv" in data and not _argv_left_alone(tree, manual):
        return None
    required = _required(root)
    return StrictParser(parses[0], tuple(options), abbreviations, config_arguments, required, frozenset(valued))


def _building_function(tree: ast.Module, construction: ast.Call) -> ast.FunctionDef | None:
    """The module-level function whose body builds the parser `construction`, if any."""
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and any(node is construction for node in ast.walk(statement)):
            return statement
    return None


def _called(tree: ast.Module, name: str) -> bool:
    """Whether the module calls its function `name` (or hands it on: `main(parse_args)`, `fire.Fire(name)`)."""
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
        for node in nodes_of(tree, ast.Name)
    )


def _first_parsing_function(
    tree: ast.Module, constructions: list[tuple[str, ast.Call]]
) -> tuple[ast.FunctionDef, ast.Call] | None:
    """The function the script's `if __name__ == "__main__":` block calls first, with the parser it builds, when
    its statements parse that parser (`parser.parse_args()`) before they call any other function of the module
    (which may build and parse a parser of its own first); None when that order cannot be read."""
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    entry = next((s for s in tree.body if isinstance(s, ast.If) and is_main_test(s.test)), None)
    first = entry.body[0] if entry is not None and entry.body else None
    value = first.value if isinstance(first, (ast.Expr, ast.Assign)) else None
    called = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
    function = functions.get(called) if called is not None else None
    if function is None:
        return None
    built = {id(c): (n, c) for n, c in constructions}
    own = [built[id(s.value)] for s in function.body if isinstance(s, ast.Assign) and id(s.value) in built]
    if len(own) != 1:
        return None
    name, construction = own[0]
    for statement in function.body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "parse_args" and _is_name(node.func, name):
                return function, construction
            if isinstance(node.func, ast.Name) and node.func.id in functions:
                return None  # another function of the module runs first
    return None


def is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(_is_name(side, "__name__") for side in sides) and any(
        isinstance(side, ast.Constant) and side.value == "__main__" for side in sides
    )


def _required(tree: ast.AST) -> tuple[tuple[tuple[str, ...], ast.Call], ...]:
    """The options the command line must give: `add_argument("--x", required=True)`, and the options of a
    `group = parser.add_mutually_exclusive_group(required=True)` (one of them)."""
    groups: dict[str, ast.Call] = {}
    for assign in nodes_of(tree, ast.Assign):
        if len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name):
            call = assign.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add_mutually_exclusive_group"
                and _is_true(call, "required")
            ):
                groups[assign.targets[0].id] = call
    found: list[tuple[tuple[str, ...], ast.Call]] = []
    members: dict[str, list[str]] = {name: [] for name in groups}
    for node in nodes_of(tree, ast.Call):
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id in members:
            members[receiver.id].extend(names)
        elif _is_true(node, "required") and names and all(name.startswith("-") for name in names):
            found.append((tuple(names), node))
    found.extend((tuple(names), groups[group]) for group, names in members.items() if names)
    return tuple(found)


def _is_true(call: ast.Call, keyword: str) -> bool:
    value = next((k.value for k in call.keywords if k.arg == keyword), None)
    return isinstance(value, ast.Constant) and value.value is True


def missing_required(
    summary: ModuleSummary, data: bytes, written: Iterable[str]
) -> list[tuple[tuple[str, ...], ast.Call]] | None:
    """The required options (or required groups) of the script's strict parser that none of `written` (names as
    argparse stores them) gives, exactly or as an abbreviation; None when its parsing is not known whole."""
    parser = strict_parser(summary, data)
    if parser is None:
        return None
    given = set(written)

    def named(option: str) -> bool:
        stored = stored_name(option)
        return stored in given or (parser.abbreviations and any(stored.startswith(g) for g in given))

    return [(names, call) for names, call in parser.required if not any(named(name) for name in names)]


# `add_argument` actions that take no value from the command line
_NO_VALUE_ACTIONS = frozenset(
    {"store_true", "store_false", "store_const", "append_const", "count", "help", "version", "extend_const"}
)


def _takes_a_value(call: ast.Call) -> bool:
    """The option needs exactly one value after it: the default `store` (or `append`) action, no `nargs` other than
    1 or none (`nargs="?"`/`"*"` make it optional; a non-constant keyword is not known)."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    action, nargs = keywords.get("action"), keywords.get("nargs")
    if action is not None and not (isinstance(action, ast.Constant) and action.value in ("store", "append")):
        return False
    return nargs is None or (isinstance(nargs, ast.Constant) and nargs.value in (1, None))


def bare_abbreviations(summary: ModuleSummary, data: bytes, bare: Iterable[str]) -> dict[str, str]:
    """The options given without a value (`bare`, names as stored) that the script's strict parser takes as the
    one option they abbreviate (`allow_abbrev`, no option of exactly that name), where that option needs a value:
    each with the option's full name (`--deepspeed` -> `--deepspeed_config`). argparse then stops every rank
    with "expected one argument"."""
    parser = strict_parser(summary, data)
    if parser is None or not parser.abbreviations:
        return {}
    declared = {stored_name(option) for option in parser.options if option.startswith("-")}
    declared |= {"help", *(_CONFIG_ARGUMENT_NAMES if parser.config_arguments else ())}
    found: dict[str, str] = {}
    for name in bare:
        if name in declared:
            continue
        matches = {
            option for option in parser.options if option.startswith("--") and stored_name(option).startswith(name)
        }
        if len(matches) == 1 and matches <= parser.valued:
            found[name] = next(iter(matches))
    return found


def _negated(call: ast.Call) -> bool:
    """`add_argument(..., action=argparse.BooleanOptionalAction)`, which also declares the `--no-` form."""
    action = next((k.value for k in call.keywords if k.arg == "action"), None)
    return action is not None and "BooleanOptionalAction" in ast.dump(action)


# Calls that only look at the list they are given (`" ".join(sys.argv)`, `print(sys.argv)`): not an edit.
_LOOKING = frozenset({"len", "str", "repr", "print", "list", "tuple", "join", "any", "all", "sorted"})


def _argv_left_alone(tree: ast.Module, manual: bool) -> bool:
    """Nothing can change what the parse reads from the command line: every mention of `argv` counts it
    (`len(sys.argv)`: under the launcher there is always one) or only looks at it (a `len`/`join`/`print`
    argument, the right side of `in`, a subscript read), and the script does not handle the launcher's option
    itself (`manual`: the text `--local_rank` is in it, yet no option of the parser). A mention that edits the
    list or hands it to another function may decide the parse: no answer."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(tree):
        if not ((isinstance(node, ast.Attribute) and node.attr == "argv") or _is_name(node, "argv")):
            continue
        parent = parents.get(id(node))
        if _counted(node, parent):
            continue
        if manual or not isinstance(getattr(node, "ctx", None), ast.Load) or not _looked_at(node, parent):
            return False
    return True


def _counted(node: ast.AST, parent: ast.AST | None) -> bool:
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "len"


def _looked_at(node: ast.AST, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name in _LOOKING
    if isinstance(parent, ast.Compare):
        return node in parent.comparators and all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load)


def _accepts(option: str, abbreviations: bool) -> bool:
    if option == LAUNCHER_OPTION:
        return True
    return abbreviations and option.startswith(LAUNCHER_OPTION)


def _is_name(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == name


def argparse_defaults(tree: ast.AST) -> dict[str, str]:
    """`parser.add_argument("--num-gpus", type=int, default=2)` -> {"num_gpus": "2"}: each option's constant
    default (a string or a number, not a bool), as text, under its `dest` or its long name (dashes as
    underscores); an option declared twice with different defaults is left out. Read once per tree (kept on it:
    every launch of a script asks), a new dict each call."""
    known: dict[str, str] | None = getattr(tree, _DEFAULTS_MEMO, None)
    if known is None:
        known = _argparse_defaults(tree)
        setattr(tree, _DEFAULTS_MEMO, known)
    return dict(known)


_DEFAULTS_MEMO = "_dslint_argparse_defaults"  # the attribute of a tree holding its `argparse_defaults`


def _argparse_defaults(tree: ast.AST) -> dict[str, str]:
    found: dict[str, str] = {}
    clashing: set[str] = set()
    for node in nodes_of(tree, ast.Call):
        if not isinstance(node.func, ast.Attribute):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        default = keywords.get("default")
        if node.func.attr == "option":
            name = click_option_name(node)
        elif node.func.attr == "add_argument" and node.args:
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = keywords.get("dest")
            long = next((f for f in flags if f.startswith("--")), None)
            name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else None
            if name is None and long is not None:
                name = long[2:].replace("-", "_")
        else:
            continue
        if name is None or not isinstance(default, ast.Constant):
            continue
        value = default.value
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            continue
        if name in found and found[name] != str(value):
            clashing.add(name)
        found[name] = str(value)
    return {name: value for name, value in found.items() if name not in clashing}


def click_option_name(call: ast.Call) -> str | None:
    """The parameter a `@click.option(...)` fills: its name given without dashes (`"--stage", "zero_stage"`), else
    its long flag with dashes as underscores; None for another call."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "option"):
        return None
    if not (isinstance(func.value, ast.Name) and func.value.id == "click"):
        return None
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    named = next((f for f in flags if f.isidentifier()), None)
    long = next((f for f in flags if f.startswith("--")), None)
    return named or (long[2:].replace("-", "_") if long is not None else None)


def off_switches(tree: ast.AST) -> set[str]:
    """The options a script's parser declares off unless the command line turns them on: `action="store_true"`
    without a default or with a false one, under their `dest` or long name (dashes as underscores); an option
    declared twice is left out."""
    found: set[str] = set()
    seen: set[str] = set()
    for node in nodes_of(tree, ast.Call):
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        dest, long = keywords.get("dest"), next((f for f in flags if f.startswith("--")), None)
        name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else None
        name = name or (long[2:].replace("-", "_") if long is not None else None)
        if name is None:
            continue
        if name in seen:
            found.discard(name)
            continue
        seen.add(name)
        action, default = keywords.get("action"), keywords.get("default")
        switch = isinstance(action, ast.Constant) and action.value == "store_true"
        if switch and (default is None or (isinstance(default, ast.Constant) and not default.value)):
            found.add(name)
    return found


def assigned_attributes(tree: ast.AST) -> set[str]:
    """The attribute names the script assigns something other than a false constant on any object (`args.use_amp =
    torch.cuda.is_available()`): an option of that name may hold what the code set, not what the command line gave
    (read conservatively, whatever the object); `args.use_amp = False` keeps a switch off."""
    found: set[str] = set()
    for node in nodes_of(tree, ast.Assign):
        if isinstance(node.value, ast.Constant) and not node.value.value:
            continue
        found.update(target.attr for target in node.targets if isinstance(target, ast.Attribute))
    targets: list[ast.expr] = [n.target for n in nodes_of(tree, ast.AugAssign)]
    targets += [n.target for n in nodes_of(tree, ast.AnnAssign)]
    found.update(target.attr for target in targets if isinstance(target, ast.Attribute))
    return found

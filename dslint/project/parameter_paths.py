"""The file a function's parameter names at every call of the project (`ProjectFacts.parameter_paths`).

    class Trainer:                                         # trainer.py
        def __init__(self, ds_config_path):
            self.ds_config_path = ds_config_path
        def setup(self):
            with open(self.ds_config_path) as f: ...

    parser.add_argument("--ds_config", default="zero2.json")   # main.py
    Trainer(ds_config_path=args.ds_config)

`ds_config_path` is `zero2.json` beside main.py when every call of `Trainer` the project holds passes that one
file: a string literal, or an option of the caller's own parser read from its namespace (`args.ds_config`), with
the value every launch of the caller gives it (its default where a launch does not; launches built at run time
give no answer). The path is kept only when the file is there (read as the caller names it, from its folder or
the folders above it, as `config_access.config_path` reads a script's paths), absolute. A call passing anything
else for the parameter, or leaving it to a default, leaves it unknown. Calls are found as the project model
resolves them (imports, classes' `__init__`, `self.method`); `script.path_values` reads the fact where the
parameter (or the `self` attribute `__init__` stores it in) is read.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, MutableMapping
from dataclasses import replace

from dslint.model.evaluate import Evaluator
from dslint.model.handed_arguments import positional, resolved_calls
from dslint.project.config_access import config_path
from dslint.project.inputs import is_file
from dslint.project.script_parser import argparse_defaults
from dslint.project.site_configs import launch_option_values
from dslint.script.project_facts import ProjectFacts

_PATH_WORDS = ("path", "config", "file", "json", "cfg")  # a parameter worth the walk names one of these


def record_parameter_paths(files: MutableMapping[str, ProjectFacts], model: Evaluator, readers: Iterable[str]) -> None:
    """For the functions and classes of `readers` (the modules that make an engine or a Trainer's arguments)."""
    store = model.store
    names = _callee_names(model, readers)
    if not names:
        return
    answers: dict[tuple[str, str], dict[str, set[str | None]]] = {}
    options: dict[str, dict[str, tuple[object, ...]]] = {}
    calling = _calling(store.sources, names)
    for found in resolved_calls(model, calling, lambda _, call: _called_name(call) in names):
        function = model.function(found.callee)
        if function is None:
            continue
        values = answers.setdefault(found.callee, {})
        # `f(*args)`, `f(**kwargs)`: any parameter not given by its keyword may be in them (a keyword given
        # explicitly is never also in `**kwargs`: Python refuses the call)
        starred = any(isinstance(a, ast.Starred) for a in found.call.args) or any(
            k.arg is None for k in found.call.keywords
        )
        given: dict[str, ast.expr | None] = dict.fromkeys(function.positional) if starred else {}
        for index, argument in enumerate(found.call.args):
            name = positional(function, index)
            if isinstance(argument, ast.Starred):
                break
            if name is not None:
                given[name] = argument
        given.update((k.arg, k.value) for k in found.call.keywords if k.arg is not None)
        for name in function.positional:
            if _path_like(name):
                value = given.get(name)
                values.setdefault(name, set()).add(
                    _path(found.path, value, options, files, model) if value is not None else None
                )
    for (path, qualname), values in answers.items():
        known = {name: path for name, paths in values.items() if len(paths) == 1 for path in paths if path is not None}
        if known:
            facts = files.get(path, ProjectFacts())
            merged = {**facts.parameter_paths, qualname: {**facts.parameter_paths.get(qualname, {}), **known}}
            files[path] = replace(facts, parameter_paths=merged)


def _callee_names(model: Evaluator, readers: Iterable[str]) -> frozenset[str]:
    """The names a call uses for the functions and classes of `readers` with a parameter that may name a file."""
    found: set[str] = set()
    for path in readers:
        module = model.store.get(path) if b"def " in model.store.sources.get(path, b"") else None
        for qualname, function in module.functions.items() if module is not None else ():
            if any(_path_like(name) for name in function.positional):
                parts = qualname.split(".")
                found.add(parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1])
    return frozenset(found)


def _calling(sources: dict[str, bytes], names: frozenset[str]) -> list[str]:
    """The modules, in path order, that may call one of `names`: an ASCII source must hold one of them followed by
    a `(` (white space, line continuations, a comment to its line's end or a `)` between: `(f)(x)` calls `f`),
    since a call of `f` or `x.f` writes its callee's last name so; any other source may (an identifier there may be
    written other than in its ASCII bytes). The others are not parsed for calls none of which is selected."""
    patterns = [(name.encode(), re.compile(re.escape(name.encode()) + rb"(?:[\s\\)]|#[^\n]*\n)*\(")) for name in names]
    return [
        path
        for path in sorted(sources)
        if not sources[path].isascii()
        or any(name in sources[path] and pattern.search(sources[path]) for name, pattern in patterns)
    ]


def _path_like(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _PATH_WORDS)


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _path(
    caller: str,
    value: ast.expr,
    options: dict[str, dict[str, tuple[object, ...]]],
    files: MutableMapping[str, ProjectFacts],
    model: Evaluator,
) -> str | None:
    """The existing file `value` names in `caller` (absolute), or None."""
    text: object = None
    if isinstance(value, ast.Constant):
        text = value.value
    elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        if caller not in options:
            options[caller] = _option_values(caller, files, model)
        taken = options[caller].get(value.attr, ())
        text = taken[0] if len(taken) == 1 else None
    if not isinstance(text, str) or not text:
        return None
    found = config_path(caller, text)
    return os.path.abspath(found) if is_file(str(found)) else None


def _option_values(
    caller: str, files: MutableMapping[str, ProjectFacts], model: Evaluator
) -> dict[str, tuple[object, ...]]:
    """The values each option of the caller's parser takes across its launches (its default without a launch);
    nothing where a launch passes options built at run time."""
    facts = files.get(caller)
    if facts is not None and (facts.launches_open or facts.launches_partial):
        return {}
    if facts is not None and facts.launches:
        return launch_option_values(files, model.store, caller)
    module = model.store.get(caller)
    return {name: (value,) for name, value in argparse_defaults(module.tree).items()} if module is not None else {}

"""Configs a script writes with `json.dump` into the file a launch passes as the DeepSpeed config.

`with open("ds_config.json", "w") as f: json.dump(cfg, f)` in one module, and `deepspeed train.py
--deepspeed_config ds_config.json` (or `--deepspeed`, or accelerate's `deepspeed_config_file`) in a launcher: the
dict is that run's DeepSpeed config, so its keys are checked where the script writes them. The index pairs the
two by the file's name (`dumped_config_names`, a text scan of every source against the launches' config paths);
the script's own lint resolves the dumped expression as a config passed to initialize (`dumped_configs`: a dict
literal, a name bound to one with its later writes). A dict dumped to any other file is not checked. libcst is
imported by the second half only: the index (and a warm run, which builds no script facts) never needs it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from dslint.diagnostics import Related
from dslint.script.project_facts import LaunchedConfig

if TYPE_CHECKING:
    import libcst as cst

    from dslint.project.resolved_configs import ResolvedConfig
    from dslint.script.context import ScriptContext

_OPENED_FOR_WRITING = re.compile(rb"""open\(\s*["']([^"'\n]+\.json)["']\s*,\s*(?:mode\s*=\s*)?["']w""")


def dumped_config_names(
    sources: Mapping[str, bytes], launches: Iterable[LaunchedConfig]
) -> dict[str, dict[str, Related]]:
    """Module -> the file names it opens for writing and `json.dump`s into that a launch passes as the DeepSpeed
    config (the name as written in the module -> where the launch names it)."""
    launched: dict[str, Related] = {}
    for config in launches:
        written = config.options.get(config.option) if config.option not in (None, "accelerate") else None
        path = config.config_path or written
        if path and path.endswith(".json"):
            launched.setdefault(os.path.basename(path), config.config_evidence or config.launch)
    found: dict[str, dict[str, Related]] = {}
    if not launched:
        return found
    for module, data in sources.items():
        if b"json.dump(" not in data:
            continue
        for match in _OPENED_FOR_WRITING.finditer(data):
            literal = match.group(1).decode("utf-8", errors="replace")
            evidence = launched.get(os.path.basename(literal))
            if evidence is not None:
                found.setdefault(module, {})[literal] = evidence
    return found


def dumped_configs(context: ScriptContext) -> list[tuple[ResolvedConfig, Related]]:
    """The dicts this module `json.dump`s into a launched config file (`ProjectFacts.dumped_configs`): inside
    `with open(<name>, "w") as f:` as `json.dump(cfg, f)`, or `json.dump(cfg, open(<name>, "w"))`; as far as they
    can be read, each with where the launch names the file."""
    from dslint.project.config_link import resolve_config_expression  # libcst: the script's lint, not the index

    project = context.facts.project
    names = project.dumped_configs if project is not None else {}
    if not names:
        return []
    found: list[tuple[ResolvedConfig, Related]] = []
    for call, literal in _dumps(context.module, names):
        resolved = resolve_config_expression(context, call.args[0].value)
        if resolved is not None and resolved.tree is not None:
            found.append((resolved, names[literal]))
    return found


def _dumps(module: cst.Module, names: Mapping[str, Related]) -> list[tuple[cst.Call, str]]:
    """`json.dump(x, <file>)` calls whose file is opened for writing by a launched name, with that name."""
    import libcst as cst

    from dslint.script.names import dotted_name
    from dslint.script.walk import visit_tree

    found: list[tuple[cst.Call, str]] = []
    handles: list[dict[str, str]] = [{}]  # the `with ... as f` handles open around the node being visited

    class _Visitor(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            opened = dict(handles[-1])
            for item in node.items:
                literal = _opened_literal(item.item, names)
                if literal is not None and item.asname is not None and isinstance(item.asname.name, cst.Name):
                    opened[item.asname.name.value] = literal
            handles.append(opened)

        def leave_With(self, original_node: cst.With) -> None:
            handles.pop()

        def visit_Call(self, node: cst.Call) -> None:
            if dotted_name(node.func) != "json.dump" or len(node.args) < 2:
                return
            target = node.args[1].value
            literal = handles[-1].get(target.value) if isinstance(target, cst.Name) else _opened_literal(target, names)
            if literal is not None:
                found.append((node, literal))

    visit_tree(module, _Visitor())
    return found


def _opened_literal(node: cst.BaseExpression, names: Mapping[str, Related]) -> str | None:
    import libcst as cst

    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "open"):
        return None
    if not node.args or not isinstance(node.args[0].value, cst.SimpleString):
        return None
    literal = node.args[0].value.evaluated_value
    return literal if isinstance(literal, str) and literal in names else None

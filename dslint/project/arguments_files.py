"""Training arguments read from a file: `HfArgumentParser(...).parse_json_file("config.json")` (or
`parse_yaml_file`, `json_file=`/`yaml_file=`), whose `deepspeed` value names the DeepSpeed config the Hugging Face
Trainer of the script runs with, as `TrainingArguments(deepspeed=...)` would.

The file's path must be written in the script: a string literal, `os.path.abspath("config.json")`, or a name bound
once, in the same function or the module, to one of those; a path from the command line (`sys.argv[1]`) is not
followed (a literal default beside it is). The arguments file is looked for beside the script, then up to its
repository's root (the script is run from one of them); the config its `deepspeed` names, beside the arguments
file, then the same way. Only a string value is followed (a dict written inline is not read here). Every file
read is recorded for the result cache (`project.inputs`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import libcst as cst

from dslint.diagnostics import Related
from dslint.project.config_access import project_top
from dslint.project.config_edits import module_index
from dslint.project.inputs import find_written, read_input, shown_path
from dslint.script.context import ScriptContext
from dslint.script.facts import BindingKind, method_name
from dslint.script.names import dotted_name

PARSERS = {"parse_json_file": "json_file", "parse_yaml_file": "yaml_file"}
_YAML_DEEPSPEED = re.compile(r"^deepspeed\s*:\s*['\"]?([^'\"#\s]+)['\"]?\s*(?:#.*)?$", re.MULTILINE)


def argument_file_configs(context: ScriptContext) -> Iterator[tuple[str, Related]]:
    """(the DeepSpeed config file, absolute; where the arguments file names it) for each arguments file this
    script parses by a path written in it."""
    seen: set[str] = set()
    for call in module_index(context.module).calls:
        method = method_name(call)
        if method not in PARSERS:
            continue
        argument = next((a.value for a in call.args if a.keyword is None), None)
        argument = next((a.value for a in call.args if a.keyword and a.keyword.value == PARSERS[method]), argument)
        written = _written_path(context, argument) if argument is not None else None
        top = (str(project_top(Path(context.path).parent)),)  # never above the project (`config_access`)
        arguments_file = find_written(written, context.path, top) if written is not None else None
        if arguments_file is None or arguments_file in seen:
            continue
        seen.add(arguments_file)
        found = _deepspeed_value(arguments_file, method == "parse_yaml_file")
        if found is None:
            continue
        value, line = found
        config = find_written(value, arguments_file, top) or find_written(value, context.path, top)
        if config is not None:
            note = f"the Trainer's arguments (parsed by {method}) name the DeepSpeed config"
            yield config, Related(shown_path(arguments_file), line, 1, note)


def _written_path(context: ScriptContext, node: cst.BaseExpression) -> str | None:
    """The path a literal, `os.path.abspath(<literal>)` or a name bound once to one of them writes."""
    if isinstance(node, cst.Call) and dotted_name(node.func) in ("os.path.abspath", "os.path.join") and node.args:
        if len(node.args) != 1:
            return None
        node = node.args[0].value
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.Name):
        facts = context.facts
        binding = facts.binding_at(node.value, facts.scope_at(node), facts.start(node))
        bound = binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
        if bound is not None and not isinstance(bound, cst.Name):
            return _written_path(context, bound)
    return None


def _deepspeed_value(path: str, yaml: bool) -> tuple[str, int] | None:
    """The `deepspeed` value of an arguments file (a string), with the line that writes it."""
    data = read_input(path)
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    if yaml:
        match = _YAML_DEEPSPEED.search(text)
        if match is None:
            return None
        return match.group(1), text.count("\n", 0, match.start()) + 1
    try:
        values = json.loads(text)
    except ValueError:
        return None
    value = values.get("deepspeed") if isinstance(values, dict) else None
    if not isinstance(value, str) or not value:
        return None
    at = text.find('"deepspeed"')
    return value, (text.count("\n", 0, at) + 1) if at >= 0 else 1

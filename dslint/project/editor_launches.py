"""Launches an editor starts: the run configurations of VS Code's `.vscode/launch.json` (JSON with comments and
trailing commas), each read as the command line it runs, at the line of its `"module"` or `"program"` key:

    {"type": "debugpy", "request": "launch", "module": "accelerate.commands.launch",
     "args": ["--config_file", "configs/zero3.yaml", "train.py"], "env": {"CUDA_VISIBLE_DEVICES": "0,1"}}

is `CUDA_VISIBLE_DEVICES=0,1 python -m accelerate.commands.launch --config_file configs/zero3.yaml train.py`, run
from the workspace folder (the repository holding `.vscode`), or from its `"cwd"`; a `"program"` that is a
launcher's own entry script (`/usr/bin/deepspeed`) is that launcher. A value naming another of VS Code's variables
(`${file}`, `${input:...}`) is built when the configuration runs: that configuration is left out.
"""

from __future__ import annotations

import os
import re
import shlex

from dslint.config.tree import Array, Object, ParseError, node_at, parse_text, to_python

EDITOR_LAUNCH_FILE = os.path.join(".vscode", "launch.json")

_WORKSPACE = re.compile(r"\$\{workspaceFolder(?::[^}]*)?\}/?")


def editor_commands(text: str) -> str:
    """The shell lines the run configurations of a `launch.json` text run, each at its key's line, others blank
    (the file read by the config reader, `config.tree`, which takes comments and trailing commas and keeps lines)."""
    lines = [""] * len(text.splitlines())
    try:
        configurations = node_at(parse_text(text, hjson=False), "configurations")
    except ParseError:
        return "\n".join(lines)
    for configuration in configurations.items if isinstance(configurations, Array) else ():
        key = (
            next((e for e in configuration.entries if e.key in ("module", "program")), None)
            if isinstance(configuration, Object)
            else None
        )
        command = _command(to_python(configuration)) if key is not None else None
        if key is not None and command is not None and 0 < key.key_start.line <= len(lines):
            lines[key.key_start.line - 1] = command
    return "\n".join(lines)


def _command(configuration: dict[str, object]) -> str | None:
    """The command a Python launch configuration runs, or None (another type, or a value built when it runs)."""
    if configuration.get("request") != "launch" or configuration.get("type") not in ("python", "debugpy"):
        return None
    module, program, args = configuration.get("module"), configuration.get("program"), configuration.get("args", [])
    if isinstance(module, str):
        words = ["python", "-m", module]
    elif isinstance(program, str):
        # a launcher's own entry script (`/usr/bin/deepspeed`, `.../bin/torchrun`) run by Python is that launcher
        name = os.path.basename(program)
        words = [name] if name in ("deepspeed", "torchrun", "accelerate") else ["python", program]
    else:
        return None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None
    words = [_WORKSPACE.sub("./", word) for word in (*words, *args)]
    env = configuration.get("env", {})
    settings = [f"{k}={v}" for k, v in env.items() if isinstance(v, str)] if isinstance(env, dict) else []
    cwd = configuration.get("cwd")
    where = _WORKSPACE.sub("./", cwd) if isinstance(cwd, str) else None
    if any("${" in word for word in (*words, *settings, where or "")):
        return None
    command = shlex.join([*settings, *words])
    return f"cd {shlex.quote(where)} && {command}" if where not in (None, "", "./", ".") else command

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

import json
import os
import re
import shlex

EDITOR_LAUNCH_FILE = os.path.join(".vscode", "launch.json")

_WORKSPACE = re.compile(r"\$\{workspaceFolder(?::[^}]*)?\}/?")
_KEY = re.compile(r'"(?:module|program)"\s*:')
_TRAILING = re.compile(r",\s*[}\]]")


def editor_commands(text: str) -> str:
    """The shell lines the run configurations of a `launch.json` text run, each at its key's line, others blank."""
    configurations = _configurations(text)
    lines = [""] * len(text.splitlines())
    keys = [text.count("\n", 0, match.start()) for match in _KEY.finditer(text)]
    for configuration in configurations:
        written = [keys.pop(0) for key in ("module", "program") if key in configuration and keys]
        command = _command(configuration)
        if command is not None and written and written[0] < len(lines):
            lines[written[0]] = command
    return "\n".join(lines)


def _configurations(text: str) -> list[dict[str, object]]:
    try:
        loaded = json.loads(_plain_json(text))
    except ValueError:
        return []
    found = loaded.get("configurations") if isinstance(loaded, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


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


def _plain_json(text: str) -> str:
    """`text` less its `//` and `/* */` comments and trailing commas, outside strings (JSON with comments)."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = length if close < 0 else close + 2
        else:
            if not (char == "," and _TRAILING.match(text, index)):  # a trailing comma is dropped
                out.append(char)
            index += 1
    return "".join(out)

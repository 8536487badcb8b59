"""Launch commands a Python script builds and runs itself: `subprocess.run(["deepspeed", "--num_gpus=2",
"train.py", f"--deepspeed_config={args.config}"])`, `os.system(f"torchrun --nproc_per_node {n} train.py")`.

A project's `launch.py` is a launcher as a shell script is: the index reads its commands with the shell parser
(`launchers.parse_shell`) from a text this module writes, each command on the line of its call, so that launches
and their evidence point into the Python file. What goes into the text:

- the command: a list or tuple written in the call, or a name the call's function (or the module) binds once to
  one, with the `.append(x)` / `.extend([...])` / `+= [...]` it receives there (a flag appended under an `if`
  counts: the launch is read with it);
- each word: a string constant; an f-string whose holes are the argparse defaults of the module's own parser
  (`{args.num_gpus}` with `add_argument("--num_gpus", default=2)`), or a constant name; any other value is a
  run-time value (`shell_directories.UNKNOWN_VALUE`), which the launch readers treat as unknown;
- only commands whose program is a DeepSpeed, torch or accelerate launcher (`deepspeed`, `torchrun`, `accelerate`,
  `python -m torch.distributed.run`): other subprocesses are not launches.

A script's comments that say how to run it (`# deepspeed --include localhost:0,1 train.py --deepspeed ds.json` in
train.py, a command of the file's own name) are its documented launches, read as a README's commands are.
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import shlex

from dslint.model.summary import module_imports, own_nodes, qualified_name
from dslint.project.launch_documents import BARE_LAUNCH
from dslint.project.reader_calls import scopes
from dslint.project.script_parser import argparse_defaults
from dslint.project.shell_directories import UNKNOWN_VALUE

RUNNERS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output"})
RUNNERS_OF_TEXT = frozenset({"os.system", "subprocess.Popen", *RUNNERS})
LAUNCHER_PROGRAMS = frozenset({"deepspeed", "torchrun", "accelerate"})
# A command's program is the first word of a string constant or f-string (`_word`; a command string is split as the
# shell would), its last path component a launcher (`_is_launch`): so the text holds the launcher right after a
# quote or a `/` (white space between, in a command string), and before a quote or white space; or the module
# `torch.distributed.run`
_PROGRAM_WORD = re.compile(rb"""["'/]\s*(?:deepspeed|torchrun|accelerate)["'\s]|torch\.distributed\.run""")


def python_launch_text(data: bytes, name: str = "") -> str | None:
    """A shell text holding the launch commands `data` runs, each on its call's line, and the commands its
    comments give for running the file itself (`name`, its file name); None when it has none."""
    commands = comment_launches(data, name) if name else {}
    if (b"subprocess" in data or b"os.system" in data) and _PROGRAM_WORD.search(data) is not None:
        commands.update(_run_commands(data))
    return _text(commands)


def launch_text_of(data: bytes) -> str | None:
    """The commands `data` runs, without `python_launch_text`'s text test: every module is parsed."""
    return _text(_run_commands(data))


def _text(commands: dict[int, str]) -> str | None:
    if not commands:
        return None
    lines = [""] * max(commands)
    for number, command in commands.items():
        lines[number - 1] = command
    return "\n".join(lines) + "\n"


# A comment that says how to run the file: `# deepspeed --num_gpus=4 train.py --deepspeed ds.json` in train.py
_COMMENT_LAUNCH = re.compile(rb"#[#\s]*(?:deepspeed|torchrun|accelerate\s+launch)\s")


def comment_launches(data: bytes, name: str) -> dict[int, str]:
    """The launch commands `#` comments of the file write for the file itself (its own name is the script: a
    note on how to run it, as a README's command is; a command for another script is not this file's to tell),
    and the lines of its module docstring (a usage note: `Usage: deepspeed --num_gpus=2 train.py`, the label
    and a `$ ` prompt dropped), each at its line and columns, the lines a backslash continues it onto included."""
    stem = os.fsencode(name.removesuffix(".py"))
    if (os.fsencode(name) not in data and b"." + stem not in data) or _LAUNCH_WORD.search(data) is None:
        return {}
    lines = data.decode("utf-8", errors="replace").splitlines()
    docstring = _docstring_lines(lines)
    if not docstring and _COMMENT_LAUNCH.search(data) is None:
        return {}

    def body_of(number: int) -> str | None:
        return _usage_body(lines[number]) if number in docstring else _comment_body(lines[number])

    found: dict[int, str] = {}
    number = 0
    while number < len(lines):
        body = body_of(number)
        if body is not None and BARE_LAUNCH.match(body.lstrip()) and _runs(body, name):
            found[number + 1] = body
            while body.rstrip().endswith("\\") and number + 1 < len(lines):
                following = body_of(number + 1)
                if following is None:
                    break
                number, body = number + 1, following
                found[number + 1] = body
        number += 1
    return found


_LAUNCH_WORD = re.compile(rb"(?:deepspeed|torchrun|accelerate\s+launch)\s")
_DOCSTRING_START = re.compile(r"^[rRuU]?(\"\"\"|\'\'\')")
# a usage line's label (`Usage:`, `Example run:`, a full-width colon too) and a shell prompt, before the command
_USAGE_LABEL = re.compile("^(\\s*(?:[^\\s:\uff1a][^:\uff1a]{0,23}[:\uff1a])?\\s*(?:\\$\\s+)?)(.*)$")


def _docstring_lines(lines: list[str]) -> range:
    """The 0-based numbers of the module docstring's lines (its first statement, a triple-quoted string after
    comments and blank lines only); empty when there is none."""
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        start = _DOCSTRING_START.match(stripped)
        if start is None:
            return range(0)
        quote = start.group(1)
        rest = stripped[start.end() :]
        if quote in rest:
            return range(number, number + 1)
        for end in range(number + 1, len(lines)):
            if quote in lines[end]:
                return range(number, end + 1)
        return range(0)
    return range(0)


def _usage_body(line: str) -> str:
    """A docstring line's command text, its label and prompt blanked (the columns kept)."""
    match = _USAGE_LABEL.match(line)
    assert match is not None  # the pattern matches any line
    return " " * len(match.group(1)) + match.group(2).replace('"""', "   ").replace("'''", "   ")


def _comment_body(line: str) -> str | None:
    """A comment line's text after its `#`s, the columns before it blank; None for a line of code."""
    stripped = line.lstrip()
    if not stripped.startswith("#"):
        return None
    text = stripped.lstrip("#")
    return " " * (len(line) - len(text)) + text


def _runs(command: str, name: str) -> bool:
    """Whether the command's script (its first word naming a `.py` file) is the file `name`, or the module it runs
    (`-m pkg.train`, `--module pkg.train`) is that file's (`train.py`)."""
    words = command.split()
    script = next((word for word in words if word.endswith(".py")), None)
    if script is not None:
        return script.rsplit("/", 1)[-1] == name
    module = next((after for word, after in itertools.pairwise(words) if word in ("-m", "--module")), None)
    return module is not None and module.rsplit(".", 1)[-1] + ".py" == name


def _run_commands(data: bytes) -> dict[int, str]:
    """The launch commands the module's subprocess calls run, each at its call's line."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    imports = module_imports(tree, None)[0]
    defaults = argparse_defaults(tree)
    commands: dict[int, str] = {}
    for scope in scopes(tree):
        nodes = list(own_nodes(scope))
        for call in (n for n in nodes if isinstance(n, ast.Call) and n.args):
            if qualified_name(imports, call.func) not in RUNNERS_OF_TEXT:
                continue
            words = _words(call.args[0], nodes, defaults)
            if words and _is_launch(words):
                commands[call.lineno] = " ".join(shlex.quote(w) if UNKNOWN_VALUE not in w else w for w in words)
    return commands


def _is_launch(words: list[str]) -> bool:
    program = words[0].rsplit("/", 1)[-1]
    if program in LAUNCHER_PROGRAMS:
        return True
    return program.startswith("python") and words[1:3] == ["-m", "torch.distributed.run"]


def _words(expr: ast.expr, nodes: list[ast.AST], defaults: dict[str, str]) -> list[str] | None:
    """The words of a command: a list or tuple of words, a name bound once to one (with what it is given later
    in the same body), or one string split as the shell would."""
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [_word(element, defaults) for element in expr.elts]
    if isinstance(expr, ast.Name):
        bound = [n for n in nodes if isinstance(n, ast.Assign) and any(_named(t, expr.id) for t in n.targets)]
        if not bound or not all(isinstance(b.value, (ast.List, ast.Tuple)) for b in bound):
            return None
        # bound once, or in the arms of an `if` of which one builds a launch (`[sys.executable, script]` for one
        # GPU, `["deepspeed", "--num_gpus", ...]` for several): that one is the launch the call may run
        lists = [
            [_word(e, defaults) for e in b.value.elts] for b in bound if isinstance(b.value, (ast.List, ast.Tuple))
        ]
        launches = [words for words in lists if words and _is_launch(words)]
        if len(lists) != 1 and len(launches) != 1:
            return None
        words = lists[0] if len(lists) == 1 else launches[0]
        for node in nodes:
            words.extend(_added(node, expr.id, defaults))
        return words
    text = _word(expr, defaults)
    if UNKNOWN_VALUE in text and not isinstance(expr, ast.JoinedStr):
        return None
    try:
        return shlex.split(text)
    except ValueError:
        return None


def _added(node: ast.AST, name: str, defaults: dict[str, str]) -> list[str]:
    """Words `node` adds to the list `name`: `name.append(x)`, `name.extend([...])`, `name += [...]`."""
    if isinstance(node, ast.AugAssign) and _named(node.target, name) and isinstance(node.value, (ast.List, ast.Tuple)):
        return [_word(element, defaults) for element in node.value.elts]
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
        return []
    if not _named(node.func.value, name):
        return []
    if node.func.attr == "append":
        return [_word(node.args[0], defaults)]
    if node.func.attr == "extend" and isinstance(node.args[0], (ast.List, ast.Tuple)):
        return [_word(element, defaults) for element in node.args[0].elts]
    return []


def _named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _word(expr: ast.expr, defaults: dict[str, str]) -> str:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (str, int, float)):
        return str(expr.value)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        # `args.script`: the launcher's own option at its default, when a path or a word (a count the launcher
        # tests, `if args.gpus == 1: ... else: [..., str(args.gpus)]`, is not known from its default)
        default = _hole(expr, defaults)
        return default if not default.replace(".", "", 1).isdigit() else UNKNOWN_VALUE
    if isinstance(expr, ast.JoinedStr):
        parts: list[str] = []
        for value in expr.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and value.format_spec is None:
                parts.append(_hole(value.value, defaults))
            else:
                parts.append(UNKNOWN_VALUE)
        return "".join(parts)
    return UNKNOWN_VALUE


def _hole(expr: ast.expr, defaults: dict[str, str]) -> str:
    """An f-string's `{args.x}`: the argparse default of `--x` when the module's parser gives a constant one."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.attr in defaults:
        return defaults[expr.attr]
    return UNKNOWN_VALUE

"""IPython syntax in a notebook's code, line by line: which lines Python would refuse (line magics `%time ...`,
cell magics `%%bash`, shell lines `!pip ...` and `files = !ls`, help lines `obj?`, a one-line automagic cell), and
the same lines with them replaced by `pass` at their indentation, so that no line moves. Shared by the `.ipynb`
reader (`dslint.lint.notebook`) and Databricks notebook sources (`dslint.lint.databricks`)."""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Sequence

SHELL_ASSIGNMENT = re.compile(r"^[\w.,\s\[\]()*]+=\s*[!%]")

# The line magics a Jupyter kernel (IPython 9 with ipykernel) knows without a `%`: IPython runs a one-line cell
# whose first word names one of them as that magic (automagic, on by default: `pip install x` is `%pip install
# x`). From IPython's core magics (IPython/core/magics/), its magic aliases (`ed`, `hist`, `rep`), the POSIX shell
# aliases it defines (IPython/core/alias.py), the `storemagic` extension it loads, and ipykernel's KernelMagics.
AUTOMAGIC_NAMES = frozenset(
    [
        "alias",
        "alias_magic",
        "autoawait",
        "autocall",
        "automagic",
        "bookmark",
        "cd",
        "code_wrap",
        "colors",
        "conda",
        "config",
        "debug",
        "dhist",
        "dirs",
        "doctest_mode",
        "edit",
        "env",
        "gui",
        "history",
        "killbgscripts",
        "load",
        "load_ext",
        "loadpy",
        "logoff",
        "logon",
        "logstart",
        "logstate",
        "logstop",
        "lsmagic",
        "macro",
        "magic",
        "mamba",
        "matplotlib",
        "micromamba",
        "notebook",
        "page",
        "pastebin",
        "pdb",
        "pdef",
        "pdoc",
        "pfile",
        "pinfo",
        "pinfo2",
        "pip",
        "popd",
        "pprint",
        "precision",
        "prun",
        "psearch",
        "psource",
        "pushd",
        "pwd",
        "pycat",
        "pylab",
        "quickref",
        "recall",
        "rehashx",
        "reload_ext",
        "rerun",
        "reset",
        "reset_selective",
        "run",
        "save",
        "sc",
        "set_env",
        "store",
        "sx",
        "system",
        "tb",
        "time",
        "timeit",
        "unalias",
        "unload_ext",
        "uv",
        "who",
        "who_ls",
        "whos",
        "xdel",
        "xmode",
        "ed",
        "hist",
        "rep",
        "mkdir",
        "rmdir",
        "mv",
        "rm",
        "cp",
        "cat",
        "ls",
        "ll",
        "lf",
        "lk",
        "ldir",
        "lx",
        "clear",
        "less",
        "more",
        "man",
        "connect_info",
        "qtconsole",
        "autosave",
        "subshell",
    ]
)
# IPython's split of a line into its function part and the rest (IPython/core/splitinput.py, without escapes).
_AUTOMAGIC_LINE = re.compile(r"^\s*([\w.*]*)(.*)$")
_BOUND_NAME = re.compile(
    r"^\s*(?:(?:async\s+)?def|class)\s+(\w+)|^\s*(\w+)\s*(?::[^=]*)?=(?!=)|^\s*for\s+(\w+)\s+in\b"
    r"|\bimport\s+(\w+)\s*$|\bas\s+(\w+)",
    re.MULTILINE,
)


def _is_magic(stripped: str) -> bool:
    return (
        stripped.startswith(("%", "!"))
        or (stripped.endswith("?") and not stripped.startswith("#"))
        or stripped.startswith("?")
        or bool(SHELL_ASSIGNMENT.match(stripped))
    )


def automagic_line(lines: Sequence[str], bound: frozenset[str] = frozenset()) -> int | None:
    """The index of a cell's one line that IPython runs as a magic without its `%` (automagic), else None.

    IPython applies automagic only to a cell that is one line once its leading blank lines are dropped
    (`InteractiveShell.transform_cell`: dynamic transformations are for single-line input), whose first word
    names a line magic (`AutoMagicChecker`), is not followed by `=` or `,` (`AssignmentChecker`: an assignment),
    and is not shadowed: a keyword, a builtin, or a name the notebook binds (`bound`) is Python, not a magic."""
    index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if index is None or any(line.strip("\r\n") for line in lines[index + 1 :]) or len(lines) - index > 1:
        return None
    match = _AUTOMAGIC_LINE.match(lines[index].rstrip("\r\n"))
    if match is None:
        return None
    word, rest = match.groups()
    head = word.split(".", 1)[0]
    if word not in AUTOMAGIC_NAMES or rest.lstrip()[:1] in ("=", ","):
        return None
    if keyword.iskeyword(head) or hasattr(builtins, head) or head in bound:
        return None
    return index


def bound_names(cells: Sequence[Sequence[str]]) -> frozenset[str]:
    """Names the notebook's code binds (`def`, `class`, assignments, `for`, imports), read line by line: a magic
    name bound there is the user's variable, which IPython's automagic leaves alone."""
    found: set[str] = set()
    for lines in cells:
        for match in _BOUND_NAME.finditer("".join(lines)):
            found.update(name for name in match.groups() if name)
    return frozenset(found)


def python_lines(lines: Sequence[str], bound: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The cell's lines with IPython syntax replaced by `pass` (at its indentation): line numbers stay. `bound`:
    the names the notebook binds (`bound_names`), which a one-line automagic cell may not name."""
    magic = automagic_line(lines, bound)
    if magic is not None:
        line = lines[magic]
        body = line.rstrip("\r\n")
        indent = body[: len(body) - len(body.lstrip())]
        return (*lines[:magic], f"{indent}pass{line[len(body) :]}", *lines[magic + 1 :])
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("%%"):  # a cell magic: the whole cell is another language (bash, html, timeit...)
        return tuple(_blank(line) for line in lines)
    out: list[str] = []
    continued = False
    for line in lines:
        body = line.rstrip("\r\n")
        stripped = body.strip()
        if continued or _is_magic(stripped):
            indent = body[: len(body) - len(body.lstrip())]
            out.append(f"{indent}pass{line[len(body) :]}" if not continued else _blank(line))
            continued = body.endswith("\\")
        else:
            out.append(line)
    return tuple(out)


def foreign_lines(lines: Sequence[str]) -> tuple[str, ...]:
    """A cell written in another language (its editor's `languageId` says so): every line blank, numbers kept."""
    return tuple(_blank(line) for line in lines)


def _blank(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :] or ""

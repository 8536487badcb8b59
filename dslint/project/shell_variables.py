"""Shell variables in launchers: which lines assign one, what value it holds, and a text with them substituted.

A variable holds what the launcher's text proves: a literal word (`CONFIG=ds.json`), a literal built from other
variables (`CONFIG=configs/${MODEL}.json` once MODEL is known), or words that the shell splits where the variable
is expanded unquoted (`CMD="torchrun --nproc_per_node=$GPUS"`, `DS_ARGS="--deepspeed --deepspeed_config
ds.json"`, a Makefile's `ARGS := --zero_stage 3`). In such words a part built at run time is `UNKNOWN_VALUE`,
so the expanded command keeps its known words (the launcher, the script, a literal config path) and an option
whose value is unknown stays unknown. A single word with a part built at run time, a command substitution
(`$(date)`, backquotes) or quotes inside the words is unknown as a whole (None), and never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dslint.project.shell_directories import UNKNOWN_VALUE, shell_words

# `NAME=value`, `export NAME=value`, `NAME+=value`, `NAME=(words)`: the value may span lines (a quoted string or
# an array bash continues over newlines).
_ASSIGNMENT = re.compile(
    r"^\s*(export\s+|local\s+|readonly\s+|declare\s+(?:-[A-Za-z]+\s+)*)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S
)
# `NAME="...`, `NAME='...` or `NAME=(...` left open at the end of its line: the value goes on to the line closing it.
_OPENING_ASSIGNMENT = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+|declare\s+)?[A-Za-z_][A-Za-z0-9_]*\+?=[\"'(]")
# `"${NAME[@]}"`, `${NAME[*]}`: every word of an array (quoted or not, each stays a word of its own here).
_ARRAY = re.compile(r"\"?\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}\"?")
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$([A-Za-z_][A-Za-z0-9_]*)")
# `${NAME:-default}` / `${NAME-default}` / `${NAME:=default}` (NAME may be a positional parameter: `${1:-8}`):
# the default when the file leaves NAME unset, as the launcher runs without arguments or an environment.
_DEFAULTED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(:?[-=])([^}$`]*)\}")
# `$1`, `${2}` (not `${1:-8}`, whose default `_DEFAULTED` reads; not `$0`, the launcher's own path): an argument of
# the launcher, set when it runs.
_ARGUMENT = r"\$\{[1-9][0-9]*\}|\$[1-9]"
_POSITIONAL_PARAMETER = re.compile(_ARGUMENT)
# `$1`, `$@`, `$*`, `$#`, `$$`...: set when the launcher runs.
_SPECIAL_PARAMETER = re.compile(r"\$[0-9@*#?!$-]?")
# How far a quoted value may run over lines: further, an unclosed quote is a stray one, not a long value.
_QUOTED_LINES = 60


def substitute(text: str, variables: dict[str, str | None]) -> str:
    """`text` with `$NAME`, `${NAME}`, `$(NAME)` and `${NAME:-default}` replaced by what `variables` holds
    (UNKNOWN_VALUE for a variable built at run time or never assigned, and for the launcher's arguments: `$3`)."""

    def defaulted(match: re.Match[str]) -> str:
        name, operator, default = match.groups()
        if name not in variables:
            return default.strip("'\"")
        value = variables[name]
        if value is None:
            return UNKNOWN_VALUE
        return default.strip("'\"") if operator.startswith(":") and value == "" else value

    text = _ARRAY.sub(lambda match: variables.get(match.group(1)) or UNKNOWN_VALUE, text)
    text = _DEFAULTED.sub(defaulted, text)

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        value = variables.get(name)
        return value if value is not None else UNKNOWN_VALUE

    text = VARIABLE.sub(replace, text)
    text = _POSITIONAL_PARAMETER.sub(UNKNOWN_VALUE, text)  # `$3`, `${1}`: the launcher's arguments, set when it runs
    return _ARITHMETIC.sub(lambda match: _arithmetic(match.group(1), variables), text) if "$((" in text else text


# `$(( expression ))`: integers, names, + - * / % and parentheses (bash's integer arithmetic)
_ARITHMETIC = re.compile(r"\$\(\(((?:[^()]|\([^()]*\))*)\)\)")
_ARITHMETIC_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|([-+*/%()]))")


def _arithmetic(expression: str, variables: dict[str, str | None]) -> str:
    """The value of a shell arithmetic expansion whose operands are integers or variables holding integers;
    UNKNOWN_VALUE for anything else (a variable built at run time, an operator it does not read)."""
    tokens: list[str] = []
    position = 0
    while position < len(expression.rstrip()):
        match = _ARITHMETIC_TOKEN.match(expression, position)
        if match is None:
            return UNKNOWN_VALUE
        number, name, operator = match.groups()
        if name is not None:
            held = variables.get(name)
            if held is None or not held.strip().lstrip("-").isdigit():
                return UNKNOWN_VALUE
            number = held.strip()
        tokens.append(number if number is not None else operator)
        position = match.end()
    try:
        value, rest = _sum(tokens)
    except (IndexError, ValueError, ZeroDivisionError):
        return UNKNOWN_VALUE
    return str(value) if not rest else UNKNOWN_VALUE


def _sum(tokens: list[str]) -> tuple[int, list[str]]:
    value, tokens = _product(tokens)
    while tokens and tokens[0] in "+-":
        operator, (right, tokens) = tokens[0], _product(tokens[1:])
        value = value + right if operator == "+" else value - right
    return value, tokens


def _product(tokens: list[str]) -> tuple[int, list[str]]:
    value, tokens = _unit(tokens)
    while tokens and tokens[0] in "*/%":
        operator, (right, tokens) = tokens[0], _unit(tokens[1:])
        if operator == "*":
            value *= right
        else:  # bash truncates toward zero
            quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right > 0) else -1)
            value = quotient if operator == "/" else value - right * quotient
    return value, tokens


def _unit(tokens: list[str]) -> tuple[int, list[str]]:
    if tokens[0] == "(":
        value, rest = _sum(tokens[1:])
        if not rest or rest[0] != ")":
            raise ValueError("unclosed parenthesis")
        return value, rest[1:]
    if tokens[0] == "-":
        value, rest = _unit(tokens[1:])
        return -value, rest
    return int(tokens[0]), tokens[1:]


@dataclass(frozen=True)
class Assignment:
    """A line that only assigns a variable: `[export] NAME=value`, `NAME+=value`, `NAME=(words)`."""

    name: str
    value: str  # as written after `=`
    append: bool  # `+=`
    exported: bool
    unset_only: bool = False  # `: "${NAME:=value}"`: assigns only where NAME is unset (or empty)


# `: "${NAME:=value}"` (or `${NAME=value}`): the null command, run for the default it assigns to an unset NAME
_NULL_DEFAULT = re.compile(r"""^\s*:\s+(["']?)\$\{([A-Za-z_][A-Za-z0-9_]*):?=([^}$`]*)\}\1\s*$""")


def assignment_in(line: str, alone: bool = True) -> Assignment | None:
    """The assignment `line` (a logical line, its comment stripped) makes, or None for any other line (also
    `NAME=value command ...`, which sets NAME only for that command, unless `alone` is False)."""
    null = _NULL_DEFAULT.match(line)
    if null is not None:
        return Assignment(null.group(2), null.group(3), False, False, unset_only=True)
    match = _ASSIGNMENT.match(line)
    if match is None:
        return None
    keyword, name, plus, value = match.groups()
    if value.lstrip().startswith("("):
        close = value.rfind(")")
        if close < 0 or value[close + 1 :].strip():
            return None
    elif alone and not is_assignment_only(line):
        return None
    return Assignment(name, value, plus == "+", (keyword or "").startswith("export"))


def assign(variables: dict[str, str | None], assignment: Assignment) -> None:
    """Record what the variable holds after `assignment` (`+=` appends to what it held: nothing when unset; a
    null command's default only where the file has not set it, or set it empty)."""
    if assignment.unset_only and assignment.name in variables and variables[assignment.name] != "":
        return
    value = assigned_value(assignment.value, variables)
    if assignment.append:
        before = variables.get(assignment.name, "")
        if before is None or value is None:
            value = None
        else:
            spaced = assignment.value.lstrip().startswith("(") or assignment.value.strip("\"'")[:1].isspace()
            value = f"{before} {value}".strip() if spaced else before + value
    variables[assignment.name] = value


def is_assignment_only(line: str) -> bool:
    """`NAME=value` (or `export NAME=value`) alone, not `NAME=value command ...` (an environment for a command)."""
    try:
        words = shell_words(line)
    except ValueError:
        return False
    if words and words[0] in ("export", "local", "readonly"):
        words = words[1:]
    return len(words) == 1


def assigned_value(value: str, variables: dict[str, str | None]) -> str | None:
    """What a variable assigned `value` (as written after `=`) holds, the variables assigned before it
    substituted: a literal word; words separated by single spaces (a quoted value holding spaces or newlines,
    or a Makefile's unquoted words), parts built at run time marked UNKNOWN_VALUE; None when unknown."""
    value = substitute(value, variables).strip()
    if not value:
        return ""
    if "$(" in value or "`" in value:
        return None
    if value.startswith("(") and value.endswith(")"):  # an array: its words
        try:
            words = shell_words(value[1:-1])
        except ValueError:
            return None
        if any(word.split(maxsplit=1)[1:] or "$" in word for word in words):
            return None
        # an empty word (`arr+=(--fsdp "$FSDP")` with FSDP empty, most often under a test of it that is not
        # read here): the option's value is not known, the rest of the array is
        return " ".join(word or UNKNOWN_VALUE for word in words)
    try:
        words = shell_words(value)
    except ValueError:
        return None
    if len(words) == 1 and not words[0].split(maxsplit=1)[1:]:
        word = words[0].strip()
        if word.startswith(UNKNOWN_VALUE + "/") and "$" not in word and UNKNOWN_VALUE not in word[1:]:
            return word  # a path under a folder built at run time (`$(dirname "$(pwd)")/src/train.py`): its tail
        return None if "$" in word or UNKNOWN_VALUE in word else word
    if len(words) == 1 and ("'" in words[0] or '"' in words[0] or "\\" in words[0]):
        # quotes inside the words: kept as written, for the shell that reads the expanded command (`bash -c`)
        return None if "$" in words[0] or UNKNOWN_VALUE in words[0] else words[0]
    parts = [_SPECIAL_PARAMETER.sub(UNKNOWN_VALUE, part) for word in words for part in word.split()]
    if any("'" in part or '"' in part or "\\" in part for part in parts):
        return None
    return " ".join(parts)


def quoted_value_end(lines: list[str], first: int) -> int | None:
    """The index of the line that closes a quoted assignment value opened on `lines[first]` and left open there
    (`DS_ARGS="` then option lines then `"`); None when that line opens no such value, or no line closes it soon."""
    if _OPENING_ASSIGNMENT.match(lines[first]) is None:
        return None
    if re.search(r"=\(", lines[first]):  # an array: the line holding its `)` (outside quotes) ends it
        depth = 0
        for index in range(first, min(len(lines), first + _QUOTED_LINES)):
            outside = _unquoted(lines[index])
            depth += outside.count("(") - outside.count(")")
            if depth <= 0:
                return index if index > first else None
        return None
    quote: str | None = None
    for index in range(first, min(len(lines), first + _QUOTED_LINES)):
        quote = _quote_after(lines[index], quote)
        if quote is None:
            return index if index > first else None
    return None


def _unquoted(line: str) -> str:
    """`line` less its quoted parts and its comment."""
    kept: list[str] = []
    quote: str | None = None
    previous = " "
    for char in line:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and previous in " \t;":
            break
        else:
            kept.append(char)
        previous = char
    return "".join(kept)


def _quote_after(line: str, quote: str | None) -> str | None:
    """The quote still open after `line`, given the one open before it (a comment outside quotes ends the
    line; a backslash escapes the next character outside single quotes)."""
    previous = " "
    escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and previous in " \t;":
            break
        previous = char
    return quote


_CASE = re.compile(r"^\s*case\s+\"?\$\{?([1-9@*]|[A-Za-z_][A-Za-z0-9_]*)\}?\"?\s+in\b")
_ESAC = re.compile(r"(?:^|;)\s*esac\b")
_GETOPTS = re.compile(r"\bgetopts\s+\S+\s+([A-Za-z_][A-Za-z0-9_]*)")
_POSITIONAL = re.compile(rf"^\s*\"?(?:{_ARGUMENT})\"?\s*$")  # a value that is one argument: `"$1"`


class ArgumentCases:
    """Where a launcher parses its own arguments: in a `case "$1" in ... esac` (or `case $key in` after
    `key="$1"`, `case $opt in` under `while getopts ... opt`) an assignment runs only when that argument is given,
    so the launcher as written, run without arguments, keeps what the variable held before (`DS_CONFIG=ds.json`
    above `--deepspeed) shift; DS_CONFIG=$1 ;;`)."""

    def __init__(self) -> None:
        self._cases: list[bool] = []  # each open `case`: whether an argument's (or inside one)
        self._arguments: set[str] = set()  # variables holding an argument: `key="$1"`, getopts' name

    def read(self, line: str) -> None:
        """Follow `line` (a logical line, comment stripped)."""
        if "$" in line:  # an argument read into a variable: `key="$1"`, `while getopts "c:" opt`
            getopts = _GETOPTS.search(line)
            if getopts is not None:
                self._arguments.add(getopts.group(1))
            assignment = assignment_in(line) if not self.inside else None
            if assignment is not None and _POSITIONAL.match(assignment.value):
                self._arguments.add(assignment.name)
        case = _CASE.match(line)
        if case is not None:
            subject = case.group(1)
            self._cases.append(self.inside or not subject.isidentifier() or subject in self._arguments)
        elif _ESAC.search(line) and self._cases:
            self._cases.pop()

    @property
    def inside(self) -> bool:
        return bool(self._cases) and self._cases[-1]


# A launch command written whole in a variable: `CMD="deepspeed --num_gpus=4 -m pkg.train --config c.yaml"`
_HELD_COMMAND = re.compile(r"^([\"'])((?:deepspeed|torchrun|accelerate\s+launch)\s[^\"'`]*)\1\s*$")


def held_command(assignment: Assignment, text: str) -> str | None:
    """The launch command a variable holds (quoted whole: `CMD="deepspeed ... train.py ..."`) that the file never
    runs as a command itself (`$CMD` at a command's start is read where it runs): it runs elsewhere (handed to
    `ssh`, written into a job script, substituted into a template). None for any other value."""
    held = _HELD_COMMAND.match(assignment.value.strip()) if not assignment.append else None
    if held is None:
        return None
    run = re.compile(
        r"(?:^|[;&|(]|\bthen|\bdo|\beval)\s*[\"']?\$\{?" + re.escape(assignment.name) + r"\b", re.MULTILINE
    )
    return None if run.search(text) else held.group(2)

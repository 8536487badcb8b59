"""DeepSpeed configs a shell launcher writes itself, checked as the program that opens them parses them.

A launcher that writes its config before the launch (`cat <<EOF > $config_json` ... `EOF`, `cat > ds.json <<'EOF'`,
`echo '{...}' > ds.json`) and hands the file to a reader: DeepSpeed's own `DeepSpeedConfig` reads a path with
`hjson.load` (DeepSpeed 0.19.8, `runtime/config.py`), which accepts trailing commas and comments; the readers
around it read the same file with the standard library's strict `json.load`: Lightning's `DeepSpeedStrategy`
(`_load_config`, a path given as `config=` or in the `PL_DEEPSPEED_CONFIG_PATH` environment variable) and the
Hugging Face integrations (`HfDeepSpeedConfig`: the Trainer's `--deepspeed ds.json`, accelerate). A text such a
reader cannot parse stops the run before training starts.

The heredoc's text is read as bash writes it: an unquoted delimiter expands `$NAME` / `${NAME}` (literal values
assigned earlier in the launcher; any other value is unknown), a quoted one (`<<'EOF'`) writes the text as it is.
Conservative: the parse error must not sit on a line where an unknown value was written (that value might be the
missing piece), and the reader must be strict and known.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dslint.project.document_configs import DocumentConfig
from dslint.project.launch_cuts import strip_comment
from dslint.project.launchers import CONFIG_OPTIONS, LaunchLine
from dslint.project.project_index import LaunchIssue, ProjectIndex

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)|\$\(|`")
_TARGET = r"""(?:"[^"]+"|'[^']+'|[^\s;&|<>]+)"""
# `cat <<EOF > x`, `cat > x <<EOF`, `cat <<-'EOF' >x`, `tee x <<EOF` (tee writes the file too).
_HEREDOC = re.compile(
    rf"""^\s*(?:cat(?:\s+>\s*(?P<before>{_TARGET}))?|tee\s+(?P<tee>{_TARGET}))\s*<<(?P<dash>-?)\s*"""
    rf"""(?P<quote>['"]?)(?P<tag>[A-Za-z_][A-Za-z0-9_]*)(?P=quote)(?:\s*>\s*(?P<after>{_TARGET}))?\s*$"""
)
_ECHO = re.compile(rf"""^\s*(?:echo|printf)\s+'(?P<text>[{{\[][^']*)'\s*>\s*(?P<target>{_TARGET})\s*$""")
# Lightning's DeepSpeedStrategy reads this variable when it is given no config.
LIGHTNING_VARIABLE = "PL_DEEPSPEED_CONFIG_PATH"
_LIGHTNING_STRATEGY = re.compile(r"""strategy[\s=]+["']?deepspeed""")
STRICT_READERS = {"trainer": "the Hugging Face integration", "lightning": "Lightning's DeepSpeedStrategy"}


@dataclass(frozen=True)
class WrittenConfig:
    """A config text a launcher writes into `target` (as written: `$config_json`, `ds.json`)."""

    target: str
    line: int  # the launcher line of the command writing it
    # (launcher line, the line as written, the text bash writes for it, whether an unknown value went into it)
    lines: tuple[tuple[int, str, str, bool], ...]


def _normal(word: str) -> str:
    word = word.strip().strip("\"'")
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", r"$\1", word)


def _expand(text: str, variables: dict[str, str | None]) -> tuple[str, bool]:
    """The text bash writes for one heredoc line, and whether an unknown value went into it."""
    unknown = False

    def value(match: re.Match[str]) -> str:
        nonlocal unknown
        name = match.group(1) or match.group(2)
        known = variables.get(name) if name else None
        if known is None:
            unknown = True
            return "0"
        return known

    return _VARIABLE.sub(value, text), unknown


def written_configs(text: str) -> list[WrittenConfig]:
    """The JSON texts the launcher writes to a file with a heredoc or a one-line single-quoted `echo`."""
    variables: dict[str, str | None] = {}
    found: list[WrittenConfig] = []
    physical = text.splitlines()
    number = 0
    while number < len(physical):
        raw = physical[number]
        number += 1
        line = strip_comment(raw)
        assignment = _ASSIGNMENT.match(line)
        if assignment is not None:
            name, value = assignment.groups()
            literal = value.strip("\"'")
            variables[name] = None if ("$" in literal or "`" in literal) else literal
            continue
        echo = _ECHO.match(line)
        if echo is not None:
            placed = " " * echo.start("text") + echo["text"]  # the text at its columns in the launcher line
            found.append(WrittenConfig(_normal(echo["target"]), number, ((number, placed, placed, False),)))
            continue
        heredoc = _HEREDOC.match(line)
        if heredoc is None:
            continue
        target = heredoc["before"] or heredoc["tee"] or heredoc["after"]
        body: list[tuple[int, str, str, bool]] = []
        start = number
        while number < len(physical):
            raw = physical[number]
            number += 1
            content = raw.lstrip("\t") if heredoc["dash"] else raw  # `<<-` drops leading tabs
            if content == heredoc["tag"]:
                break
            if heredoc["quote"]:
                body.append((number, raw, content, False))
            else:
                written, unknown = _expand(content, variables)
                body.append((number, raw, written, unknown))
        else:
            continue  # no closing delimiter: not read
        if target and body and body[0][2].lstrip().startswith(("{", "[")):
            found.append(WrittenConfig(_normal(target), start, tuple(body)))
    return found


def strict_error(config: WrittenConfig) -> tuple[int, int, str] | None:
    """Where `json.load` stops on the written text: (launcher line, column, what), None when it parses or when
    the error sits on a line an unknown value went into."""
    text = "\n".join(written for _, _, written, _ in config.lines)
    try:
        json.loads(text)
        return None
    except json.JSONDecodeError as error:
        at = error.pos
        message = error.msg
    before = at - 1
    while before >= 0 and text[before] in " \t\r\n":
        before -= 1
    if before >= 0 and text[before] == "," and at < len(text) and text[at] in "}]":
        at, message = before, f"a trailing comma before '{text[at]}'"
    row = text.count("\n", 0, at)
    line, original, written, unknown = config.lines[row]
    if unknown or (before >= 0 and config.lines[text.count("\n", 0, before)][3]):
        return None
    column = at - (text.rfind("\n", 0, at) + 1) + len(original) - len(original.lstrip("\t"))
    if original.lstrip("\t") != written.lstrip("\t"):  # values were written into it: name the line's start
        column = len(original) - len(original.lstrip())
    return line, column + 1, message


def _lightning_reads(text: str, target: str) -> bool:
    """The launcher sets PL_DEEPSPEED_CONFIG_PATH to the written file and selects a DeepSpeed strategy."""
    for raw in text.splitlines():
        assignment = _ASSIGNMENT.match(strip_comment(raw))
        if (
            assignment is not None
            and assignment.group(1) == LIGHTNING_VARIABLE
            and _normal(assignment.group(2)) == target
        ):
            return _LIGHTNING_STRATEGY.search(text) is not None
    return False


def _option_places(text: str, target: str) -> set[tuple[int, str]]:
    """(line, option name) of every `--<config option> <target>` written in the launcher (the target as written, or
    a variable's value as assigned: `DS_CONFIG="$DIR/ds.json"` ... `--deepspeed "$DIR/ds.json"`)."""
    names = "|".join(re.escape(name).replace("_", "[_-]") for name in CONFIG_OPTIONS)
    pattern = re.compile(rf"--({names})(?:=|\s+)({_TARGET})")
    spellings = {target}
    for raw in text.splitlines():
        assignment = _ASSIGNMENT.match(strip_comment(raw))
        if assignment is not None and target in (f"${assignment.group(1)}",):
            spellings.add(_normal(assignment.group(2)))
    places: set[tuple[int, str]] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        for match in pattern.finditer(strip_comment(raw)):
            if _normal(match.group(2)) in spellings:
                places.add((number, match.group(1).replace("-", "_")))
    return places


def _readers(
    text: str, target: str, lines: Sequence[LaunchLine], reader_of: Callable[[LaunchLine, str], str | None]
) -> set[str | None]:
    """Who reads the config written to `target`: the reader of each launch line of the launcher that passes it."""
    places = _option_places(text, target)
    return {
        reader_of(launch, name)
        for launch in lines
        for name in CONFIG_OPTIONS
        if (option := launch.option(name)) is not None and (option.line, name) in places
    }


def written_config_documents(
    text: str, lines: Sequence[LaunchLine], reader_of: Callable[[LaunchLine, str], str | None]
) -> list[DocumentConfig]:
    """The configs this shell launcher writes with a heredoc and hands to a launch of its own, each to be checked by
    the config rules at the launcher's lines as the file it writes (`DocumentConfig.text_lines`: its variables
    expanded), read by the launch's reader. Only where every value written is known (a literal assigned earlier in
    the launcher): an unknown one could be anything."""
    found: list[DocumentConfig] = []
    for config in written_configs(text):
        if len(config.lines) < 2 or any(unknown for *_, unknown in config.lines):
            continue  # (a one-line `echo` keeps the shell's quoting around it: its text is left to strict_error)
        readers = _readers(text, config.target, lines, reader_of)
        if not readers:
            continue  # written for no launch of this launcher that is known
        written = tuple(line for _, _, line, _ in config.lines)
        first, last = config.lines[0][0], config.lines[-1][0]
        known = tuple(sorted(reader for reader in readers if reader is not None))
        name = os.path.basename(config.target)
        found.append(DocumentConfig(first, last, name, True, known, text_lines=written))
    return found


def written_config_issues(
    text: str, lines: Sequence[LaunchLine], reader_of: Callable[[LaunchLine, str], str | None]
) -> list[LaunchIssue]:
    """The configs this shell launcher writes that their strict reader cannot parse (kind "written_config";
    `detail`: the message). `reader_of(line, option)`: who reads the config the launch line passes in that
    option ("trainer", "lightning", "initialize", "unlinked")."""
    issues: list[LaunchIssue] = []
    for config in written_configs(text):
        error = strict_error(config)
        if error is None:
            continue
        reader = "lightning" if _lightning_reads(text, config.target) else None
        if reader is None:
            readers = _readers(text, config.target, lines, reader_of)
            strict = {found for found in readers if found in STRICT_READERS}
            reader = next(iter(strict)) if strict and strict == readers else None
        if reader is None:
            continue  # DeepSpeed's own hjson reader, or a reader not known
        line, column, what = error
        detail = f"{STRICT_READERS[reader]} reads {config.target} with json.load: {what}"
        issues.append(LaunchIssue("written_config", line, column, column + 1, detail))
    return issues


def record_written_configs(
    index: ProjectIndex,
    launcher: str,
    text: str,
    lines: Sequence[LaunchLine],
    reader_of: Callable[[LaunchLine, str], str | None],
) -> None:
    """The launch issues of the configs this shell launcher writes (`written_config_issues`) and the configs to check
    at its lines (`written_config_documents`), recorded in the index under the launcher (absolute)."""
    index.launch_issues.setdefault(launcher, []).extend(written_config_issues(text, lines, reader_of))
    documents = written_config_documents(text, lines, reader_of)
    if documents:
        index.document_configs.setdefault(launcher, []).extend(documents)

"""Launch commands written in documents: a README's or a guide's code blocks and a notebook's shell lines.

Projects document how a script is run as often as they ship a `.sh` for it: a fenced or indented block in Markdown, a
`.. code-block:: bash` or `::` literal block in reStructuredText, a `!deepspeed train.py ...` line or a `%%bash`
cell in a notebook, a bare command line in a plain-text file of commands (`cmd.txt`, `notes.txt`). Each function
here turns such a file into shell text for `launchers.parse_shell`, with every other line blanked, so that line
numbers still point into the document (for a notebook: the line of the JSON file that holds the source line).
Nothing else in the document is read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dslint.project.launch_cuts import DOCUMENT_LAUNCHER_SUFFIXES as DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.shell_directories import change_directory, cloned_folder

if TYPE_CHECKING:
    from dslint.project.launchers import LaunchLine

# A launch command written as a line of text (`deepspeed --hostfile hf train.py` under "On two nodes:", or of a
# module: `deepspeed --module scripts.train`) in a document without code blocks: Markdown shows it as text, and a
# reader runs it as written.
BARE_LAUNCH = re.compile(
    r"^(deepspeed|torchrun|accelerate\s+launch)\s+(\S+\s+)*(\S+\.py|(--module|-m)\s+[A-Za-z_][\w.]*)(\s|$)"
)

_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^ {0,3}> ?")
# A script that uses DeepSpeed: imports it, or passes or parses a `deepspeed` setting (`deepspeed=...`, `--deepspeed`)
_USES_DEEPSPEED = re.compile(rb"^[ \t]*(?:import|from)[ \t]+deepspeed\b|\bdeepspeed\s*=|--deepspeed", re.MULTILINE)
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(\s|$)")
_RST_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode|prompt)::[ \t]*(\S*)")
_CD_MAGIC = re.compile(r"^%cd\s+(\S.*?)\s*$")
_SHELL_MAGIC = re.compile(r"^\s*%%(?:bash|sh|script\s+(?:ba)?sh)\b")


def shell_texts(name: str, text: str) -> list[str]:
    """The shell commands of the document `name` (by its suffix), other lines blank, as the separate shells
    that run them: a Markdown or reStructuredText document is read as one session (a `cd` in one block holds
    for the next, as for a person following it); each `!` command and each `%%bash` cell of a notebook runs
    in a shell of its own, so a `cd` there ends with it."""
    if name.endswith(".rst"):
        return [rst_code_blocks(text)]
    if name.endswith(".ipynb"):
        return notebook_shells(text)
    if name.endswith(".txt"):
        return [text_commands(text)]
    return [markdown_code_blocks(text)]


def text_commands(text: str) -> str:
    """A plain-text file's launch commands (`cmd.txt`, `notes.txt`: commands kept to be pasted into a shell),
    other lines blanked: a line that is a bare launch command from its first column, with the lines its
    backslashes continue it onto. Notebook cells kept as text (`!deepspeed ...`, `%cd repo`, `!git clone URL`,
    to be pasted into Colab) count too, their `!` or `%` read as a space (columns kept): the magic `%cd` moves
    the session, a `!cd` moves only its own shell and is dropped. Nothing else of a text file is read as shell."""
    out: list[str] = []
    going_on = False
    for line in text.splitlines():
        cell = line[1:] if line[:1] == "!" and not going_on else None
        if cell is not None and change_directory(cell, "", []) is not None:
            out.append("")  # `!cd`: its own shell only
            continue
        if not going_on and (_CD_MAGIC.match(line) is not None or (cell is not None and cloned_folder(cell))):
            out.append(" " + line[1:])
            continue
        keep = going_on or BARE_LAUNCH.match(line if cell is None else cell) is not None
        out.append((line if cell is None else " " + cell) if keep else "")
        going_on = keep and line.rstrip().endswith("\\")
    return "\n".join(out)


def markdown_code_blocks(text: str) -> str:
    """A Markdown file's code blocks, other lines blanked (line numbers kept): fenced blocks, and indented ones
    (CommonMark: lines indented by four spaces or a tab, after a blank line or a heading, that do not go on
    with a list item; they keep their indentation, which the shell ignores, so columns point into the file). In a
    document with no fenced block, a line that is a bare launch command (`deepspeed ... train.py ...` from its
    first column, or after a block quote's `>`) counts too, with the lines its backslashes continue it onto: such a
    README is a list of commands written as text."""
    out: list[str] = []
    bare = not any(_FENCE.match(line) for line in text.splitlines())  # no fenced block: commands may be bare
    inside = False
    indented = False  # inside an indented code block
    previous = ""  # the last line outside a code block: blank, a heading, a list item, text
    in_list = False  # a list item is open: an indented line goes on with it
    going_on = False  # a bare launch command's backslash continues it onto this line
    for line in text.splitlines():
        if going_on:
            out.append(line)
            going_on = line.rstrip().endswith("\\")
            previous = line
            continue
        if inside or _FENCE.match(line):
            if closes_fence(line) if inside else True:
                inside, indented, previous = not inside, False, ""
                out.append("")
            else:
                out.append(line)
            continue
        code_indent = line.startswith(("    ", "\t")) and bool(line.strip())
        if indented and (code_indent or not line.strip()):
            out.append(line)
            continue
        indented = False
        opens = not previous.strip() or _HEADING.match(previous) is not None
        if code_indent and opens and not in_list:
            indented = True
            out.append(line)
            continue
        quote = _QUOTE.match(line)  # a command written as a block quote (`> deepspeed train.py ...`): the same
        command = " " * quote.end() + line[quote.end() :] if quote is not None else line  # columns kept
        if bare and BARE_LAUNCH.match(command.lstrip() if quote is not None else command):
            out.append(command)  # a README of bare commands, as text lines (with the lines their backslashes
            previous = line  # continue them onto)
            going_on = line.rstrip().endswith("\\")
            continue
        out.append("")
        if _LIST_ITEM.match(line):
            in_list = True
        elif line.strip() and not line.startswith((" ", "\t")):
            in_list = False
        previous = line
    return "\n".join(out)


def rst_code_blocks(text: str) -> str:
    """A reStructuredText file's literal blocks (after a `::` paragraph or a code directive), other lines blank."""
    lines = text.splitlines()
    out = [""] * len(lines)
    for block in rst_blocks(text):
        for number in range(block.first, block.last + 1):
            out[number - 1] = lines[number - 1]
    return "\n".join(out)


@dataclass(frozen=True)
class CodeBlock:
    """A code block of a document, by its line numbers (1-based): the line that opens it (a fence, a code
    directive, a paragraph ending with `::`), its body (`first` to `last`, inclusive; empty when `first > last`),
    the language written for it (lower case, "" when none) and what else the opening says (a fence's info string
    after the language, a directive's options such as `:caption: ds_config.json`)."""

    opening: int
    first: int
    last: int
    language: str = ""
    info: str = ""


def code_blocks(name: str, text: str) -> list[CodeBlock]:
    """The fenced code blocks of a Markdown document, or the literal blocks of a reStructuredText one (by the
    suffix of `name`), in order. A fence left open at the end of the document opens no block."""
    return rst_blocks(text) if name.endswith(".rst") else fenced_blocks(text)


def closes_fence(line: str) -> bool:
    """A fence line that can close a fenced block: nothing but spaces after the backticks or tildes (CommonMark: a
    closing fence has no info string, so a fence line naming a language inside a block is the block's text)."""
    fence = _FENCE.match(line)
    return fence is not None and not line[fence.end() :].lstrip("`~").strip()


def fenced_blocks(text: str) -> list[CodeBlock]:
    """A Markdown document's fenced blocks (``` or ~~~), toggled by fence lines as `markdown_code_blocks` reads
    them."""
    blocks: list[CodeBlock] = []
    opening: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        fence = _FENCE.match(line)
        if fence is None:
            continue
        if opening is None:
            opening = number, line[fence.end() :].lstrip("`~").strip()
            continue
        if not closes_fence(line):
            continue  # ```bash inside a block: its text, not its end
        start, info = opening
        words = info.split(maxsplit=1)
        language = words[0].strip("{}.").lower() if words else ""
        blocks.append(CodeBlock(start, start + 1, number - 1, language, words[1] if len(words) > 1 else ""))
        opening = None
    return blocks


def rst_blocks(text: str) -> list[CodeBlock]:
    """A reStructuredText document's literal blocks: the indented lines after a `::` paragraph or a code
    directive (its options, the `:name:` lines right after it, excluded), up to the first line indented no
    deeper than the line that opened it."""
    lines = text.splitlines()
    blocks: list[CodeBlock] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        directive = _RST_DIRECTIVE.match(line)
        opens = directive is not None or (line.rstrip().endswith("::") and not line.lstrip().startswith(".."))
        index += 1
        if not opens:
            continue
        opening = index  # its line number
        base = len(line) - len(line.lstrip())
        options: list[str] = []
        while directive is not None and index < len(lines) and _is_option(lines[index], base):
            options.append(lines[index].strip())
            index += 1
        first, last = index + 1, index
        while index < len(lines):
            body = lines[index]
            if body.strip():
                if len(body) - len(body.lstrip()) <= base:
                    break
                last = index + 1
            index += 1
        language = directive.group(2).lower() if directive is not None else ""
        blocks.append(CodeBlock(opening, first, last, language, " ".join(options)))
    return blocks


def _is_option(line: str, base: int) -> bool:
    """A directive's option line (`:caption: ...`), indented under the directive at `base`."""
    return line.lstrip().startswith(":") and len(line) - len(line.lstrip()) > base


def notebook_shells(text: str) -> list[str]:
    """A notebook's shell commands: code-cell lines run through the shell (`!cmd`, with its continued lines)
    and whole `%%bash` cells, one text per shell, each command at the line of the notebook file that holds it
    (nbformat writes one source line per JSON line), other lines blank. What holds for every later shell of the
    kernel comes first in each: a `%cd DIR` magic (the kernel's folder) and a `!git clone` (the folder it made,
    which a later `%cd` may enter)."""
    try:
        notebook = json.loads(text)
    except ValueError:
        return []
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return []
    physical = text.splitlines()
    shells: list[dict[int, str]] = []
    kept: dict[int, str] = {}  # the lines every later shell starts from
    cursor = 0
    for cell in cells:
        # Each cell's "source" key, in order: a command is looked for after it (not in an earlier cell's outputs).
        start = _line_holding(physical, '"source"', cursor, encode=False)
        cursor = start if start is not None else cursor
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            if start is not None:
                cursor += 1
            continue
        source = cell.get("source")
        if isinstance(source, str):
            source = source.splitlines(keepends=True)
        if not isinstance(source, list) or not all(isinstance(part, str) for part in source):
            continue
        shell_cell = bool(source) and _SHELL_MAGIC.match(source[0]) is not None
        if shell_cell:
            shells.append(dict(kept))
        continued = False  # the previous `!` line ended with a backslash: this line goes on with it
        for number, part in enumerate(source):
            command = part.rstrip("\n")
            if shell_cell and number == 0:
                continue
            if not shell_cell and not continued:
                stripped = command.lstrip()
                magic = _CD_MAGIC.match(stripped)
                if magic is not None:
                    where = _line_holding(physical, part, cursor)
                    if where is not None:
                        cursor, kept[where] = where, "cd " + magic.group(1)
                    continue
                if not stripped.startswith("!"):
                    continue
                command = stripped[1:]
                shells.append(dict(kept))
            continued = not shell_cell and command.rstrip().endswith("\\")
            where = _line_holding(physical, part, cursor)
            if where is None:
                continue
            cursor = where
            # A continued command keeps its backslash: parse_shell joins the following line.
            shells[-1][where] = command
            if not shell_cell and cloned_folder(command) is not None:
                kept[where] = command
    return ["\n".join(shell.get(number, "") for number in range(len(physical))) for shell in shells if shell]


def _line_holding(physical: list[str], part: str, start: int, encode: bool = True) -> int | None:
    """The first line at or after `start` whose text holds `part`: a source line, JSON-encoded (with or without
    escaped non-ASCII characters), or with `encode=False` the text itself."""
    if not part.strip():
        return None
    encodings = {json.dumps(part)[1:-1], json.dumps(part, ensure_ascii=False)[1:-1]} if encode else {part}
    for number in range(start, len(physical)):
        if any(encoded in physical[number] for encoded in encodings):
            return number
    return None


def documented_script(
    line: LaunchLine, document: str, by_name: dict[str, list[str]], read: Callable[[str], bytes | None]
) -> str | None:
    """The script a document's command names, when the command is written to be run from elsewhere (a README
    that says to copy the script into another project first, or to run it from a folder it does not say): the
    one Python file under the document's folder whose path ends with the written path; of several, for a
    DeepSpeed command (the `deepspeed` launcher, or a DeepSpeed config option), the only one that uses DeepSpeed
    (imports it, or passes or parses a `deepspeed` setting: `deepspeed/train.py` beside `colossalai/train.py`).
    None when there is no such file or no one of several (nothing is guessed). `by_name`: the project's Python
    files by file name (a path ending with the written one has its file name); `document` is absolute; `read`:
    a file's bytes."""
    written = os.path.normpath(line.script).lstrip(os.sep)
    if written.startswith(".."):
        return None
    folder = os.path.dirname(document) + os.sep
    tail = os.sep + written
    named = by_name.get(os.path.basename(written), ())
    found = [path for path in named if path.startswith(folder) and path.endswith(tail)]
    if len(found) > 1 and (line.tool == "deepspeed" or line.config_option() is not None):
        found = [path for path in found if _USES_DEEPSPEED.search(read(path) or b"") is not None]
    return found[0] if len(found) == 1 else None


# A word of a line that may run a script: a launcher, an interpreter, a shell running a file (`./run.sh`).
_COMMAND_WORD = re.compile(
    rb"(?:^|[\s`$(!])(?:python[0-9.]*|deepspeed|torchrun|accelerate|srun|mpirun|bash|sh)\s|(?:^|\s)\./", re.IGNORECASE
)


def unread_mention(script: str, path: str, text: bytes, launched: Collection[str]) -> bool:
    """Whether the launcher `path` names the launched script's file (`text` holds its base name) where the index read
    no launch of it: not when a launch it holds starts the script, or another file of that name (a copy of the
    project in a subfolder, launched from there); in a document, only on a line that holds a command word
    (`python train.py`, `bash run.sh`): a prose mention ("see `train.py` for the options") is none. Any other mention
    in a shell script, a Makefile or a YAML may be a launch the index did not read."""
    name = os.path.basename(script)
    if script in launched or any(os.path.basename(other) == name for other in launched):
        return False
    if not path.endswith(DOCUMENT_LAUNCHER_SUFFIXES):
        return True
    file = name.encode()
    return any(file in line and _COMMAND_WORD.search(line) is not None for line in text.splitlines())


_NAMED = frozenset(bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def mention_holders(texts: dict[str, bytes], names: set[bytes]) -> dict[bytes, list[str]]:
    """For each of `names`, the texts holding it (`name in text`), in the texts' order. A name ending in `.py`
    ends at an occurrence of `.py`, and starts where no file name's character comes before it (`trainer_main.py`
    is no mention of `main.py`): each text is read once, at those occurrences, instead of once per name."""
    found: dict[bytes, list[str]] = {name: [] for name in names}
    suffixed = {name for name in names if name.endswith(b".py")}
    lengths = sorted({len(name) for name in suffixed})
    for at, text in texts.items():
        seen: set[bytes] = {name for name in names - suffixed if name in text}
        end = text.find(b".py") + 3
        while end > 2:
            seen.update(
                piece
                for k in lengths
                if k <= end and (piece := text[end - k : end]) in suffixed and _starts(text, end - k, piece)
            )
            end = text.find(b".py", end - 2) + 3
        for name in seen:
            found[name].append(at)
    return found


def _starts(text: bytes, at: int, name: bytes) -> bool:
    """Whether `name` found at `at` starts there: no file name's character before a name starting with one."""
    return name[:1] not in _NAMED or text[at - 1 : at] not in _NAMED

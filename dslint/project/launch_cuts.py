"""Where bash ends a launch command before the line its author meant to end it: a backslash followed by a space
or a tab (it escapes that character, and the newline ends the command), a comment line inside the continuation,
or an option line after a line without a backslash. `launchers.parse_shell` records what was lost.
"""

from __future__ import annotations

import re

# The documents whose code blocks hold launch commands (Markdown, reST, notebooks, plain-text command notes).
DOCUMENT_LAUNCHER_SUFFIXES = (".md", ".rst", ".ipynb", ".txt")


def strip_comment(line: str) -> str:
    """Drop a `#` comment that starts a word outside quotes."""
    if "#" not in line:
        return line  # what follows would return it whole
    quote: str | None = None
    previous = " "
    for index, char in enumerate(line):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and previous in " \t;":
            return line[:index]
        previous = char
    return line


# A line that ends with a backslash and then spaces or tabs: bash escapes the first of them, and the newline
# ends the command.
_SPACED_BACKSLASH = re.compile(r"\\[ \t]+$")


def spaced_launcher(logical: str, number: int, physical: list[str], stems: re.Pattern[str]) -> bool:
    r"""A line with a launcher's word whose backslash has a space after it (`deepspeed \  # a note`)."""
    last = number + logical.count("\n")
    raw = physical[last - 1] if 0 < last <= len(physical) else ""
    return _SPACED_BACKSLASH.search(strip_comment(raw)) is not None and stems.search(logical) is not None


def cut_short(
    logical: str, first_line: int, physical: list[str], document: bool = False
) -> tuple[int, tuple[str, ...], str] | None:
    """(the line that ends a command early, the options written on the lines after it, why) when option lines
    follow a command that bash has already ended; None otherwise. Why: `comment` (a comment line inside the
    backslash continuation), `space` (a space or tab after the line's backslash) or `newline` (no backslash at
    all, and the next line starts with a `--option`). `document`: the lines are a document's code blocks, other
    lines blank: a blank line ends the block, and what follows it is another block's (`# ... other options`
    closing a snippet cuts nothing)."""
    parts = logical.split("\n")
    last = first_line + len(parts) - 1
    raw_last = physical[last - 1] if 0 < last <= len(physical) else ""
    after = physical[last] if last < len(physical) else ""
    if len(parts) >= 2 and parts[-1].lstrip().startswith("#"):
        cause = "comment"
    elif _SPACED_BACKSLASH.search(strip_comment(raw_last)):  # `--lr 1e-5 \ ` or `--lr 1e-5 \  # note`
        cause = "space"
    elif re.match(r"\s*--[A-Za-z]", after) and (len(parts) >= 2 or after.rstrip().endswith("\\")):
        # no backslash before an option line, in a command written with continuations (a document that writes
        # every option on a line of its own without any backslash shows a command to be typed on one line)
        cause = "newline"
    else:
        return None
    lost: list[str] = []
    for raw in physical[last:]:  # the lines after the command's last one (0-based index = its line number)
        stripped = strip_comment(raw).strip() if cause == "space" else raw.strip()
        if document and not raw.strip():
            break
        if cause != "newline" and (not stripped or stripped.startswith("#")):
            continue
        if not stripped.startswith("-"):
            if cause == "space" and stripped.endswith("\\"):
                continue  # the script, or a positional argument, cut off with the options around it
            break
        lost.append(stripped.split()[0].split("=", 1)[0])
        # a line without a continuation ends the run of lost options
        if not stripped.endswith("\\"):
            break
    return (last, tuple(lost), cause) if lost else None

"""Where a shell command runs, and what the shell leaves unknown: the folder `cd`, `pushd`, `popd` and a
`git clone` move to, and a variable holding the launcher's own folder (`DIR=$(dirname "$0")`)."""

from __future__ import annotations

import functools
import os
import re
import shlex

# a value the shell computes at run time (`$(date)`, an unset variable): never guessed
UNKNOWN_VALUE = "\x00unknown"

# shlex builds its words from a segment's characters less its quotes and backslashes: a word of the split
# (`cd`, `python`, `x.py`) is a substring of the segment once those are removed
_QUOTING = str.maketrans("", "", "'\"\\")


def unquoted(segment: str) -> str:
    return segment.translate(_QUOTING)


_OPERATORS = re.compile(r"&&|\|\||;|\|")
_PIPES = re.compile(r"&&|\|\||;")  # a Makefile recipe's separators: a pipe's right side is not split off


def command_segments(line: str, pipes: bool = True) -> list[str]:
    """The commands of a shell line split at `&&`, `||`, `;` and (with `pipes`) `|`, outside quotes and not
    escaped: `--target 'layers\\.(q_proj|v_proj)'` stays one word of its command. An unclosed quote leaves the
    rest of the line in its last segment (the command is then refused by `shell_words`, as before)."""
    pattern = _OPERATORS if pipes else _PIPES
    if "'" not in line and '"' not in line and "\\" not in line:
        return pattern.split(line)
    segments: list[str] = []
    start = index = 0
    quote: str | None = None
    while index < len(line):
        char = line[index]
        if quote is not None:
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"':
                index += 1
        elif char in "'\"":
            quote = char
        elif char == "\\":
            index += 1
        else:
            found = pattern.match(line, index)
            if found is not None:
                segments.append(line[start:index])
                start = index = found.end()
                continue
        index += 1
    segments.append(line[start:])
    return segments


# shlex's whitespace (not every Unicode space): outside quotes, the only characters that end a word
_SHLEX_WORD = re.compile(r"[^ \t\r\n]+")


def shell_words(text: str) -> list[str]:
    """`shlex.split(text)` (raising its ValueError for an open quote), without shlex's reader, which takes a
    character at a time, where nothing needs it: in a text without quotes or backslashes every word is a run
    of characters other than shlex's whitespace."""
    if "'" in text or '"' in text or "\\" in text:
        return list(_quoted_words(text))
    return _SHLEX_WORD.findall(text)


@functools.lru_cache(maxsize=4096)  # the same quoted text comes back: `X=""` lines, a command copied across scripts
def _quoted_words(text: str) -> tuple[str, ...]:
    return tuple(shlex.split(text))


def own_directory(value: str, here: str) -> str | None:
    """The launcher's own directory (absolute) when `value` computes it from `$0` or `BASH_SOURCE`, with a
    literal path tail appended; None for any other value."""
    text = value.strip().strip("'\"")
    if not text.startswith("$("):
        return None
    depth, close = 0, -1
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                close = index
                break
    if close < 0:
        return None
    inner, tail = text[2:close], text[close + 1 :].strip("'\"")
    if "dirname" not in inner or re.search(r"\$0\b|\$\{0\}|BASH_SOURCE", inner) is None:
        return None
    # `$(cd "$(dirname "$0")" && cd .. && pwd)`: each `cd ..` after the dirname climbs one folder.
    climbs = len(re.findall(r"(?:&&|;)\s*cd\s+\.\.(?=\s|&|;|$)", inner))
    if inner.count("..") != climbs:
        return None
    tail = "/.." * climbs + tail
    if tail and (not tail.startswith("/") or re.search(r"[$`\s]", tail)):
        return None
    return os.path.normpath(here + tail)


# `$(pwd)`, `` `pwd` `` (also `pwd -L`/`-P`): the folder the shell is in, as `$PWD` holds it
_PWD_CALL = re.compile(r"\$\(\s*pwd(?:\s+-[LP])?\s*\)|`\s*pwd(?:\s+-[LP])?\s*`")
_PWD_VARIABLE = re.compile(r"\$\{?PWD\b\}?")


def with_working_directory(value: str) -> tuple[str, bool]:
    """`value` with `$(pwd)` and backquoted `pwd` written as `${PWD}`, and whether it names the working directory.
    A launcher's `$PWD` is "." (where its relative paths are read from: `find_written` tries the launcher's folder
    and the repository's top); a variable that holds it is that folder only until the next `cd`."""
    value = _PWD_CALL.sub("${PWD}", value)
    return value, _PWD_VARIABLE.search(value) is not None


def cloned_folder(segment: str) -> str | None:
    """The folder a `git clone URL [DIR]` segment makes (DIR, else the URL's last part without `.git`)."""
    if "clone" not in segment:
        return None
    try:
        words = shell_words(segment)
    except ValueError:
        return None
    if words[:2] != ["git", "clone"]:
        return None
    # git clone's options that take a value (the rest are flags)
    valued = {"-b", "--branch", "--depth", "-o", "--origin", "-c", "--config", "--reference", "-j", "--jobs"}
    positional: list[str] = []
    skip = False
    for word in words[2:]:
        if skip:
            skip = False
        elif word in valued:
            skip = True
        elif not word.startswith("-"):
            positional.append(word)
    if not positional or UNKNOWN_VALUE in "".join(positional):
        return None
    folder = positional[1] if len(positional) > 1 else positional[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    folder = folder.removesuffix(".git")
    return os.path.normpath(folder) if folder else None


def change_directory(segment: str, directory: str, pushed: list[str]) -> str | None:
    """The directory after `segment` when it is a `cd`/`pushd`/`popd` (relative to the launcher's directory,
    or absolute); None when the segment is no directory change. A target built at run time leaves the
    directory as it was: nothing is guessed, and the launcher's own folder stays the place to look."""
    plain = unquoted(segment)
    if "cd" not in plain and "pushd" not in plain and "popd" not in plain:
        return None  # no word of the segment can be one of them: shlex is not needed
    try:
        words = shell_words(segment)
    except ValueError:
        return None
    if not words or words[0] not in ("cd", "pushd", "popd"):
        return None
    if words[0] == "popd":
        return pushed.pop() if pushed else directory
    targets = [word for word in words[1:] if not word.startswith("-")]
    if len(targets) != 1 or UNKNOWN_VALUE in targets[0] or targets[0].startswith("~"):
        return directory
    if words[0] == "pushd":
        pushed.append(directory)
    return os.path.normpath(os.path.join(directory, targets[0]))


def in_clone(directory: str, clones: set[str]) -> str:
    """Where a command runs in this repository: inside a folder an earlier `git clone` made (`clones`, each
    where it was made), as a README's `git clone URL` then `cd NAME` has it, the reader is in this repository;
    a `cd ..` out of the clone (after installing a dependency cloned beside it) is back where it was. Of clones
    made one inside another (a block run twice clones again inside the first clone), the innermost holding the
    directory is the one the reader is in: longest first, never the set's order."""
    for clone in sorted(clones, key=lambda folder: (-len(folder), folder)):
        if directory == clone:
            return ""
        if directory.startswith(clone + os.sep):
            return os.path.relpath(directory, clone)
    return directory

"""A project's shell script that runs a launcher with every argument it is given (`exec deepspeed "$@"`, after
setting up the environment): a command that starts it (`bash ds_wrapper.sh --num_gpus=1 train.py --deepspeed
ds.json`) is that launcher's command, with the wrapper's own words before the caller's."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from dslint.project.launch_wrappers import LAUNCHER_WORDS
from dslint.project.shell_directories import shell_words

# The words that stand for every argument of the script: `"$@"`, `$@`, `"${@}"`, `$*`.
_ALL_ARGUMENTS = frozenset({"$@", "${@}", "$*", "${*}"})
# A line that may forward them: a launcher's word and `$@`/`$*` (a cheap test before the shell words).
_FORWARDING = re.compile(r"\b(?:deepspeed|torchrun|accelerate|python3?)\b.*\$\{?[@*]")
# How a command starts a script of the project: `bash x.sh`, `sh x.sh`, `./x.sh`, `scripts/x.sh`.
_SHELLS = frozenset({"bash", "sh"})


def forwarded_prefix(text: str) -> tuple[str, ...] | None:
    """The words of the wrapper's one launch that forwards all its arguments, before them (`("exec", "deepspeed")`
    for `exec deepspeed "$@"`), when no word of them is built at run time; None for any other script."""
    found: tuple[str, ...] | None = None
    for line in text.splitlines():
        if _FORWARDING.search(line) is None or line.lstrip().startswith("#"):
            continue
        try:
            words = shell_words(line.split(" #", 1)[0])
        except ValueError:
            continue
        if not words or words[-1] not in _ALL_ARGUMENTS:
            continue
        prefix = tuple(words[:-1])
        start = 1 if prefix[:1] == ("exec",) else 0
        if not prefix[start:] or prefix[start].rsplit("/", 1)[-1] not in LAUNCHER_WORDS:
            continue
        if any("$" in word or "`" in word for word in prefix) or (found is not None and found != prefix):
            return None  # built at run time, or two different forwarding launches: which one runs is not known
        found = prefix
    return found


def through_wrapper(segment: str, read: Callable[[str], str | None]) -> tuple[str, str] | None:
    """The command `segment` runs when it starts a project wrapper that forwards its arguments to a launcher
    (`bash ds_wrapper.sh --num_gpus=1 train.py` -> `exec deepspeed --num_gpus=1 train.py`), as one line of shell
    words, and the wrapper's path as written; None when it starts no such wrapper (`read`: a project file's text
    by its path as written)."""
    try:
        words = shell_words(segment)
    except ValueError:
        return None
    at = 1 if words[:1] and words[0] in _SHELLS else 0
    if len(words) <= at or not words[at].endswith(".sh"):
        return None
    text = read(words[at])
    prefix = forwarded_prefix(text) if text is not None else None
    if prefix is None:
        return None
    return shlex.join([*prefix, *words[at + 1 :]]), words[at]

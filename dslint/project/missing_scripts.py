"""DSL444's question: the Python script a DeepSpeed launch starts is a file of that name nowhere in the project
(or one whose path matches a project file only when letter case is ignored, which Linux tells apart), and nothing
in the project writes or fetches one: every rank stops at once ("can't open file")."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from os.path import isdir
from pathlib import Path

from dslint.diagnostics import Related
from dslint.model.library import EXTERNAL_ENTRY_SCRIPTS, MEGATRON_OPTIONS
from dslint.project.inputs import absolute, exists, find_written, shown_path
from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.missing_configs import case_twins, writes
from dslint.project.project_index import LaunchIssue, LaunchSite
from dslint.project.shell_directories import UNKNOWN_VALUE

# A path the reader is meant to fill in: `your_script.py`, `{path_to_repo}/train.py`, `<script>.py`.
_PLACEHOLDER = re.compile(r"[{}<>]|\byour|path_to|/path/to", re.IGNORECASE)

# Words of a launcher that bring code from elsewhere before the launch: the script may be one of those files.
_FETCHES = re.compile(r"\b(git\s+clone|wget|curl|scp|rsync|gsutil|aws\s+s3|hf\s+download|huggingface-cli|unzip|tar)\b")


def missing_script_issue(
    site: LaunchSite,
    deepspeed: bool,
    sources: dict[str, bytes],
    launcher_text: Callable[[str], str | None],
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
    roots: Sequence[str],
    takes_options: Callable[[str], bool] = lambda _: False,
) -> LaunchIssue | None:
    """The script of a DeepSpeed launch when no file of its name is anywhere in the project (a path read from the
    wrong folder is not this: a file of the name elsewhere answers None), no Python line names it while writing or
    fetching a file (a script generated), and the launcher neither writes it nor fetches code (`git clone`,
    `wget`...). A path built at run time, an absolute or home path, a `cd` to such a folder, a module
    (`-m`), and a document's launch (a pattern for the reader's own script, often) are left alone. A path that
    names a project file but for letter case (`SFT/train.py` where the project has `sft/train.py`) is missing
    on Linux whatever else has the name: the issue then carries those files (`elsewhere`). A path whose folder
    is nowhere in the project (`src/train.py` with no `src/`) is a checkout of another project, unless the
    project has exactly one file of that name and `takes_options` says its strict parser takes every option of
    the launch (the script moved, the launcher did not follow): the issue carries it (`cause` "moved")."""
    line = site.line
    written = line.script
    if line.module or not written.endswith(".py") or not deepspeed or line.script_root_unknown:
        return None
    if os.path.isabs(written) or written.startswith("~") or UNKNOWN_VALUE in written or "$" in written:
        return None
    if os.path.isabs(line.directory) or UNKNOWN_VALUE in line.directory or "$" in line.directory:
        return None
    if line.launcher.endswith(DOCUMENT_LAUNCHER_SUFFIXES):
        return None  # a guide's command is often a pattern for the reader's own script, or for another checkout
    name = os.path.basename(written)
    if _PLACEHOLDER.search(written) or EXTERNAL_ENTRY_SCRIPTS.match(name):
        return None
    if any(option.name.replace("_", "-") in MEGATRON_OPTIONS for option in line.options):
        return None  # Megatron's own options: its entry script, run from a Megatron checkout
    # the path of a project file but for letter case (`SFT/train.py` for `sft/train.py`): none on Linux
    twins = case_twins(written, file_names) if not find_written(written, line.launcher, roots, line.directory) else ()
    folder = os.path.dirname(os.path.normpath(written))
    cause = ""
    if not twins and folder not in ("", ".") and not find_written(folder, line.launcher, roots, line.directory, isdir):
        # the script's folder is not in the project either: a checkout of another project, or a script moved
        named = file_names().get(name, ())
        if len(named) != 1 or not line.options or not takes_options(named[0]):
            return None
        twins, cause = named, "moved"
    if not twins and (file_names().get(name) or any(_writes_file(data, name.encode()) for data in sources.values())):
        return None
    if not _checked_whole(line.launcher, roots):
        return None  # the checked folders are part of a repository: the script may be in the rest of it
    text = launcher_text(line.launcher)
    if text is None or _FETCHES.search(text) or writes(text, written):
        return None
    word = re.compile(rf"(?<![\w./-]){re.escape(written)}(?![\w.])")
    physical = text.splitlines()
    last = max(line.line, line.cut_line) if line.cut_line else min(len(physical), line.line + 40)
    shown = tuple(shown_path(twin) for twin in twins)
    for number in range(line.line, min(last, len(physical)) + 1):
        match = word.search(_COMMENT.sub("", physical[number - 1]))  # a comment's text is not the command's
        if match is not None:
            start, end = match.start() + 1, match.end() + 1
            # on a continuation line: where the command starts, too
            command = Related(shown_path(absolute(line.launcher)), line.line, line.column, f"the {line.tool} command")
            related = (command,) if number != line.line else ()
            return LaunchIssue(
                "missing_script", number, start, end, written, related=related, elsewhere=shown, cause=cause
            )
    # the script named through a variable (`deepspeed $TRAINING_SCRIPT`): the command itself
    end = line.column + len(line.tool)
    return LaunchIssue("missing_script", line.line, line.column, end, written, elsewhere=shown, cause=cause)


# A shell comment: `#` at a line's start or after white space, to the line's end.
_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$")


# What a Python line naming the script must do for the script to be one that the project writes or fetches.
_WRITING = re.compile(rb"open\(|\.write|copy|move|rename|symlink|download|urlretrieve|render|template", re.IGNORECASE)


def _writes_file(source: bytes, name: bytes) -> bool:
    """Whether a line of `source` names `name` while writing, copying or fetching a file (a mention in a
    message, a comment or an import is not that)."""
    if name not in source:
        return False
    return any(name in line and _WRITING.search(line) for line in source.splitlines())


def _checked_whole(launcher: str, roots: Sequence[str]) -> bool:
    """Whether the repository holding `launcher` (its nearest folder with `.git`) is inside a checked root: when
    only part of it is checked, the files outside are not known. No `.git` above: the roots are the project."""
    folder = Path(absolute(launcher)).parent
    for ancestor in [folder, *folder.parents]:
        if exists(ancestor / ".git"):
            top = str(ancestor)
            return any(top == root or top.startswith(root.rstrip(os.sep) + os.sep) for root in roots)
    return True

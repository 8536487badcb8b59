"""Reading launchers: the shell scripts and Makefile targets that start a training script (the accelerate YAML
files they name are read by `project/accelerate_yaml.py`).

What a launch line tells: which Python script runs (`deepspeed [--num_gpus N] train.py`, `torchrun ...
train.py`, `python -m torch.distributed.launch ... train.py`, `accelerate launch --config_file acc.yaml
train.py`, plain `python train.py`), and the options the script gets (`--deepspeed_config ds.json`,
`--deepspeed ds_z3.json`, `--zero_stage 3`). Variables assigned a literal in the same file (`ZERO_STAGE=3`,
`CONFIG := ds.json`) or in a file it sources (`source env.sh`) are substituted, and `${VAR:-default}` gives its
default where the file leaves VAR unset; a value built at run time (`$(date)`, `$1`, an unknown `$VAR`) stays
unknown and is never guessed. A command ends where bash ends it (a comment line inside a backslash
continuation, a space after the last backslash, a missing backslash): the option lines written after it are
recorded as lost (`LaunchLine.lost_options`). Nothing here reads the file system (a sourced
file is read through `parse_shell`'s `read`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from dslint.project.forwarding_wrappers import through_wrapper
from dslint.project.launch_cuts import DOCUMENT_LAUNCHER_SUFFIXES, cut_short, spaced_launcher, strip_comment
from dslint.project.launch_wrappers import LAUNCHER_WORDS, command_start
from dslint.project.shell_directories import (
    UNKNOWN_VALUE,
    change_directory,
    cloned_folder,
    command_segments,
    in_clone,
    own_directory,
    shell_words,
    unquoted,
    with_working_directory,
)
from dslint.project.shell_variables import (
    ArgumentCases,
    assign,
    assigned_value,
    assignment_in,
    held_command,
    quoted_value_end,
    substitute,
)

# `python -m X script.py`: the modules that launch a training script.
LAUNCH_MODULES = frozenset(
    {"torch.distributed.launch", "torch.distributed.run", "deepspeed.launcher.runner", "accelerate.commands.launch"}
)
# Script options that name the DeepSpeed config file (the option's dest, as argparse spells it).
CONFIG_OPTIONS = (
    "deepspeed_config",
    "deepspeed",
    "ds_config",
    "deepspeed_config_file",
    "ds_config_path",
    "ds_config_file",
    "deepspeed_config_path",
)

_MAKE_ASSIGNMENT = re.compile(r"^\s*(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|::=|\?=|=)\s*(.*)$")
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_./%-]+)\s*:(?!=)")
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+(\S+)\s*$")


@dataclass(frozen=True)
class ScriptOption:
    """One `--name value` (or `--name=value`, or a bare flag: value None) given to the launched script."""

    name: str  # as argparse stores it: dashes stripped, inner dashes as underscores
    value: str | None  # None: a flag; UNKNOWN_VALUE: built at run time
    line: int
    column: int


@dataclass(frozen=True)
class LaunchLine:
    """One command in a launcher that starts a Python script."""

    launcher: str  # the launcher file, as given
    line: int  # 1-based line of the command's first word
    column: int
    tool: str  # deepspeed | torchrun | accelerate | python | torch.distributed.launch ...
    script: str  # as written (relative to wherever the launcher runs)
    options: tuple[ScriptOption, ...] = ()
    accelerate_config: str | None = None  # `accelerate launch --config_file X`
    target: str | None = None  # the Makefile target holding the command
    # The launcher's own options, before the script (`--num_gpus 8`, `--nproc_per_node=4`, `--hostfile hf`).
    launcher_options: tuple[ScriptOption, ...] = ()
    # Environment the command gets from the line (`CUDA_VISIBLE_DEVICES=0,1 deepspeed ...`) or an earlier
    # `export NAME=literal` in the same file; a value built at run time is UNKNOWN_VALUE.
    environment: tuple[tuple[str, str], ...] = ()
    # Where the command runs after the launcher's literal `cd`/`pushd` (relative to the launcher's directory, or
    # absolute); "" when it never changes directory. The script and its options' paths are read from there.
    directory: str = ""
    # A command that bash ends before option lines written for it: the line where it ends, and the options
    # written on the lines after it, which the script never gets (bash runs each of those lines as a command of
    # its own). Why it ended (`cut_cause`): `comment`, a comment line inside the backslash continuation (bash
    # drops the comment, and the newline after it ends the command; `cut_line` is the comment's); `space`, a
    # space or tab after the last backslash; `newline`, no backslash before an option line.
    cut_line: int = 0
    lost_options: tuple[str, ...] = ()
    cut_cause: str = ""
    # The launcher's own short options, as written (`-H`, `-i`): `launcher_options` holds only `--name` ones.
    launcher_short_options: tuple[str, ...] = ()
    # The script's short options, as written (`-c`, `-lr`): `options` holds only `--name` ones.
    short_options: tuple[str, ...] = ()
    spawned_by: str = ""  # the wrapper that starts the processes itself (`srun`, `mpirun`), if any
    # The module a `-m`/`--module` launch runs (`pkg.train`; `script` is then its file, `pkg/train.py`), else ""
    module: str = ""
    # Every launcher word before the script, with its line and column (`deepspeed --num_gpus 2 python x.py`).
    launcher_words: tuple[tuple[str, int, int], ...] = ()
    # A word after the script is built at run time and may hold options of its own (`"$@"`, `$EXTRA_ARGS`; not
    # the value of the option before it, `--output_dir $OUT`): the script's options are not all known.
    open_words: bool = True
    # The script's path was written under a folder built at run time: `script` is its known part (`src/train.py`)
    script_root_unknown: bool = False

    def launcher_option(self, *names: str) -> ScriptOption | None:
        """The last of the launcher's own options spelt as any of `names` (dashes as underscores)."""
        return next((option for option in reversed(self.launcher_options) if option.name in names), None)

    def option(self, name: str) -> ScriptOption | None:
        """The last occurrence of `--name` (argparse keeps the last)."""
        return next((option for option in reversed(self.options) if option.name == name), None)

    def config_option(self) -> ScriptOption | None:
        """The script option that names a DeepSpeed config file by a literal path (the first of CONFIG_OPTIONS
        given one, or nested: `--training_args.deepspeed`; `--deepspeed` alone is DeepSpeed's flag); None if none."""
        for name in CONFIG_OPTIONS:
            option = self.option(name) or next((o for o in self.options[::-1] if o.name.endswith("." + name)), None)
            if option is None or option.value is None or option.value == UNKNOWN_VALUE:
                continue
            if name == "deepspeed" and not option.value.endswith((".json", ".hjson", ".yaml", ".yml")):
                continue
            return option
        return None


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with backslash continuations joined, each with the number of its first physical line."""
    result: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 1
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        raw = lines[index]
        index += 1
        if not buffer:
            start = index
            # a quoted value bash continues over lines (`CMD="torchrun --nnodes=2` ... `--rdzv_id=7"`): one line
            end = quoted_value_end(lines, index - 1) if "=" in raw else None
            if end is not None:
                joined = [line[:-1] if line.endswith("\\") else line for line in lines[index - 1 : end]]
                joined.append(lines[end])
                if re.match(r"[^=]*=\(", raw):  # an array: a comment ends each of its lines
                    joined = [strip_comment(line) for line in joined]
                result.append((start, "\n".join(joined)))
                index = end + 1
                continue
        # A backslash continues the line only as its last character: followed by a space or a tab it escapes
        # that character, and the newline ends the command (as bash does). Inside a comment it continues
        # nothing: the shell drops the comment, backslash and all.
        if raw.endswith("\\") and strip_comment(raw) == raw:
            buffer.append(raw[:-1])
            continue
        buffer.append(raw)
        result.append((start, "\n".join(buffer)))
        buffer = []
    if buffer:
        result.append((start, "\n".join(buffer)))
    return result


def _position(original: str, offset: int, first_line: int) -> tuple[int, int]:
    """The physical (line, column) of an offset into a joined logical line."""
    before = original[:offset]
    return first_line + before.count("\n"), offset - (before.rfind("\n") + 1) + 1


_LAUNCHER_STEMS = ("deepspeed", "torchrun", "accelerate", "python")  # `python3` holds `python`


def parse_shell(path: str, text: str, read: Callable[[str], str | None] | None = None) -> list[LaunchLine]:
    """The launch commands of a shell script.

    Two facts about where a command runs are followed (`shell_directories.py`): a literal `cd DIR` /
    `pushd DIR` / `popd` before it (in a `( ... )` subshell only for that line; a `cd` into the folder an
    earlier `git clone` made, as a README's `git clone URL` then `cd NAME` does, enters this repository), and
    a variable holding the launcher's own directory (`DIR=$(dirname "$0")`,
    `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`, with a literal tail such as `/..`), which is the
    launcher's folder wherever the launcher is started from; `$PWD`, `$(pwd)` is where the command runs (a
    variable holding it, until the next `cd`).

    `read`: the text of a file the launcher sources (`source vars.sh`, `. ./env.sh`), by its path as written;
    the literal assignments in it count as the launcher's own. Without it a sourced file is not read."""
    variables: dict[str, str | None] = {"PWD": "."}
    exported: dict[str, str] = {}
    found: list[LaunchLine] = []
    held_launches: list[LaunchLine] = []  # the launch commands variables hold (`held_command`)
    here = os.path.dirname(os.path.abspath(path))
    captured: set[str] = set()  # variables holding the working directory (`ROOT=$(pwd)`): unknown after a `cd`
    directory = ""
    pushed: list[str] = []
    clones: set[str] = set()  # the folders `git clone` made: this repository, as the document's reader has it
    physical = text.splitlines()
    arguments = ArgumentCases()  # the launcher's own argument parsing: not run as the launcher is written
    for number, logical in logical_lines(text):
        uncommented = strip_comment(logical)
        arguments.read(uncommented)
        if _inert(logical, wrappers=read is not None) and not spaced_launcher(logical, number, physical, _STEM_WORDS):
            continue  # most lines of a document's code blocks (Python, YAML, output): nothing below uses them
        line, working = with_working_directory(uncommented)
        sourced = _SOURCE.match(line)
        if sourced is not None:
            _read_sourced(substitute(sourced.group(1), variables), read, variables, exported)
            continue
        written = assignment_in(line, alone=False)
        own = own_directory(written.value, here) if written is not None else None
        assignment = written if own is not None else assignment_in(line)
        held = held_command(assignment, text) if assignment is not None else None
        launch = _launch_in(path, number, logical, substitute(held, variables), None, exported) if held else None
        if launch is not None:  # run elsewhere, with more words maybe: its options are not all known
            held_launches.append(replace(launch, open_words=True))
        if assignment is not None and arguments.inside:
            continue  # set only when the launcher is given that argument
        if assignment is not None:
            name = assignment.name
            (captured.add if working and own is None else captured.discard)(name)
            if own is not None:
                variables[name] = own
            else:
                assign(variables, assignment)
            if assignment.exported or name in exported:
                exported[name] = variables[name] or UNKNOWN_VALUE
            continue
        subshell = line.lstrip().startswith("(")
        before = directory
        if subshell:
            line = line.strip()[1:]
            line = line[:-1] if line.endswith(")") else line
        for segment in command_segments(line):
            substituted = substitute(segment, variables)
            cloned = cloned_folder(substituted)
            if cloned is not None:
                clones.add(os.path.normpath(os.path.join(directory, cloned)))
                continue
            moved = change_directory(substituted, directory, pushed)
            if moved is not None:
                directory = moved
                variables.update(dict.fromkeys(captured))
                continue
            launch = _launch_in(path, number, logical, substituted, None, exported)
            if launch is None:  # `deepspeed \  # a note`: bash ended the command before its script
                launch = _cut_before_script(path, number, logical, substituted, physical, exported)
            forwarded = through_wrapper(substituted, read) if launch is None and read is not None else None
            if forwarded is not None:  # a project script running a launcher with its arguments (`"$@"`)
                launch = _launch_in(path, number, logical, forwarded[0], None, exported)
                at = _position(logical, max(logical.find(forwarded[1]), 0), number)
                launch = replace(launch, line=at[0], column=at[1]) if launch is not None else None
            if launch is not None:
                cut = cut_short(logical, number, physical, path.endswith(DOCUMENT_LAUNCHER_SUFFIXES))
                if cut is not None:
                    launch = replace(launch, cut_line=cut[0], lost_options=cut[1], cut_cause=cut[2])
                runs_in = in_clone(directory, clones)
                found.append(launch if not runs_in else replace(launch, directory=runs_in))
        if subshell:
            directory = before
    # a held command that a line here also runs (`srun $CMD`, `bash -c "$CMD"`) is read there
    ran = {_said(launch) for launch in found}
    return found + [launch for launch in held_launches if _said(launch) not in ran]


def _said(line: LaunchLine) -> tuple[object, ...]:
    """What a launch command says, wherever it is written: its launcher, script and options."""
    return (
        line.tool,
        line.script,
        tuple((option.name, option.value) for option in (*line.launcher_options, *line.options)),
    )


# How a line that `_SOURCE` or `assignment_in` matches starts (they match the line with its comment stripped, a prefix).
_SOURCE_OR_ASSIGNMENT = re.compile(
    r"\s*(?:source|\.|(?:export\s+|local\s+|readonly\s+|declare\s+(?:-[A-Za-z]+\s+)*)?[A-Za-z_][A-Za-z0-9_]*\+?=)"
)
# The words one of `parse_shell`'s steps needs in a segment (quotes and backslashes removed) to act on it:
# `cloned_folder` and `change_directory` one of these, `_launch_in` what `_may_launch` asks.
_MOVE_WORDS = re.compile("clone|cd|pushd|popd")
_SCRIPT_WORDS = re.compile(r"\.py|-m")
_STEM_WORDS = re.compile("|".join(_LAUNCHER_STEMS))


def _may_launch(plain: str) -> bool:
    """A script (`.py`) or a module flag, and a launcher's word, in the unquoted text: what a launch needs."""
    return _SCRIPT_WORDS.search(plain) is not None and _STEM_WORDS.search(plain) is not None


def _inert(logical: str, wrappers: bool = False) -> bool:
    """Whether `parse_shell` does nothing with a logical line: true only when no step could use it, tested on
    the whole line before its comment is stripped (each step reads a piece of it). Without a `$`, `_substitute`
    leaves every segment as written; a `source` or an assignment in the stripped line starts the line too; and
    `cloned_folder`, `change_directory` and `_launch_in` each return None for a segment lacking their words,
    which the line (unquoted, as they read it) then lacks too. `wrappers`: a line naming a shell script and a
    Python one may start a wrapper forwarding them to a launcher (`forwarding_wrappers.py`)."""
    if "$" in logical or _SOURCE_OR_ASSIGNMENT.match(logical):
        return False
    plain = unquoted(logical)
    if wrappers and ".sh" in plain and _SCRIPT_WORDS.search(plain) is not None:
        return False
    return _MOVE_WORDS.search(plain) is None and not _may_launch(plain)


def _read_sourced(
    name: str,
    read: Callable[[str], str | None] | None,
    variables: dict[str, str | None],
    exported: dict[str, str],
) -> None:
    """The literal assignments of a sourced file, as if written at the `source` line (one level: a file that
    sources another is not followed further). An unreadable file leaves the variables as they are."""
    text = read(name.strip("'\"")) if read is not None and UNKNOWN_VALUE not in name else None
    if text is None:
        return
    for _, logical in logical_lines(text):
        line = strip_comment(logical)
        assignment = assignment_in(line)
        if assignment is None:
            continue
        assign(variables, assignment)
        if assignment.exported or assignment.name in exported:
            exported[assignment.name] = variables[assignment.name] or UNKNOWN_VALUE


def _cut_before_script(
    path: str, number: int, logical: str, segment: str, physical: list[str], exported: dict[str, str]
) -> LaunchLine | None:
    """A launcher word alone (`deepspeed`, `torchrun`, `accelerate launch`) whose line's backslash has a space
    after it: the command as written, its script and options read from the lines after (`_cut` then says what bash
    lost: all of them)."""
    if not spaced_launcher(logical, number, physical, _STEM_WORDS):
        return None
    last = number + logical.count("\n")
    segment = segment.rstrip().rstrip("\\")
    pieces: list[str] = []
    for following in physical[last:]:
        stripped = strip_comment(following).rstrip()
        if not stripped:
            continue
        pieces.append(stripped.rstrip("\\").strip())
        if not stripped.endswith("\\"):
            break
    return _launch_in(path, number, logical, " ".join([segment, *pieces]), None, exported)


def parse_makefile(path: str, text: str) -> list[LaunchLine]:
    """The launch commands in a Makefile's recipes, with `$(VAR)` from literal assignments."""
    variables: dict[str, str | None] = {}
    target: str | None = None
    found: list[LaunchLine] = []
    for number, logical in logical_lines(text):
        if logical.startswith("\t"):
            line = strip_comment(logical.lstrip("\t").lstrip("@-+"))
            for segment in command_segments(line, pipes=False):
                launch = _launch_in(path, number, logical, substitute(segment, variables), target)
                if launch is not None:
                    found.append(launch)
            continue
        line = strip_comment(logical)
        assignment = _MAKE_ASSIGNMENT.match(line)
        if assignment:
            name, value = assignment.groups()
            variables[name] = assigned_value(value, variables)
            continue
        target_match = _MAKE_TARGET.match(line)
        if target_match:
            target = target_match.group(1)
    return found


def _launch_in(
    path: str, number: int, original: str, segment: str, target: str | None, exported: dict[str, str] | None = None
) -> LaunchLine | None:
    plain = unquoted(segment)
    if not _may_launch(plain):
        return None  # no launcher word and script, whatever shlex makes of it: most lines of a shell script
    try:
        words = shell_words(segment)
    except ValueError:
        return None
    environment = dict(exported or {})
    index, spawned_by = command_start(words, environment)
    if index + 2 < len(words) and words[index].rsplit("/", 1)[-1] in ("bash", "sh") and words[index + 1] == "-c":
        try:  # `mpirun -np 8 bash -c 'python x.py ...'`: the command the shell runs, under the same wrappers
            inner = shell_words(words[index + 2])
        except ValueError:
            return None
        return _launch_in(path, number, original, shlex.join([*words[:index], *inner]), target, exported)
    if index >= len(words):
        return None
    head = words[index].rsplit("/", 1)[-1]
    if head not in LAUNCHER_WORDS:
        return None
    tool = head
    rest = words[index + 1 :]
    accelerate_config: str | None = None
    if head == "accelerate":
        if not rest or rest[0] != "launch":
            return None
        rest = rest[1:]
    if head in ("python", "python3") and len(rest) >= 2 and rest[0] == "-m" and rest[1] in LAUNCH_MODULES:
        tool, rest = rest[1], rest[2:]
    module_at = _module_at(rest)
    module = rest[module_at] if module_at is not None else ""
    if module_at is not None:
        # `python -m pkg.train`, `deepspeed --module pkg.train`, `torchrun -m pkg.train`: the module's file, as
        # run from the folder the command runs in
        rest = [*rest[: module_at - 1], rest[module_at].replace(".", "/") + ".py", *rest[module_at + 1 :]]
        script_at: int | None = module_at - 1
    else:
        script_at = next((i for i, word in enumerate(rest) if word.endswith(".py")), None)
    if script_at is None:
        return None
    launcher_words = rest[:script_at]
    if head in ("python", "python3") and tool == head and launcher_words:
        return None  # `python -c ...`, `python -u x.py` is rare; stay with the plain shapes
    for i, word in enumerate(launcher_words):
        if word in ("--config_file", "--config-file") and i + 1 < len(launcher_words):
            accelerate_config = launcher_words[i + 1]
        elif word.startswith(("--config_file=", "--config-file=")):
            accelerate_config = word.split("=", 1)[1]
    script, unknown_root = _known_tail(rest[script_at])
    if UNKNOWN_VALUE in script:
        return None
    if accelerate_config is not None and UNKNOWN_VALUE in accelerate_config:
        accelerate_config = None
    line, column = _position(original, max(original.find(words[index]), 0), number)
    return LaunchLine(
        launcher=path,
        line=line,
        column=column,
        tool=tool,
        script=script,
        options=tuple(_options(rest[script_at + 1 :], original, number, _after(original, script, words[index]))),
        accelerate_config=accelerate_config,
        target=target,
        launcher_options=tuple(_options(launcher_words, original, number)),
        environment=tuple(sorted(environment.items())),
        launcher_short_options=_short_options(launcher_words),
        short_options=_short_options(rest[script_at + 1 :]),
        spawned_by=spawned_by,
        launcher_words=_positioned(launcher_words, original, words[index], number),
        module=module,
        open_words=_open_words(rest[script_at + 1 :]),
        script_root_unknown=unknown_root,
    )


def _known_tail(script: str) -> tuple[str, bool]:
    """A script path under a folder built at run time (`${PROJECT_DIR}/src/train.py` after `PROJECT_DIR=$(dirname
    "$(pwd)")`): the known part when it names a folder and a file, read as a path from wherever the launcher runs
    (True); any other path as it is (False)."""
    head, unknown, tail = script.partition(UNKNOWN_VALUE)
    tail = tail.lstrip("/")
    if not unknown or head or UNKNOWN_VALUE in tail or "$" in tail or len(Path(tail).parts) < 2:
        return script, False
    return tail, True


# The words that expand to all of a shell script's arguments: zero or more words, never an option's value.
ALL_ARGUMENTS = frozenset({"$@", "$*", "${@}", "${*}"})


def _open_words(words: list[str]) -> bool:
    """A word built at run time that is not the value of the option before it (`--output_dir $OUT` is one), or a
    document's placeholder for more options (`...`, `...(append your options)`, `[options]`, `<args>`, a path
    elided inside: `/scratch/.../data`)."""
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        # the value of the option before it (`"$@"`, zero or more words, is never one)
        valued = before.startswith("--") and "=" not in before and word not in ALL_ARGUMENTS
        runtime = (UNKNOWN_VALUE in word or "$" in word or "`" in word) and not word.startswith("--")
        elided = "/.../" in word or "/\u2026/" in word  # `/projects/.../model`: a sketch of the command
        if word.startswith(("...", "\u2026", "[", "<")) or elided or (runtime and not valued):
            return True
    return False


_MODULE_FLAGS = ("-m", "--module")
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _module_at(rest: list[str]) -> int | None:
    """Where the module name is in a launch of a module (`-m pkg.train`, `--module pkg.train`): the word right
    after the flag, before any `.py` script; None for a launch of a file."""
    for index, word in enumerate(rest):
        if word.endswith(".py"):
            return None
        if word in _MODULE_FLAGS and index + 1 < len(rest) and _MODULE_NAME.fullmatch(rest[index + 1]):
            return index + 1
    return None


def _positioned(words: list[str], original: str, head: str, first_line: int) -> tuple[tuple[str, int, int], ...]:
    """Each launcher word with its (line, column), searched in order after the launcher's own word."""
    found: list[tuple[str, int, int]] = []
    at = original.find(head) + len(head) if head in original else 0
    for word in words:
        offset = original.find(word, at)
        at = offset + len(word) if offset >= 0 else at
        found.append((word, *_position(original, offset if offset >= 0 else at, first_line)))
    return tuple(found)


def _short_options(words: list[str]) -> tuple[str, ...]:
    """The short options among `words`, as written up to an `=` (`-c`, `-lr`; not `-1`, a negative number)."""
    return tuple(word.split("=", 1)[0] for word in words if re.match(r"^-[A-Za-z]", word) is not None)


def _after(original: str, script: str, head: str) -> int:
    """Where the text after the script starts: its options are looked for from there (`deepspeed --num_gpus 2
    train.py --num_gpus 2` holds the same option on both sides)."""
    at = original.find(script, max(original.find(head), 0))
    return at + len(script) if at >= 0 else 0


def _options(words: list[str], original: str, first_line: int, start: int = 0) -> list[ScriptOption]:
    """The `--name value` options among `words`, positioned in `original` in order from `start` (an option not
    found there, one a variable's value holds, at its first occurrence anywhere, else the command's start)."""
    options: list[ScriptOption] = []
    cursor = start
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("--") or len(word) == 2:
            continue
        name, equals, value = word[2:].partition("=")
        option_value: str | None
        if equals:
            option_value = value
        elif index < len(words) and not words[index].startswith("--") and words[index] not in ALL_ARGUMENTS:
            option_value = words[index]
            index += 1
        else:
            option_value = None
        if option_value is not None and UNKNOWN_VALUE in option_value:
            option_value = UNKNOWN_VALUE
        offset = original.find("--" + name, cursor)
        if offset >= 0:
            cursor = offset + len(name) + 2
        line, column = _position(original, offset if offset >= 0 else max(original.find("--" + name), 0), first_line)
        options.append(ScriptOption(name.replace("-", "_"), option_value, line, column))
    return options

"""The files a shell script names in its own commands: those it writes (a redirection, `tee`) and those whose
existence it tests (`[ -f "$DS_CONFIG" ] || exit 1`), each path with the script's literal variables substituted;
and whether a launch's config is one it writes itself (`writes_passed_config`)."""

from __future__ import annotations

import os
import re

from dslint.project.launch_cuts import strip_comment
from dslint.project.launchers import LaunchLine, logical_lines
from dslint.project.shell_directories import UNKNOWN_VALUE
from dslint.project.shell_variables import assign, assignment_in, substitute

# A file a command writes: `> ds.json`, `>> log`, `tee ds.json`, `tee -a "$CONFIG"` (not `2>&1`, not `<`).
_REDIRECT = re.compile(r"""(?:>>?|\btee(?:\s+-a)?)\s*(["']?)([^\s;|&<>'"]+)\1""")
# A file a shell test asks about: `[ -f ds.json ]`, `[[ ! -e "$CONFIG" ]]`, `test -s $DS_CONFIG`.
_FILE_TEST = re.compile(r"""(?:\[\[?|\btest)\s+(?:!\s+)?-[efrs]\s+(["']?)([^\s;|&<>'"\]]+)\1""")


def _files_named(text: str, pattern: re.Pattern[str], every_value: bool = False) -> frozenset[str]:
    """The paths `pattern` (group 2) finds in a shell script's commands, each with the literal variables assigned
    before its line substituted (`CONFIG=config_${MODEL}.json` ... `> ${CONFIG}`); a path built at run time is
    left out. `every_value`: a path that is one variable alone (`"$DS_CONFIG"`) stands for every value the script
    assigns it anywhere (the arms of an `if` choosing the config, and the test after them)."""
    variables: dict[str, str | None] = {}
    values: dict[str, set[str]] = {}
    named: list[str] = []
    for _, logical in logical_lines(text):
        line = strip_comment(logical)
        assignment = assignment_in(line)
        if assignment is not None:
            assign(variables, assignment)
            value = variables[assignment.name]
            if value is not None:
                values.setdefault(assignment.name, set()).add(value)
            continue
        for match in pattern.finditer(line):
            alone = _ONE_VARIABLE.fullmatch(match.group(2)) if every_value else None
            named.extend(values.get(alone.group(1), ()) if alone else (substitute(match.group(2), variables),))
    return frozenset(os.path.normpath(path) for path in named if UNKNOWN_VALUE not in path)


_ONE_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def written_files(text: str) -> frozenset[str]:
    """The files a shell script writes by redirection or `tee`."""
    return _files_named(text, _REDIRECT)


def tested_files(text: str) -> frozenset[str]:
    """The files whose existence a shell script tests (`[ -f "$DS_CONFIG" ] || exit 1`, `if [ -e ds.json ]`): a
    test of a variable, every value the script gives it."""
    return _files_named(text, _FILE_TEST, every_value=True)


def writes_passed_config(line: LaunchLine, text: str) -> bool:
    """Whether the shell script `text` writes the config file its launch `line` passes (a heredoc or a
    redirection to the same path, `cat <<EOF > $DS_CONFIG`): the committed file is not what that launch runs."""
    option = line.config_option()
    if option is None or not option.value:
        return False
    return os.path.normpath(option.value) in written_files(text)

"""Launch commands written in a job spec's YAML (Azure ML / amlt, Kubernetes, Slurm wrappers...): an item of a
`command:` list, a `command:`/`cmd:`/`run:`/`script:` value, or the lines of such a key's block scalar (`run: |`).

Only lines that start a distributed launch (`deepspeed`, `torchrun`, `accelerate launch`, `torch.distributed`)
are kept, as shell text with the file's line numbers (every other line blank), for `launchers.parse_shell`. A
job grid's placeholder (`--bs={bs}`, filled per job by the scheduler) is a value not known here (an unset
variable), never the literal text. Nothing else of the YAML is read as a command: its strings are mostly not shell.
"""

from __future__ import annotations

import re

_COMMAND_KEYS = r"(?:command|commands|cmd|run|script|entrypoint|args)"
# `- deepspeed ...` (a list item), `command: deepspeed ...` (a value): the text after the marker
_ITEM = re.compile(r"^(?P<indent>\s*)-\s+(?P<text>.+)$")
_VALUE = re.compile(rf"^(?P<indent>\s*)(?:-\s+)?{_COMMAND_KEYS}\s*:\s*(?P<text>.*)$")
_BLOCK = re.compile(r"^[|>][-+]?\s*(?:#.*)?$")
_LAUNCH = re.compile(r"(?:^|[\s;&|(])(?:deepspeed|torchrun|accelerate\s+launch|torch\.distributed\.(?:run|launch))\s")
_PLACEHOLDER = re.compile(r"(?<![$\w]){(\w+)}")


def yaml_shell_text(text: str) -> str | None:
    """The YAML's launch lines as shell text (one line per line of the file, blank where no launch is), or None
    when it has none. Each command keeps its columns: what comes before it on its line (`- `, `command: `, a
    quote) becomes blanks, and a placeholder `{bs}` the unset variable `$bs_` of the same width."""
    lines = text.splitlines()
    shell = [""] * len(lines)
    found = False
    block_indent: int | None = None  # inside a command key's block scalar: the key's indentation
    for number, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if stripped and indent <= block_indent:
                block_indent = None  # the block ends where a line is no deeper than its key
            else:
                found = _keep(shell, number, line, indent, len(line.rstrip())) or found
                continue
        match = _VALUE.match(line) or _ITEM.match(line)
        if match is None:
            continue
        start, end = match.start("text"), len(line.rstrip())
        if match.re is _VALUE and _BLOCK.match(line[start:end]):
            block_indent = len(match.group("indent"))
            continue
        if end - start >= 2 and line[start] == line[end - 1] and line[start] in "'\"":
            start, end = start + 1, end - 1  # a quoted scalar: its text
        found = _keep(shell, number, line, start, end) or found
    return "\n".join(shell) + "\n" if found else None


def _keep(shell: list[str], number: int, line: str, start: int, end: int) -> bool:
    """Keep the command at `line[start:end]`, at its columns, when it starts a distributed launch."""
    command = line[start:end]
    if not _LAUNCH.search(" " + command + " ") or not (".py" in command or re.search(r"\s(?:-m|--module)\s", command)):
        return False  # no launch, or no script it starts (a dependency list's `- deepspeed`)
    shell[number] = " " * start + _PLACEHOLDER.sub(lambda m: f"${m.group(1)}_", command)
    return True

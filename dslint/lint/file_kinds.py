"""What dslint reads of a file named on the command line (or handed over by pre-commit): a script, a notebook, a
DeepSpeed config - or nothing, for the files of other tools, which are then reported as not analysed rather than
linted as Python (a launcher `.sh` mentions `deepspeed` and would get a bogus syntax error) or called clean."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Read by other tools; YAML is where accelerate keeps its configs, which only the project model reads.
NOT_READ = {
    ".yaml": "a YAML file (dslint reads accelerate configs only through the scripts' project, not on their own)",
    ".yml": "a YAML file (dslint reads accelerate configs only through the scripts' project, not on their own)",
    ".toml": "a TOML file",
    ".md": "a Markdown file",
    ".rst": "a reStructuredText file",
    ".txt": "a text file",
    ".sh": "a shell script",
    ".bash": "a shell script",
    ".cfg": "an INI file",
    ".ini": "an INI file",
}


@dataclass(frozen=True)
class NotAnalysed:
    """A file dslint was given but did not analyse, and why."""

    path: str
    reason: str


def not_analysed(path: Path) -> NotAnalysed | None:
    reason = NOT_READ.get(path.suffix.lower())
    return NotAnalysed(str(path), reason) if reason is not None else None

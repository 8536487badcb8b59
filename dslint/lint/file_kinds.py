"""What dslint reads of a file named on the command line (or handed over by pre-commit): a script, a notebook, a
DeepSpeed config, an accelerate config that runs DeepSpeed (a YAML file whose top level says `distributed_type:
DEEPSPEED`) - or nothing, for the files of other tools, which are then reported as not analysed rather than
linted as Python (a launcher `.sh` mentions `deepspeed` and would get a bogus syntax error) or called clean."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dslint.config.accelerate import YAML_SUFFIXES, is_accelerate_candidate
from dslint.config.recognition import MAX_PEEK_BYTES
from dslint.config.yaml_config import is_yaml_config_candidate
from dslint.limits import TooLarge, read_capped

# Read by other tools. A YAML file is read when it is an accelerate config that runs DeepSpeed (`not_analysed`).
NOT_READ = {
    ".yaml": "a YAML file that is no accelerate config running DeepSpeed and holds no DeepSpeed config",
    ".yml": "a YAML file that is no accelerate config running DeepSpeed and holds no DeepSpeed config",
    ".toml": "a TOML file",
    ".md": "a Markdown file",
    ".rst": "a reStructuredText file",
    ".txt": "a text file",
    ".sh": "a shell script",
    ".bash": "a shell script",
    ".slurm": "a shell script",
    ".sbatch": "a shell script",
    ".lsf": "a shell script",
    ".bsub": "a shell script",
    ".pbs": "a shell script",
    ".qsub": "a shell script",
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
    if reason is None or (path.suffix.lower() in YAML_SUFFIXES and is_accelerate_file(path)):
        return None
    return NotAnalysed(str(path), reason)


def is_accelerate_file(path: Path) -> bool:
    """Whether a YAML file may be an accelerate config that runs DeepSpeed, or may hold a DeepSpeed config
    (`config.yaml_config`), decided for sure once parsed."""
    try:
        if path.stat().st_size > MAX_PEEK_BYTES:
            return False
        data = read_capped(path, MAX_PEEK_BYTES, "the peek size")
        return is_accelerate_candidate(data) or is_yaml_config_candidate(data)
    except (OSError, TooLarge):  # a FIFO or a device: never opened blocking
        return False

"""What comes before the launcher on a command line: environment settings (`CUDA_VISIBLE_DEVICES=0,1`), wrappers
(`nohup`, `srun --nodes=2`, `mpirun -np 4`), tools that run a command in a project's environment (`uv run`,
`conda run -n env`) and containers (`singularity exec --nv image.sif`, `docker run --gpus all image`): the index of
the launcher's word, the environment the line sets, and the wrapper that starts the processes itself."""

from __future__ import annotations

import re

from dslint.project.shell_directories import UNKNOWN_VALUE

# The launcher commands dslint follows, by the basename of their first word.
LAUNCHER_WORDS = frozenset({"deepspeed", "torchrun", "accelerate", "python", "python3"})
# Words that may come before the launcher on a line (wrappers and environment settings).
WRAPPERS = frozenset(
    {"nohup", "exec", "eval", "time", "env", "sudo", "CUDA_VISIBLE_DEVICES", "srun", "mpirun", "mpiexec", "jsrun"}
)
# Tools that run a command in a project's environment, as `<tool> run [options] <command>`.
ENVIRONMENT_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye", "conda", "mamba", "micromamba"})
# Container tools that run a command in an image, as `<tool> <sub> [options] IMAGE <command>`, by their
# subcommands that do (`singularity run` hands its words to the image's own runscript instead).
CONTAINER_RUNNERS = {
    "singularity": ("exec",),
    "apptainer": ("exec",),
    "docker": ("run", "exec"),
    "podman": ("run", "exec"),
}
# Wrappers that take options of their own before the command they run and start its processes (`srun --nodes=2 -N 2
# deepspeed x.py`, `mpirun -np 4 python x.py`, LSF's `jsrun -r 1 -g 6 -a 6 python x.py`).
_OPTION_WRAPPERS = frozenset({"srun", "mpirun", "mpiexec", "jsrun"})


def command_start(words: list[str], environment: dict[str, str]) -> tuple[int, str]:
    """(the index of the first word after what comes before the launcher, the wrapper that spawns the processes
    or ""); the line's `NAME=value` settings are added to `environment`. A container's command is the first
    launcher word after its image (its options' values are never taken for the command); a container line
    with none is past its end (no launch)."""
    index = 0
    spawned_by = ""
    while index < len(words):
        word = words[index]
        if word in ENVIRONMENT_RUNNERS and words[index + 1 : index + 2] == ["run"]:
            index = _after_options(words, index + 2)  # `uv run deepspeed ...`, `conda run -n env torchrun ...`
            continue
        if word in CONTAINER_RUNNERS and words[index + 1 : index + 2] and words[index + 1] in CONTAINER_RUNNERS[word]:
            after_image = range(index + 3, len(words))
            index = next((j for j in after_image if words[j].rsplit("/", 1)[-1] in LAUNCHER_WORDS), len(words))
            continue
        if word not in WRAPPERS and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word) is None:
            break
        name, equals, value = word.partition("=")
        if equals:
            environment[name] = UNKNOWN_VALUE if UNKNOWN_VALUE in value else value
        index += 1
        if word in _OPTION_WRAPPERS:
            spawned_by = word
            index = _after_options(words, index)
    return index, spawned_by


def _after_options(words: list[str], index: int) -> int:
    """The index of the first word after a wrapper's options: `-x`/`--name=value` words, and the separate value
    of an option without `=` when it is not a launcher word itself (`-N 2`; `--pty python` keeps `python`)."""
    while index < len(words) and words[index].startswith("-"):
        option = words[index]
        index += 1
        following = words[index] if index < len(words) else None
        if (
            "=" not in option
            and following is not None
            and not following.startswith("-")
            and following.rsplit("/", 1)[-1] not in LAUNCHER_WORDS
            and not following.endswith(".py")
        ):
            index += 1
    return index

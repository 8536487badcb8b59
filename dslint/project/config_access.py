"""Which config files a script may make dslint read: those inside the project, and only JSON or HJSON.

A hostile repository checked in CI must not make dslint print a file of the machine it runs on
(`deepspeed.initialize(config="/etc/shadow")`, or a `ds.json` that is a symlink to it): a config a script, a
launcher or another module names is read only when its real path (symlinks followed) lies in the project of the
file that names it. The project is the repository that file is in (the nearest directory above it holding `.git`),
else the folder the user asked to check that holds it (`set_checked_roots`: the outermost), else the working
directory when the file is under it, else the file's nearest project root
(`deepspeed_version.project_root`), else its directory. A config named on the command line (`--config`) or met
by the walk is the user's choice and is not judged here.

A file that is neither named like a JSON/HJSON file nor starts as a JSON object (`{`, after a byte-order mark,
blank lines and comments) is not taken for a config either: HJSON reads almost any `key: value` text (a passwd
file, a YAML file) as an object, and its "keys" would be printed as unknown DeepSpeed settings.

`load_config_tree` reads a config under these rules, parsed once per file and version (no libcst: the index reads
configs too).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from dslint.config.tree import LFS_POINTER, Node, ParseError, parse_text
from dslint.limits import DEFAULT_MAX_CONFIG_SIZE, TooLarge, read_capped
from dslint.project.deepspeed_version import project_root
from dslint.project.inputs import find_written, is_file, read_input, record

CONFIG_FILE_SUFFIXES = (".json", ".hjson", ".jsonc", ".json5")
_LEADING = re.compile(r"\A(?:\ufeff|\s+|#[^\n]*|//[^\n]*|/\*.*?\*/)*", re.DOTALL)


class NotRead(Exception):
    """A config dslint refuses to read; the message says why ("not read: ... is outside the project ...")."""


_CHECKED: tuple[str, ...] = ()  # the folders `dslint check` was given, outermost first (`set_checked_roots`)


def set_checked_roots(paths: Sequence[str]) -> None:
    """The folders the user asked to check: a project outside a repository is the one of them holding a file, so
    that what a launcher in a subfolder names beside it does not depend on where dslint runs from."""
    global _CHECKED
    folders = {os.path.realpath(path) for path in paths if os.path.isdir(path)}
    _CHECKED = tuple(sorted(folders, key=len))


def checked_scope(directory: Path) -> Path:
    """The project top of `directory` (`project_top`), or the folder the user asked to check holding it, when that
    lies inside: the files a question about "the project's settings" may read (a fixture or an example of a
    larger repository is checked on its own)."""
    top = project_top(directory)
    start = Path(os.path.realpath(directory))
    inner = [Path(f) for f in _CHECKED if (Path(f) == start or Path(f) in start.parents) and top in Path(f).parents]
    return max(inner, key=lambda folder: len(folder.parts)) if inner else top


def project_top(directory: Path) -> Path:
    """The directory a file in `directory` may name configs under (see the module's docs)."""
    return _project_top(str(directory), os.getcwd(), _CHECKED)


@functools.lru_cache(maxsize=256)
def _project_top(directory: str, cwd: str, checked: tuple[str, ...]) -> Path:
    start = Path(os.path.realpath(directory))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    for folder in map(Path, checked):
        if start == folder or folder in start.parents:
            return folder
    here = Path(os.path.realpath(cwd))
    if start == here or here in start.parents:
        return here
    return project_root(start) or start


def refusal(config: Path, named_by: Path | str | None) -> str | None:
    """Why the config at `config`, which the file `named_by` names (None: the working directory), is not read;
    None when it may be."""
    base = Path(named_by).parent if named_by is not None else Path.cwd()
    top = project_top(base if base != Path("") else Path("."))
    try:
        real = Path(os.path.realpath(config))
    except (OSError, ValueError):
        return None  # unreadable anyway: reported as it is today
    if real != top and top not in real.parents:
        return f"not read: {os.path.normpath(config)} is outside the project ({top})"
    return None


def not_a_config_text(path: Path, text: str) -> str | None:
    """Why `text`, read from `path`, is not taken for a JSON/HJSON config; None when it may be one."""
    if path.suffix.lower() in CONFIG_FILE_SUFFIXES:
        return None
    rest = text[_LEADING.match(text).end() :]  # type: ignore[union-attr]  # the pattern always matches
    if rest.startswith("{"):
        return None
    return f"not read: {os.path.normpath(path)} is not a JSON or HJSON file"


def config_path(script: str, value: str) -> Path:
    """A config path as the script at `script` names it, relative to its directory (normalised); when no such file is
    there, relative to the first of its parents up to the project's top that holds one (Python reads a relative
    path from the working directory: `finetuning/train.py` naming "ds_config_zero3.json" that the repository keeps
    at its root is run from the root). An absolute path of another machine (`/home/me/repo/configs/ds.json`, no
    such file here) is the project's own file when the project holds one by its longest tail of two or more parts
    (`configs/ds.json`), as for launchers, or by its base name alone where the project holds exactly one file of
    that name and it reads as a DeepSpeed config (`deepspeed_config_text`)."""
    path = Path(value)
    if not path.is_absolute():
        near = Path(os.path.normpath(Path(script).parent / path))
        if is_file(near):
            return near
        found = find_written(value, script, [str(project_top(Path(script).parent))])
        if found is None:
            return near
        return Path(found) if os.path.isabs(script) else Path(os.path.relpath(found))  # written as the script is
    if not is_file(path):
        top = project_top(Path(script).parent)
        found = find_written(value, script, [str(top)], by_name=deepspeed_config_text)
        if found is not None:
            return Path(found) if os.path.isabs(script) else Path(os.path.relpath(found))  # written as the script is
    return path


def load_config_tree(path: Path, named_by: Path | str | None = None) -> Node | ParseError | NotRead | None:
    """The parsed tree of a config file (cached per file and version), a ParseError, None if unreadable, or
    NotRead for a file dslint does not read (`config_access`: outside the project of `named_by`, the file that
    names it, None for the working directory; or not JSON/HJSON)."""
    record(path)
    reason = refusal(path, named_by)
    if reason is not None:
        return NotRead(reason)
    try:
        stat = path.stat()
        resolved = path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return None
    loaded = _load_tree_cached(str(resolved), stat.st_mtime_ns, stat.st_size)
    if loaded is _NOT_JSON:
        return NotRead(f"not read: {os.path.normpath(path)} is not a JSON or HJSON file")
    return loaded if not isinstance(loaded, NotRead) else None


_NOT_JSON = NotRead("not JSON")


@functools.lru_cache(maxsize=256)
def _load_tree_cached(path: str, mtime_ns: int, size: int) -> Node | ParseError | NotRead | None:
    try:
        text = read_capped(path, DEFAULT_MAX_CONFIG_SIZE, "max-config-size").decode("utf-8-sig")
    except TooLarge as error:
        return ParseError(str(error), 1, 1)
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith(LFS_POINTER):
        return None  # a Git LFS pointer: the file itself is not in the checkout
    if not_a_config_text(Path(path), text) is not None:
        return _NOT_JSON
    try:
        return parse_text(text)
    except ParseError as error:
        return error


# keys only a DeepSpeed config holds (a base-name match of another machine's path must be one)
_DEEPSPEED_KEYS = (b'"zero_optimization"', b'"train_micro_batch_size_per_gpu"', b'"train_batch_size"')


def deepspeed_config_text(path: str) -> bool:
    """Whether the file at `path` reads as a DeepSpeed config: a JSON-like text naming a key only such a config
    has (`zero_optimization`, a batch size)."""
    if Path(path).suffix.lower() not in CONFIG_FILE_SUFFIXES:
        return False
    data = read_input(path)
    return data is not None and any(key in data for key in _DEEPSPEED_KEYS)


def vendored_package(path: str, package: str) -> Path | None:
    """The project's own copy of `package` that the script at `path` may import instead of the installed one: a
    `<package>/__init__.py` in the script's folder or a folder above it, up to the project's top (`project_top`),
    where Python finds it first when the script runs from there (a modified DeepSpeed shipped in the repository,
    whose functions take keywords of their own)."""
    start = Path(os.path.realpath(path)).parent
    top = project_top(start)
    for folder in (start, *start.parents):
        candidate = folder / package / "__init__.py"
        if candidate.is_file():
            return candidate
        if folder == top:
            break
    return None

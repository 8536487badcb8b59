"""The files a command works on: walking the paths given (excludes, .gitignore), each file with its effective
settings. Shared by `check`, `fix` and the adapters.

resolver = make_resolver(...)                     # dslint.commands.options: CLI options -> SettingsResolver
jobs, errors = files_to_check(resolver, paths, force_exclude)
for job in jobs:
    result = lint_file(str(job.path), data, job.selection)   # dslint.lint.file
    unsafe = job.settings.unsafe_fixes            # --unsafe-fixes / [tool.dslint] unsafe-fixes
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dslint.config.accelerate import YAML_SUFFIXES
from dslint.config.recognition import CONFIG_SUFFIXES, is_candidate
from dslint.gitignore import IgnoreFile, is_ignored
from dslint.lint.file_kinds import is_accelerate_file
from dslint.lint.notebook import SUFFIX as NOTEBOOK
from dslint.project.config_access import project_top
from dslint.project.inputs import has_python_shebang
from dslint.selection import RuleSelection
from dslint.settings import DEFAULT_EXCLUDE, Settings, SettingsResolver


@dataclass(frozen=True)
class FileJob:
    path: Path
    settings: Settings
    selection: RuleSelection


def files_to_check(
    resolver: SettingsResolver,
    paths: Sequence[str],
    force_exclude: bool = False,
    warnings: list[str] | None = None,
) -> tuple[list[FileJob], list[str]]:
    """The files under `paths` (default: the current directory) that their settings do not exclude, and the
    errors met on the way (paths that do not exist, directories that cannot be read, symlink loops); bad
    .gitignore lines are added to `warnings`. Raises SettingsError for a bad pyproject.toml."""
    discovery = discover(
        paths or (".",), suffixes=(".py", NOTEBOOK), excluded=resolver.excluded, force_exclude=force_exclude
    )
    if warnings is not None:
        warnings.extend(discovery.warnings)
    jobs = []
    for path in discovery.files:
        settings = resolver.for_file(path)  # a file the walk found, or one named on the command line
        jobs.append(FileJob(path, settings, settings.selection_for(path)))
    return jobs, list(discovery.errors)


def named_configs_left_out(
    resolver: SettingsResolver, jobs: Sequence[FileJob], named: Iterable[str], paths: Sequence[str]
) -> list[FileJob]:
    """The DeepSpeed configs the project index found read (`named`: a launcher, an accelerate YAML or code names
    them; absolute paths) that the walk left out only because a .gitignore matches them (`*.json` ignored, the
    config committed all the same): under a checked folder, neither excluded by the settings (their `exclude`, the
    folders the walk skips: `resolver.excluded`) nor under a hidden folder. The run reads them, so their findings
    are the project's."""
    walked = {os.path.abspath(job.path) for job in jobs}
    roots = [os.path.abspath(path) for path in paths or (".",) if os.path.isdir(path)]
    found = []
    for config in sorted(set(named)):
        path = Path(config)
        if config in walked or not path.name.endswith(CONFIG_SUFFIXES) or not path.is_file():
            continue
        inside = [root for root in roots if config.startswith(root.rstrip(os.sep) + os.sep)]
        if not inside or resolver.excluded(path):
            continue
        if any(part.startswith(".") for part in Path(os.path.relpath(path.parent, inside[0])).parts):
            continue
        relative = os.path.relpath(config)
        path = path if relative.startswith("..") else Path(relative)  # shown as the walk's files are
        settings = resolver.for_file(path)
        found.append(FileJob(path, settings, settings.selection_for(path)))
    return found


# The directory names skipped by default: the settings' default `exclude`, its glob patterns apart.
DEFAULT_EXCLUDES = frozenset(pattern for pattern in DEFAULT_EXCLUDE if "*" not in pattern)
DEFAULT_EXCLUDE_GLOBS = tuple(pattern for pattern in DEFAULT_EXCLUDE if "*" in pattern)


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # bad .gitignore lines (ignored, as git does)


def _excluded_dir(directory: Path) -> bool:
    name = directory.name
    return (
        name in DEFAULT_EXCLUDES
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in DEFAULT_EXCLUDE_GLOBS)
        or _is_venv(directory)
    )


def _is_venv(directory: Path) -> bool:
    """Whether `directory` holds a virtual environment; a directory that cannot be searched is not one (the walk
    then reports it as unreadable)."""
    try:
        return (directory / "pyvenv.cfg").exists()
    except OSError:
        return False


def _inside(path: Path, top: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == top or top in real.parents


def _parent_ignore_files(directory: Path) -> list[IgnoreFile]:
    """The .gitignore files above `directory`, up to the repository root (outermost first)."""
    found: list[IgnoreFile] = []
    current = directory.resolve()
    for ancestor in [current, *current.parents]:
        if ancestor != current:
            ignore_file = IgnoreFile.read(ancestor)
            if ignore_file is not None:
                found.append(ignore_file)
        if (ancestor / ".git").exists():
            break
    return list(reversed(found))


def discover(
    paths: Sequence[str],
    suffixes: tuple[str, ...] = (".py",),
    configs: bool = True,
    excluded: Callable[[Path, bool | None], bool] | None = None,
    force_exclude: bool = False,
) -> Discovery:
    """Files named on the command line are checked (unless `force_exclude` and `excluded` says so); directories
    are walked with excludes: `excluded` (the settings' `exclude`) replaces the default directory names. With
    `configs`, directories also yield JSON/HJSON files that may be DeepSpeed configs (by name or content), and YAML
    files that may be accelerate configs running DeepSpeed."""
    result = Discovery()
    seen: set[Path] = set()
    folders: dict[Path, Path] = {}  # a folder -> its resolved path: one `resolve` per folder, not per file

    def resolved(path: Path, link: bool | None = None) -> Path:
        if path.is_symlink() if link is None else link:
            return path.resolve()
        parent = path.parent
        if parent not in folders:
            folders[parent] = parent.resolve()
        return folders[parent] / path.name

    def add(path: Path, link: bool | None = None) -> None:
        try:
            key = resolved(path, link)
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            result.errors.append(f"{path}: cannot read: symbolic link loop")
            return
        if key not in seen:
            seen.add(key)
            result.files.append(path)

    for raw in paths:
        root = Path(raw)
        if root.is_file():
            # `excluded` matches the path relative to its project root, so an excluded directory covers it too
            if not (force_exclude and excluded is not None and excluded(root, None)):
                add(root)
        elif root.is_dir():
            if excluded is not None and excluded(root, None):
                if force_exclude:
                    continue
                excluded_below: Callable[[Path, bool | None], bool] | None = None  # named on the command line: walk it
            else:
                excluded_below = excluded
            for path, link in _walk(root, suffixes, configs, excluded_below, result):
                add(path, link)
        elif root.exists():  # a device or a pipe named on the command line: its reader says what it is
            add(root)
        elif root.is_symlink():
            result.errors.append(f"{raw}: cannot read: a broken or looping symbolic link")
        else:
            result.errors.append(f"{raw}: no such file or directory")
    return result


def _walk(
    root: Path,
    suffixes: tuple[str, ...],
    configs: bool = True,
    excluded: Callable[[Path, bool | None], bool] | None = None,
    found: Discovery | None = None,
) -> Iterator[tuple[Path, bool]]:
    """The files below `root`, each with whether it is a symbolic link (its listing says: no `lstat` of its own);
    a directory that cannot be read is an error in `found`, a bad .gitignore line a warning there."""
    found = found if found is not None else Discovery()
    top = project_top(root)
    inherited = _parent_ignore_files(root)
    found.warnings.extend(problem for ignore_file in inherited for problem in ignore_file.problems)
    stack: list[tuple[Path, list[IgnoreFile]]] = [(root, inherited)]
    while stack:
        directory, ignore_files = stack.pop()
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as error:
            found.errors.append(f"{directory}: cannot read directory: {error.strerror or error}")
            continue
        # the folder's own .gitignore, read only where its listing holds one (no failed open per folder)
        own = IgnoreFile.read(directory) if any(entry.name == ".gitignore" for entry in entries) else None
        if own is not None:
            found.warnings.extend(own.problems)
        active = [*ignore_files, own] if own is not None else ignore_files
        subdirectories: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                skip = _excluded_dir(path) if excluded is None else excluded(path, False) or _is_venv(path)
                if not skip and not is_ignored(path, True, active):
                    subdirectories.append(path)
            elif (
                configs
                and entry.name.endswith(YAML_SUFFIXES)
                and (excluded is None or not excluded(path, entry.is_symlink()))
                and not is_ignored(path, False, active)
                and not entry.is_symlink()
                and is_accelerate_file(path)  # an accelerate config that runs DeepSpeed, or a DeepSpeed YAML
            ) or (
                ".py" in suffixes
                and "." not in entry.name
                and not entry.is_symlink()
                and entry.is_file(follow_symlinks=False)
                and (excluded is None or not excluded(path, False))
                and not is_ignored(path, False, active)
                and has_python_shebang(path)  # a script run as `./train`: `#!/usr/bin/env python3`
            ):
                yield path, False
            elif (
                (entry.name.endswith(suffixes) or (configs and entry.name.endswith(CONFIG_SUFFIXES)))
                and (excluded is None or not excluded(path, entry.is_symlink()))
                and (
                    (entry.name.endswith(suffixes) and not is_ignored(path, False, active))
                    or (
                        configs
                        and entry.name.endswith(CONFIG_SUFFIXES)
                        and not is_ignored(path, False, active)
                        and is_candidate(path)  # a DeepSpeed config by name or content
                    )
                )
            ):
                link = entry.is_symlink()
                if link and os.path.isfile(path) and not _inside(path, top):
                    found.warnings.append(f"{path}: not read: a symbolic link to a file outside the project ({top})")
                    continue
                yield path, link
        stack.extend((sub, active) for sub in reversed(subdirectories))

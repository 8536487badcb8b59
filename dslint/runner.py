"""Finding the files to check, and linting them (in worker processes when there are many)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from dslint.config.discovery import CONFIG_SUFFIXES, is_candidate
from dslint.config.linter import lint_config_source
from dslint.config.rule import Origin
from dslint.gitignore import IgnoreFile, is_ignored
from dslint.linter import ScriptResult, lint_source
from dslint.project.index import ProjectIndex, build_project_index
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection
from dslint.settings import DEFAULT_EXCLUDE

# The directory names skipped by default: the settings' default `exclude`, without its glob patterns.
DEFAULT_EXCLUDES = frozenset(pattern for pattern in DEFAULT_EXCLUDE if "*" not in pattern)
PARALLEL_THRESHOLD = 16


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _excluded_dir(directory: Path) -> bool:
    name = directory.name
    return name in DEFAULT_EXCLUDES or name.endswith(".egg-info") or (directory / "pyvenv.cfg").exists()


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
    excluded: Callable[[Path], bool] | None = None,
    force_exclude: bool = False,
) -> Discovery:
    """Files named on the command line are checked (unless `force_exclude` and `excluded` says so); directories
    are walked with excludes: `excluded` (the settings' `exclude`) replaces the default directory names. With
    `configs`, directories also yield JSON/HJSON files that may be DeepSpeed configs (by name or content)."""
    result = Discovery()
    seen: set[Path] = set()

    def add(path: Path) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            result.files.append(path)

    for raw in paths:
        root = Path(raw)
        if root.is_file():
            # `excluded` matches the path relative to its project root, so an excluded directory covers it too
            if not (force_exclude and excluded is not None and excluded(root)):
                add(root)
        elif root.is_dir():
            if excluded is not None and excluded(root):
                if force_exclude:
                    continue
                excluded_below: Callable[[Path], bool] | None = None  # named on the command line: walk it
            else:
                excluded_below = excluded
            for path in _walk(root, suffixes, configs, excluded_below):
                add(path)
        else:
            result.errors.append(f"{raw}: no such file or directory")
    return result


def _walk(
    root: Path,
    suffixes: tuple[str, ...],
    configs: bool = True,
    excluded: Callable[[Path], bool] | None = None,
) -> Iterator[Path]:
    inherited = _parent_ignore_files(root)
    stack: list[tuple[Path, list[IgnoreFile]]] = [(root, inherited)]
    while stack:
        directory, ignore_files = stack.pop()
        own = IgnoreFile.read(directory)
        active = [*ignore_files, own] if own is not None else ignore_files
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirectories: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                skip = _excluded_dir(path) if excluded is None else excluded(path) or (path / "pyvenv.cfg").exists()
                if not skip and not is_ignored(path, True, active):
                    subdirectories.append(path)
            elif (excluded is None or not excluded(path)) and (
                (entry.name.endswith(suffixes) and not is_ignored(path, False, active))
                or (
                    configs
                    and entry.name.endswith(CONFIG_SUFFIXES)
                    and not is_ignored(path, False, active)
                    and is_candidate(path)  # a DeepSpeed config by name or content
                )
            ):
                yield path
        stack.extend((sub, active) for sub in reversed(subdirectories))


@dataclass
class FileFailure:
    path: str
    message: str


def index_project(files: Iterable[Path], paths: Sequence[str]) -> ProjectIndex:
    """The project index over the files about to be linted, computed once, before any of them is."""
    return build_project_index(files, paths)


def lint_path(
    path: Path,
    selection: RuleSelection,
    world_size: int | None = None,
    project: ProjectFacts | None = None,
    config_reader: str | None = None,
) -> ScriptResult | FileFailure:
    """`project`: what the project index knows about a script; `config_reader`: who reads a config file that a
    launcher passes ("trainer" or "initialize"), which makes it a DeepSpeed config whatever its name."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return FileFailure(str(path), f"cannot read: {error.strerror or error}")
    try:
        if path.suffix.lower() in CONFIG_SUFFIXES:
            if config_reader is not None:
                origin = Origin.TRAINER if config_reader == "trainer" else Origin.INITIALIZE
                return lint_config_source(
                    str(path), data, selection, origin=origin, world_size=world_size, known_config=True
                )
            return lint_config_source(str(path), data, selection, world_size=world_size)
        return lint_source(str(path), data, selection, world_size=world_size, project=project)
    except RecursionError:
        return FileFailure(str(path), "internal error: the file is nested too deeply to analyse")
    except Exception as error:
        return FileFailure(str(path), f"internal error: {type(error).__name__}: {error}")


def _lint_one(arguments: tuple[Path, RuleSelection, int | None]) -> ScriptResult | FileFailure:
    return lint_path(*arguments)


def lint_paths(
    files: Iterable[Path], selection: RuleSelection, jobs: int | None = None, world_size: int | None = None
) -> list[ScriptResult | FileFailure]:
    """`world_size`, when known, makes the config batch check (DSL407) exact."""
    files = list(files)
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(files) < PARALLEL_THRESHOLD:
        return [lint_path(path, selection, world_size) for path in files]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        return list(pool.map(_lint_one, [(path, selection, world_size) for path in files], chunksize=8))


def _lint_item(
    item: tuple[Path, RuleSelection, int | None, ProjectFacts | None, str | None],
) -> ScriptResult | FileFailure:
    return lint_path(*item)


def lint_files(
    items: Sequence[tuple[Path, RuleSelection]],
    jobs: int | None = None,
    world_size: int | None = None,
    project: ProjectIndex | None = None,
) -> list[ScriptResult | FileFailure]:
    """Like `lint_paths`, with a selection per file (settings' per-file-ignores, nested pyproject.toml);
    `project` (see `index_project`) gives each file what is known about it from elsewhere."""
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    work = [
        (
            path,
            selection,
            world_size,
            project.facts_for(path) if project is not None else None,
            project.config_reader(path) if project is not None else None,
        )
        for path, selection in items
    ]
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return [lint_path(*item) for item in work]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        return list(pool.map(_lint_item, work, chunksize=8))

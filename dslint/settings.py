"""Effective settings: `[tool.dslint]` in the nearest pyproject.toml, overridden by the command line.

Every command (check, fix, settings, lsp) and the flake8 plugin go through `SettingsResolver`:

    resolver = SettingsResolver(Overrides(select=..., ignore=..., unsafe_fixes=...))
    settings = resolver.for_path(path)        # the nearest pyproject.toml above `path` that has [tool.dslint]
    selection = settings.selection_for(path)  # select / extend-select / ignore / per-file-ignores, resolved

Rule selection is layered as in ruff: defaults (every rule), then pyproject, then the command line. In each layer
the most specific prefix wins (a tie goes to ignore); a layer's `select` starts that layer afresh, while
`extend-select` and `ignore` adjust what the earlier layers enabled. `per-file-ignores` then removes codes for
matching files. Path patterns (`exclude`, `extend-exclude`, `per-file-ignores`) are .gitignore-style globs
relative to the directory of the pyproject.toml (the current directory when there is none): a pattern without
`/` matches a file or directory name anywhere below it.

The keys themselves (type, default, check, documentation) are declared once, in `dslint.settings_options`.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dslint.framework.catalog import CODES, DEPRECATED, PREVIEW, lifecycle
from dslint.limits import MB, Limits, TooLarge, read_capped
from dslint.project.deepspeed_version import DeepSpeedVersion, PinFinder, resolve
from dslint.selection import RuleSelection
from dslint.settings_options import DEFAULT_EXCLUDE as DEFAULT_EXCLUDE
from dslint.settings_options import (
    DEFAULT_OUTPUT_FORMAT,
    OPTIONS,
    ProjectConfig,
    glob_pattern,
    parse_overrides,
    parse_table,
    validate_codes,
)
from dslint.settings_options import OUTPUT_FORMATS as OUTPUT_FORMATS
from dslint.settings_options import SettingsError as SettingsError
from dslint.settings_options import describe as describe_options

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

MAX_PYPROJECT_SIZE = 4 * MB  # a pyproject.toml cannot set its own size limit


@dataclass(frozen=True)
class Overrides:
    """What the command line said; `None` means "not given" (the pyproject value or the default applies)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    preview: bool | None = None  # `--preview` / `--no-preview`
    output_format: str | None = None
    config_file: Path | None = None  # `--config PATH`: use this pyproject.toml for every path
    config_keys: tuple[tuple[str, object], ...] = ()  # `--config KEY=VALUE`: keys over every pyproject's
    isolated: bool = False  # `--isolated`: ignore every pyproject.toml


def glob_matches(pattern: str, relative: str) -> bool:
    """A .gitignore-style match of `pattern` against a '/'-separated path relative to the project root.

    A match on a directory covers everything below it."""
    return glob_pattern(pattern).match(relative) is not None


class ResolvedFolders:
    """`folder.resolve()`, each folder resolved from its parent's resolution (one `lstat` a folder, a link resolved
    in full), kept: a walk asks about every file of every folder. A path with a `..` part is resolved as given."""

    def __init__(self) -> None:
        self._found: dict[Path, Path] = {}

    def of(self, folder: Path) -> Path:
        found = self._found.get(folder)
        if found is None:
            if ".." in folder.parts:
                found = folder.resolve()
            elif not folder.is_absolute():
                found = self.of(Path(os.path.abspath(folder)))
            else:
                parent = folder.parent
                linked = parent == folder or os.path.islink(folder)  # the root, or a link: resolved in full
                found = folder.resolve() if linked else self.of(parent) / folder.name
            self._found[folder] = found
        return found


@dataclass(frozen=True)
class Settings:
    """The effective settings for the files under one project root."""

    root: Path
    project: ProjectConfig = field(default_factory=ProjectConfig)
    overrides: Overrides = field(default_factory=Overrides)
    pins_root: Path | None = None  # where the project's DeepSpeed pins are read (default: root)
    pin_finder: PinFinder | None = field(default=None, compare=False, repr=False)  # the resolver's, shared
    folders: ResolvedFolders = field(default_factory=ResolvedFolders, compare=False, repr=False)  # likewise

    @property
    def config_file(self) -> Path | None:
        return self.project.path

    @property
    def output_format(self) -> str:
        return self.overrides.output_format or self.project.output_format or DEFAULT_OUTPUT_FORMAT

    @property
    def unsafe_fixes(self) -> bool:
        if self.overrides.unsafe_fixes is not None:
            return self.overrides.unsafe_fixes
        return bool(self.project.unsafe_fixes)

    @property
    def preview(self) -> bool:
        if self.overrides.preview is not None:
            return self.overrides.preview
        return bool(self.project.preview)

    @property
    def limits(self) -> Limits:
        return self.project.limits

    @property
    def exclude(self) -> tuple[str, ...]:
        base = self.project.exclude if self.project.exclude is not None else DEFAULT_EXCLUDE
        return (*base, *self.project.extend_exclude)

    @functools.cached_property
    def deepspeed(self) -> DeepSpeedVersion:
        """The DeepSpeed the project runs: `deepspeed-version`, else its own pin, else the newest known."""
        return resolve(self.pins_root or self.root, self.project.deepspeed_version, self.project.path, self.pin_finder)

    @functools.cached_property
    def _resolved_root(self) -> Path | None:
        try:
            return self.root.resolve()
        except (OSError, RuntimeError):
            return None

    def relative(self, path: Path, link: bool | None = None) -> str | None:
        """`path` relative to the project root (as POSIX text), None outside it; `link`: whether `path` is a
        symbolic link, when the caller knows (a walk's listing), else asked of the file system."""
        root = self._resolved_root
        if root is None:
            return None
        text = str(path)
        name = os.path.basename(text)
        if link is not None:
            self._links[text] = link  # what the walk's listing said of it, for the questions after the walk
        else:
            link = self._links.get(text)
            if link is None:
                link = os.path.islink(text)
        if name not in ("", ".", "..") and not link:
            # a walk asks about every file of a folder: the folder's own relative path is worked out once, and
            # found again by the folder's text (`Path("x").parent` is ".", whose text is "" here); a file that
            # is no link lies where its folder does, outside the root with it
            parent = os.path.dirname(text)
            folder = self._relative_folders.get(parent, False)
            if folder is False:
                folder = self._relative_folders[parent] = self._relative_to_root(path.parent, root)
            if folder is None:
                return None
            return name if folder == "." else f"{folder}/{name}"
        return self._relative_to_root(path, root)

    def _relative_to_root(self, path: Path, root: Path) -> str | None:
        try:
            return self._resolve(path).relative_to(root).as_posix()
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return None

    @functools.cached_property
    def _relative_folders(self) -> dict[str, str | None]:
        return {}

    @functools.cached_property
    def _links(self) -> dict[str, bool]:
        """Whether each file the walk listed is a symbolic link, as its listing said."""
        return {}

    def _resolve(self, path: Path) -> Path:
        """`path.resolve()`, its folder resolved once (`ResolvedFolders`)."""
        if path.name in ("", ".", "..") or os.path.islink(path):
            return path.resolve()
        return self.folders.of(path.parent) / path.name

    def is_excluded(self, path: Path, link: bool | None = None) -> bool:
        """Whether `path` (a file or directory) or one of its directories below the root matches `exclude`."""
        relative = self.relative(path, link)
        if relative is None:
            # outside the project: only name patterns can apply
            relative = path.name
        if relative in ("", "."):
            return False
        return self._excluding.match(relative) is not None

    @functools.cached_property
    def _excluding(self) -> re.Pattern[str]:
        """Every `exclude` pattern in one expression (asked for every file and folder discovered)."""
        if not self.exclude:
            return re.compile(r"(?!)")
        return re.compile("|".join(f"(?:{glob_pattern(pattern).pattern})" for pattern in self.exclude))

    def selection_for(self, path: Path | None = None) -> RuleSelection:
        """The rules that run on `path`, every layer and `per-file-ignores` applied."""
        ignored = tuple(self.matching_per_file_ignores(path)) if path is not None else ()
        known = self._selections.get(ignored)
        if known is None:
            enabled = self.enabled_codes()
            for _pattern, codes in ignored:
                enabled = {code for code in enabled if not code.startswith(codes)}
            deepspeed = self.deepspeed
            known = RuleSelection(
                select=tuple(sorted(enabled)),
                ignore=(),
                deepspeed_version=str(deepspeed.version),
                deepspeed_newest=str(deepspeed.newest) if deepspeed.newest is not None else None,
                deepspeed_pin=deepspeed.pin_note() if deepspeed.newest is not None else None,
            )
            self._selections[ignored] = known
        return known

    @functools.cached_property
    def _selections(self) -> dict[tuple[tuple[str, tuple[str, ...]], ...], RuleSelection]:
        return {}

    def enabled_codes(self, path: Path | None = None) -> set[str]:
        codes = CODES
        enabled = set(codes)
        for layer in _layers(self.project):  # the bases `extend` names, farthest first, then this file
            enabled = _apply_layer(enabled, codes, layer.select, layer.extend_select, layer.ignore)
        cli = self.overrides
        enabled = _apply_layer(enabled, codes, cli.select, cli.extend_select, cli.ignore)
        enabled = {code for code in enabled if self._lifecycle_allows(code)}
        if path is not None:
            for _pattern, ignored in self.matching_per_file_ignores(path):
                enabled = {code for code in enabled if not code.startswith(ignored)}
        return enabled

    def _lifecycle_allows(self, code: str) -> bool:
        """A preview rule runs under `preview` only; a deprecated one only where a selector names its code."""
        stage = lifecycle(code)
        if stage == PREVIEW:
            return self.preview
        if stage == DEPRECATED:
            named = (self.project.select or (), self.project.extend_select, self.overrides.select or ())
            return any(code in listed for listed in (*named, self.overrides.extend_select))
        return True

    def matching_per_file_ignores(self, path: Path) -> list[tuple[str, tuple[str, ...]]]:
        relative = self.relative(path) or path.name
        return [(pattern, codes) for pattern, codes in self.project.per_file_ignores if glob_matches(pattern, relative)]

    def describe(self, path: Path | None = None) -> dict[str, Any]:
        """The effective settings as plain data (for `dslint settings`)."""
        data: dict[str, Any] = {
            "config-file": str(self.config_file) if self.config_file else None,
            "root": str(self.root),
            **describe_options(self, self.overrides),
        }
        if path is not None:
            data["path"] = str(path)
            data["excluded"] = self.is_excluded(path)
            data["per-file-ignores-applied"] = {p: list(c) for p, c in self.matching_per_file_ignores(path)}
            data["enabled-rules"] = sorted(self.enabled_codes(path))
        return data


def _layers(project: ProjectConfig) -> list[ProjectConfig]:
    chain: list[ProjectConfig] = []
    layer: ProjectConfig | None = project
    while layer is not None:
        chain.append(layer)
        layer = layer.base
    return chain[::-1]


def _apply_layer(
    enabled: set[str],
    codes: Sequence[str],
    select: tuple[str, ...] | None,
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> set[str]:
    chosen = (*(select or ()), *extend_select)
    result: set[str] = set()
    for code in codes:
        best_select = max((len(p) for p in chosen if code.startswith(p)), default=-1)
        best_ignore = max((len(p) for p in ignore if code.startswith(p)), default=-1)
        if best_select >= 0 and best_select > best_ignore:
            result.add(code)
        elif best_ignore >= 0:
            continue
        elif select is None and code in enabled:
            result.add(code)
    return result


# -- reading pyproject.toml -------------------------------------------------------------------------------------


def read_pyproject(path: Path, extending: tuple[Path, ...] = ()) -> ProjectConfig | None:
    """The `[tool.dslint]` table of `path`, or None when the file has none; with the tables it `extend`s
    (`extending`: the files that extend this one, nearest last, to find a cycle)."""
    try:
        data = tomllib.loads(read_capped(path, MAX_PYPROJECT_SIZE, "the size limit for pyproject.toml").decode("utf-8"))
    except TooLarge as error:
        raise SettingsError(f"{path}: {error}") from error
    except OSError as error:
        raise SettingsError(f"{path}: cannot read: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise SettingsError(
            f"{path}: not UTF-8 text (TOML must be UTF-8): {error.reason} at byte {error.start}"
        ) from error
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{path}: invalid TOML: {error}") from error
    except RecursionError as error:
        raise SettingsError(f"{path}: invalid TOML: nested too deeply to read") from error
    tool = data.get("tool")
    if not isinstance(tool, dict) or "dslint" not in tool:
        return None
    table = tool["dslint"]
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.dslint] must be a table")
    project = parse_table(table, path)
    if project.extend is None:
        return project
    return _extended(project, path, extending)


def _extended(project: ProjectConfig, path: Path, extending: tuple[Path, ...]) -> ProjectConfig:
    """`project` over the table its `extend` names, as ruff's `extend`: keys set here win, `extend-exclude` adds
    to the base's, the base's selection is a layer of its own, and its path patterns keep their directory."""
    assert project.extend is not None
    target = (path.parent / project.extend).resolve()
    chain = (*extending, path.resolve())
    if target in chain:
        cycle = " -> ".join(str(p) for p in (*chain[chain.index(target) :], target))
        raise SettingsError(f"{path}: [tool.dslint].extend: a cycle: {cycle}")
    if not target.is_file():
        raise SettingsError(f"{path}: [tool.dslint].extend: no such file {str(target)!r}")
    base = read_pyproject(target, chain)
    if base is None:
        raise SettingsError(f"{path}: [tool.dslint].extend: {target} has no [tool.dslint] table")
    here, there = path.resolve().parent, target.parent
    inherited: dict[str, Any] = {}
    for item in OPTIONS:
        name = item.attribute
        if item.layered is not None or name == "extend":
            continue  # the selection layers stay the base's own (`Settings.enabled_codes`)
        if name == "extend_exclude":
            own = tuple(p for p in (_rebased(p, there, here) for p in base.extend_exclude) if p is not None)
            inherited[name] = (*own, *project.extend_exclude)
        elif name in project.keys or name not in base.keys:
            continue  # set here, or left at its default there
        elif name == "exclude":
            assert base.exclude is not None
            inherited[name] = tuple(p for p in (_rebased(p, there, here) for p in base.exclude) if p is not None)
        elif name == "per_file_ignores":
            rebased = ((_rebased(p, there, here), codes) for p, codes in base.per_file_ignores)
            inherited[name] = tuple((p, codes) for p, codes in rebased if p is not None)
        else:
            inherited[name] = getattr(base, name)
    keys = project.keys | {name for name in inherited if name in base.keys}
    return replace(project, base=base, keys=keys, **inherited)


def _rebased(pattern: str, there: Path, here: Path) -> str | None:
    """A path pattern of the file in `there`, as the file in `here` matches it (relative to `here`), or None
    when it can match nothing below `here`. A pattern without `/` (or starting `**/`) matches a name anywhere
    and is unchanged."""
    body = pattern.strip().rstrip("/").lstrip("/").removeprefix("./")
    if "/" not in body or body.startswith("**/") or there == here:
        return pattern
    if here.is_relative_to(there):  # the base is above: keep the patterns that reach into this directory
        inner = here.relative_to(there).as_posix() + "/"
        return "/" + body[len(inner) :] if body.startswith(inner) else None  # a leading `/` keeps it anchored
    if there.is_relative_to(here):  # the base is below: its patterns are under its folder
        return f"{there.relative_to(here).as_posix()}/{body}"
    return None


ConfigKeys = tuple[tuple[str, object], ...]


def split_config_arguments(arguments: Sequence[str] | Path | None) -> tuple[Path | None, ConfigKeys]:
    """`--config` values: at most one settings file (an existing path), and `KEY=VALUE` pairs read as TOML (ruff's
    `--config`); anything else is an error that says both."""
    if arguments is None or isinstance(arguments, Path):
        return arguments, ()
    file: Path | None = None
    pairs: list[tuple[str, object]] = []
    for argument in arguments:
        # a path that exists is a settings file, whatever it is: the reader refuses one that is not a regular file
        if os.path.lexists(argument):
            if file is not None:
                raise SettingsError(f"--config: two settings files ({file}, {argument}); give one")
            file = Path(argument)
            continue
        try:
            data = tomllib.loads(argument)
        except tomllib.TOMLDecodeError as error:
            raise SettingsError(
                f"--config {argument!r}: neither a file nor a KEY = VALUE in TOML ({error}); "
                "strings need quotes: --config 'output-format = \"json\"'"
            ) from error
        if len(data) != 1 or isinstance(next(iter(data.values())), dict):
            raise SettingsError(f"--config {argument!r}: give one [tool.dslint] key, as KEY = VALUE")
        pairs.extend(data.items())
    return file, tuple(pairs)


class SettingsResolver:
    """Finds (and caches) the settings for each path: each file gets its nearest [tool.dslint]."""

    def __init__(self, overrides: Overrides | None = None, cwd: Path | None = None) -> None:
        self.overrides = overrides or Overrides()
        self.cwd = cwd or Path.cwd()
        if self.overrides.output_format is not None and self.overrides.output_format not in OUTPUT_FORMATS:
            raise SettingsError(f"unknown output format {self.overrides.output_format!r}")
        self.overrides = replace(
            self.overrides,
            select=validate_codes(self.overrides.select, "--select") if self.overrides.select is not None else None,
            extend_select=validate_codes(self.overrides.extend_select, "--extend-select"),
            ignore=validate_codes(self.overrides.ignore, "--ignore"),
        )
        self._keys = parse_overrides(self.overrides.config_keys)
        self._with_keys: dict[int, ProjectConfig] = {}
        self._fixed: ProjectConfig | None = None
        if self.overrides.config_file is not None:
            fixed = read_pyproject(self.overrides.config_file)
            self._fixed = fixed if fixed is not None else ProjectConfig(path=self.overrides.config_file)
        self._by_directory: dict[Path, Settings] = {}
        self._by_text: dict[str, Settings] = {}  # an absolute path's text (a file or a folder) -> its settings
        self._folders = ResolvedFolders()
        # Memos for the walk: the pyproject that governs each directory, each directory's project root, and one
        # Settings per (pyproject, root, pins root), shared by every directory under it.
        self._pyprojects: dict[Path, ProjectConfig | None] = {}
        self._shared: dict[tuple[int, Path, Path | None], Settings] = {}
        self._pins = PinFinder()

    def for_path(self, path: Path | str) -> Settings:
        # a path asked about again (a walk asks for each file and each folder) is known by its text, without
        # asking the file system whether it is a folder
        text = os.path.abspath(path)
        cached = self._by_text.get(text)
        if cached is None:
            cached = self._by_text[text] = self._for_directory(Path(text) if os.path.isdir(text) else Path(text).parent)
        return cached

    def for_file(self, path: Path) -> Settings:
        """`for_path` of a path known to be a file (a walk's): its folder's settings, without asking whether it is
        a folder."""
        return self.for_path(os.path.dirname(os.path.abspath(path)))

    def _for_directory(self, directory: Path) -> Settings:
        cached = self._by_directory.get(directory)
        if cached is not None:
            return cached
        if self.overrides.isolated:
            project: ProjectConfig | None = self._default
        elif self._fixed is not None:
            project = self._fixed
        else:
            project = self._find_pyproject(directory)
        project = self._overridden(project or self._default)
        root = project.path.parent if project.path is not None else self.cwd
        # without a [tool.dslint] file, pins are read in the nearest directory that looks like a project root and
        # pins deepspeed (with --isolated too: the pins are the project's own facts, not dslint's configuration)
        pins = None if project.path is not None else self._pins.pins_root(directory)
        key = (id(project), root, pins)
        settings = self._shared.get(key)
        if settings is None:
            settings = Settings(
                root=root,
                project=project,
                overrides=self.overrides,
                pins_root=pins,
                pin_finder=self._pins,
                folders=self._folders,
            )
            self._shared[key] = settings
        self._by_directory[directory] = settings
        return settings

    def _overridden(self, project: ProjectConfig) -> ProjectConfig:
        """`project` with the `--config KEY=VALUE` keys over its own (one object per project, as the cache keys)."""
        if not self._keys:
            return project
        found = self._with_keys.get(id(project))
        if found is None:
            found = replace(project, keys=project.keys | set(self._keys), **self._keys)
            self._with_keys[id(project)] = found
        return found

    @functools.cached_property
    def _default(self) -> ProjectConfig:
        return ProjectConfig()

    def _find_pyproject(self, directory: Path) -> ProjectConfig | None:
        """`find_pyproject`, remembering the answer for every directory on the way up."""
        start = self._folders.of(directory)
        if not start.is_dir():
            start = start.parent
        passed: list[Path] = []
        found: ProjectConfig | None = None
        for candidate in (start, *start.parents):
            if candidate in self._pyprojects:
                found = self._pyprojects[candidate]
                break
            passed.append(candidate)
            path = candidate / "pyproject.toml"
            if path.is_file() or path.is_symlink():  # a dangling or looping link is an error, not "no pyproject"
                found = read_pyproject(path)
                if found is not None:
                    break
        for candidate in passed:
            self._pyprojects[candidate] = found
        return found

    def excluded(self, path: Path, link: bool | None = None) -> bool:
        text = str(path)
        folder = os.path.dirname(text) or "."  # `Path("train.py").parent` is "."; the root is its own parent
        return self.for_path(folder).is_excluded(path, link)

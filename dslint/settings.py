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
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dslint.config.versions import Version
from dslint.framework.catalog import CODES
from dslint.gitignore import _translate
from dslint.limits import MB, Limits, TooLarge, parse_size, read_capped
from dslint.project.deepspeed_version import DeepSpeedVersion, PinFinder, VersionError, parse_setting, resolve
from dslint.selection import RuleSelection, normalize_prefix

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

OUTPUT_FORMATS = (
    "concise",
    "full",
    "json",
    "json-lines",
    "github",
    "sarif",
    "junit",
    "pylint",
    "gitlab",
    "azure",
    "markdown",
    "grouped",
    "rdjson",
)
DEFAULT_OUTPUT_FORMAT = "concise"
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    ".venv",
    "venv",
    ".env",
    "env",
    "__pycache__",
    "build",
    "dist",
    "site-packages",
    "node_modules",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".ipynb_checkpoints",
    "__pypackages__",
)
KEYS = (
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "unsafe-fixes",
    "output-format",
    "max-file-size",
    "max-nesting",
    "max-config-size",
    "deepspeed-version",
)
MAX_PYPROJECT_SIZE = 4 * MB  # a pyproject.toml cannot set its own size limit


class SettingsError(Exception):
    """A pyproject.toml or command-line value dslint cannot use; the message says where and what to write."""


@dataclass(frozen=True)
class Overrides:
    """What the command line said; `None` means "not given" (the pyproject value or the default applies)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    output_format: str | None = None
    config_file: Path | None = None  # `--config`: use this pyproject.toml for every path
    isolated: bool = False  # `--isolated`: ignore every pyproject.toml


@dataclass(frozen=True)
class ProjectConfig:
    """The validated `[tool.dslint]` table of one pyproject.toml (or nothing, when there is none)."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    output_format: str | None = None
    limits: Limits = field(default_factory=Limits)
    deepspeed_version: Version | None = None


@functools.cache
def _glob(pattern: str) -> re.Pattern[str]:
    body = pattern.strip().rstrip("/")
    anchored = "/" in body
    body = body.lstrip("/").removeprefix("./")
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{_translate(body)}(?:/.*)?$")


def glob_matches(pattern: str, relative: str) -> bool:
    """A .gitignore-style match of `pattern` against a '/'-separated path relative to the project root.

    A match on a directory covers everything below it."""
    return _glob(pattern).match(relative) is not None


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return None


@dataclass(frozen=True)
class Settings:
    """The effective settings for the files under one project root."""

    root: Path
    project: ProjectConfig = field(default_factory=ProjectConfig)
    overrides: Overrides = field(default_factory=Overrides)
    pins_root: Path | None = None  # where the project's DeepSpeed pins are read (default: root)
    pin_finder: PinFinder | None = field(default=None, compare=False, repr=False)  # the resolver's, shared

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

    def relative(self, path: Path) -> str | None:
        root = self._resolved_root
        if root is None:
            return None
        try:
            return self._resolve(path).relative_to(root).as_posix()
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return None

    def _resolve(self, path: Path) -> Path:
        """`path.resolve()`, with each directory resolved once (a walk asks about every file in it)."""
        if path.name in ("", ".", "..") or os.path.islink(path):
            return path.resolve()
        parent = path.parent
        resolved = self._resolved_directories.get(parent)
        if resolved is None:
            resolved = parent.resolve()
            self._resolved_directories[parent] = resolved
        return resolved / path.name

    @functools.cached_property
    def _resolved_directories(self) -> dict[Path, Path]:
        return {}

    def is_excluded(self, path: Path) -> bool:
        """Whether `path` (a file or directory) or one of its directories below the root matches `exclude`."""
        relative = self.relative(path)
        if relative is None:
            # outside the project: only name patterns can apply
            relative = path.name
        if relative in ("", "."):
            return False
        return any(glob_matches(pattern, relative) for pattern in self.exclude)

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
        enabled = _apply_layer(enabled, codes, self.project.select, self.project.extend_select, self.project.ignore)
        cli = self.overrides
        enabled = _apply_layer(enabled, codes, cli.select, cli.extend_select, cli.ignore)
        if path is not None:
            for _pattern, ignored in self.matching_per_file_ignores(path):
                enabled = {code for code in enabled if not code.startswith(ignored)}
        return enabled

    def matching_per_file_ignores(self, path: Path) -> list[tuple[str, tuple[str, ...]]]:
        relative = self.relative(path) or path.name
        return [(pattern, codes) for pattern, codes in self.project.per_file_ignores if glob_matches(pattern, relative)]

    def describe(self, path: Path | None = None) -> dict[str, Any]:
        """The effective settings as plain data (for `dslint settings`)."""
        data: dict[str, Any] = {
            "config-file": str(self.config_file) if self.config_file else None,
            "root": str(self.root),
            "select": list(self.project.select) if self.project.select is not None else ["DSL"],
            "extend-select": list(self.project.extend_select),
            "ignore": list(self.project.ignore),
            "command-line": {
                "select": list(self.overrides.select) if self.overrides.select is not None else None,
                "extend-select": list(self.overrides.extend_select),
                "ignore": list(self.overrides.ignore),
            },
            "per-file-ignores": {pattern: list(codes) for pattern, codes in self.project.per_file_ignores},
            "exclude": list(self.exclude),
            "unsafe-fixes": self.unsafe_fixes,
            "output-format": self.output_format,
            **self.limits.describe(),
            "deepspeed-version": self.deepspeed.describe(),
        }
        if path is not None:
            data["path"] = str(path)
            data["excluded"] = self.is_excluded(path)
            data["per-file-ignores-applied"] = {p: list(c) for p, c in self.matching_per_file_ignores(path)}
            data["enabled-rules"] = sorted(self.enabled_codes(path))
        return data


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


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word.replace("_", "-"), list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def validate_codes(prefixes: Iterable[str], where: str) -> tuple[str, ...]:
    """Normalized code prefixes; a prefix that matches no rule is an error."""
    codes = CODES
    result: list[str] = []
    for raw in prefixes:
        prefix = normalize_prefix(raw)
        if not any(code.startswith(prefix) for code in codes):
            raise SettingsError(f"{where}: {raw!r} matches no rule code{_did_you_mean(raw.upper(), codes)}")
        result.append(prefix)
    return tuple(result)


def _string_list(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def parse_table(table: Mapping[str, object], source: Path | None) -> ProjectConfig:
    """Validate a `[tool.dslint]` table."""
    where = f"{source}: [tool.dslint]" if source else "[tool.dslint]"
    for key in table:
        if key not in KEYS:
            raise SettingsError(f"{where}: unknown key {key!r}{_did_you_mean(key, KEYS)}")
    config = ProjectConfig(path=source)
    if "select" in table:
        config = replace(config, select=validate_codes(_string_list(table["select"], f"{where}.select"), where))
    if "extend-select" in table:
        values = _string_list(table["extend-select"], f"{where}.extend-select")
        config = replace(config, extend_select=validate_codes(values, where))
    if "ignore" in table:
        config = replace(config, ignore=validate_codes(_string_list(table["ignore"], f"{where}.ignore"), where))
    if "per-file-ignores" in table:
        raw = table["per-file-ignores"]
        if not isinstance(raw, dict):
            raise SettingsError(f"{where}.per-file-ignores: expected a table of glob = [codes], got {raw!r}")
        entries = tuple(
            (pattern, validate_codes(_string_list(codes, f"{where}.per-file-ignores.{pattern!r}"), where))
            for pattern, codes in raw.items()
        )
        _patterns((pattern for pattern, _ in entries), f"{where}.per-file-ignores")
        config = replace(config, per_file_ignores=entries)
    if "exclude" in table:
        config = replace(
            config, exclude=_patterns(_string_list(table["exclude"], f"{where}.exclude"), f"{where}.exclude")
        )
    if "extend-exclude" in table:
        values = _string_list(table["extend-exclude"], f"{where}.extend-exclude")
        config = replace(config, extend_exclude=_patterns(values, f"{where}.extend-exclude"))
    limits = config.limits
    for key, attribute in (("max-file-size", "max_file_size"), ("max-config-size", "max_config_size")):
        if key in table:
            size = parse_size(table[key])
            if size is None:
                raise SettingsError(f'{where}.{key}: expected a size such as 2097152 or "2 MB", got {table[key]!r}')
            limits = replace(limits, **{attribute: size})
    if "max-nesting" in table:
        value = table["max-nesting"]
        if isinstance(value, bool) or not isinstance(value, int) or not 10 <= value <= 100_000:
            raise SettingsError(f"{where}.max-nesting: expected a whole number from 10 to 100000, got {value!r}")
        limits = replace(limits, max_nesting=value)
    config = replace(config, limits=limits)
    if "unsafe-fixes" in table:
        value = table["unsafe-fixes"]
        if not isinstance(value, bool):
            raise SettingsError(f"{where}.unsafe-fixes: expected true or false, got {value!r}")
        config = replace(config, unsafe_fixes=value)
    if "output-format" in table:
        value = table["output-format"]
        if value not in OUTPUT_FORMATS:
            hint = _did_you_mean(str(value), OUTPUT_FORMATS) or f"; one of {', '.join(OUTPUT_FORMATS)}"
            raise SettingsError(f"{where}.output-format: unknown format {value!r}{hint}")
        config = replace(config, output_format=str(value))
    if "deepspeed-version" in table:
        try:
            config = replace(config, deepspeed_version=parse_setting(table["deepspeed-version"], where))
        except VersionError as error:
            raise SettingsError(str(error)) from error
    return config


def _patterns(patterns: Iterable[str], where: str) -> tuple[str, ...]:
    """`patterns`, each checked to be a glob dslint can match (`[z-a]` is not)."""
    checked = tuple(patterns)
    for pattern in checked:
        try:
            _glob(pattern)
        except re.error as error:
            raise SettingsError(f"{where}: bad pattern {pattern!r}: {error.msg}") from error
    return checked


def read_pyproject(path: Path) -> ProjectConfig | None:
    """The `[tool.dslint]` table of `path`, or None when the file has none."""
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
    return parse_table(table, path)


def find_pyproject(start: Path) -> ProjectConfig | None:
    """The nearest pyproject.toml with a `[tool.dslint]` table at or above `start` (a file or directory)."""
    directory = start.resolve()
    if not directory.is_dir():
        directory = directory.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() or path.is_symlink():  # a dangling or looping link is an error, not "no pyproject"
            config = read_pyproject(path)
            if config is not None:
                return config
    return None


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
        self._fixed: ProjectConfig | None = None
        if self.overrides.config_file is not None:
            fixed = read_pyproject(self.overrides.config_file)
            self._fixed = fixed if fixed is not None else ProjectConfig(path=self.overrides.config_file)
        self._by_directory: dict[Path, Settings] = {}
        # Memos for the walk: the pyproject that governs each directory, each directory's project root, and one
        # Settings per (pyproject, root, pins root), shared by every directory under it.
        self._pyprojects: dict[Path, ProjectConfig | None] = {}
        self._shared: dict[tuple[int, Path, Path | None], Settings] = {}
        self._pins = PinFinder()

    def for_path(self, path: Path) -> Settings:
        directory = path if path.is_dir() else path.parent
        directory = Path(os.path.abspath(directory))
        cached = self._by_directory.get(directory)
        if cached is not None:
            return cached
        if self.overrides.isolated:
            project: ProjectConfig | None = self._default
        elif self._fixed is not None:
            project = self._fixed
        else:
            project = self._find_pyproject(directory)
        project = project or self._default
        root = project.path.parent if project.path is not None else self.cwd
        # without a [tool.dslint] file, pins are read in the nearest directory that looks like a project root and
        # pins deepspeed (with --isolated too: the pins are the project's own facts, not dslint's configuration)
        pins = None if project.path is not None else self._pins.pins_root(directory)
        key = (id(project), root, pins)
        settings = self._shared.get(key)
        if settings is None:
            settings = Settings(
                root=root, project=project, overrides=self.overrides, pins_root=pins, pin_finder=self._pins
            )
            self._shared[key] = settings
        self._by_directory[directory] = settings
        return settings

    @functools.cached_property
    def _default(self) -> ProjectConfig:
        return ProjectConfig()

    def _find_pyproject(self, directory: Path) -> ProjectConfig | None:
        """`find_pyproject`, remembering the answer for every directory on the way up."""
        start = directory.resolve()
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

    def excluded(self, path: Path) -> bool:
        return self.for_path(path.parent if path.parent != path else path).is_excluded(path)

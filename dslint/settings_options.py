"""The keys of `[tool.dslint]`, each declared once, as ruff declares its `Options`.

Each key is one field of `ProjectConfig`, declared with `option(...)`: the field's name and Python type, its
default (what applies when pyproject.toml does not set it), and in the field's metadata the TOML type and default
as the README shows them, the `check` that turns a TOML value into the field's value (or raises `SettingsError`
naming the file and key), what `dslint settings` shows for it (`show`, from the effective settings), and its
documentation. Everything else comes from `OPTIONS`, the list of these fields in order:

- `parse_table` (reading `[tool.dslint]`): unknown keys, then each key's `check`, in `OPTIONS` order;
- `dslint.settings.Settings.describe` (the output of `dslint settings`): each key's `show`, in the same order;
- the README's settings table (`python -m dslint.settings_options --write`; tests/test_project.py checks it).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from dslint.config.versions import Version
from dslint.framework.catalog import CODES, Redirect, redirected
from dslint.framework.readme_blocks import replace_between, write_or_check
from dslint.gitignore import _translate
from dslint.limits import (
    DEFAULT_MAX_CONFIG_SIZE,
    DEFAULT_MAX_FILE_SIZE,
    DEFAULT_MAX_NESTING,
    Limits,
    format_size,
    parse_size,
)
from dslint.project.deepspeed_version import DeepSpeedVersion, VersionError, parse_setting
from dslint.selection import normalize_prefix

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
    # a library's unpacked source kept in the project (`third_party/deepspeed-0.14.5/`): its templates, tests and
    # examples are the library's, not the project's training code
    "deepspeed-[0-9]*",
    "transformers-[0-9]*",
    "accelerate-[0-9]*",
    "peft-[0-9]*",
    "trl-[0-9]*",
)


class SettingsError(Exception):
    """A pyproject.toml or command-line value dslint cannot use; the message says where and what to write."""


class Effective(Protocol):
    """What `show` reads: the effective settings of one project root (`dslint.settings.Settings`)."""

    @property
    def project(self) -> ProjectConfig: ...
    @property
    def exclude(self) -> tuple[str, ...]: ...
    @property
    def unsafe_fixes(self) -> bool: ...
    @property
    def output_format(self) -> str: ...
    @property
    def preview(self) -> bool: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def deepspeed(self) -> DeepSpeedVersion: ...


Check = Callable[[object, str, str], Any]  # (TOML value, "<file>: [tool.dslint]", key) -> the field's value
Show = Callable[[Effective], object]  # the effective settings -> what `dslint settings` prints for the key
T = TypeVar("T")


def option(
    default: T,
    *,
    toml: str,
    shown_default: str,
    check: Check,
    show: Show | None,
    doc: str,
    layered: str | None = None,
) -> T:
    """A `[tool.dslint]` key as a field of `ProjectConfig`; the key is the field's name with `-` for `_`.

    `show=None`: `dslint settings` shows the key folded into another (extend-exclude into exclude).
    `layered`: the key is a rule-selection layer the command line also sets (the `Overrides` attribute), shown
    again under `command-line`."""
    metadata = {
        "toml": toml,
        "shown_default": shown_default,
        "check": check,
        "show": show,
        "doc": doc,
        "layered": layered,
    }
    return dataclasses.field(default=default, metadata=metadata)


# -- checks: a TOML value -> the field's value -------------------------------------------------------------------


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word.replace("_", "-"), list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def validate_codes(prefixes: Iterable[str], where: str) -> tuple[str, ...]:
    """Normalized code prefixes; a prefix that matches no rule is an error. An old code goes through its redirect
    (`catalog.REDIRECTS`): it stands for the codes that now cover it, with a deprecation warning once per run,
    unless the same list names one of its new codes (a split code then means only itself)."""
    codes = CODES
    raws = list(prefixes)
    listed = [normalize_prefix(raw) for raw in raws]
    result: list[str] = []
    for raw, prefix in zip(raws, listed, strict=True):
        redirect = redirected(prefix)
        if redirect is not None:
            moved_on = prefix in codes and any(new in listed for new in redirect.to if new != prefix)
            if not moved_on:
                _warn_redirect(redirect, where)
                result.extend(redirect.to)
                continue
        if not any(code.startswith(prefix) for code in codes):
            raise SettingsError(f"{where}: {raw!r} matches no rule code{did_you_mean(raw.upper(), codes)}")
        result.append(prefix)
    return tuple(result)


_REDIRECT_WARNINGS: dict[str, str] = {}  # old code -> its warning, once per run
_TAKEN: set[str] = set()


def _warn_redirect(redirect: Redirect, where: str) -> None:
    if redirect.old in _REDIRECT_WARNINGS:
        return
    if redirect.old in redirect.to:
        others = ", ".join(code for code in redirect.to if code != redirect.old)
        hint = f"name {others} as well to choose them apart ({where})"
    else:
        hint = f"write {', '.join(redirect.to)} instead ({where})"
    _REDIRECT_WARNINGS[redirect.old] = (
        f"{redirect.old} is redirected to {', '.join(redirect.to)}: {redirect.why}; {hint}"
    )


def redirect_warnings() -> list[str]:
    """The deprecation warnings of redirected codes not yet printed in this run (each old code once)."""
    fresh = [message for code, message in _REDIRECT_WARNINGS.items() if code not in _TAKEN]
    _TAKEN.update(_REDIRECT_WARNINGS)
    return fresh


@functools.cache
@functools.lru_cache(maxsize=4096)
def glob_pattern(pattern: str) -> re.Pattern[str]:
    """A .gitignore-style path pattern as a regular expression over a '/'-separated relative path."""
    body = pattern.strip().rstrip("/")
    anchored = "/" in body
    body = body.lstrip("/").removeprefix("./")
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{_translate(body)}(?:/.*)?$")


def _string_list(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def _patterns(patterns: Iterable[str], where: str) -> tuple[str, ...]:
    """`patterns`, each checked to be a glob dslint can match (`[z-a]` is not)."""
    checked = tuple(patterns)
    for pattern in checked:
        try:
            glob_pattern(pattern)
        except re.error as error:
            raise SettingsError(f"{where}: bad pattern {pattern!r}: {error.msg}") from error
    return checked


def _codes(value: object, where: str, key: str) -> tuple[str, ...]:
    return validate_codes(_string_list(value, f"{where}.{key}"), where)


def _per_file_codes(value: object, where: str, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise SettingsError(f"{where}.{key}: expected a table of glob = [codes], got {value!r}")
    entries = tuple(
        (pattern, validate_codes(_string_list(codes, f"{where}.{key}.{pattern!r}"), where))
        for pattern, codes in value.items()
    )
    _patterns((pattern for pattern, _ in entries), f"{where}.{key}")
    return entries


def _globs(value: object, where: str, key: str) -> tuple[str, ...]:
    return _patterns(_string_list(value, f"{where}.{key}"), f"{where}.{key}")


def _boolean(value: object, where: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _output_format(value: object, where: str, key: str) -> str:
    if value not in OUTPUT_FORMATS:
        hint = did_you_mean(str(value), OUTPUT_FORMATS) or f"; one of {', '.join(OUTPUT_FORMATS)}"
        raise SettingsError(f"{where}.{key}: unknown format {value!r}{hint}")
    return str(value)


def _size(value: object, where: str, key: str) -> int:
    size = parse_size(value)
    if size is None:
        raise SettingsError(f'{where}.{key}: expected a size such as 2097152 or "2 MB", got {value!r}')
    return size


def _nesting(value: object, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 10 <= value <= 100_000:
        raise SettingsError(f"{where}.{key}: expected a whole number from 10 to 100000, got {value!r}")
    return value


def _deepspeed_version(value: object, where: str, key: str) -> Version:
    try:
        return parse_setting(value, where)
    except VersionError as error:
        raise SettingsError(str(error)) from error


def _extend_path(value: object, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{where}.{key}: expected the path of a pyproject.toml, got {value!r}")
    return value


def _extends(project: ProjectConfig) -> list[str]:
    """The files a configuration inherits from, nearest first."""
    found: list[str] = []
    base = project.base
    while base is not None:
        found.append(str(base.path))
        base = base.base
    return found


# -- the keys ----------------------------------------------------------------------------------------------------


_CODES_TOML = "list of code prefixes"


@dataclass(frozen=True)
class ProjectConfig:
    """The validated `[tool.dslint]` table of one pyproject.toml (or nothing, when there is none).

    Every field but `path` is a key (see the module's docs); None means "not set here"."""

    path: Path | None = None
    # The keys this table set itself, and the table it `extend`s (read, with its own bases, before this one).
    keys: frozenset[str] = dataclasses.field(default=frozenset(), compare=False)
    base: ProjectConfig | None = None
    extend: str | None = option(
        None,
        toml="path to another pyproject.toml",
        shown_default="none",
        check=lambda value, where, key: _extend_path(value, where, key),
        show=lambda s: _extends(s.project),
        doc="Inherit the settings of that file's `[tool.dslint]` (relative to this file); a key set here wins, "
        "`extend-exclude` adds to the base's, and the base's rule selection is a layer before this one. Its "
        "path patterns stay relative to its own directory. A cycle is an error.",
    )
    select: tuple[str, ...] | None = option(
        None,
        toml=_CODES_TOML,
        shown_default='`["DSL"]` (every rule)',
        check=_codes,
        show=lambda s: list(s.project.select) if s.project.select is not None else ["DSL"],
        doc="The rules to run. A layer's `select` starts it afresh; the most specific prefix wins, a tie goes "
        "to `ignore`. The command line's `--select` is the next layer.",
        layered="select",
    )
    extend_select: tuple[str, ...] = option(
        (),
        toml=_CODES_TOML,
        shown_default="`[]`",
        check=_codes,
        show=lambda s: list(s.project.extend_select),
        doc="Rules to add to those the earlier layers enabled.",
        layered="extend_select",
    )
    ignore: tuple[str, ...] = option(
        (),
        toml=_CODES_TOML,
        shown_default="`[]`",
        check=_codes,
        show=lambda s: list(s.project.ignore),
        doc='Rules to leave out, as `["DSL103"]`.',
        layered="ignore",
    )
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = option(
        (),
        toml="table of glob = list of code prefixes",
        shown_default="`{}`",
        check=_per_file_codes,
        show=lambda s: {pattern: list(codes) for pattern, codes in s.project.per_file_ignores},
        doc='Rules to leave out in the matching files, as `{ "tests/**" = ["DSL1"] }`.',
    )
    preview: bool | None = option(
        None,
        toml="boolean",
        shown_default="`false`",
        check=_boolean,
        show=lambda s: s.preview,
        doc="Whether rules in preview (`dslint rules` shows each rule's lifecycle) run; `--preview` / "
        "`--no-preview` on the command line win.",
    )
    exclude: tuple[str, ...] | None = option(
        None,
        toml="list of globs",
        shown_default=", ".join(f"`{pattern}`" for pattern in DEFAULT_EXCLUDE),
        check=_globs,
        show=lambda s: list(s.exclude),
        doc="Paths not walked into (a file named on the command line is still checked, unless "
        "`--force-exclude`). Replaces the default list.",
    )
    extend_exclude: tuple[str, ...] = option(
        (),
        toml="list of globs",
        shown_default="`[]`",
        check=_globs,
        show=None,  # shown within `exclude`
        doc="Paths not walked into, added to `exclude`.",
    )
    unsafe_fixes: bool | None = option(
        None,
        toml="boolean",
        shown_default="`false`",
        check=_boolean,
        show=lambda s: s.unsafe_fixes,
        doc="Whether `dslint fix` applies, and `dslint check` offers, the fixes marked unsafe too "
        "(`--unsafe-fixes` / `--no-unsafe-fixes` on the command line win).",
    )
    output_format: str | None = option(
        None,
        toml=f"one of {', '.join(OUTPUT_FORMATS)}",
        shown_default=f"`{DEFAULT_OUTPUT_FORMAT}`",
        check=_output_format,
        show=lambda s: s.output_format,
        doc="How `dslint check` prints findings (`--output-format`).",
    )
    max_file_size: int = option(
        DEFAULT_MAX_FILE_SIZE,
        toml='size: bytes, or a string as "512 kB", "4 MB"',
        shown_default=f"`{format_size(DEFAULT_MAX_FILE_SIZE)}`",
        check=_size,
        show=lambda s: format_size(s.limits.max_file_size),
        doc="Larger scripts are skipped with an error line.",
    )
    max_nesting: int = option(
        DEFAULT_MAX_NESTING,
        toml="whole number from 10 to 100000",
        shown_default=f"`{DEFAULT_MAX_NESTING}`",
        check=_nesting,
        show=lambda s: s.limits.max_nesting,
        doc="Scripts whose syntax tree is deeper get DSL002 instead of being parsed.",
    )
    max_config_size: int = option(
        DEFAULT_MAX_CONFIG_SIZE,
        toml="size, as `max-file-size`",
        shown_default=f"`{format_size(DEFAULT_MAX_CONFIG_SIZE)}`",
        check=_size,
        show=lambda s: format_size(s.limits.max_config_size),
        doc="Larger JSON/HJSON configs are skipped the same way.",
    )
    deepspeed_version: Version | None = option(  # noqa: RUF009 (a field specifier, as dataclasses.field)
        None,
        toml='DeepSpeed release, as "0.14" or "0.19.8"',
        shown_default="the project's own pin, else the newest release dslint knows",
        check=_deepspeed_version,
        show=lambda s: s.deepspeed.describe(),
        doc="The DeepSpeed the project runs, which decides the config keys and APIs rules accept.",
    )

    @property
    def limits(self) -> Limits:
        return Limits(self.max_file_size, self.max_nesting, self.max_config_size)


@dataclass(frozen=True)
class Option:
    """One key of `[tool.dslint]`, read from its `ProjectConfig` field."""

    name: str  # the TOML key: "max-file-size"
    attribute: str  # the ProjectConfig field: "max_file_size"
    toml: str
    shown_default: str
    check: Check
    show: Show | None
    doc: str
    layered: str | None


OPTIONS: tuple[Option, ...] = tuple(
    Option(
        name=item.name.replace("_", "-"),
        attribute=item.name,
        toml=item.metadata["toml"],
        shown_default=item.metadata["shown_default"],
        check=item.metadata["check"],
        show=item.metadata["show"],
        doc=item.metadata["doc"],
        layered=item.metadata["layered"],
    )
    for item in dataclasses.fields(ProjectConfig)
    if "check" in item.metadata
)
KEYS = tuple(item.name for item in OPTIONS)


def parse_table(table: Mapping[str, object], source: Path | None) -> ProjectConfig:
    """Validate a `[tool.dslint]` table: unknown keys first, then each key in `OPTIONS` order."""
    where = f"{source}: [tool.dslint]" if source else "[tool.dslint]"
    for key in table:
        if key not in KEYS:
            raise SettingsError(f"{where}: unknown key {key!r}{did_you_mean(key, KEYS)}")
    values: dict[str, Any] = {
        item.attribute: item.check(table[item.name], where, item.name) for item in OPTIONS if item.name in table
    }
    return dataclasses.replace(ProjectConfig(path=source, keys=frozenset(values)), **values)


def parse_overrides(pairs: Iterable[tuple[str, object]]) -> dict[str, Any]:
    """`--config KEY=VALUE` overrides: each key checked as in `[tool.dslint]`, as the field's value by attribute."""
    by_name = {item.name: item for item in OPTIONS}
    values: dict[str, Any] = {}
    for key, value in pairs:
        item = by_name.get(key)
        if item is None:
            raise SettingsError(f"--config: unknown key {key!r}{did_you_mean(key, KEYS)}")
        if item.name == "extend":
            raise SettingsError("--config: `extend` belongs in a file; name that file with `--config PATH`")
        values[item.attribute] = item.check(value, "--config", key)
    return values


def describe(settings: Effective, overrides: object) -> dict[str, object]:
    """What `dslint settings` shows for each key, in `OPTIONS` order; the command line's selection layers
    (`overrides`, a `dslint.settings.Overrides`) under `command-line`, after the last selection key."""
    data: dict[str, object] = {}
    layered = [item for item in OPTIONS if item.layered is not None]
    for item in OPTIONS:
        if item.show is not None:
            data[item.name] = item.show(settings)
        if layered and item is layered[-1]:
            data["command-line"] = {key.name: _shown_override(getattr(overrides, key.layered or "")) for key in layered}
    return data


def _shown_override(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


# -- the README table ----------------------------------------------------------------------------------------------

BEGIN = "<!-- settings-table:begin (generated by `python -m dslint.settings_options --write`) -->"
END = "<!-- settings-table:end -->"


def render() -> str:
    lines = ["| Key | Type | Default | What it does |", "|---|---|---|---|"]
    for item in OPTIONS:
        cells = (f"`{item.name}`", item.toml, item.shown_default, item.doc)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def replace_block(text: str) -> str:
    return replace_between(text, BEGIN, END, render())


def main() -> None:
    write_or_check(replace_block, "settings table", "python -m dslint.settings_options --write")


if __name__ == "__main__":
    main()

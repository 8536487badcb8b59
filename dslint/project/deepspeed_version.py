"""Which DeepSpeed a project runs, as ruff has `target-version`: `[tool.dslint] deepspeed-version`, else the
project's own pin, else the newest release dslint knows.

Pins are read, in this order, from the project root (the directory of the pyproject.toml that holds `[tool.dslint]`,
else the current directory): `requirements*.txt` (`requirement.txt` too; also under `requirements/`), pyproject.toml
`[project] dependencies` (and optional dependencies), `setup.cfg` and `setup.py` `install_requires`,
`environment.yml` (conda `deepspeed=0.14` or a `pip:` entry), and the `pip install` lines of a `Dockerfile`; then,
as a fallback, other `*requirements*.txt` at the root, the root's install scripts (`setup.sh`, `install.sh`) and the
requirement, conda and Docker files of set-up folders (`setup/`, `environments/`, `docker/`...), the `pip install`
lines of their shell scripts included; last, the root README's code blocks (a requirement line such as `deepspeed ==
0.9.2`, or a `pip install` command). The first file that pins `deepspeed` decides; a bare `deepspeed` (no version)
pins nothing.

A range resolves to the lowest version it admits, the bound itself (`deepspeed>=0.12,<0.15` is 0.12.0,
`~=0.14.2` is 0.14.2, `==0.14.*` is 0.14.0): dslint then warns about everything that can go wrong on the
oldest DeepSpeed the project allows. A range with only an upper bound (`deepspeed<0.15`) resolves to the
newest known release below it.

A range also admits newer releases than its lowest, and a fresh install gets the newest of them: `deepspeed>=0.13.5`
installs 0.19.8 today. The newest known release a pin admits is kept beside the version (`DeepSpeedVersion.newest`),
and config rules are judged at both ends (`dslint.lint.config`): what the lowest release reads but the newest
refuses is reported too, naming the newest release and the pin.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from dslint.config.versions import Version, known_releases, newest_known
from dslint.limits import TooLarge, read_small_text

SETTING = "deepspeed-version"


@dataclass(frozen=True)
class DeepSpeedVersion:
    """The DeepSpeed version a project runs, and where dslint learnt it."""

    version: Version
    source: str  # "pyproject.toml:12 ([tool.dslint] deepspeed-version)", "requirements.txt:3", "default"
    written: str = ""  # the pin as written: 'deepspeed>=0.12,<0.15'
    # The newest known release the pin admits, when newer than `version` (a range); None for an exact pin,
    # the setting and the default.
    newest: Version | None = None

    def describe(self) -> str:
        pin = f" ({self.written})" if self.written else ""
        admits = f"; it admits up to {self.newest}" if self.newest is not None else ""
        return f"{self.version} from {self.source}{pin}{admits}"

    def pin_note(self) -> str:
        """How a message names the pin: '`deepspeed>=0.13.5` (requirements.txt:4)'."""
        return f"`{self.written}` ({self.source})" if self.written else self.source


class VersionError(Exception):
    """A `deepspeed-version` setting dslint cannot read; the message says where and what to write."""


def default_version() -> DeepSpeedVersion:
    return DeepSpeedVersion(newest_known(), "default: the newest release dslint knows")


# -- requirement specifiers -------------------------------------------------------------------------------------

_CLAUSE = re.compile(r"(===|==|~=|>=|<=|!=|>|<|=)\s*([\w.*+!-]+)")


def version_of_specifier(specifier: str) -> Version | None:
    """The version a requirement's specifier resolves to (see the module's docs); None when it names none."""
    clauses = _CLAUSE.findall(specifier)
    lower: list[Version] = []
    upper: list[tuple[str, Version]] = []
    for operator, raw in clauses:
        version = Version.parse(raw)
        if version is None or operator == "!=":
            continue
        if operator in ("==", "===", "=", "~=", ">=", ">"):
            lower.append(version)
        else:
            upper.append((operator, version))
    if lower:
        return max(lower)
    if upper:
        below = [v for v in known_releases() if all(v < bound or (op == "<=" and v == bound) for op, bound in upper)]
        return below[-1] if below else min(bound for _, bound in upper)
    return None


def newest_of_specifier(specifier: str) -> Version | None:
    """The newest known release that every clause of a requirement's specifier admits; None when none does."""
    clauses = [(operator, raw) for operator, raw in _CLAUSE.findall(specifier)]
    if not clauses:
        return None
    admitted = [release for release in known_releases() if all(_admits(op, raw, release) for op, raw in clauses)]
    return admitted[-1] if admitted else None


def _admits(operator: str, raw: str, release: Version) -> bool:
    bound = Version.parse(raw)
    if bound is None:
        return True
    if operator in ("==", "===", "=", "!="):
        parts = raw.rstrip(".*").split(".") if raw.endswith("*") else None
        if parts is not None:  # `==0.14.*`: the same leading parts
            same = [str(p) for p in (release.major, release.minor, release.patch)[: len(parts)]] == parts
        else:
            same = release == bound
        return not same if operator == "!=" else same
    if operator == "~=":  # `~=0.14.2`: >= 0.14.2 and the same 0.14; `~=0.14`: >= 0.14 and the same 0.x
        if release < bound:
            return False
        parts = raw.split(".")
        leading = (release.major, release.minor)[: max(1, len(parts) - 1)]
        return leading == (bound.major, bound.minor)[: max(1, len(parts) - 1)]
    return {
        ">=": not release < bound,
        ">": bound < release,
        "<=": not bound < release,
        "<": release < bound,
    }[operator]


# A requirement naming deepspeed: `deepspeed`, `deepspeed[autotuning]==0.14.0`, `DeepSpeed >= 0.12, < 0.15`;
# not a module path, a URL or another package (`deepspeed.ops`, `.../deepspeed.git`, `deepspeed-kernels`).
_REQUIREMENT = re.compile(
    r"(?<![\w./@-])deepspeed(?:\[[^\]]*\])?(?![\w./-])\s*"
    r"((?:(?:===|==|~=|>=|<=|!=|>|<|=)\s*[\w.*+!-]+\s*,?\s*)*)",
    re.I,
)


def _pins_in_line(line: str) -> str | None:
    """The specifier of a deepspeed requirement on `line` ('' for a bare `deepspeed`), else None."""
    match = _REQUIREMENT.search(re.sub(r"(^|\s)#.*", "", line))
    return match[1].strip().rstrip(",").strip() if match is not None else None


@dataclass(frozen=True)
class Pin:
    path: Path
    line: int
    written: str  # the requirement as written
    version: Version
    newest: Version | None = None  # the newest known release it admits, when newer than `version`


def _scan(path: Path, lines: list[tuple[int, str]]) -> Pin | None:
    for number, line in lines:
        specifier = _pins_in_line(line)
        if not specifier:
            continue
        version = version_of_specifier(specifier)
        if version is not None:
            written = _REQUIREMENT.search(line)
            newest = newest_of_specifier(specifier)
            return Pin(
                path,
                number,
                written[0].strip().rstrip(",").strip() if written else line.strip(),
                version,
                newest if newest is not None and version < newest else None,
            )
    return None


def _read_lines(path: Path) -> list[tuple[int, str]]:
    try:
        text = read_small_text(path)
    except (OSError, TooLarge):
        return []
    return list(enumerate(text.splitlines(), start=1))


def _requirement_files(root: Path) -> list[Path]:
    found = sorted(root.glob("requirement*.txt")) + sorted((root / "requirements").glob("*.txt"))
    return [p for p in found if p.is_file()]


def _toml_section_lines(path: Path, wanted: tuple[str, ...]) -> list[tuple[int, str]]:
    """The lines of pyproject.toml inside `[project]` dependency arrays and `[project.optional-dependencies]`
    (read line by line, so a pin keeps its line number)."""
    lines = _read_lines(path)
    section = ""
    in_array = False
    result: list[tuple[int, str]] = []
    for number, line in lines:
        stripped = line.strip()
        if stripped.startswith("[") and not in_array:
            section = stripped.strip("[]").strip()
            continue
        if section in wanted:
            if section == "project" and not in_array and not stripped.startswith(("dependencies", "optional")):
                continue
            if "[" in stripped and "=" in stripped:
                in_array = "]" not in stripped.split("=", 1)[1]
            elif stripped.startswith("]"):
                in_array = False
            result.append((number, line))
    return result


def _setup_cfg_lines(path: Path) -> list[tuple[int, str]]:
    lines = _read_lines(path)
    result: list[tuple[int, str]] = []
    inside = False
    for number, line in lines:
        if re.match(r"\s*install_requires\s*=", line):
            inside = True
            result.append((number, line.split("=", 1)[1]))
            continue
        if inside and line[:1] in (" ", "\t") and line.strip():
            result.append((number, line))
        elif inside:
            inside = False
    return result


def _setup_py_lines(path: Path) -> list[tuple[int, str]]:
    """String literals naming deepspeed in setup.py (install_requires and the lists it is built from)."""
    return [(n, m) for n, line in _read_lines(path) for m in re.findall(r"""["']([^"']*deepspeed[^"']*)["']""", line)]


def _environment_lines(path: Path) -> list[tuple[int, str]]:
    """Conda dependencies (`- deepspeed=0.14.0`, `- deepspeed==0.14`) and pip entries of environment.yml."""
    return [(n, line.strip().lstrip("-").strip()) for n, line in _read_lines(path) if line.strip().startswith("-")]


def _dockerfile_lines(path: Path) -> list[tuple[int, str]]:
    """`pip install ... deepspeed==X` in a Dockerfile (continued lines joined; the first line's number)."""
    result: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in _read_lines(path):
        start, text = pending if pending is not None else (number, "")
        text += " " + line.rstrip().rstrip("\\")
        pending = (start, text) if line.rstrip().endswith("\\") else None
        if pending is None and re.search(r"\bpip3?\s+install\b|\buv\s+pip\s+install\b", text):
            for word in re.findall(r"""["']?([^\s"']*deepspeed[^\s"']*)["']?""", text, re.I):
                result.append((start, word))
    return result


def _readme_lines(path: Path) -> list[tuple[int, str]]:
    """The environment a README lists in its code blocks, the last fallback: a requirement line alone
    (`deepspeed == 0.9.2` in a block of pins) or a `pip install ... deepspeed==X` command. Prose is not read
    ("tested with DeepSpeed 0.9" pins nothing)."""
    result: list[tuple[int, str]] = []
    fenced = False
    for number, line in _read_lines(path):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        indented = path.suffix.lower() == ".rst" and line.startswith(("    ", "\t"))
        if not (fenced or indented):
            continue
        if re.match(r"(?i)deepspeed(?:\[[^\]]*\])?\s*(?:===|==|~=|>=|<=|>|<)", stripped):
            result.append((number, stripped))
        elif re.search(r"\bpip3?\s+install\b|\buv\s+pip\s+install\b", stripped):
            for word in re.findall(r"""["']?([^\s"']*deepspeed[^\s"']*)["']?""", stripped, re.I):
                result.append((number, word))
    return result


PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "environment.yaml", ".git")


# Folders where projects keep their environment set-up beside the code (`setup/pip-requirements.txt`,
# `environments/environment.yaml`, `docker/Dockerfile`, one level deeper too: `docker/cu124/requirements.txt`): read
# after the root's own files, as a fallback.
SETUP_FOLDERS = ("setup", "environments", "environment", "env", "envs", "docker")
# The root's own install scripts, read with the set-up folders' (their `pip install` lines).
ROOT_INSTALL_SCRIPTS = ("setup*.sh", "install*.sh", "env*.sh")


def _setup_folder_files(root: Path) -> list[tuple[Path, list[tuple[int, str]]]]:
    """Requirement files named `*requirements*.txt` at the root, its install scripts (`setup.sh`, `install.sh`),
    and the requirement, conda and Docker files and the shell install scripts of the root's set-up folders
    (`SETUP_FOLDERS`), each with its lines as the readers
    above take them."""
    found: list[tuple[Path, list[tuple[int, str]]]] = []
    known = set(_requirement_files(root))
    for path in sorted(root.glob("*requirements*.txt")):
        if path.is_file() and path not in known:
            found.append((path, _read_lines(path)))
    for pattern in ROOT_INSTALL_SCRIPTS:  # `pip install deepspeed==0.17.6` in the root's `setup.sh`
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                found.append((path, _dockerfile_lines(path)))
    for directory in _setup_directories(root):
        for path in sorted(directory.glob("*requirements*.txt")):
            if path.is_file():
                found.append((path, _read_lines(path)))
        for path in sorted([*directory.glob("environment*.yml"), *directory.glob("environment*.yaml")]):
            if path.is_file():
                found.append((path, _environment_lines(path)))
        for path in sorted([*directory.glob("Dockerfile*"), *directory.glob("*.sh")]):
            if path.is_file():  # `pip install deepspeed==0.17.4` in a Dockerfile or an install script
                found.append((path, _dockerfile_lines(path)))
    return found


def _setup_directories(root: Path) -> list[Path]:
    """The root's set-up folders, each followed by its own folders, one level (`docker/cu124/`: an image a CUDA
    release)."""
    found: list[Path] = []
    for folder in SETUP_FOLDERS:
        directory = root / folder
        if directory.is_dir():
            found.append(directory)
            found.extend(sorted(child for child in directory.iterdir() if child.is_dir()))
    return found


def project_root(directory: Path) -> Path | None:
    """The nearest directory at or above `directory` that holds a project file (or requirements, a Dockerfile)."""
    for candidate in (directory, *directory.parents):
        if _is_project_root(candidate):
            return candidate
    return None


def _is_project_root(directory: Path) -> bool:
    """A project file, requirements or a Dockerfile here. Asked of every folder a run walks: its names are listed
    once, and only those that match are asked further (a marker must exist past its links, a requirements file
    must be a file), as `_requirement_files` and the globs would."""
    try:
        names = os.listdir(directory)
    except OSError:  # not a readable folder: no file in it can be found either
        return False
    for name in names:
        if name in PROJECT_MARKERS and (directory / name).exists():
            return True
        if name.startswith("requirement") and name.endswith(".txt") and (directory / name).is_file():
            return True
        if name.startswith("Dockerfile"):
            return True
    return "requirements" in names and bool(_requirement_files(directory))


class PinFinder:
    """Where a directory's pins are read and what they say, each answer kept: one finder per settings resolver
    (a run, or the language server between saves), since many directories share a root."""

    def __init__(self) -> None:
        self._roots: dict[Path, Path | None] = {}
        self._pins: dict[Path, Pin | None] = {}
        self._answers: dict[Path | None, Path | None] = {}  # `pins_root`, by the nearest project root

    def project_root(self, directory: Path) -> Path | None:
        """`project_root`, with the answer for each directory on the way up kept."""
        if directory not in self._roots:
            if _is_project_root(directory):
                self._roots[directory] = directory
            else:
                parent = directory.parent
                self._roots[directory] = self.project_root(parent) if parent != directory else None
        return self._roots[directory]

    def find_pin(self, root: Path) -> Pin | None:
        if root not in self._pins:
            self._pins[root] = find_pin(root)
        return self._pins[root]

    def pins_root(self, directory: Path) -> Path | None:
        """Where the pins of files in `directory` are read: the nearest directory at or above it that looks
        like a project root and pins deepspeed, not going above a repository's top (a directory holding
        `.git`); an example's own requirements.txt that does not pin deepspeed leaves the question to the
        package above it. A range there (`deepspeed>=0.9.0`, often a vendored package's own file) gives way to
        an exact pin above it that the range admits (`deepspeed==0.9.3` at the repository's root): that release
        is what an install of the repository gets, and it satisfies both. Without any pin, the nearest project
        root (its files then say the default)."""
        nearest = self.project_root(directory)
        # the answer depends on the nearest root alone: asked once per root, not once per folder under it
        if nearest in self._answers:
            return self._answers[nearest]
        answer = self._answers[nearest] = self._pins_root_from(nearest)
        return answer

    def _pins_root_from(self, nearest: Path | None) -> Path | None:
        found: Path | None = None
        candidate = nearest
        while candidate is not None:
            pin = self.find_pin(candidate)
            if pin is not None and found is None:
                if pin.newest is None:
                    return candidate
                found = candidate  # a range: an exact pin above that it admits says which release installs
            elif (
                pin is not None and _exact(pin) and _admitted(cast(Pin, self.find_pin(cast(Path, found))), pin.version)
            ):
                return candidate
            if (candidate / ".git").exists() or candidate.parent == candidate:
                break
            candidate = self.project_root(candidate.parent)
        return found if found is not None else nearest


def _exact(pin: Pin) -> bool:
    """`deepspeed==0.9.3`: one release, no wildcard."""
    clauses = _CLAUSE.findall(pin.written)
    return len(clauses) == 1 and clauses[0][0] in ("==", "===") and "*" not in clauses[0][1]


def _admitted(pin: Pin, version: Version) -> bool:
    """Whether `version` satisfies every clause of `pin`'s specifier."""
    return all(_admits(operator, raw, version) for operator, raw in _CLAUSE.findall(pin.written))


def find_pin(root: Path) -> Pin | None:
    """The first deepspeed pin in the project's own files under `root` (see the module's docs)."""
    candidates: list[tuple[Path, list[tuple[int, str]]]] = []
    for path in _requirement_files(root):
        candidates.append((path, _read_lines(path)))
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        candidates.append((pyproject, _toml_section_lines(pyproject, ("project", "project.optional-dependencies"))))
    if (root / "setup.cfg").is_file():
        candidates.append((root / "setup.cfg", _setup_cfg_lines(root / "setup.cfg")))
    if (root / "setup.py").is_file():
        candidates.append((root / "setup.py", _setup_py_lines(root / "setup.py")))
    for name in ("environment.yml", "environment.yaml"):
        if (root / name).is_file():
            candidates.append((root / name, _environment_lines(root / name)))
    for path in sorted(root.glob("Dockerfile*")):
        if path.is_file():
            candidates.append((path, _dockerfile_lines(path)))
    candidates.extend(_setup_folder_files(root))
    for path in sorted(root.glob("README*")) + sorted(root.glob("readme*")):
        if path.is_file() and path.suffix.lower() in (".md", ".rst", ".txt", ""):
            candidates.append((path, _readme_lines(path)))
    for path, lines in candidates:
        pin = _scan(path, lines)
        if pin is not None:
            return pin
    return None


# -- the setting --------------------------------------------------------------------------------------------------


def parse_setting(value: object, where: str) -> Version:
    """`deepspeed-version = "0.14"` (a release number; a patch is optional)."""
    version = Version.parse(value) if isinstance(value, str) else None
    if version is None:
        raise VersionError(f'{where}.{SETTING}: expected a DeepSpeed release such as "0.14" or "0.19.8", got {value!r}')
    return version


def setting_line(path: Path) -> int | None:
    for number, line in _read_lines(path):
        if re.match(rf"\s*{re.escape(SETTING)}\s*=", line):
            return number
    return None


def resolve(
    root: Path, setting: Version | None = None, config_file: Path | None = None, finder: PinFinder | None = None
) -> DeepSpeedVersion:
    """The DeepSpeed a project under `root` runs: the setting, else its pin, else the newest known release."""
    if setting is not None:
        where = "[tool.dslint] deepspeed-version"
        if config_file is not None:
            line = setting_line(config_file)
            where = (
                f"{_shown(config_file, root)}:{line} ({where})" if line else f"{_shown(config_file, root)} ({where})"
            )
        return DeepSpeedVersion(setting, where)
    pin = finder.find_pin(root) if finder is not None else find_pin(root)
    if pin is not None:
        return DeepSpeedVersion(pin.version, f"{_shown(pin.path, root)}:{pin.line}", pin.written, pin.newest)
    return default_version()


def _shown(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)

"""The result cache: a file's findings are kept, keyed on everything they depend on, and served again while
none of it has changed (as ruff's cache; on by default for `dslint check`, `--no-cache` turns it off).

Where: `--cache-dir`, else `DSLINT_CACHE_DIR`, else `.dslint_cache/` in the project root (the nearest directory
above the current one holding a `pyproject.toml` or `.git`, else the current directory). The folder holds its
own `.gitignore` (`*`) and a `CACHEDIR.TAG`; `dslint clean` removes it.

A file's key is the hash of: dslint's code (its version and the stat of every module, so that an edited rule
never serves an old answer), the effective settings that change findings (the rule selection, with the
DeepSpeed version the project runs, the limits, `--world-size`), the current directory (paths in findings are
shown relative to it), the file's path and content bytes, and what the project index says about the file (its
`ProjectFacts` and who reads it as a config). The files read while linting it (the configs a script points at,
through `dslint.project.inputs`) are stored beside the result with their states (content hash, or missing) and
checked on every hit. The project index itself is cached the same way: keyed on the files it is built over and
the launchers found, checked against every file it read or looked for.

Entries are JSON (never pickle: a cache folder can come from anywhere), one file per key, written to a temporary
file and moved into place (`os.replace`): concurrent runs write whole entries or nothing. An entry that does
not parse, is truncated, or is another key's or another format's is ignored and rebuilt. At the end of a run over
many files the entries it served or stored are also written together in one file (`pack.json`, beside the last
runs' others within `MAX_PACKED`, and only when one of them was not in it as it is): the next such run reads the
pack once and asks an entry's own file only for a key the pack lacks, checking a packed entry exactly as one read
from its file. A run over a few files (`PACKED_RUN`: a pre-commit hook's) reads their own entries and leaves the
pack alone.

A file's content hash is itself kept, as git's index keeps it: beside its size, modification and change times
and inode (`states.json`, written at the end of a run), so that a run over unchanged files stats them instead of
reading them. A hash is kept only for a file whose times are older than the start of the run that read it, by a
margin wider than any file system's timestamp granularity: a file written during or after that moment (or in
the same tick as it) has times no older, so it is read and hashed again, and any later write changes its change
time, which nothing but the kernel sets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any

import dslint
from dslint.limits import Limits, TooLarge, open_regular, read_capped
from dslint.selection import RuleSelection

FORMAT = 1
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # an entry is read no further (a symlink to /dev/zero is refused before)
ENV = "DSLINT_CACHE_DIR"
DIRECTORY_NAME = ".dslint_cache"
TAG = "CACHEDIR.TAG"
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by dslint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
MISSING = "-"
DIRECTORY = "d"
NOT_REGULAR = "?"  # a device, a pipe: never read for a state, never served from the cache
HASHED_BYTES = 64 * 1024 * 1024  # a larger file's state is its size and modification time
STATES = "states.json"  # the kept content hashes, by path, with the stat they were read under
PACK = "pack.json"  # the entries the last run served or stored, in one file: one read instead of one per file
MAX_PACK_BYTES = 256 * 1024 * 1024
MAX_PACKED = 100_000  # more entries than this: only the last run's are packed
PACKED_RUN = 64  # a run looking up fewer entries (a pre-commit hook's few files) reads and writes no pack
MAX_STATES_BYTES = 64 * 1024 * 1024
MAX_STATES = 200_000  # more kept hashes than this: only the last run's are written
RACY_NS = 2_000_000_000  # a time this close to the run's start may be the same tick as a later write


def default_directory(cwd: Path | None = None) -> Path:
    """`DSLINT_CACHE_DIR`, else `.dslint_cache` in the project root above `cwd`."""
    from_env = os.environ.get(ENV)
    if from_env:
        return Path(from_env)
    start = Path(os.path.abspath(cwd or Path.cwd()))
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file() or (directory / ".git").exists():
            return directory / DIRECTORY_NAME
    return start / DIRECTORY_NAME


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """dslint's version and the size and modification time of each of its files: a cache written by other code
    (another version, or a rule edited in a checkout) is never read."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{dslint.__version__}\0{FORMAT}\0".encode())
    package = Path(dslint.__file__).resolve().parent
    for directory, subdirectories, names in os.walk(package):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".json")):
                try:
                    stat = os.stat(os.path.join(directory, name))
                except OSError:
                    continue
                digest.update(f"{directory}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def digest(*parts: object) -> str:
    """A hash of `parts` that does not depend on the process (sets are hashed in sorted order)."""
    hashed = hashlib.blake2b(digest_size=20)
    for part in parts:
        hashed.update(_stable(part).encode("utf-8", "backslashreplace"))
        hashed.update(b"\0")
    return hashed.hexdigest()


def _stable(value: Any) -> str:
    if type(value) in _SHARED_PARTS:
        return _stable_shared(value)
    return _stable_any(value)


@functools.lru_cache(maxsize=256)
def _stable_shared(value: Any) -> str:
    """A part every file's key shares (its settings' selection and limits: frozen, of immutable fields), encoded
    once per value rather than once per file (a warm run keys every file)."""
    return _stable_any(value)


def _stable_any(value: Any) -> str:
    try:
        return json.dumps(_sorted_sets(encode(value)), sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


_SHARED_PARTS = (RuleSelection, Limits)


def _sorted_sets(value: Any) -> Any:
    if isinstance(value, list):
        return [_sorted_sets(item) for item in value]
    if isinstance(value, dict):
        found = {key: _sorted_sets(item) for key, item in value.items()}
        if "S" in found and isinstance(found["S"], list):
            found["S"] = sorted(found["S"], key=lambda item: json.dumps(item, sort_keys=True))
        return found
    return value


# --- the codec: dslint's dataclasses and enums, tuples, dicts and sets, to and from JSON ---------------------


def encode(value: Any) -> Any:
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, enum.Enum):
        return {"E": _qualified(type(value)), "v": value.value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a field holding its default is left out (the class gives it back): most of a launch's or a finding's
        # fields do, and a warm run reads and decodes every entry it serves
        fields = {
            name: encode(item)
            for name, default in _init_fields(type(value))
            if not (type(item := getattr(value, name)) is type(default) and item == default)
        }
        return {"D": _qualified(type(value)), "f": fields}
    if isinstance(value, tuple):
        return {"T": [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {"M": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"S": [encode(item) for item in value], "F": isinstance(value, frozenset)}
    if isinstance(value, Path):
        return {"P": str(value)}
    raise TypeError(f"cannot cache a {type(value).__name__}")


class _Required:
    """The default of a field that has none (never equal to a value)."""


@functools.cache
def _init_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """A dataclass's fields that `__init__` takes, each with its default (a factory's product, made once, only
    compared with), or `_Required`."""
    found: list[tuple[str, Any]] = []
    for item in dataclasses.fields(cls):
        if not item.init:
            continue
        if item.default is not dataclasses.MISSING:
            default: Any = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        else:
            default = _Required
        found.append((item.name, default))
    return tuple(found)


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "D" in value:
        cls = _class(value["D"])
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise ValueError(f"not a dataclass: {value['D']}")
        return cls(**{name: decode(item) for name, item in value["f"].items()})
    if "T" in value:
        return tuple(decode(item) for item in value["T"])
    if "M" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["M"]}
    if "E" in value:
        cls = _class(value["E"])
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise ValueError(f"not an enum: {value['E']}")
        return cls(value["v"])
    if "S" in value:
        items = [_hashable(decode(item)) for item in value["S"]]
        return frozenset(items) if value.get("F") else set(items)
    if "P" in value:
        return Path(value["P"])
    raise ValueError("unknown cache value")


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@functools.cache
def _class(name: str) -> Any:
    """A class of dslint's own, by `module:qualname`; nothing outside the package is ever imported. Looked up once
    per name (a warm run decodes tens of thousands of cached findings and facts)."""
    module_name, _, qualname = name.partition(":")
    if not (module_name == "dslint" or module_name.startswith("dslint.")) or not qualname:
        raise ValueError(f"not a dslint class: {name}")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


# --- the store ------------------------------------------------------------------------------------------------


class ResultCache:
    """One run's view of the cache folder; file states are read once per run."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.entries = self.directory / f"v{FORMAT}"
        self._states: dict[str, str] = {}
        self._ready = False
        self.hits = 0
        self.misses = 0
        self._started_ns = time.time_ns()
        self._kept: dict[str, list[Any]] | None = None  # the last runs' hashes (`STATES`), read when first asked
        self._keep: dict[str, list[Any]] = {}  # this run's, to write
        self._packed: dict[str, Any] | None = None  # the last run's entries (`PACK`), read when first asked
        self._used: dict[str, Any] = {}  # the entries this run served or stored, to pack
        self._pack_stale = False  # an entry came from its own file, or was stored: the pack is written again
        self._packing = False  # whether this run reads and writes the pack (`expect`)

    def state(self, path: str) -> str:
        """A file's content hash, MISSING when it does not exist (or cannot be read), DIRECTORY for a folder."""
        name = os.path.abspath(path)
        known = self._states.get(name)
        if known is None:
            known = self._stat_state(name)
            self._states[name] = known
        return known

    def _stat_state(self, name: str) -> str:
        try:
            stat = os.stat(name)
        except OSError:
            return MISSING
        if S_ISDIR(stat.st_mode):
            return DIRECTORY
        if not S_ISREG(stat.st_mode):
            return NOT_REGULAR
        if stat.st_size > HASHED_BYTES:
            return f"{stat.st_size}:{stat.st_mtime_ns}"
        stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]
        kept = self._kept_states().get(name)
        if isinstance(kept, list) and len(kept) == 5 and kept[:4] == stamp and isinstance(kept[4], str):
            known = kept[4]
        else:
            try:
                with os.fdopen(open_regular(name), "rb") as stream:  # a FIFO swapped in since the stat: no hang
                    known = content_hash(stream.read(HASHED_BYTES + 1))
            except OSError:
                return MISSING
        if max(stat.st_mtime_ns, stat.st_ctime_ns) < self._started_ns - RACY_NS:
            self._keep[name] = [*stamp, known]  # read before this run began: what was read is what is there
        return known

    def _kept_states(self) -> dict[str, list[Any]]:
        if self._kept is None:
            self._kept = self._read_table(STATES, "states", MAX_STATES_BYTES, "the kept states size limit")
        return self._kept

    def _read_table(self, name: str, field: str, limit: int, what: str) -> dict[str, Any]:
        """The table (`field`) a run wrote in the cache file `name` (`_write_table`); {} when it is missing,
        too large, damaged or of another format."""
        try:
            data = json.loads(read_capped(self.entries / name, limit, what))
        except (OSError, TooLarge, ValueError):
            return {}
        table = data.get(field) if isinstance(data, dict) and data.get("format") == FORMAT else None
        return table if isinstance(table, dict) else {}

    def _write_table(self, name: str, field: str, table: dict[str, Any]) -> None:
        """Write `table` as the cache file `name`'s `field`; a cache that cannot be written is no error."""
        try:
            self._prepare()
            payload = json.dumps({"format": FORMAT, field: table}, separators=(",", ":"))
            _atomic_write(self.entries / name, payload.encode("utf-8"))
        except (OSError, ValueError):
            return

    def expect(self, lookups: int) -> None:
        """How many entries the run is about to look up: a run of fewer than PACKED_RUN reads its entries' own
        files (the pack of a whole project would cost it more than they do) and leaves the pack as it is."""
        self._packing = self._packing or lookups >= PACKED_RUN

    def _pack(self) -> dict[str, Any]:
        if not self._packing:
            return {}
        if self._packed is None:
            self._packed = self._read_table(PACK, "entries", MAX_PACK_BYTES, "the cache pack size limit")
        return self._packed

    def keep_states(self) -> None:
        """Write the content hashes this run read (with those of the last runs it did not look at), for the next
        run to stat instead of read, and the entries it used in one pack; a cache that cannot be written is no
        error."""
        self._write_pack()
        if not self._keep:
            return
        kept = self._kept_states()
        merged = {**kept, **self._keep} if len(kept) + len(self._keep) <= MAX_STATES else dict(self._keep)
        if merged != kept:
            self._write_table(STATES, "states", merged)

    def _write_pack(self) -> None:
        """The entries this run served or stored (with the last pack's others, within MAX_PACKED), when one of
        them was not in the pack as it is: the next run reads them in one go."""
        if not self._packing or not self._pack_stale or not self._used:
            return
        packed = self._pack()
        merged = {**packed, **self._used} if len(packed) + len(self._used) <= MAX_PACKED else dict(self._used)
        self._write_table(PACK, "entries", merged)

    def remember(self, path: str, data: bytes) -> str:
        """The state of a file whose bytes the caller read (so the file is not read twice)."""
        known = content_hash(data)
        self._states[os.path.abspath(path)] = known
        return known

    def states(self, paths: Iterable[str]) -> list[list[str]]:
        return [[path, self.state(path)] for path in paths]

    def _entry(self, key: str) -> Path:
        return self.entries / key[:2] / key[2:]

    def get(self, key: str) -> Any | None:
        """The value stored under `key` while every file it depends on is as it was, else None. The last run's
        pack is asked first, then the entry's own file."""
        try:
            entry = self._pack().get(key)
            packed = isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
            if not packed:
                raw = read_capped(self._entry(key), MAX_ENTRY_BYTES, "the cache entry size limit")
                entry = json.loads(raw)
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
                return None
            for path, state in entry["inputs"]:
                if self.state(path) != state:
                    return None
            value = decode(entry["value"])
        except (OSError, TooLarge, ValueError, TypeError, KeyError, AttributeError, ImportError, RecursionError):
            return None  # missing, truncated, corrupt or foreign: rebuilt
        self._used[key] = entry
        self._pack_stale = self._pack_stale or (self._packing and not packed)
        return value

    def put(self, key: str, value: Any, inputs: Iterable[str] = ()) -> None:
        """Store `value` under `key`, with the states of the files it was computed from; a cache that cannot be
        written is no error (the run goes on without it)."""
        try:
            encoded = encode(value)
        except (TypeError, RecursionError):
            return
        entry = {"format": FORMAT, "key": key, "inputs": self.states(inputs), "value": encoded}
        self._used[key] = entry
        self._pack_stale = True
        target = self._entry(key)
        try:
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(target, json.dumps(entry, separators=(",", ":")).encode("ascii"))
        except (OSError, ValueError):
            return

    def _prepare(self) -> None:
        if self._ready:
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", "# created by dslint\n*\n"), (TAG, TAG_TEXT)):
            if not (self.directory / name).exists():
                _atomic_write(self.directory / name, text.encode())
        self._ready = True


def _atomic_write(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def clean(directory: Path) -> bool:
    """Remove a cache folder dslint made (it holds dslint's CACHEDIR.TAG); False when there is none. A folder
    without the tag is left alone (DSLINT_CACHE_DIR pointed somewhere else): ValueError."""
    if not directory.exists():
        return False
    tag = directory / TAG
    if not tag.is_file() or "dslint" not in tag.read_text(encoding="utf-8", errors="replace"):
        raise ValueError(f"{directory} is not a dslint cache (no dslint {TAG} in it); not removed")
    shutil.rmtree(directory)
    return True

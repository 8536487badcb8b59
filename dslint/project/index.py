"""The project index: built once per run, before any file is linted, and handed to each file as plain data.

It reads the launchers under the checked paths (`.sh` scripts, Makefiles, the accelerate YAML files they name),
links each launch to the Python script it starts and the DeepSpeed config it passes, and follows engines
between functions and modules (the project model, `dslint.model`). Each file then gets a `ProjectFacts`
(`dslint.script.project_facts`): its launches and configs, the parameters that receive an engine, the helpers
that return one. Cheap by construction: launchers are small text files, Python modules are parsed with `ast`
only when they may create an engine (a text test) or when such a module calls into them.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from dslint.config import facts as config_facts
from dslint.diagnostics import Related
from dslint.limits import Limits, TooLarge, read_capped
from dslint.model.fixpoint import ProjectModel
from dslint.model.summary import SummaryStore
from dslint.project.config_builders import config_builders
from dslint.project.config_readers import framework_configs, opened_configs, option_readers, replaced_keys
from dslint.project.dumped_configs import dumped_config_names
from dslint.project.engine_facts import facts_of, follow_engines, record_state_saving_calls
from dslint.project.inputs import exists, is_file, record
from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES, documented_script, shell_texts
from dslint.project.launch_issues import LaunchIssue, LaunchSite, file_names_under, launch_issues
from dslint.project.launchers import (
    UNKNOWN_VALUE,
    AccelerateConfig,
    LaunchLine,
    parse_accelerate_yaml,
    parse_makefile,
    parse_shell,
)
from dslint.project.passed_devices import cuda_parameters
from dslint.project.site_configs import shown_path
from dslint.project.world_size import WorldSize, world_size
from dslint.script.project_facts import (
    LaunchedConfig,
    LaunchWorldSize,
    ProjectFacts,
)

LAUNCHER_SUFFIXES = (".sh", ".bash", "Makefile", "makefile", ".mk")
# Read too: launch commands in documents (Markdown and reStructuredText code blocks, a notebook's `!` lines and
# `%%bash` cells: dslint.project.launch_documents), and YAML files
# that name a Trainer's DeepSpeed config (`deepspeed: ds_z3.json` in a fine-tuning YAML, even commented out).
DOCUMENT_SUFFIXES = (*DOCUMENT_LAUNCHER_SUFFIXES, ".yaml", ".yml")
MAX_LAUNCHER_BYTES = 256 * 1024
# Commented out too (`#deepspeed: ds_zero_2.json`): the file is meant as the Trainer's config when enabled.
_YAML_DEEPSPEED = re.compile(r"^\s*#?\s*deepspeed\s*:\s*['\"]?([^'\"\s#]+\.json)", re.MULTILINE)
# An accelerate config's `deepspeed_config_file:` (its DeepSpeedPlugin reads it, filling "auto"), launched or not.
_YAML_ACCELERATE_FILE = re.compile(r"^\s+deepspeed_config_file\s*:\s*['\"]?([^'\"\s#]+\.json)", re.MULTILINE)
_TRAINER_LITERAL = re.compile(rb"\b(?:deepspeed|hf_ds_config)\s*=\s*[rR]?['\"]([^'\"\n]+\.json)['\"]")
SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox"})


def absolute(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(str(path)))


@dataclass(frozen=True)
class Launch:
    """A launch line linked to the files it names (absolute paths, None when not found)."""

    line: LaunchLine
    script: str | None
    config: LaunchedConfig
    accelerate: AccelerateConfig | None = None

    @property
    def world(self) -> WorldSize:
        """The ranks the launch starts, as the index read them once (`world_size.py`)."""
        return WorldSize(self.config.ranks, self.config.ranks_per_node, self.config.world_source)


@dataclass(frozen=True)
class ConfigReading:
    """What the index knows about who reads a config file, for that file's own lint."""

    reader: str  # "initialize", "unlinked", "lightning" or "trainer" (see ProjectIndex.config_reader)
    # A launcher or a script names the file: a DeepSpeed config whatever its name. False: the reader is presumed
    # (a project whose only DeepSpeed readers are the Hugging Face integrations), for files recognised as configs.
    named: bool = True
    # Top-level keys that every script handing the file to deepspeed.initialize replaces in code first.
    replaced: frozenset[str] = frozenset()
    # The world sizes of the launches passing the file, where the launcher says (DSL407 checks each).
    world_sizes: tuple[LaunchWorldSize, ...] = ()

    @property
    def origin(self) -> config_facts.Origin:
        """The reader as the config rules know it."""
        return config_facts.Origin.of_reader(self.reader)


@dataclass
class ProjectIndex:
    root_paths: tuple[str, ...]
    launches: list[Launch] = field(default_factory=list)
    files: dict[str, ProjectFacts] = field(default_factory=dict)  # absolute path -> its facts
    # Who reads each launched config: "trainer" (the HF Trainer or accelerate, which fill "auto"),
    # "lightning" (Lightning's DeepSpeedStrategy, which fills the micro-batch size), "initialize"
    # (deepspeed.initialize in the script) or "unlinked" (a script whose use of the option is not followed).
    config_readers: dict[str, set[str]] = field(default_factory=dict)
    # Every deepspeed.initialize the index followed: (path, line, function holding it)
    problems: list[str] = field(default_factory=list)
    initialize_sites: list[tuple[str, int, str]] = field(default_factory=list)
    # Per launched config, for each launch that gives it to a script calling initialize: the top-level keys
    # the script replaces in the loaded dict before initialize (`config_readers.replaced_keys`).
    config_replaced: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    # Per launched config, the world size of each launch passing it whose launcher says how many ranks it starts.
    config_world_sizes: dict[str, list[LaunchWorldSize]] = field(default_factory=dict)
    # "trainer" when no file of the project creates an engine (no deepspeed.initialize, no Lightning strategy)
    # and its scripts use the Hugging Face integrations, or no code of a checked folder touches DeepSpeed at all:
    # the reader of a config nothing names.
    presumed_reader: str | None = None
    # Mistakes of the launch commands themselves, by launcher (absolute): `launch_issues.LaunchIssue`.
    launch_issues: dict[str, list[LaunchIssue]] = field(default_factory=dict)
    sites: list[LaunchSite] = field(default_factory=list, repr=False, compare=False)

    def config_reader(self, path: str | Path) -> str | None:
        """ "trainer" when only the Hugging Face Trainer or accelerate read this config, "initialize" when
        deepspeed.initialize does, "unlinked" when a launcher hands it to a script whose reader is not followed
        (and initialize reads it nowhere), "lightning" when Lightning's DeepSpeedStrategy does (and neither of
        those), None when nothing names it."""
        readers = self.config_readers.get(absolute(path))
        if not readers:
            return None
        return next(reader for reader in READER_ORDER if reader in readers)

    def config_reading(self, path: str | Path) -> ConfigReading | None:
        """Who reads the config file `path`, and what the readers change in it; None when nothing is known."""
        reader = self.config_reader(path)
        if reader is None:
            return ConfigReading(self.presumed_reader, named=False) if self.presumed_reader is not None else None
        replaced = self.config_replaced.get(absolute(path), [])
        keys = functools.reduce(frozenset.intersection, replaced) if reader == "initialize" and replaced else None
        worlds = tuple(self.config_world_sizes.get(absolute(path), ()))
        return ConfigReading(reader, replaced=keys or frozenset(), world_sizes=worlds)

    def facts_for(self, path: str | Path) -> ProjectFacts | None:
        return self.files.get(absolute(path))

    def launched_configs(self) -> list[str]:
        """The config files launchers pass (absolute): DeepSpeed configs whatever their names."""
        seen = dict.fromkeys(launch.config.config_path for launch in self.launches if launch.config.config_path)
        return [path for path in seen if path is not None]


def _find(name: str, near: str, roots: Sequence[str], directory: str = "") -> str | None:
    """A path written in a launcher: the launcher's directory and its parents up to a checked root, then the
    roots themselves (launchers are run from the repository root or from their own directory). After a `cd`
    in the launcher (`directory`), the path is read from that directory, itself relative to each of those."""
    if UNKNOWN_VALUE in name:
        return None
    candidate = Path(directory) / name if directory else Path(name)
    if candidate.is_absolute():
        return absolute(candidate) if is_file(candidate) else None
    folder = Path(near).parent
    tried: list[Path] = []
    for ancestor in [folder, *folder.parents]:
        tried.append(ancestor)
        if any(absolute(ancestor) == root for root in roots) or exists(ancestor / ".git"):
            break
    tried.extend(Path(root) for root in roots)
    for base in tried:
        path = base / candidate
        if is_file(path):
            return absolute(path)
    return None


def _walk_launchers(roots: Sequence[str]) -> list[str]:
    found: list[str] = []
    for root in roots:
        if os.path.isfile(root):
            if root.endswith(LAUNCHER_SUFFIXES):
                found.append(root)
            continue
        for directory, subdirectories, names in os.walk(root):
            subdirectories[:] = sorted(
                d for d in subdirectories if d not in SKIPPED_DIRECTORIES and not d.startswith(".")
            )
            found.extend(
                os.path.join(directory, n)
                for n in sorted(names)
                if n.endswith(LAUNCHER_SUFFIXES) or n.endswith(DOCUMENT_SUFFIXES)
            )
    return found


def launcher_files(paths: Sequence[str]) -> list[str]:
    """The launchers and documents the index reads under `paths` (the result cache keys the index on them)."""
    return _walk_launchers(paths)


def _read(path: str) -> bytes | None:
    """A file's bytes, or None when it cannot be read or is over the default max-file-size (a device such as
    /dev/zero never ends; the file's own lint reports it)."""
    record(path)
    try:
        return read_capped(path, Limits().max_file_size, "max-file-size")
    except (OSError, TooLarge):
        return None


def build_project_index(python_files: Iterable[Path | str], paths: Sequence[str]) -> ProjectIndex:
    """The index of the project under `paths` (the paths given on the command line), over `python_files`
    (the Python files discovered there). The cyclic garbage collector is paused meanwhile: the build keeps
    millions of `ast` nodes alive (the module summaries) and makes next to no reference cycles, so its full
    collections, each a walk over every live node, were half the build's CPU time on a large tree and freed
    nothing (the same peak memory without them)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build_project_index(python_files, paths)
    finally:
        if paused:
            gc.enable()


def _build_project_index(python_files: Iterable[Path | str], paths: Sequence[str]) -> ProjectIndex:
    roots = tuple(absolute(p) if os.path.isdir(p) else absolute(Path(p).parent) for p in (paths or ["."]))
    index = ProjectIndex(roots)
    files = [absolute(file) for file in python_files]
    _read_launchers(index, paths or ["."], roots, files)
    sources: dict[str, bytes] = {}
    producers: list[str] = []
    for path in files:
        if not path.endswith(".py"):
            continue
        data = _read(path)
        if data is None:
            continue
        sources[path] = data
        _trainer_literals(index, path, data, roots)
        if creates_engine(data):
            producers.append(path)
            _opened_literals(index, path, data, roots)
    store = SummaryStore(sources, exists)
    for config, reader, _ in framework_configs(sources, store):
        index.config_readers.setdefault(config, set()).add(reader)
    # A folder whose code never touches DeepSpeed (or holds no code: configs shipped for an upstream script that
    # a README runs) hands its configs to the Hugging Face integrations too: "auto" is their convention.
    no_code_reader = any(os.path.isdir(p) for p in (paths or ["."])) and not any(
        b"deepspeed" in data for data in sources.values()
    )
    if (
        not producers
        and not any("lightning" in readers for readers in index.config_readers.values())
        and (
            no_code_reader or any(any(token in data for token in PRESUMED_TRAINER_TOKENS) for data in sources.values())
        )
    ):
        index.presumed_reader = "trainer"
    model = ProjectModel(store)  # one model: the engine fixpoint, then the state-saving calls, read it
    if producers:
        try:
            index.initialize_sites = follow_engines(index.files, index.config_readers, model, producers)
        except (RecursionError, MemoryError):
            index.problems.append("engines were not followed across functions: the code is nested too deeply")
    _record_config_builders(index, sources, store)
    for path, dumped in dumped_config_names(sources, (launch.config for launch in index.launches)).items():
        index.files[path] = replace(facts_of(index.files, path), dumped_configs=dumped)
    for path, functions in cuda_parameters(store).items():
        index.files[path] = replace(facts_of(index.files, path), cuda_parameters=functions)
    record_state_saving_calls(index.files, model)
    texts = functools.lru_cache(maxsize=None)(lambda path: (_read(path) or b"").decode("utf-8", errors="replace"))
    names = functools.lru_cache(maxsize=1)(lambda: file_names_under(roots, SKIPPED_DIRECTORIES))
    issues = launch_issues(index.sites, sources, store, texts, names)
    index.launch_issues, index.sites = {absolute(path): found for path, found in issues.items()}, []
    return index


def _record_config_builders(index: ProjectIndex, sources: dict[str, bytes], store: SummaryStore) -> None:
    for builder in config_builders(sources, store):
        reader = f"{builder.name}() returns the config {builder.reader} receives"
        origin = Related(shown_path(builder.reader_path), builder.line, builder.column, reader)
        facts = facts_of(index.files, builder.path)
        builders = {**facts.config_builders, builder.name: (origin, builder.origin)}
        index.files[builder.path] = replace(facts, config_builders=builders)


_ALIAS = re.compile(rb"\bimport\s+deepspeed\s+as\s+([A-Za-z_][A-Za-z0-9_]*)")
_FROM = re.compile(rb"\bfrom\s+deepspeed\s+import\s+(?:\([^)]*|[^\n]*)\binitialize\b")


def creates_engine(data: bytes) -> bool:
    """A text test, narrower than the per-file prefilter: `deepspeed.initialize(` (or `ALIAS.initialize(`
    after `import deepspeed as ALIAS`, or `initialize(` after `from deepspeed import initialize`) written as
    code: not after a quote or `#` on its line, not inside a triple-quoted string. The index follows engines
    from these files only; a file's own engines are still found by its own facts."""
    if b"initialize" not in data or b"deepspeed" not in data:
        return False
    names = [b"deepspeed"]
    names.extend(_ALIAS.findall(data) if b"import deepspeed as" in data else ())
    pattern = rb"\b(?:" + b"|".join(re.escape(n) for n in names) + rb")\s*\.\s*initialize\s*\("
    if b"from deepspeed" in data and _FROM.search(data):
        pattern += rb"|(?<![.\w])initialize\s*\("
    for match in re.finditer(pattern, data):
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        before = data[line_start : match.start()]
        if any(mark in before for mark in (b'"', b"'", b"#", b"`")):
            continue
        if data.count(b'"""', 0, match.start()) % 2 or data.count(b"'''", 0, match.start()) % 2:
            continue
        return True
    return False


def single_file_facts(path: str, data: bytes) -> ProjectFacts | None:
    """What the index knows about one file read alone (no launchers, no other modules): engines that its own
    helpers return or receive. For adapters that see one file at a time (flake8, the language server), so that
    they report what `dslint check` reports on that file alone."""
    if not creates_engine(data):
        return None
    index = ProjectIndex((absolute(Path(path).parent),))
    with contextlib.suppress(RecursionError, MemoryError):  # nested too deeply for the walk: its lint says so
        model = ProjectModel(SummaryStore({absolute(path): data}, exists))
        index.initialize_sites = follow_engines(index.files, index.config_readers, model, [absolute(path)])
    return index.facts_for(path)


def _read_launchers(
    index: ProjectIndex, paths: Sequence[str], roots: Sequence[str], python_files: Sequence[str]
) -> None:
    yamls: dict[str, AccelerateConfig | None] = {}
    by_name: dict[str, list[str]] = {}  # file name -> the Python files of that name, in their order
    for path in python_files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    for launcher in _walk_launchers(paths):
        try:
            # A notebook carries its outputs (images...): only its size limit as a file applies.
            if os.path.getsize(launcher) > MAX_LAUNCHER_BYTES and not launcher.endswith(".ipynb"):
                continue  # a data file or a generated document, not a launcher
        except OSError:
            continue
        data = _read(launcher)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        name = os.path.basename(launcher)
        if name.endswith((".yaml", ".yml")):
            for match in (*_YAML_DEEPSPEED.finditer(text), *_YAML_ACCELERATE_FILE.finditer(text)):
                config = _find(match.group(1), launcher, roots)
                if config is not None:
                    index.config_readers.setdefault(config, set()).add("trainer")
            continue
        if b".py" not in data:
            continue
        document = name.endswith(DOCUMENT_LAUNCHER_SUFFIXES)
        if document:
            lines = [line for shell in shell_texts(name, text) for line in parse_shell(launcher, shell)]
        elif "akefile" in name or name.endswith(".mk"):
            lines = parse_makefile(launcher, text)
        else:
            lines = parse_shell(launcher, text, functools.partial(read_near, near=launcher, roots=roots))
        for line in lines:
            script = _find(line.script, launcher, roots, line.directory)
            if script is None and document:
                script = documented_script(line.script, absolute(launcher), by_name)
            accelerate = None
            if line.accelerate_config is not None:
                yaml_path = _find(line.accelerate_config, launcher, roots, line.directory)
                if yaml_path is not None:
                    if yaml_path not in yamls:
                        yaml_data = _read(yaml_path)
                        yamls[yaml_path] = (
                            parse_accelerate_yaml(yaml_path, yaml_data.decode("utf-8", errors="replace"))
                            if yaml_data is not None
                            else None
                        )
                    accelerate = yamls[yaml_path]
            launched = _launched_config(line, launcher, roots, accelerate)
            world = world_size(line, functools.partial(read_near, near=launcher, roots=roots), accelerate)
            launched = replace(launched, ranks_per_node=world.per_node, ranks=world.ranks, world_source=world.source)
            launch = Launch(line, script, launched, accelerate)
            index.launches.append(launch)
            if not launcher.endswith(".ipynb"):  # a notebook's own lint holds its findings
                option = line.config_option()
                site = LaunchSite(
                    line,
                    script,
                    option.name if option else None,
                    launch.config.config_path if option else None,
                    launch.config.launch,
                )
                index.sites.append(site)
            if launch.config.config_path is not None:
                if world.ranks is not None:
                    index.config_world_sizes.setdefault(launch.config.config_path, []).append(
                        LaunchWorldSize(world.ranks, world.source, launch.config.launch)
                    )
                reader = _reader(script, launch.config)
                index.config_readers.setdefault(launch.config.config_path, set()).add(reader)
                if reader == "initialize" and launch.config.option is not None:
                    data = _read(script) if script is not None else None
                    keys = replaced_keys(data, launch.config.option) if data is not None else None
                    index.config_replaced.setdefault(launch.config.config_path, []).append(keys or frozenset())
            if script is not None:
                facts = facts_of(index.files, script)
                launches = (*facts.launches, launch.config)
                index.files[script] = replace(facts, launches=launches)


# The reader a config is linted for when several read it: initialize first (its findings hold on that path), then
# a script whose reader is not followed (read as initialize's, but its "auto" is not reported), Lightning, the HF
# integrations.
READER_ORDER = ("initialize", "unlinked", "lightning", "trainer")
HF_TOKENS = (b"HfArgumentParser", b"TrainingArguments", b"Accelerator(", b"accelerate")
# A project that builds the HF Trainer's arguments (and creates no engine itself) hands its configs to the Trainer.
PRESUMED_TRAINER_TOKENS = (b"HfArgumentParser", b"TrainingArguments")


def _reader(script: str | None, launched: LaunchedConfig) -> str:
    """Who reads a launched config: accelerate's YAML always goes to accelerate; `--deepspeed x.json` (the
    Hugging Face Trainer's option; DeepSpeed's own `--deepspeed` is an on/off flag) to a script that calls no
    `initialize(` itself and either builds TrainingArguments or does not touch DeepSpeed at all (a wrapper
    around a Trainer script) goes to the HF Trainer. Any other option is followed into the script
    (`config_readers.option_readers`): to `deepspeed.initialize` ("initialize"), to a Trainer or accelerate
    ("trainer"), to Lightning's strategy ("lightning"); a value that goes where dslint does not follow, or a script
    outside the project, leaves the reader unknown ("unlinked")."""
    if launched.option == "accelerate":
        return "trainer"
    data = _read(script) if script is not None else None
    if launched.option == "deepspeed":
        if data is None:
            return "trainer"  # a script outside the project given `--deepspeed x.json`: the HF Trainer's option
        if not creates_engine(data) and (any(token in data for token in HF_TOKENS) or b"deepspeed" not in data):
            return "trainer"
    if data is None or launched.option is None:
        return "unlinked"
    readers = option_readers(data, launched.option)
    return next((reader for reader in ("initialize", "lightning", "trainer") if reader in readers), "unlinked")


def _opened_literals(index: ProjectIndex, path: str, data: bytes, roots: Sequence[str]) -> None:
    """`with open("ds.json") as f: cfg = json.load(f)` ... `initialize(config=cfg)`: that file is read by
    initialize, less the keys the script writes first (`config_readers.opened_configs`)."""
    for literal, keys in opened_configs(data).items():
        config = _find(literal, path, roots) if literal.endswith((".json", ".yaml", ".yml")) else None
        if config is not None:
            index.config_readers.setdefault(config, set()).add("initialize")
            index.config_replaced.setdefault(config, []).append(keys)


def _trainer_literals(index: ProjectIndex, path: str, data: bytes, roots: Sequence[str]) -> None:
    """`TrainingArguments(deepspeed="ds.json")`, `DeepSpeedPlugin(hf_ds_config="ds.json")`: those files are
    read by the HF Trainer / accelerate."""
    if b"deepspeed" not in data or not (b"TrainingArguments" in data or b"DeepSpeedPlugin" in data):
        return
    for match in _TRAINER_LITERAL.finditer(data):
        config = _find(match.group(1).decode("utf-8", errors="replace"), path, roots)
        if config is not None:
            index.config_readers.setdefault(config, set()).add("trainer")


def _launched_config(
    line: LaunchLine, launcher: str, roots: Sequence[str], accelerate: AccelerateConfig | None
) -> LaunchedConfig:
    # A script the launcher names from its own folder (`$(dirname "$0")/train.py`) is absolute: shown relative
    script = shown_path(absolute(line.script)) if os.path.isabs(line.script) else line.script
    where = Related(shown_path(absolute(launcher)), line.line, line.column, f"{line.tool} launches {script}")
    options = {o.name: o.value for o in line.options}
    option = line.config_option()
    if option is not None and option.value is not None:
        config_path = _find(option.value, launcher, roots, line.directory)
        written = shown_path(absolute(option.value)) if os.path.isabs(option.value) else option.value
        evidence = Related(where.path, option.line, option.column, f"--{option.name} {written}")
        return LaunchedConfig(where, option.name, config_path, evidence, options)
    if accelerate is not None:
        shown = shown_path(accelerate.path)
        if accelerate.deepspeed_config_file:
            config_path = _find(accelerate.deepspeed_config_file, accelerate.path, roots)
            evidence = Related(
                shown,
                accelerate.deepspeed_config_file_line,
                1,
                f"deepspeed_config_file: {accelerate.deepspeed_config_file}",
            )
            return LaunchedConfig(where, "accelerate", config_path, evidence, options, None, accelerate.mixed_precision)
        if accelerate.zero_stage is not None:
            evidence = Related(shown, accelerate.zero_stage_line, 1, f"zero_stage: {accelerate.zero_stage}")
            save = (accelerate.zero3_save_16bit_model or "").lower()
            return LaunchedConfig(
                where,
                "accelerate",
                None,
                evidence,
                options,
                accelerate.zero_stage,
                accelerate.mixed_precision,
                # DeepSpeedPlugin gathers when the value reaches it as "true" (a YAML boolean: true, yes, on)
                True if save in ("true", "yes", "on") else False if save in ("", "false", "no", "off") else None,
            )
    return LaunchedConfig(where, None, None, None, options)


def read_near(name: str, near: str, roots: Sequence[str]) -> str | None:
    """The text of a file a launcher names (a hostfile), found as launchers' paths are (`_find`); None when not
    found or unreadable."""
    path = _find(name, near, roots)
    data = _read(path) if path is not None else None
    return data.decode("utf-8", errors="replace") if data is not None else None

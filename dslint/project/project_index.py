"""What the project index knows, as data: the index itself (`ProjectIndex`), its launches, who reads each config
(`ConfigReading`) and the mistakes of launch commands (`LaunchIssue`, from the `LaunchSite`s they are read at).

Building the index (`dslint.project.index`) reads the project with the whole program model; this module holds only
the types it fills, and imports little: a warm run decodes a cached index into these classes (`dslint.lint.cache`
imports each class's module) without importing the model, the rules or libcst.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dslint.diagnostics import Related
from dslint.project.accelerate_yaml import AccelerateConfig
from dslint.project.document_configs import DocumentConfig
from dslint.project.editor_launches import EDITOR_LAUNCH_FILE
from dslint.project.inputs import absolute
from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.launchers import LaunchLine
from dslint.project.world_size import WorldSize
from dslint.script.project_facts import LaunchedConfig, LaunchWorldSize, ProjectFacts

if TYPE_CHECKING:
    from dslint.config import facts as config_facts

# Batch systems' job scripts are shell scripts under another name (Slurm's `sbatch`, LSF's `bsub`, PBS's `qsub`)
JOB_SCRIPT_SUFFIXES = (".slurm", ".sbatch", ".lsf", ".bsub", ".pbs", ".qsub")
LAUNCHER_SUFFIXES = (".sh", ".bash", *JOB_SCRIPT_SUFFIXES, "Makefile", "makefile", ".mk")
# Read too: launch commands in documents (Markdown and reStructuredText code blocks, a notebook's `!` lines and
# `%%bash` cells: dslint.project.launch_documents), and YAML files
# that name a Trainer's DeepSpeed config (`deepspeed: ds_z3.json` in a fine-tuning YAML, even commented out).
DOCUMENT_SUFFIXES = (*DOCUMENT_LAUNCHER_SUFFIXES, ".yaml", ".yml")
SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox"})
# A library's unpacked source kept in the project (`third_party/deepspeed-0.14.5/`): its launchers and documents are
# the library's own (the default `exclude` leaves its files unchecked too: `settings_options.DEFAULT_EXCLUDE`)
UNPACKED_LIBRARY = re.compile(r"(?:deepspeed|transformers|accelerate|peft|trl)-[0-9]")


def skipped_directory(name: str) -> bool:
    """A folder the index's walks leave out: a tool's, a hidden one, or a library's unpacked source."""
    return name in SKIPPED_DIRECTORIES or name.startswith(".") or UNPACKED_LIBRARY.match(name) is not None


# The readers of a config, strongest first: the one that decides what a config's findings say.
READER_ORDER = ("initialize", "unlinked", "lightning", "trainer")


@dataclass(frozen=True)
class TrainerLiteral:
    """A config path a script writes for the HF Trainer or accelerate (`TrainingArguments(deepspeed="x.json")`,
    `DeepSpeedPlugin(hf_ds_config="x.json")`) in `path`: the path, the keyword as written, and the keyword's line
    and (1-based, in characters) column."""

    path: str
    written: str
    keyword: str
    line: int
    column: int


@dataclass(frozen=True)
class LaunchIssue:
    """One mistake of a launch command, positioned in its launcher."""

    kind: str  # "cut" | "unjoined" | "missing_config" | "unread_config" | "refused_options" | ...
    line: int
    column: int
    end_column: int
    detail: str  # cut: the script; missing_config: the path as written; unread_config: the script as written;
    # refused_options: the runner's error message
    options: tuple[str, ...] = ()  # cut: the options lost; unread_config: the options the script never reads;
    # refused_options: the two options (or the variable and the option) refused together, as written
    related: tuple[Related, ...] = ()
    # missing_config: the project's files of that name elsewhere (shown paths), when the written path has a
    # folder that leads nowhere (`configs/ds.json` where only `config/ds.json` exists)
    elsewhere: tuple[str, ...] = ()
    cause: str = ""  # unjoined: `space` (a space after the last backslash) or `newline` (no backslash)


@dataclass(frozen=True)
class LaunchSite:
    """What the issues need of one launch: its line, the script and config found (absolute, or None)."""

    line: LaunchLine
    script: str | None
    config_option: str | None  # the option naming a DeepSpeed config file, when literal
    config_path: str | None
    launch: Related
    # a YAML file the launch passes whose `deepspeed:` key names the config (`TRAINER_YAML`), when that config is
    # not found: the YAML (absolute) and the line of the key
    config_yaml: tuple[str, int] | None = None
    accelerate_config: str | None = None  # the file `accelerate launch --config_file X` names, when found


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

    # "initialize", "unlinked", "lightning" or "trainer" (see ProjectIndex.config_reader); "file": no reader known,
    # the file read as it stands but for the keys `replaced` (`ProjectIndex._filled`)
    reader: str
    # A launcher or a script names the file: a DeepSpeed config whatever its name. False: the reader is presumed
    # (a project whose only DeepSpeed readers are the Hugging Face integrations), for files recognised as configs.
    named: bool = True
    # Top-level keys that every script handing the file to deepspeed.initialize replaces in code first.
    replaced: frozenset[str] = frozenset()
    # The world sizes of the launches passing the file, where the launcher says (DSL407 checks each).
    world_sizes: tuple[LaunchWorldSize, ...] = ()
    # Where a launched script's option reaches initialize in a module the script imports (the script itself
    # does not use it): `follow_imported_readers`.
    read_in: tuple[Related, ...] = ()
    # Where launches hand the file to its reader, when that is the HF integrations or Lightning (strict json.load).
    reader_sites: tuple[Related, ...] = ()
    # Some code that reads the config may apply its `activation_checkpointing` section (it calls
    # `deepspeed.checkpointing.configure`, or brings Megatron, which does): `ProjectIndex.checkpointing_unapplied`.
    checkpointing_configured: bool = True
    # The sections every initialize reading the file replaces with a client object it is handed (`optimizer=`,
    # `lr_scheduler=`): the file's section is never built.
    client_sections: frozenset[str] = frozenset()
    # An accelerate YAML every launch passing it gives `--mixed_precision` on its command line: accelerate then
    # takes the precision from there, not from the file (DSL463).
    precision_on_command_line: bool = False
    # An accelerate YAML: the `deepspeed_config:` fields the script of every launch passing it gives its own
    # DeepSpeedPlugin in code, which then never reads the YAML's (`plugin_fields.py`).
    given_in_code: frozenset[str] = frozenset()

    @property
    def origin(self) -> config_facts.Origin:
        """The reader as the config rules know it."""
        from dslint.config import facts as config_facts  # the config rules' module: only when a config is linted

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
    # The batch keys some script writes into any config it is given before initialize (`config_readers.
    # batch_filled`), by each folder where the script's own configs lie (`shipped_configs.config_folders_of`): a file
    # there that no launch links to a reader may be one of those the script is given.
    batch_fillers: dict[str, frozenset[str]] = field(default_factory=dict)
    # Per config file, for each script handing it to initialize: the sections (`optimizer`, `scheduler`) its
    # initialize calls replace with a client object (`config_readers.client_sections`).
    config_clients: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    # Per launched config, the world size of each launch passing it whose launcher says how many ranks it starts.
    config_world_sizes: dict[str, list[LaunchWorldSize]] = field(default_factory=dict)
    # The config files a launched script picks by a path in its own code (`chosen_configs.py`), absolute.
    config_chosen: set[str] = field(default_factory=set)
    # Per launched config, where a module imported by the launched script loads it and hands it to initialize,
    # when the script itself does not use the option (`follow_imported_readers`).
    config_read_in: dict[str, list[Related]] = field(default_factory=dict)
    # Per launched config, where a launch hands it to the Hugging Face integrations or Lightning (the option).
    config_reader_sites: dict[str, list[Related]] = field(default_factory=dict)
    # The config paths scripts write for the HF Trainer or accelerate that name no file (`config_reading.
    # trainer_literals`): DSL423's question in the script (`missing_configs.missing_trainer_configs`).
    unfound_trainer_configs: list[TrainerLiteral] = field(default_factory=list)
    # "trainer" when no file of the project creates an engine (no deepspeed.initialize, no Lightning strategy)
    # and its scripts use the Hugging Face integrations, or no code of a checked folder touches DeepSpeed at all;
    # "lightning" when its only way to DeepSpeed is Lightning's DeepSpeedStrategy given a config dslint does not
    # follow (no initialize, no Hugging Face reader): the reader of a config nothing names.
    presumed_reader: str | None = None
    # By folder (absolute): the `initialize(args=...)` presumed to read the configs there that nothing names
    # (`folder_readers.command_line_readers`).
    folder_readers: dict[str, Related] = field(default_factory=dict)
    # Launched configs whose every launch starts a script that neither calls `deepspeed.checkpointing.configure`
    # (the only reader of a config's `activation_checkpointing` section) nor brings Megatron, which calls it, in it
    # or a module it imports (`library.CHECKPOINTING_CONFIGURED`); "" when no file of the project may (any config).
    checkpointing_unapplied: set[str] = field(default_factory=set)
    # Mistakes of the launch commands themselves, by launcher (absolute): `launch_issues.LaunchIssue`.
    launch_issues: dict[str, list[LaunchIssue]] = field(default_factory=dict)
    # DeepSpeed configs written out in documents' code blocks, by document (absolute): `document_configs.py`.
    document_configs: dict[str, list[DocumentConfig]] = field(default_factory=dict)
    sites: list[LaunchSite] = field(default_factory=list, repr=False, compare=False)
    # Per accelerate YAML, for each launch passing it: the fields its script's DeepSpeedPlugin gives in code.
    plugin_fields: dict[str, list[frozenset[str]]] = field(default_factory=dict)

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
        reading = self._config_reading(path)
        on_command_line = self._precision_on_command_line(path)
        given = self.plugin_fields.get(absolute(path), [])
        in_code = functools.reduce(frozenset.intersection, given) if given else frozenset()
        if not on_command_line and not in_code:
            return reading
        if reading is None:
            reading = ConfigReading("unlinked", named=False)
        return replace(reading, precision_on_command_line=on_command_line, given_in_code=in_code)

    def _precision_on_command_line(self, path: str | Path) -> bool:
        """Some launch passes the accelerate YAML `path`, and each one gives `--mixed_precision` itself."""
        if not str(path).endswith((".yaml", ".yml")):
            return False
        wanted = absolute(path)
        passing = [launch for launch in self.launches if launch.accelerate and launch.accelerate.path == wanted]
        return bool(passing) and all(launch.line.launcher_option("mixed_precision") for launch in passing)

    def _config_reading(self, path: str | Path) -> ConfigReading | None:
        reading = self._linked_reading(path)
        filled = self._filled(path)
        if not filled or (reading is not None and reading.reader not in ("initialize", "unlinked")):
            return reading
        if reading is None:
            return ConfigReading("file", named=False, replaced=filled)  # read as it stands, less those keys
        return replace(reading, replaced=reading.replaced | filled)

    def _filled(self, path: str | Path) -> frozenset[str]:
        """The batch keys a script of the file's project writes into any config it is given (`batch_fillers`),
        for a file no launch links to a script that hands it to initialize: that script may be given it."""
        wanted = absolute(path)
        if wanted in self.config_replaced:
            return frozenset()
        return self.batch_fillers.get(os.path.dirname(wanted), frozenset())

    def _linked_reading(self, path: str | Path) -> ConfigReading | None:
        reader = self.config_reader(path)
        worlds = tuple(self.config_world_sizes.get(absolute(path), ()))
        unapplied = bool({absolute(path), ""} & self.checkpointing_unapplied)
        if reader is None and (worlds or absolute(path) in self.config_chosen):  # a launched script picks it
            picking = self.config_clients.get(absolute(path), [])  # the sections its initialize calls replace
            return ConfigReading(
                self.presumed_reader or "unlinked",
                world_sizes=worlds,
                checkpointing_configured=not unapplied,
                client_sections=functools.reduce(frozenset.intersection, picking) if picking else frozenset(),
            )
        beside = self.folder_readers.get(os.path.dirname(absolute(path))) if reader is None else None
        if beside is not None:  # DeepSpeed opens the file itself: nothing replaces its values first
            return ConfigReading("initialize", named=False, read_in=(beside,))
        if reader is None:
            return ConfigReading(self.presumed_reader, named=False) if self.presumed_reader is not None else None
        replaced = self.config_replaced.get(absolute(path), [])
        keys = functools.reduce(frozenset.intersection, replaced) if reader == "initialize" and replaced else None
        read_in = tuple(self.config_read_in.get(absolute(path), ())) if reader == "initialize" else ()
        sites = tuple(self.config_reader_sites.get(absolute(path), ())) if reader in ("trainer", "lightning") else ()
        clients = self.config_clients.get(absolute(path), [])
        never_built = (
            functools.reduce(frozenset.intersection, clients)
            if reader == "initialize" and clients and len(clients) == len(replaced)
            else frozenset()
        )
        return ConfigReading(
            reader,
            replaced=keys or frozenset(),
            client_sections=never_built,
            world_sizes=worlds,
            read_in=read_in,
            reader_sites=sites,
            checkpointing_configured=not unapplied,
        )

    def document_reading(self, config: DocumentConfig) -> ConfigReading | None:
        """Who reads a config written out in a document: the readers of the document's launches passing it; else
        the reader the project presumes for a config nothing names; None when unknown (as for such a file)."""
        if config.readers:
            reader = next(reader for reader in READER_ORDER if reader in config.readers)
            return ConfigReading(reader, world_sizes=config.world_sizes)
        return ConfigReading(self.presumed_reader, named=False) if self.presumed_reader is not None else None

    def facts_for(self, path: str | Path) -> ProjectFacts | None:
        return self.files.get(absolute(path))

    def launched_configs(self) -> list[str]:
        """The config files launchers pass (absolute): DeepSpeed configs whatever their names."""
        seen = dict.fromkeys(launch.config.config_path for launch in self.launches if launch.config.config_path)
        return [path for path in seen if path is not None]


def launcher_files(roots: Sequence[str]) -> list[str]:
    """The launchers and documents the index reads under `roots` (the result cache keys the index on them)."""
    found: list[str] = []
    for root in roots:
        if os.path.isfile(root):
            if root.endswith((*LAUNCHER_SUFFIXES, EDITOR_LAUNCH_FILE)):
                found.append(root)
            continue
        for directory, subdirectories, names in os.walk(root):
            if ".vscode" in subdirectories and os.path.isfile(os.path.join(directory, EDITOR_LAUNCH_FILE)):
                found.append(os.path.join(directory, EDITOR_LAUNCH_FILE))  # an editor's run configurations
            subdirectories[:] = sorted(d for d in subdirectories if not skipped_directory(d))
            found.extend(
                os.path.join(directory, n)
                for n in sorted(names)
                if n.endswith(LAUNCHER_SUFFIXES) or n.endswith(DOCUMENT_SUFFIXES)
            )
    return found

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
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dslint.beside import Beside, Claim
from dslint.collector import paused
from dslint.diagnostics import Related
from dslint.model.fixpoint import ProjectModel
from dslint.model.gpu_saves import gpu_loads
from dslint.model.library import CHECKPOINTING_CONFIGURED
from dslint.model.star_imports import star_aliases
from dslint.model.summary import SummaryStore
from dslint.project import inputs
from dslint.project.accelerate_yaml import AccelerateConfig, parse_accelerate_yaml
from dslint.project.arguments_classes import arguments_classes, named_by
from dslint.project.built_arguments import record_built_arguments
from dslint.project.checkpointing_applied import applies_checkpointing, checkpointing_unapplied
from dslint.project.config_builders import config_builders
from dslint.project.config_readers import batch_filled, client_sections, framework_configs, replaced_keys
from dslint.project.config_reading import (
    PRESUMED_TRAINER_TOKENS,
    config_reader_of,
    creates_engine,
    follow_imported_readers,
    hf_reader_text,
    lightning_configured,
    opened_literals,
    other_config_options,
    reader_of,
    record_chosen_configs,
    trainer_literals,
)
from dslint.project.config_writers import config_writer_calls
from dslint.project.dataclass_defaults import record_class_defaults
from dslint.project.default_accelerate import presumed_default_config
from dslint.project.document_configs import (
    DOCUMENT_CONFIG_SUFFIXES,
    DocumentLaunch,
    document_configs,
    may_hold_config,
)
from dslint.project.dumped_configs import dumped_config_names
from dslint.project.editor_launches import EDITOR_LAUNCH_FILE, editor_commands
from dslint.project.engine_facts import (
    facts_of,
    follow_engines,
    record_device_setters,
    record_engines,
    record_pretrained_loads,
    record_state_saving_calls,
)
from dslint.project.folder_readers import command_line_readers
from dslint.project.importer_launches import record_importer_launches, trainer_modules
from dslint.project.inputs import absolute as absolute
from dslint.project.inputs import exists, find_written, is_python_script, read_input, record, recording, shown_path
from dslint.project.launch_batches import batch_issues
from dslint.project.launch_documents import (
    DOCUMENT_LAUNCHER_SUFFIXES,
    documented_script,
    mention_holders,
    shell_texts,
    unread_mention,
)
from dslint.project.launch_issues import launch_issues
from dslint.project.launch_switches import record_switches_never_on
from dslint.project.launched_configs import launched_config
from dslint.project.launchers import LaunchLine, parse_makefile, parse_shell
from dslint.project.missing_configs import missing_trainer_configs
from dslint.project.model_classes import loaded_model_classes
from dslint.project.parameter_paths import record_parameter_paths
from dslint.project.plugin_fields import record_plugin_fields
from dslint.project.project_index import (
    SKIPPED_DIRECTORIES,
    Launch,
    LaunchIssue,
    LaunchSite,
    ProjectIndex,
    launcher_files,
)
from dslint.project.python_launchers import comment_launches, python_launch_text
from dslint.project.shell_files import writes_passed_config
from dslint.project.shipped_accelerate import shipped_accelerate_runs
from dslint.project.shipped_configs import config_folders_of
from dslint.project.summary_facts import SummaryFacts, gpu_file, summary_facts
from dslint.project.trainer_classes import imported_trainer_classes
from dslint.project.world_size import WorldSize, data_parallel_ranks, world_size
from dslint.project.written_configs import record_written_configs
from dslint.project.yaml_commands import yaml_shell_text
from dslint.script.project_facts import TRAINER_YAML, LaunchedConfig, LaunchWorldSize, ProjectFacts

MAX_LAUNCHER_BYTES = 256 * 1024
# an import of a `*Trainer` name from a module that is not transformers' or TRL's (`from simpo_trainer import
# SimPOTrainer`): the files whose imports `trainer_classes.py` follows
_PROJECT_TRAINER_IMPORT = re.compile(
    rb"(?m)^[ \t]*from[ \t]+(?!transformers\b|trl\b)\.*[\w.]*[ \t]+import[ \t]+(?:\([^)]*?|[^\n(]*?)Trainer"
)
# Commented out too (`#deepspeed: ds_zero_2.json`): the file is meant as the Trainer's config when enabled.
_YAML_DEEPSPEED = re.compile(r"^\s*#?\s*deepspeed\s*:\s*['\"]?([^'\"\s#]+\.json)", re.MULTILINE)
# An accelerate config's `deepspeed_config_file:` (its DeepSpeedPlugin reads it, filling "auto"), launched or not.
_YAML_ACCELERATE_FILE = re.compile(r"^\s+deepspeed_config_file\s*:\s*['\"]?([^'\"\s#]+\.json)", re.MULTILINE)

# a module launch's flag (`python -m pkg.train`, `deepspeed --module pkg.train`) as a word; the literal `-` leads so
# that `re` skips to each `-` instead of trying the pattern at every byte
_MODULE_FLAG = re.compile(rb"-(?<!\S-)(?:m|-module)\s")


def build_project_index(
    python_files: Iterable[Path | str],
    paths: Sequence[str],
    beside: bool = False,
    touched: Callable[[bytes, ProjectFacts | None], bool] | None = None,
) -> ProjectIndex:
    """The index of the project under `paths` (the paths given on the command line), over `python_files`
    (the Python files discovered there). The cyclic garbage collector is paused meanwhile: the build keeps
    millions of `ast` nodes alive (the module summaries) and makes next to no reference cycles, so its full
    collections, each a walk over every live node, were half the build's CPU time on a large tree and freed
    nothing (the same peak memory without them); inside `dslint.collector.uncollected`, what it made stays out
    of the collector's sight after it too.

    `beside`: the launchers, and the facts read from the module summaries alone, are read in a forked child while
    this process runs the engine fixpoint (`dslint.beside`: two halves of one build on two cores); the index is
    the same either way.

    `touched`: whether a rule may touch a module, given its text and its facts (the lint's activation); the
    names a module receives through star imports (a read of the modules it star-imports) are worth knowing only
    there, since no text test asks for them. None: every module's."""
    with paused():
        return _build_project_index(python_files, paths, beside, touched)


@dataclass
class _LaunchHalf:
    """What the build reads without the engine fixpoint: the launchers and the literal configs of the code (in
    `index`), and the facts of the modules' summaries alone; `inputs`: the files read on the way."""

    index: ProjectIndex
    code: SummaryFacts | None  # None: the caller took them (`beside.Claim`)
    inputs: list[str]


def _launch_half(
    files: list[str],
    sources: dict[str, bytes],
    producers: list[str],
    store: SummaryStore,
    paths: Sequence[str],
    claim: Claim,
) -> _LaunchHalf:
    roots = tuple(absolute(p) if os.path.isdir(p) else absolute(Path(p).parent) for p in paths)
    with recording() as inputs:
        index = ProjectIndex(roots)
        engines = set(producers)
        for path, data in sources.items():
            trainer_literals(index, path, data, roots)
            if path in engines:
                opened_literals(index, path, data, roots)
        _read_launchers(index, paths, roots, {path: sources.get(path) for path in files})  # each file read once
        record_switches_never_on(index.files, store)
        record_chosen_configs(index, sources, roots, store)
        for path, data in sources.items():
            _record_shipped_accelerate(index, path, data)
        code = summary_facts(store) if claim.take() else None
    return _LaunchHalf(index, code, list(inputs))


def _build_project_index(
    python_files: Iterable[Path | str],
    paths: Sequence[str],
    beside: bool,
    touched: Callable[[bytes, ProjectFacts | None], bool] | None,
) -> ProjectIndex:
    paths = paths or ["."]
    inputs.forget_file_names()
    files = [absolute(file) for file in python_files]
    sources: dict[str, bytes] = {}
    producers: list[str] = []
    for path in files:
        data = read_input(path) if path.endswith(".py") or "." not in os.path.basename(path) else None
        if data is None or not is_python_script(path, data):
            continue
        sources[path] = data
        if creates_engine(data):
            producers.append(path)
    store = SummaryStore(sources, exists)
    model = ProjectModel(store)  # one model: the engine fixpoint, then the state-saving calls, read it
    claim = Claim()  # the facts of the summaries alone: the child's at the end of its half, or ours if done first
    read_half = functools.partial(_launch_half, files, sources, producers, store, paths, claim)
    if beside and producers:  # without an engine there is no fixpoint to run meanwhile
        half = Beside(read_half)
        analysed = _analysed(model, producers)
        early = summary_facts(store) if claim.take() else None
        launched = half.result()
        for path in launched.inputs:  # read in the child: inputs of this build all the same
            record(path)
    else:
        launched, early = read_half(), None
        analysed = _analysed(model, producers)
    index = launched.index
    code = launched.code or early or summary_facts(store)  # (a child that died after taking them: read here)
    roots = index.root_paths
    follow_imported_readers(index, store)
    for config, reader, _ in framework_configs(sources, store):
        index.config_readers.setdefault(config, set()).add(reader)
    # A folder whose code never touches DeepSpeed (or holds no code: configs shipped for an upstream script that
    # a README runs) hands its configs to the Hugging Face integrations too: "auto" is their convention.
    no_code_reader = any(os.path.isdir(p) for p in paths) and not any(b"deepspeed" in data for data in sources.values())
    if (
        not producers
        and not any("lightning" in readers for readers in index.config_readers.values())
        and (
            no_code_reader or any(any(token in data for token in PRESUMED_TRAINER_TOKENS) for data in sources.values())
        )
    ):
        index.presumed_reader = "trainer"
    elif (
        not producers
        and any(lightning_configured(data) for data in sources.values())
        and not any(hf_reader_text(data) for data in sources.values())
    ):
        # Lightning's DeepSpeedStrategy given a config dslint does not follow (`config=args.ds_config_path`) is
        # the project's only way to DeepSpeed: a config nothing names is presumed the strategy's.
        index.presumed_reader = "lightning"
    if producers and not analysed:
        index.problems.append(_TOO_DEEP)
    elif producers:
        try:
            index.initialize_sites = record_engines(index.files, index.config_readers, model)
            index.folder_readers = command_line_readers(model.inits.values(), sources, index.config_readers)
        except (RecursionError, MemoryError):
            index.problems.append(_TOO_DEEP)
    for path in producers:
        filled = batch_filled(sources[path])
        for folder in config_folders_of(path) if filled else ():
            index.batch_fillers[folder] = index.batch_fillers.get(folder, frozenset()) | filled
    if all(launch.config.ranks == 1 for launch in index.launches):  # every script runs as `python x.py`, if at all
        for path in producers:
            index.files[path] = replace(facts_of(index.files, path), one_process_project=True)
    # a module that makes or receives the engine, or builds the Trainer's arguments from options its caller parsed,
    # runs under the launches of the launched scripts importing it
    receivers = [path for path, facts in index.files.items() if facts.parameters]
    trainers = trainer_modules(sources)
    record_importer_launches(index.files, {*producers, *receivers, *trainers}, store)
    record_plugin_fields(index, store)
    record_class_defaults(index.files, sorted({*producers, *trainers}), store)
    _record_config_builders(index, sources, store)
    for path, calls in config_writer_calls(sources, store).items():
        index.files[path] = replace(facts_of(index.files, path), config_writers=calls)
    for path, dumped in dumped_config_names(sources, (launch.config for launch in index.launches)).items():
        index.files[path] = replace(facts_of(index.files, path), dumped_configs=dumped)
    for path, lines in code.gpu_loads.items():
        gpu = {line: gpu_file(f) for line, f in lines.items()}
        index.files[path] = replace(facts_of(index.files, path), gpu_loads=gpu)
    for path, written in code.cpu_loads.items():
        cpu = {
            line: Related(shown_path(f.path), f.line, 1, f"torch.save of CPU data as {f.name}")
            for line, f in written.items()
        }
        index.files[path] = replace(facts_of(index.files, path), cpu_loads=cpu)
    # after every fact the text test reads (`touched`: an engine received, launches, configs built or dumped, GPU
    # loads); the facts still to come (cuda parameters, state-saving calls, pretrained loads) are for the code
    for path, data in sources.items():
        if b"import *" not in data and b"import*" not in data:
            continue
        brought = star_aliases(store, path) if touched is None or touched(data, index.files.get(path)) else {}
        if brought:
            index.files[path] = replace(facts_of(index.files, path), star_imports=brought)
    # the project's own Trainer argument classes, for the files calling one (`hf_models.is_training_arguments`)
    for path, named in named_by(arguments_classes(sources), sources, store).items():
        index.files[path] = replace(facts_of(index.files, path), arguments_classes=frozenset(named))
    loaded_models = loaded_model_classes(sources)
    for path, named in loaded_models.items():
        index.files[path] = replace(facts_of(index.files, path), model_classes=frozenset(named))
    own_models = frozenset(name for names in loaded_models.values() for name in names)
    # the project's own Trainer classes a file imports from another module (`class LOGOTrainer(SimPOTrainer)`)
    for path, data in sources.items():
        summary = store.get(path) if b"Trainer" in data and _PROJECT_TRAINER_IMPORT.search(data) else None
        imported = imported_trainer_classes(summary, model.hierarchy) if summary is not None else None
        if imported:
            index.files[path] = replace(facts_of(index.files, path), trainer_classes=imported)
    for path, functions in code.cuda_parameters.items():
        index.files[path] = replace(facts_of(index.files, path), cuda_parameters=functions)
    record_state_saving_calls(index.files, model)
    record_parameter_paths(index.files, model, sorted({*producers, *trainers}))
    record_pretrained_loads(index.files, model, own_models)
    record_device_setters(index.files, model)
    record_built_arguments(index.files, model)
    texts = functools.lru_cache(maxsize=None)(lambda path: (read_input(path) or b"").decode("utf-8", errors="replace"))
    names = functools.lru_cache(maxsize=1)(lambda: inputs.file_names_under(roots, SKIPPED_DIRECTORIES))
    # which scripts may apply an `activation_checkpointing` section (read only where some file of the project may:
    # the imports are followed then); DSL455
    applying = any(token in data for data in sources.values() for token in CHECKPOINTING_CONFIGURED)
    applies: dict[str, bool] = {} if applying else dict.fromkeys(sources, False)
    index.checkpointing_unapplied = checkpointing_unapplied(index.sites, sources, store, applies)
    if not applying:
        index.checkpointing_unapplied.add("")  # nothing in the project applies a section: any config read
    for path in {*producers, *(p for p, data in sources.items() if b"activation_checkpointing" in data)}:
        applied = applies_checkpointing(path, sources, store, applies)  # for the configs the script builds
        index.files[path] = replace(facts_of(index.files, path), checkpointing_applied=applied)
    issues = launch_issues(index.sites, sources, store, texts, names, roots)
    for path, missing in missing_trainer_configs(index.unfound_trainer_configs, sources, names).items():  # DSL423
        issues.setdefault(path, []).extend(missing)
    batches = batch_issues(list(index.config_world_sizes), index.config_reading, texts)  # DSL407 at launches
    stopped = _stopped_launches(index.sites, issues)
    batches = {path: [i for i in found if (absolute(path), i.line) not in stopped] for path, found in batches.items()}
    for path, found in [*issues.items(), *batches.items()]:
        # a config the document itself writes out for its launch is there to be saved: not a missing file
        pasted = {config.name for config in index.document_configs.get(absolute(path), ())}
        found = [i for i in found if i.kind != "missing_config" or os.path.basename(i.detail) not in pasted]
        if path.endswith(".ipynb"):
            found = [i for i in found if i.kind in NOTEBOOK_ISSUES]
        index.launch_issues.setdefault(absolute(path), []).extend(found)
    index.launch_issues = {path: found for path, found in index.launch_issues.items() if found}
    index.sites = []
    return index


_TOO_DEEP = "engines were not followed across functions: the code is nested too deeply"
# The launch issues a notebook's `!` commands get: a config file the command names that the project lacks.
NOTEBOOK_ISSUES = frozenset({"missing_config"})


def _analysed(model: ProjectModel, producers: list[str]) -> bool:
    """Run the engine fixpoint from `producers`; False when the code is nested too deeply for it."""
    if not producers:
        return True
    try:
        model.analyse_all(producers)
    except (RecursionError, MemoryError):
        return False
    return True


def _record_config_builders(index: ProjectIndex, sources: dict[str, bytes], store: SummaryStore) -> None:
    for builder in config_builders(sources, store):
        made = f"{builder.name} is" if builder.constant else f"{builder.name}() returns"
        reader = f"{made} the config {builder.reader} receives"
        origin = Related(shown_path(builder.reader_path), builder.line, builder.column, reader)
        facts = facts_of(index.files, builder.path)
        written = builder.written
        if builder.name in facts.config_builders:  # several readers: the keys all of them write
            written &= facts.config_builders[builder.name][2]
        builders = {**facts.config_builders, builder.name: (origin, builder.origin, written)}
        index.files[builder.path] = replace(facts, config_builders=builders)


def single_file_facts(path: str, data: bytes) -> ProjectFacts | None:
    """What the index knows about one file read alone (no launchers, no other modules): engines that its own
    helpers return or receive. For adapters that see one file at a time (flake8, the language server), so that
    they report what `dslint check` reports on that file alone."""
    index = ProjectIndex((absolute(Path(path).parent),))
    store = SummaryStore({absolute(path): data}, exists)
    with contextlib.suppress(RecursionError, MemoryError):  # nested too deeply for the walk: its lint says so
        if creates_engine(data):
            model = ProjectModel(store)
            index.initialize_sites = follow_engines(index.files, index.config_readers, model, [absolute(path)])
            record_state_saving_calls(index.files, model)  # its own helpers that save or step initialize's results
        # loads of files holding GPU tensors that the file alone shows (DeepSpeed's own checkpoint files)
        for found, lines in gpu_loads(store, [absolute(path)]).items():
            gpu = {line: gpu_file(f) for line, f in lines.items()}
            index.files[found] = replace(facts_of(index.files, found), gpu_loads=gpu)
        _record_shipped_accelerate(index, absolute(path), data)
    return index.facts_for(path)


def _record_shipped_accelerate(index: ProjectIndex, path: str, data: bytes | None) -> None:
    """A script that makes an `Accelerator` and loads a model, that no launch of the project starts, with an
    accelerate (or "auto" ZeRO-3 DeepSpeed) setup shipped near it: `ProjectFacts.accelerate_shipped`."""
    if data is None or b"Accelerator" not in data or b"from_" not in data or facts_of(index.files, path).launches:
        return
    if shipped_accelerate_runs(path):
        index.files[path] = replace(facts_of(index.files, path), accelerate_shipped=True)


# Launch issues that stop the command before DeepSpeed reads a config: a later finding of the same command (its
# batch arithmetic, DSL407) describes a failure the run never reaches.
_STOPPING = frozenset(
    {"deepspeed_switch_value", "missing_script", "refused_options", "local_rank_refused", "unknown_option"}
)


def _stopped_launches(sites: Sequence[LaunchSite], issues: Mapping[str, list[LaunchIssue]]) -> set[tuple[str, int]]:
    """(launcher, the command's first line) of every launch an issue stops first, found by the lines the command
    spans (its first line to its last option's)."""
    stopped: set[tuple[str, int]] = set()
    for site in sites:
        line = site.line
        last = max([line.line, *(option.line for option in line.options)])
        found = issues.get(line.launcher, ())
        if any(i.kind in _STOPPING and line.line <= i.line <= last for i in found):
            stopped.add((absolute(line.launcher), line.line))
    return stopped


def _read_launchers(
    index: ProjectIndex, paths: Sequence[str], roots: Sequence[str], python_files: Mapping[str, bytes | None]
) -> None:
    yamls: dict[str, AccelerateConfig | None] = {}
    by_name: dict[str, list[str]] = {}  # file name -> the Python files of that name, in their order
    read: dict[str, bytes] = {}  # each launcher that may name a script, and the scripts its launches start
    launched_from: dict[str, set[str]] = {}
    for path in python_files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    for launcher in [*launcher_files(paths), *(p for p in python_files if p.endswith(".py"))]:
        try:  # a notebook carries its outputs (images...): only its size limit as a file applies
            if os.path.getsize(launcher) > MAX_LAUNCHER_BYTES and not launcher.endswith(".ipynb"):
                continue  # a data file or a generated document, not a launcher
        except OSError:
            continue
        data = python_files[launcher] if launcher.endswith(".py") and launcher in python_files else read_input(launcher)
        if data is None:
            continue
        name = os.path.basename(launcher)
        text = python_launch_text(data, name) if name.endswith(".py") else data.decode("utf-8", errors="replace")
        if text is None:  # a Python file that runs no launch command itself (`project/python_launchers.py`)
            continue
        if name.endswith((".yaml", ".yml")):
            for match in (*_YAML_DEEPSPEED.finditer(text), *_YAML_ACCELERATE_FILE.finditer(text)):
                config = find_written(match.group(1), launcher, roots)
                if config is not None:
                    index.config_readers.setdefault(config, set()).add("trainer")
            commands = yaml_shell_text(text) if b".py" in data or _MODULE_FLAG.search(data) else None
            if commands is None:
                continue
            text = commands  # a job spec's launch commands (`project/yaml_commands.py`), read as a shell script
        document = name.endswith(DOCUMENT_LAUNCHER_SUFFIXES)
        # a tutorial's pasted config (`document_configs.py`): a cheap test of the bytes first
        pasted = name.endswith(DOCUMENT_CONFIG_SUFFIXES) and may_hold_config(data)
        if b".py" not in data and not _MODULE_FLAG.search(data) and not pasted:  # a script, or a module
            continue
        read[launcher] = data
        passed: list[DocumentLaunch] = []  # the document's launches passing a config file
        wrapper = functools.partial(read_near, near=launcher, roots=roots)  # a sourced file, a forwarding wrapper
        if document:
            lines = [line for shell in shell_texts(name, text) for line in parse_shell(launcher, shell, wrapper)]
        elif "akefile" in name or name.endswith(".mk"):
            lines = parse_makefile(launcher, text)
        elif launcher.endswith(EDITOR_LAUNCH_FILE):
            lines = parse_shell(launcher, editor_commands(text))
        else:
            lines = parse_shell(launcher, text, wrapper)
        scripts: dict[int, str | None] = {}
        commented = comment_launches(data, name) if name.endswith(".py") else {}
        for line in lines:
            script = find_written(line.script, launcher, roots, line.directory)
            if script is None and line.module:
                continue  # `python -m pip ...`: a module of no file here is an installed one, not the project's
            run_from = None  # a document's command written to be run from its script's folder
            if script is None and document:
                script = documented_script(line, absolute(launcher), by_name, read_input)
                if script is not None:  # the folder the written path is relative to: `train.py` -> its folder
                    depth = len(os.path.normpath(line.script).lstrip(os.sep).split(os.sep))
                    run_from = str(Path(script).parents[depth - 1])
            accelerate = None
            yaml_path = None
            if line.accelerate_config is not None:
                yaml_path = find_written(line.accelerate_config, launcher, roots, line.directory)
                if yaml_path is None and (document or line.line in commented):  # its reader runs it from the root
                    yaml_path = inputs.only_file_ending(line.accelerate_config, roots)
            presumed = presumed_default_config(line, launcher, script) if yaml_path is None else None
            if yaml_path is not None or presumed is not None:
                read_path = yaml_path or presumed or ""
                if read_path not in yamls:
                    yaml_data = read_input(read_path)
                    decoded = yaml_data.decode("utf-8", errors="replace") if yaml_data is not None else None
                    yamls[read_path] = parse_accelerate_yaml(read_path, decoded) if decoded is not None else None
                accelerate = yamls[read_path]
                if accelerate is not None and presumed is not None:
                    accelerate = replace(accelerate, presumed=True)
            launched = launched_config(line, launcher, roots, accelerate, run_from)
            world = world_size(line, functools.partial(read_near, near=launcher, roots=roots), accelerate)
            launched = replace(launched, ranks_per_node=world.per_node, ranks=world.ranks, world_source=world.source)
            launched = replace(launched, options_open=line.open_words)
            launch = Launch(line, script, launched, accelerate)
            index.launches.append(launch)
            if pasted:
                passed.extend(_document_launch(launch, world))
            scripts[id(line)] = script
            # a script's own lint holds its launches' findings, but for the commands its comments document (a
            # README's, written in the file); a notebook's `!` launch has the launch issues its cells' Python cannot
            # show (`NOTEBOOK_ISSUES`), reported in its cells
            if not launcher.endswith(".py") or line.line in commented:
                option = line.config_option()
                site = LaunchSite(
                    line,
                    script,
                    option.name if option else None,
                    launch.config.config_path if option else None,
                    launch.config.launch,
                    _unfound_yaml_config(launch.config),
                    yaml_path,
                )
                index.sites.append(site)
            if launch.config.config_path is not None:
                data = read_input(script) if script is not None else None  # read once for what follows
                # a config the launcher writes itself before it starts (`cat <<EOF > $DS_CONFIG`) is not the
                # committed file's numbers: that launch's world size says nothing of them
                if world.ranks is not None and (document or not writes_passed_config(line, text)):
                    source = data if script is not None and script.endswith(".py") else None
                    ranks, how = data_parallel_ranks(world.ranks, world.source, source)
                    if ranks is not None:
                        index.config_world_sizes.setdefault(launch.config.config_path, []).append(
                            LaunchWorldSize(ranks, how, launch.config.launch)
                        )
                reader = config_reader_of(script, launch.config)
                index.config_readers.setdefault(launch.config.config_path, set()).add(reader)
                if reader in ("trainer", "lightning"):
                    handed = launch.config.config_evidence or launch.config.launch
                    index.config_reader_sites.setdefault(launch.config.config_path, []).append(handed)
                if reader == "initialize" and launch.config.option is not None:
                    keys = replaced_keys(data, launch.config.option) if data is not None else None
                    clients = client_sections(data) if data is not None else frozenset()  # sections never built
                    index.config_replaced.setdefault(launch.config.config_path, []).append(
                        (keys or frozenset()) | clients
                    )
                    index.config_clients.setdefault(launch.config.config_path, []).append(clients)
            elif script is not None and (linked := other_config_options(index, line, launcher, roots, script)):
                # the script's own option naming the file it hands a reader (`--ds_file`): its view of the launch
                launch = replace(launch, config=replace(launch.config, option=linked[0], config_path=linked[1]))
            if script is not None:
                facts = facts_of(index.files, script)
                launches = (*facts.launches, launch.config)
                index.files[script] = replace(
                    facts, launches=launches, launches_open=facts.launches_open or line.open_words
                )
                launched_from.setdefault(launcher, set()).add(script)
        if pasted:
            shipped = functools.partial(_ships, near=launcher, roots=roots)
            found = document_configs(name, text, passed, shipped)
            if found:
                index.document_configs[absolute(launcher)] = found
        if (
            not document
            and not name.endswith((".mk", ".py"))
            and "akefile" not in name
            and ("<<" in text or "echo '" in text)
        ):
            record_written_configs(index, absolute(launcher), text, lines, functools.partial(_launch_reader, scripts))
    # a launcher naming a launched script's file where the index read no launch of it (`srun ... python x.py` in
    # a form it does not parse, a prose mention): that script's launches are not all known
    started = {script: facts for script, facts in index.files.items() if facts.launches}
    holders = mention_holders(read, {os.path.basename(script).encode() for script in started})
    for script, facts in started.items():
        file = os.path.basename(script).encode()
        if any(unread_mention(script, at, read[at], launched_from.get(at, ())) for at in holders[file]):
            index.files[script] = replace(facts, launches_partial=True)


def _unfound_yaml_config(launched: LaunchedConfig) -> tuple[str, int] | None:
    """The YAML (absolute) and line of a `deepspeed:` key naming a config not found where the launch runs."""
    evidence = launched.config_evidence
    if launched.option != TRAINER_YAML or launched.config_path is not None or evidence is None:
        return None
    return absolute(evidence.path), evidence.line


def _document_launch(launch: Launch, world: WorldSize) -> list[DocumentLaunch]:
    """A document's launch, when it passes a config file by a literal path."""
    option = launch.line.config_option()
    if option is None or option.value is None:
        return []
    ranks = LaunchWorldSize(world.ranks, world.source, launch.config.launch) if world.ranks is not None else None
    reader = config_reader_of(launch.script, launch.config)
    return [DocumentLaunch(os.path.basename(option.value), reader, ranks, launch.config.config_path)]


def _ships(written: str, near: str, roots: Sequence[str]) -> bool:
    """Whether a path a document writes names a file of the project (found as launchers' paths are)."""
    return find_written(written, near, roots) is not None


def _launch_reader(scripts: dict[int, str | None], line: LaunchLine, option: str) -> str:
    """Who reads the config a launch line passes in `option` (`scripts`: the script each line starts)."""
    return reader_of(scripts.get(id(line)), option)


def read_near(name: str, near: str, roots: Sequence[str]) -> str | None:
    """The text of a file a launcher names (a hostfile), found as launchers' paths are (`find_written`); None when not
    found or unreadable."""
    path = find_written(name, near, roots)
    data = read_input(path) if path is not None else None
    return data.decode("utf-8", errors="replace") if data is not None else None

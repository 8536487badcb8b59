"""Who reads each DeepSpeed config file of a project, and what they change in it: the reader a launched config
goes to (`config_reader_of`: initialize, a script whose reader is not followed, Lightning, the Hugging Face
integrations), configs named under other launch options, loaded in a module the script imports, opened by a
literal path, named in `TrainingArguments`/`DeepSpeedPlugin`, or picked by a path in the launched script's code.
The project index (`index.py`) calls these while it reads launchers and sources; they write its reader tables.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Sequence
from typing import Protocol

from dslint.diagnostics import Related
from dslint.model.library import TRL_TRAINING_ARGUMENTS
from dslint.model.source_words import matches_from
from dslint.model.summary import SummaryStore, character_column
from dslint.project.chosen_configs import ScriptPaths, chosen_configs, may_pick, script_paths
from dslint.project.config_readers import client_sections, opened_configs, option_readers, replaced_keys
from dslint.project.inputs import absolute, find_written, read_input, shown_path
from dslint.project.launchers import LaunchLine
from dslint.project.project_index import TrainerLiteral
from dslint.project.shell_directories import UNKNOWN_VALUE
from dslint.script.project_facts import LaunchedConfig, LaunchWorldSize


class LaunchView(Protocol):
    """A launch of the index (`index.Launch`): the script it starts and the config it passes."""

    @property
    def script(self) -> str | None: ...

    @property
    def config(self) -> LaunchedConfig: ...


class ReaderTables(Protocol):
    """The project index's tables these functions fill (`index.ProjectIndex`)."""

    config_readers: dict[str, set[str]]
    config_replaced: dict[str, list[frozenset[str]]]
    config_clients: dict[str, list[frozenset[str]]]
    config_world_sizes: dict[str, list[LaunchWorldSize]]
    config_chosen: set[str]
    config_read_in: dict[str, list[Related]]
    config_reader_sites: dict[str, list[Related]]
    unfound_trainer_configs: list[TrainerLiteral]

    @property
    def launches(self) -> Sequence[LaunchView]: ...


_TRAINER_WORDS = (b"TrainingArguments", b"DeepSpeedPlugin", *(name.encode() for name in TRL_TRAINING_ARGUMENTS))
_TRAINER_LITERAL = re.compile(rb"\b(?:deepspeed|hf_ds_config)\s*=\s*[rR]?['\"]([^'\"\n]+\.json)['\"]")


def _option_reaches_reader(data: bytes, option: str) -> bool:
    return bool(option_readers(data, option))


def record_chosen_configs(
    index: ReaderTables, sources: dict[str, bytes], roots: Sequence[str], store: SummaryStore | None = None
) -> None:
    """A launch that passes no config file, of a script that picks one by a path in its code
    (`chosen_configs.py`): that config is read (`config_chosen`), and the launch's world size, where the launcher
    says it, applies to it. What a script writes is read once for all its launches, from the tree of its summary in
    `store` when given (the module is not parsed again)."""
    written: dict[str, ScriptPaths | None] = {}
    for launch in index.launches:
        config = launch.config
        if config.option is not None or launch.script not in sources:
            continue
        script = launch.script
        reaches = functools.partial(_option_reaches_reader, sources[script])
        if script not in written:
            data, name = sources[script], os.path.basename(script)
            summary = store.get(script) if store is not None and may_pick(data) else None
            if store is None or summary is not None:
                written[script] = script_paths(data, name, reaches, summary.tree if summary is not None else None)
            else:
                written[script] = None  # no path in the text, or CPython refuses it: nothing is picked
        paths = written[script]
        if paths is None:
            continue
        for picked in chosen_configs(
            sources[script],
            os.path.basename(script),
            config.options,
            functools.partial(find_written, near=script, roots=roots),
            read_input,
            reaches,
            paths,
        ):
            index.config_chosen.add(picked.path)
            index.config_clients.setdefault(picked.path, []).append(client_sections(sources[script]))
            if config.ranks is not None:
                worlds = index.config_world_sizes.setdefault(picked.path, [])
                worlds.append(LaunchWorldSize(config.ranks, f"{config.world_source}; {picked.how}", config.launch))


_ALIAS = re.compile(rb"\bimport\s+deepspeed\s+as\s+([A-Za-z_][A-Za-z0-9_]*)")


_FROM = re.compile(rb"\bfrom\s+deepspeed\s+import\s+(?:\([^)]*|[^\n]*)\binitialize\b")


def creates_engine(data: bytes) -> bool:
    """A text test, narrower than the per-file prefilter: `deepspeed.initialize(` (or `ALIAS.initialize(`
    after `import deepspeed as ALIAS`, or `initialize(` after `from deepspeed import initialize`; the first two
    also as a value, `ds_init = deepspeed.initialize`) written as
    code: not after a quote or `#` on its line, not inside a triple-quoted string. The index follows engines
    from these files only; a file's own engines are still found by its own facts."""
    if b"initialize" not in data or b"deepspeed" not in data:
        return False
    names = [b"deepspeed"]
    names.extend(_ALIAS.findall(data) if b"import deepspeed as" in data else ())
    # called, or held as a value (`ds_init = deepspeed.initialize`, called later under another name)
    pattern = rb"\b(?:" + b"|".join(re.escape(n) for n in names) + rb")\s*\.\s*initialize\b(?!\s*\.)"
    starts = list(names)  # where a match can begin: `re` is not led by a literal here (`matches_from`)
    if b"from deepspeed" in data and _FROM.search(data):
        pattern += rb"|(?<![.\w])initialize\s*\("
        starts.append(b"initialize")
    for match in matches_from(re.compile(pattern), data, starts):
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        before = data[line_start : match.start()]
        if any(mark in before for mark in (b'"', b"'", b"#", b"`")):
            continue
        if data.count(b'"""', 0, match.start()) % 2 or data.count(b"'''", 0, match.start()) % 2:
            continue
        return True
    return False


# The reader a config is linted for when several read it: initialize first (its findings hold on that path), then
# a script whose reader is not followed (read as initialize's, but its "auto" is not reported), Lightning, the HF
# integrations.


HF_TOKENS = (b"HfArgumentParser", b"TrainingArguments", b"Accelerator(", b"accelerate")


# A project that builds the HF Trainer's arguments (and creates no engine itself) hands its configs to the Trainer.
PRESUMED_TRAINER_TOKENS = (b"HfArgumentParser", b"TrainingArguments")


# Readers of a DeepSpeed config other than Lightning's strategy and initialize (the HF Trainer, accelerate).
HF_READER_TOKENS = (b"HfArgumentParser", b"TrainingArguments", b"DeepSpeedPlugin", b"HfDeepSpeedConfig")


# Lightning's strategy given a config; `DeepSpeedPlugin` is its name before Lightning 1.6, and accelerate's class
# of that name takes `hf_ds_config=`, never `config=`
LIGHTNING_CONFIG = re.compile(rb"\bDeepSpeed(?:Strategy|Plugin)\s*\([^)]*?\bconfig\s*=")


LIGHTNING_IMPORT = re.compile(
    rb"^\s*from\s+(?:pytorch_)?lightning[\w.]*\s+import\s[^\n]*\bDeepSpeed(?:Strategy|Plugin)\b", re.M
)


def lightning_configured(data: bytes) -> bool:
    """The text imports Lightning's DeepSpeed strategy and gives one a config (`LIGHTNING_IMPORT` and
    `LIGHTNING_CONFIG`). Both patterns need `DeepSpeed`, the first `lightning`: the text is tested for those first,
    since a pattern led by `^` (or `\\b`) is tried at every line (or byte) of every source of the project."""
    return (
        b"lightning" in data
        and b"DeepSpeed" in data
        and LIGHTNING_IMPORT.search(data) is not None
        and LIGHTNING_CONFIG.search(data) is not None
    )


def hf_reader_text(data: bytes) -> bool:
    """Whether a source may hand a config to the Hugging Face Trainer or accelerate (`HF_READER_TOKENS`); a
    `DeepSpeedPlugin` imported from Lightning is Lightning's."""
    if any(token in data for token in HF_READER_TOKENS if token != b"DeepSpeedPlugin"):
        return True
    return b"DeepSpeedPlugin" in data and not lightning_configured(data)


def config_reader_of(script: str | None, launched: LaunchedConfig) -> str:
    """Who reads a launched config: accelerate's YAML always goes to accelerate; `--deepspeed x.json` (the
    Hugging Face Trainer's option; DeepSpeed's own `--deepspeed` is an on/off flag) to a script that calls no
    `initialize(` itself and either builds TrainingArguments or does not touch DeepSpeed at all (a wrapper
    around a Trainer script) goes to the HF Trainer. Any other option is followed into the script
    (`config_readers.option_readers`): to `deepspeed.initialize` ("initialize"), to a Trainer or accelerate
    ("trainer"), to Lightning's strategy ("lightning"); a value that goes where dslint does not follow, or a script
    outside the project, leaves the reader unknown ("unlinked")."""
    return reader_of(script, launched.option)


def reader_of(script: str | None, option: str | None) -> str:
    """`_reader` for the config option `option` of a launch of `script`."""
    if option == "accelerate":
        return "trainer"
    data = read_input(script) if script is not None else None
    if option == "deepspeed":
        if data is None:
            return "trainer"  # a script outside the project given `--deepspeed x.json`: the HF Trainer's option
        if not creates_engine(data) and (any(token in data for token in HF_TOKENS) or b"deepspeed" not in data):
            return "trainer"
    if data is None or option is None:
        return "unlinked"
    readers = option_readers(data, option)
    return next((reader for reader in ("initialize", "lightning", "trainer") if reader in readers), "unlinked")


def other_config_options(
    index: ReaderTables, line: LaunchLine, launcher: str, roots: Sequence[str], script: str
) -> tuple[str, str] | None:
    """A launch passing no config under a known option name (`--deepspeed_config`...) may pass one under its own
    (`--strategy_config_path ds.json`): an option whose value is a config file that the script carries into a
    DeepSpeed reader (`config_readers.option_readers`: `DeepSpeedStrategy(config=args.x)`, `TrainingArguments(
    deepspeed=...)`, `initialize(config=...)`) tells who reads that file, and, for initialize, which keys the
    script writes into the loaded dict first (`replaced_keys`). The option is not the launch's config for the
    launch rules; the first such option and its file are returned, for the script's own view of the launch (the
    script reads `args.<option>`)."""
    data = None
    linked: tuple[str, str] | None = None
    for option in line.options:
        value = option.value
        if value is None or value == UNKNOWN_VALUE or not value.endswith((".json", ".hjson", ".yaml", ".yml")):
            continue
        data = read_input(script) if data is None else data
        if data is None:
            return None
        readers = option_readers(data, option.name)
        reader = next((r for r in ("initialize", "lightning", "trainer") if r in readers), None)
        config = find_written(value, launcher, roots, line.directory) if reader is not None else None
        if reader is not None and config is not None:
            index.config_readers.setdefault(config, set()).add(reader)
            linked = linked or (option.name, config)
            if reader == "initialize":  # what the script writes into the loaded dict first, as for a known option
                clients = client_sections(data)
                index.config_replaced.setdefault(config, []).append(
                    (replaced_keys(data, option.name) or frozenset()) | clients
                )
                index.config_clients.setdefault(config, []).append(clients)
    return linked


def follow_imported_readers(index: ReaderTables, store: SummaryStore) -> None:
    """A launched script that does not use its config option itself (its reader "unlinked") but imports project
    modules (to MAX_IMPORT_DEPTH levels) one of which opens `<x>.<option>` (`self.args.deepspeed_config`), loads
    it and hands the dict to initialize (`config_readers.replaced_keys`): that file is initialize's, less the
    keys that module replaces first, and where it is read is named (`ConfigReading.read_in`)."""
    replaced: dict[tuple[str, str], frozenset[str] | None] = {}  # (module, option) -> its answer, read once
    for launch in index.launches:
        config, script, option = launch.config.config_path, launch.script, launch.config.option
        if config is None or script is None or option is None or option == "accelerate":
            continue
        if config_reader_of(script, launch.config) != "unlinked":
            continue
        for module in store.imported_modules(absolute(script), MAX_IMPORT_DEPTH):
            data = store.sources.get(module)
            if (module, option) not in replaced:
                replaced[(module, option)] = _imported_reading(data, option) if data is not None else None
            keys = replaced[(module, option)]
            if keys is None:
                continue
            assert data is not None
            loaded = data.find(b"." + option.encode())
            if loaded >= 0:
                line, what = data.count(b"\n", 0, loaded) + 1, f"loads --{option} for initialize"
            else:  # `initialize(args=...)`: DeepSpeed reads `args.deepspeed_config` itself
                line, what = data.count(b"\n", 0, max(data.find(b"initialize("), 0)) + 1, "hands initialize args="
            where = Related(shown_path(module), line, 1, f"{os.path.basename(module)} {what}")
            index.config_readers.setdefault(config, set()).add("initialize")
            index.config_replaced.setdefault(config, []).append(keys)
            index.config_read_in.setdefault(config, []).append(where)
            break


MAX_IMPORT_DEPTH = 3  # import levels between a launched script and the module loading its config


def _imported_reading(data: bytes, option: str) -> frozenset[str] | None:
    """The keys an imported module replaces in the config of `--option` before its `initialize` (`replaced_keys`);
    none for `--deepspeed_config` when the module hands `initialize` an `args=` and no config (DeepSpeed reads
    `args.deepspeed_config` itself); None when the module reads the option neither way."""
    keys = replaced_keys(data, option)
    asks = keys is None and option == "deepspeed_config" and b"args=" in data and b"initialize(" in data
    if asks and "initialize" in option_readers(data, option):
        return frozenset()
    return keys


def opened_literals(index: ReaderTables, path: str, data: bytes, roots: Sequence[str]) -> None:
    """`with open("ds.json") as f: cfg = json.load(f)` ... `initialize(config=cfg)`: that file is read by
    initialize, less the keys the script writes first (`config_readers.opened_configs`)."""
    for literal, keys in opened_configs(data).items():
        config = find_written(literal, path, roots) if literal.endswith((".json", ".yaml", ".yml")) else None
        if config is not None:
            index.config_readers.setdefault(config, set()).add("initialize")
            index.config_replaced.setdefault(config, []).append(keys)
            index.config_clients.setdefault(config, []).append(client_sections(data))


def trainer_literals(index: ReaderTables, path: str, data: bytes, roots: Sequence[str]) -> None:
    """`TrainingArguments(deepspeed="ds.json")` (TRL's `SFTConfig(...)` too), `DeepSpeedPlugin(hf_ds_config=
    "ds.json")`: those files are read by the HF Trainer / accelerate, with `json.load` (the keyword is the
    reader's site: a config strict JSON does not read fails there). A path that names no file is kept
    (`unfound_trainer_configs`: DSL423's question, `missing_configs.missing_trainer_configs`)."""
    for literal in _trainer_literal_configs(path, data):
        config = find_written(literal.written, path, roots)
        if config is None:
            index.unfound_trainer_configs.append(literal)
            continue
        index.config_readers.setdefault(config, set()).add("trainer")
        site = Related(shown_path(path), literal.line, literal.column, f"{literal.keyword} names it")
        index.config_reader_sites.setdefault(config, []).append(site)


def _trainer_literal_configs(path: str, data: bytes) -> Iterator[TrainerLiteral]:
    if b".json" not in data or b"deepspeed" not in data or not any(name in data for name in _TRAINER_WORDS):
        return
    lines = data.split(b"\n")  # as the line count below reads them
    for match in _TRAINER_LITERAL.finditer(data):
        start_of_line = data.rfind(b"\n", 0, match.start()) + 1
        if b"#" in data[start_of_line : match.start()]:
            continue  # `#deepspeed="ds.json",`: a keyword commented out (or a comment that names one)
        line = data.count(b"\n", 0, match.start()) + 1
        column = character_column(lines, line, match.start() - (data.rfind(b"\n", 0, match.start()) + 1)) + 1
        written = match.group(1).decode("utf-8", errors="replace")
        yield TrainerLiteral(path, written, match.group(0).decode("utf-8", "replace"), line, column)

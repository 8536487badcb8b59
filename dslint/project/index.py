"""The project index: built once per run, before any file is linted, and handed to each file as plain data.

It reads the launchers under the checked paths (`.sh` scripts, Makefiles, the accelerate YAML files they name),
links each launch to the Python script it starts and the DeepSpeed config it passes, and follows engines
between functions and modules (`dslint.project.engine_flow`). Each file then gets a `ProjectFacts`
(`dslint.script.project_facts`): its launches and configs, the parameters that receive an engine, the helpers
that return one. Cheap by construction: launchers are small text files, Python modules are parsed with `ast`
only when they may create an engine (a text test) or when such a module calls into them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dslint.config import facts as config_facts
from dslint.config.tree import Object
from dslint.diagnostics import Related
from dslint.prefilter import may_create_engine
from dslint.project.engine_flow import EngineFlow, InitSite, ModuleFinder
from dslint.project.launchers import (
    CONFIG_OPTIONS,
    UNKNOWN_VALUE,
    AccelerateConfig,
    LaunchLine,
    parse_accelerate_yaml,
    parse_makefile,
    parse_shell,
)
from dslint.script.config_link import load_config_tree
from dslint.script.project_facts import (
    EngineConfig,
    LaunchedConfig,
    ParameterFact,
    ProjectFacts,
    ReturnFact,
)

LAUNCHER_SUFFIXES = (".sh", ".bash", "Makefile", "makefile", ".mk")
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


@dataclass
class ProjectIndex:
    root_paths: tuple[str, ...]
    launches: list[Launch] = field(default_factory=list)
    files: dict[str, ProjectFacts] = field(default_factory=dict)  # absolute path -> its facts
    # Who reads each launched config: "trainer" (the HF Trainer or accelerate, which fill "auto") or
    # "initialize" (deepspeed.initialize in the script).
    config_readers: dict[str, set[str]] = field(default_factory=dict)

    def config_reader(self, path: str | Path) -> str | None:
        """ "trainer" when only the Hugging Face Trainer or accelerate read this config, "initialize" when
        deepspeed.initialize does, None when no launcher names it."""
        readers = self.config_readers.get(absolute(path))
        if not readers:
            return None
        return "initialize" if "initialize" in readers else "trainer"

    def facts_for(self, path: str | Path) -> ProjectFacts | None:
        return self.files.get(absolute(path))

    def launched_configs(self) -> list[str]:
        """The config files launchers pass (absolute): DeepSpeed configs whatever their names."""
        seen = dict.fromkeys(launch.config.config_path for launch in self.launches if launch.config.config_path)
        return [path for path in seen if path is not None]


def _shown(path: str) -> str:
    """A path as findings show it: relative to the current directory when below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _find(name: str, near: str, roots: Sequence[str]) -> str | None:
    """A path written in a launcher: the launcher's directory and its parents up to a checked root, then the
    roots themselves (launchers are run from the repository root or from their own directory)."""
    if UNKNOWN_VALUE in name:
        return None
    candidate = Path(name)
    if candidate.is_absolute():
        return absolute(candidate) if candidate.is_file() else None
    directory = Path(near).parent
    tried: list[Path] = []
    for ancestor in [directory, *directory.parents]:
        tried.append(ancestor)
        if any(absolute(ancestor) == root for root in roots) or (ancestor / ".git").exists():
            break
    tried.extend(Path(root) for root in roots)
    for base in tried:
        path = base / candidate
        if path.is_file():
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
            found.extend(os.path.join(directory, n) for n in sorted(names) if n.endswith(LAUNCHER_SUFFIXES))
    return found


def _read(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def build_project_index(python_files: Iterable[Path | str], paths: Sequence[str]) -> ProjectIndex:
    """The index of the project under `paths` (the paths given on the command line), over `python_files`
    (the Python files discovered there)."""
    roots = tuple(absolute(p) if os.path.isdir(p) else absolute(Path(p).parent) for p in (paths or ["."]))
    index = ProjectIndex(roots)
    _read_launchers(index, paths or ["."], roots)
    sources: dict[str, bytes] = {}
    producers: list[str] = []
    for file in python_files:
        path = absolute(file)
        if not path.endswith(".py"):
            continue
        data = _read(path)
        if data is None:
            continue
        sources[path] = data
        if may_create_engine(data):
            producers.append(path)
    if producers:
        _follow_engines(index, sources, producers)
    return index


def _facts(index: ProjectIndex, path: str) -> ProjectFacts:
    facts = index.files.get(path)
    if facts is None:
        facts = ProjectFacts(parameters={}, returns={}, launches=())
        index.files[path] = facts
    return facts


def _read_launchers(index: ProjectIndex, paths: Sequence[str], roots: Sequence[str]) -> None:
    yamls: dict[str, AccelerateConfig | None] = {}
    for launcher in _walk_launchers(paths):
        data = _read(launcher)
        if data is None or b".py" not in data:
            continue
        text = data.decode("utf-8", errors="replace")
        name = os.path.basename(launcher)
        lines = (
            parse_makefile(launcher, text) if "akefile" in name or name.endswith(".mk") else parse_shell(launcher, text)
        )
        for line in lines:
            script = _find(line.script, launcher, roots)
            accelerate = None
            if line.accelerate_config is not None:
                yaml_path = _find(line.accelerate_config, launcher, roots)
                if yaml_path is not None:
                    if yaml_path not in yamls:
                        yaml_data = _read(yaml_path)
                        yamls[yaml_path] = (
                            parse_accelerate_yaml(yaml_path, yaml_data.decode("utf-8", errors="replace"))
                            if yaml_data is not None
                            else None
                        )
                    accelerate = yamls[yaml_path]
            launch = Launch(line, script, _launched_config(line, launcher, roots, accelerate), accelerate)
            index.launches.append(launch)
            if launch.config.config_path is not None:
                reader = _reader(script, launch.config)
                index.config_readers.setdefault(launch.config.config_path, set()).add(reader)
            if script is not None:
                facts = _facts(index, script)
                launches = (*facts.launches, launch.config)
                index.files[script] = ProjectFacts(facts.parameters, facts.returns, launches, facts.passthrough)


HF_TOKENS = (b"HfArgumentParser", b"TrainingArguments", b"Accelerator(", b"accelerate")


def _reader(script: str | None, launched: LaunchedConfig) -> str:
    """Who reads a launched config: accelerate's YAML always goes to accelerate; `--deepspeed x.json` to a
    script that builds its TrainingArguments from the command line goes to the HF Trainer."""
    if launched.option == "accelerate":
        return "trainer"
    data = _read(script) if script is not None else None
    hf_script = data is not None and b"initialize" not in data and any(token in data for token in HF_TOKENS)
    if launched.option == "deepspeed" and hf_script:
        return "trainer"
    return "initialize"


def _launched_config(
    line: LaunchLine, launcher: str, roots: Sequence[str], accelerate: AccelerateConfig | None
) -> LaunchedConfig:
    where = Related(_shown(absolute(launcher)), line.line, line.column, f"{line.tool} launches {line.script}")
    options = {o.name: o.value for o in line.options}
    for name in CONFIG_OPTIONS:
        option = line.option(name)
        if option is None or option.value is None or option.value == UNKNOWN_VALUE:
            continue
        if not option.value.endswith((".json", ".hjson", ".yaml", ".yml")) and name == "deepspeed":
            continue  # `--deepspeed` alone is DeepSpeed's own on/off flag
        config_path = _find(option.value, launcher, roots)
        evidence = Related(where.path, option.line, option.column, f"--{name} {option.value}")
        return LaunchedConfig(where, name, config_path, evidence, options)
    if accelerate is not None:
        shown = _shown(accelerate.path)
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
            return LaunchedConfig(
                where, "accelerate", None, evidence, options, accelerate.zero_stage, accelerate.mixed_precision
            )
    return LaunchedConfig(where, None, None, None, options)


def config_stage(path: str) -> int | None:
    """The ZeRO stage a config file sets (0 when absent), or None when unreadable or not literal."""
    tree = load_config_tree(Path(path))
    if not isinstance(tree, Object):
        return None
    return config_facts.zero_stage(tree)


def engine_config(index: ProjectIndex, site: InitSite) -> EngineConfig | None:
    """The config an initialize call elsewhere runs with, when a literal path or its script's launchers say."""
    import ast

    config = site.config
    if isinstance(config, ast.Constant) and isinstance(config.value, str):
        path = absolute(Path(site.path).parent / config.value)
        if os.path.isfile(path):
            stage = config_stage(path)
            written = Related(_shown(site.path), site.line, site.column, f"config {config.value}")
            return EngineConfig(stage, (written,), path)
        return None
    facts = index.files.get(site.path)
    if facts is None or not facts.launches:
        return None
    wanted = None
    if config is None and site.has_args:
        wanted = "deepspeed_config"
    elif isinstance(config, ast.Attribute) and isinstance(config.value, ast.Name):
        wanted = config.attr
    if wanted is None:
        return None
    stages: dict[int | None, list[tuple[LaunchedConfig, str]]] = {}
    for launch in facts.launches:
        if launch.option != wanted or launch.config_path is None:
            return None  # one launch without a readable config: the stage cannot be known
        stages.setdefault(config_stage(launch.config_path), []).append((launch, launch.config_path))
    if not stages or None in stages:
        return None
    stage = max(s for s in stages if s is not None)
    chain: list[Related] = []
    for launch, _ in stages[stage]:
        chain.append(launch.launch)
        if launch.config_evidence is not None:
            chain.append(launch.config_evidence)
    return EngineConfig(stage, tuple(chain), stages[stage][0][1])


def _follow_engines(index: ProjectIndex, sources: dict[str, bytes], producers: list[str]) -> None:
    flow = EngineFlow(ModuleFinder(sources), sources)
    flow.analyse_all(producers)
    for (path, function, param), (role, site, init) in flow.engine_parameters().items():
        origin = Related(
            _shown(site.caller_path),
            site.line,
            site.column,
            f"{role} from {_shown(init.path)}:{init.line} passed to {function}()",
        )
        facts = _facts(index, path)
        parameters = {name: dict(values) for name, values in facts.parameters.items()}
        parameters.setdefault(function, {})[param] = ParameterFact(role, origin, engine_config(index, init))
        index.files[path] = ProjectFacts(parameters, facts.returns, facts.launches, facts.passthrough)
    for path, text, position, name, unwrapped in flow.passthrough_helpers():
        facts = _facts(index, path)
        passthrough = {**facts.passthrough, text: (position, name, unwrapped)}
        index.files[path] = ProjectFacts(facts.parameters, facts.returns, facts.launches, passthrough)
    for path, text, callee, roles, is_tuple, init in flow.result_helpers():
        origin = Related(_shown(init.path), init.line, init.column, f"deepspeed.initialize inside {callee[1]}()")
        facts = _facts(index, path)
        returns = dict(facts.returns)
        returns[text] = ReturnFact(roles, is_tuple, origin, engine_config(index, init))
        index.files[path] = ProjectFacts(facts.parameters, returns, facts.launches, facts.passthrough)

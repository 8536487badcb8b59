"""Mistakes in a launch command itself, found from the launcher and the files it names (the launch rules,
DSL422-DSL424, report them in the launcher):

- `cut`: a comment line inside a backslash continuation ends the command (bash drops the comment, and the newline
  after it ends the command); the options on the lines after it never reach the script, and bash runs each of
  those lines as a command of its own (`--lr: command not found`).
- `unjoined`: the command ends at its own last line while option lines follow it: a space or tab after that line's
  backslash (bash escapes the space, and the newline ends the command), or no backslash at all before a line that
  starts with `--option`. The options after it are lost as with `cut`.
- `missing_config`: the DeepSpeed config path the launch passes (`--deepspeed ds.json`, `--deepspeed_config`,
  `--training_args.deepspeed`) names a file that exists nowhere in the project, and nothing in the project writes
  a file of that name: the shipped launcher stops at start-up where the script opens it (`missing_configs.py`).
  The `deepspeed:` key of a YAML of the Trainer's arguments that the launch passes counts too, reported in the
  YAML. (A document that writes the config out in a code block, `document_configs.py`, writes it: the project
  index drops such an issue.)
- `unread_config`: the launch passes a DeepSpeed config option to a script that never reads its command line (no
  `sys.argv`, no argument parser in it nor in the project modules it imports, no call of an entry function of
  another package that could read it): the run goes on without the config, and nothing says so.
- `refused_options`: the `deepspeed` launcher's own options that its runner refuses together
  (`launcher/runner.py: main`, DeepSpeed 0.19.8): `--include`/`--exclude` with `--num_gpus`/`--num_nodes`
  ("Cannot specify num_nodes/gpus with include/exclude"), `--include` with `--exclude` ("include_str and
  exclude_str are mutually exclusive."), and `--num_nodes` (without `--num_gpus` over 0 and without a hostfile)
  on a line that sets `CUDA_VISIBLE_DEVICES`, which the runner turns into `--include` before the same check.
  Each is a ValueError before any process starts.
- `deepspeed_switch_value`: `--deepspeed ds.json` to a script whose `--deepspeed` is `add_config_arguments`'
  switch (`action="store_true"`): its strict parser stops on the path, an unrecognized argument.
- `local_rank_refused`: the `deepspeed` launcher appends `--local_rank=N` to the script's arguments
  (`launcher/launch.py`, unless `--no_local_rank`), and the script's own `argparse` parser has no such option and
  parses strictly: every rank stops with "unrecognized arguments" (`dslint.project.script_parser`).
- `configless_trainer`: the `deepspeed` launcher starts a script whose Hugging Face Trainer no DeepSpeed config
  reaches (no `deepspeed=`, no `--deepspeed` in the launch for arguments parsed from the command line): it trains
  as plain DDP (`dslint.project.trainer_without_config`).
- `missing_script`: the Python script a DeepSpeed launch starts (`deepspeed train_ds.py`, `torchrun`, `accelerate
  launch`) is a file of that name nowhere in the project, or names one only when letter case is ignored, and
  nothing in the project writes or fetches one: every rank stops at once ("can't open file"). Often the script
  was renamed and its launchers were not (`missing_scripts.py`).
- `ignored_visible_devices`: `CUDA_VISIBLE_DEVICES` picking GPUs beside `--num_gpus`, which the runner ignores
  and drops: the ranks run on the first GPUs instead (`dslint.project.visible_devices`).
- `interpreter`: a Python interpreter written between the `deepspeed` launcher and the script
  (`deepspeed python train.py`): the runner's first positional word is its user script, so every rank runs
  `python -u python --local_rank=N train.py` (`launcher/launch.py`), which cannot open a file named `python`.
- `deepspeed_never_on`: `accelerate launch` given DeepSpeed settings (`--deepspeed_config_file`, `--zero_stage`)
  without `--use_deepspeed`, under `--multi_gpu`, a config file of another type, or none (the machine's default
  decides): the settings are never read (`accelerate_deepspeed_off.py`).
- `deepspeed_config_as_accelerate_config`: `accelerate launch --config_file ds.json` naming a DeepSpeed config,
  which accelerate reads as its own and refuses before any process starts (`accelerate_config_refused.py`).

Each answer is conservative: a path built at run time, an absolute path (the user's machine), a script outside
the project, a script that imports a module whose source is not in the project and calls an entry function of it
without arguments (`main()`, `cli.run()`): nothing is reported.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from dslint.diagnostics import Related
from dslint.model.summary import ModuleSummary, SummaryStore
from dslint.project.accelerate_config_refused import deepspeed_config_as_accelerate_config
from dslint.project.accelerate_deepspeed_off import deepspeed_never_on
from dslint.project.accelerate_precision_conflict import precision_conflict
from dslint.project.command_line_readers import option_never_used, reads_command_line
from dslint.project.config_given_twice import config_given_twice
from dslint.project.configless_initialize import configless_initialize
from dslint.project.inputs import shown_path
from dslint.project.launch_cuts import strip_comment
from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.launchers import LaunchLine, ScriptOption
from dslint.project.master_port import master_port_unused
from dslint.project.missing_configs import beside, missing_config, missing_in_configs, missing_launch_configs
from dslint.project.missing_scripts import missing_script_issue
from dslint.project.project_index import LaunchIssue, LaunchSite
from dslint.project.script_parser import (
    bare_abbreviations,
    missing_required,
    refusing_parse,
    stored_name,
    strict_parser,
    switch_only_parse,
    unknown_options,
)
from dslint.project.shell_directories import UNKNOWN_VALUE
from dslint.project.slurm_layouts import srun_layout
from dslint.project.trainer_without_config import configless_trainer
from dslint.project.unexported_devices import unexported_devices
from dslint.project.visible_devices import ignored_visible_devices


def _read_somewhere(name: str, sources: Mapping[str, bytes]) -> bool:
    """Some source of the project may read the option `name` (`args.<name>`, `cfg["<name>"]`, `getattr(args,
    "<name>")`): one declared and never read names no file anyone opens. DeepSpeed's and the Trainer's own
    options (`--deepspeed`, `--deepspeed_config`) are read by the libraries."""
    name = name.rsplit(".", 1)[-1]  # a nested option (`--training_arguments.deepspeed`): the field's own name
    if name in ("deepspeed", "deepspeed_config"):
        return True
    pattern = re.compile(rb"\.%s\b|['\"]%s['\"]" % (re.escape(name.encode()), re.escape(name.encode())))
    return any(name.encode() in data and pattern.search(data) for data in sources.values())


def launch_issues(
    sites: Iterable[LaunchSite],
    sources: dict[str, bytes],
    store: SummaryStore,
    launcher_text: Callable[[str], str | None],
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
    roots: Sequence[str] = (),
) -> dict[str, list[LaunchIssue]]:
    """The issues of every launch, by launcher (as its `LaunchLine.launcher` says). `launcher_text(path)`: a
    launcher's text; `file_names()`: every file under the checked roots by base name (asked only when a config
    path is missing)."""
    found: dict[str, list[LaunchIssue]] = {}
    reads: dict[str, bool] = {}
    # the HF Trainer's `--deepspeed` is opened wherever the project parses its arguments (`train_mem.py` calling
    # `train.train()`): read once, not per launch
    trainer_parsed = any(b"HfArgumentParser" in data for data in sources.values())
    for site in sites:
        line = site.line
        issues = found.setdefault(line.launcher, [])
        if line.cut_line and line.lost_options:
            if line.cut_cause == "comment":
                issues.append(_cut(site, launcher_text))
            elif _deepspeed_launch(site, sources) and not _annotated_listing(site, launcher_text):
                issues.append(_unjoined(site, launcher_text))
        refused = refused_options(line)
        if refused is not None:
            issues.append(refused)
        interpreter = interpreter_given(line)
        if interpreter is not None:
            issues.append(interpreter)
        ignored = ignored_visible_devices(line)
        if ignored is not None:
            issues.append(ignored)
        port = master_port_unused(line)
        if port is not None:
            issues.append(port)
        unexported = unexported_devices(line, launcher_text(line.launcher), functools.partial(_spreads, site, sources))
        if unexported is not None:
            issues.append(unexported)
        layout = srun_layout(line, launcher_text(line.launcher))
        if layout is not None:
            issues.append(layout)
        refused_file = deepspeed_config_as_accelerate_config(site)
        if refused_file is not None:
            issues.append(refused_file)
        never_on = deepspeed_never_on(site, sources, launcher_text) if refused_file is None else None
        if never_on is not None:
            issues.append(never_on)
        conflict = precision_conflict(site, sources, store, tuple(roots))
        if conflict is not None and conflict not in issues:
            issues.append(conflict)
        if site.script is None:
            deepspeed = _deepspeed_launch(site, sources)
            takes = functools.partial(_takes_every_option, site, store, sources)
            missing_script = missing_script_issue(site, deepspeed, sources, launcher_text, file_names, roots, takes)
            if missing_script is not None:
                issues.append(missing_script)
            if missing_script is not None and missing_script.cause == "moved":
                # the script the launch means, moved since: what it does with this launch is checked too
                (moved,) = file_names()[os.path.basename(line.script)]
                site = replace(site, script=moved)
        refusal = _local_rank_refusal(site, store, sources)
        if refusal is not None:
            issues.append(refusal)
        switch = _switch_given_a_value(site, store, sources)
        if switch is not None:
            issues.append(switch)
        for unknown in _unknown_options(site, store, sources, launcher_text):
            if unknown not in issues:
                issues.append(unknown)
        required = _required_not_given(site, store, sources)
        if required is not None and required not in issues:
            issues.append(required)
        # (a config path given to add_config_arguments' `--deepspeed` switch is that config, misplaced: DSL443's)
        configless_init = configless_initialize(site, store, sources) if _runs_deepspeed(site) and not switch else None
        if configless_init is not None and configless_init not in issues:
            issues.append(configless_init)
        twice = config_given_twice(site, store, sources) if _runs_deepspeed(site) else None
        if twice is not None and twice not in issues:
            issues.append(twice)  # (the file the option names is never opened: no missing-config finding below)
        issues.extend(missing_launch_configs(site, sources, launcher_text(line.launcher), file_names))
        configless = _configless_trainer(site, store, sources)
        if configless is not None:
            issues.append(configless)
        for yaml_path, issue in missing_in_configs(site, sources, launcher_text, file_names):
            if not any(
                (i.kind, i.line, i.column) == (issue.kind, issue.line, issue.column) for i in found.get(yaml_path, ())
            ):
                found.setdefault(yaml_path, []).append(issue)  # one finding for every launch passing the YAML
        if site.script is None or site.config_option is None:
            continue
        option = line.option(site.config_option)
        assert option is not None and option.value is not None
        if (
            twice is None
            and site.config_path is None
            and not _tests_existence(sources.get(site.script, b""), site.config_option)
            and _read_somewhere(option.name, sources)
        ):
            text = launcher_text(line.launcher)
            opened = option.name == "deepspeed" and trainer_parsed
            missing = missing_config(option.value, sources, line.launcher, text, file_names, roots, opened)
            if missing is not None and not beside(missing, line, site.script, sources):
                end = option.column + len(option.name) + 2
                shown = tuple(shown_path(path) for path in missing)
                issues.append(
                    LaunchIssue("missing_config", option.line, option.column, end, option.value, elsewhere=shown)
                )
        if site.script.endswith(".py") and site.script in sources:
            if site.script not in reads:
                reads[site.script] = reads_command_line(site.script, store, sources)
            if not reads[site.script] and not _names_file(sources[site.script], option.value):
                end = option.column + len(option.name) + 2
                names = tuple(f"--{o.name}" for o in line.options)
                issues.append(
                    LaunchIssue("unread_config", option.line, option.column, end, line.script, names, (site.launch,))
                )
                configless = _configless_trainer(site, store, sources, unread=True)  # and the Trainer gets none in code
                if configless is not None:
                    issues.append(configless)
    return {launcher: issues for launcher, issues in found.items() if issues}


def _names_file(source: bytes, written: str) -> bool:
    """The script names the path the launch writes in a string of its own, as written (`./` aside:
    `TrainingArguments(deepspeed="ds_config.json")`, a default `config_path="ds_config.json"`), outside a comment:
    the config the launch passes is read all the same (`/tmp/ds_config.json` is another file)."""
    path = written.removeprefix("./")
    pattern = re.compile(rb"['\"](\./)?" + re.escape(path.encode()) + rb"['\"]")
    return bool(path) and any(
        pattern.search(line) for line in source.splitlines() if not line.lstrip().startswith(b"#")
    )


def _tests_existence(source: bytes, option: str) -> bool:
    """The script tests whether the file its option names exists (`os.path.exists(args.ds_config)`,
    `Path(args.ds_config).is_file()`) and so goes on without it: a missing file is no stop there."""
    name = re.escape(option.encode())
    return (
        re.search(rb"\b(?:exists|isfile)\(\s*[\w.]*\b" + name + rb"\s*\)", source) is not None
        or re.search(rb"Path\(\s*[\w.]*\b" + name + rb"\s*\)\.(?:exists|is_file)\(", source) is not None
    )


# `deepspeed` and `python -m deepspeed.launcher.runner`: the launchers whose own options `runner.main` reads.
DEEPSPEED_RUNNERS = frozenset({"deepspeed", "deepspeed.launcher.runner"})
_COUNT_ERROR = "Cannot specify num_nodes/gpus with include/exclude"
_EXCLUSIVE_ERROR = "include_str and exclude_str are mutually exclusive."


def refused_options(line: LaunchLine) -> LaunchIssue | None:
    """The pair of the `deepspeed` launcher's own options that its runner refuses (a ValueError before any
    process starts), positioned at the second one; None when the line has none. A resource filter counts when
    its value is known and not empty (a variable that may be empty is no evidence); a count when it is a
    number from 0 up or a variable (argparse reads an int; -1, the default, is never written)."""
    if line.tool not in DEEPSPEED_RUNNERS:
        return None
    include = _filter(line.launcher_option("include"))
    exclude = _filter(line.launcher_option("exclude"))
    count = next(
        (
            option
            for option in sorted(line.launcher_options, key=lambda o: (o.line, o.column))
            if option.name in ("num_gpus", "num_accelerators", "num_nodes") and _counted(option.value)
        ),
        None,
    )
    chosen = include or exclude
    if chosen is not None and count is not None:
        first, second = sorted((chosen, count), key=lambda o: (o.line, o.column))
        return _refusal(second, _COUNT_ERROR, (f"--{first.name}", f"--{second.name}"))
    if include is not None and exclude is not None:
        first, second = sorted((include, exclude), key=lambda o: (o.line, o.column))
        return _refusal(second, _EXCLUSIVE_ERROR, (f"--{first.name}", f"--{second.name}"))
    return _visible_devices_refusal(line)


# The runner's options that take no value (`store_true`, DeepSpeed 0.19.8's `runner.parse_args`); every other
# option of it takes one, unless written `--name=value`.
_RUNNER_FLAGS = frozenset(
    {
        "--module",
        "--no_python",
        "--no_local_rank",
        "--no_ssh",
        "--no_ssh_check",
        "--force_multi",
        "--save_pid",
        "--bind_cores_to_rank",
        "-q",
        "--quiet",
    }
)
_INTERPRETER = re.compile(r"^python(?:[23](?:\.\d+)?)?$")


def interpreter_given(line: LaunchLine) -> LaunchIssue | None:
    """`deepspeed python x.py`: the runner's first positional word (its `user_script`) names a Python interpreter.
    The launch runs `sys.executable -u python ...` on every rank. Nothing when the line runs the user script
    without Python (`--no_python`: the interpreter is then the program itself), or the word is not known."""
    if line.tool not in DEEPSPEED_RUNNERS:
        return None
    words = line.launcher_words
    index = 0
    while index < len(words):
        word = words[index][0]
        if word.startswith("-"):
            if word in ("--no_python",):
                return None
            index += 1 if "=" in word or word in _RUNNER_FLAGS else 2
            continue
        stem = word.rsplit("/", 1)[-1]
        if _INTERPRETER.match(stem) is None:
            return None
        _, number, column = words[index]
        return LaunchIssue("interpreter", number, column, column + len(word), word)
    return None


def _visible_devices_refusal(line: LaunchLine) -> LaunchIssue | None:
    """`CUDA_VISIBLE_DEVICES=0,1 deepspeed --num_nodes 1 x.py`: without a hostfile, the runner turns the variable
    into `--include localhost:0,1` unless `--include`, `--exclude`, `--num_gpus` over 0 or `--num_nodes` over 1
    is given, and then refuses `--num_nodes` beside the include it made itself."""
    visible = dict(line.environment).get("CUDA_VISIBLE_DEVICES")
    if not visible or visible == UNKNOWN_VALUE:
        return None
    if line.launcher_option("hostfile", "include", "exclude") is not None or line.launcher_short_options:
        return None  # a hostfile fills the resource pool; `-i`/`-e` are filters of their own
    gpus = line.launcher_option("num_gpus", "num_accelerators")
    if gpus is not None and (gpus.value is None or not gpus.value.lstrip("-").isdigit() or int(gpus.value) > 0):
        return None
    nodes = line.launcher_option("num_nodes")
    if nodes is None or nodes.value is None or not nodes.value.isdigit() or int(nodes.value) > 1:
        return None
    return _refusal(nodes, _COUNT_ERROR, ("CUDA_VISIBLE_DEVICES", f"--{nodes.name}"))


def _filter(option: ScriptOption | None) -> ScriptOption | None:
    if option is None or not option.value or option.value == UNKNOWN_VALUE or option.value.startswith("-"):
        return None
    return option


def _counted(value: str | None) -> bool:
    return value is not None and (value == UNKNOWN_VALUE or value.isdigit())


def _refusal(option: ScriptOption, error: str, pair: tuple[str, str]) -> LaunchIssue:
    end = option.column + len(option.name) + 2
    return LaunchIssue("refused_options", option.line, option.column, end, error, pair)


def _cut(site: LaunchSite, launcher_text: Callable[[str], str | None]) -> LaunchIssue:
    line = site.line
    text = launcher_text(line.launcher) or ""
    physical = text.splitlines()
    raw = physical[line.cut_line - 1] if 0 < line.cut_line <= len(physical) else "#"
    column = len(raw) - len(raw.lstrip()) + 1
    return LaunchIssue(
        "cut", line.cut_line, column, len(raw.rstrip()) + 1, line.script, line.lost_options, (site.launch,)
    )


# Starters of processes that run DeepSpeed only when a DeepSpeed option or the script says so
_PLAIN_STARTERS = frozenset({"python", "python3", "torchrun", "torch.distributed.launch", "torch.distributed.run"})


def _deepspeed_launch(site: LaunchSite, sources: dict[str, bytes]) -> bool:
    """A launch that runs DeepSpeed: the `deepspeed` launcher or accelerate, a DeepSpeed option among the options
    written for it (kept or lost), or a script that names DeepSpeed. A plain `python tool.py` of the project is
    left alone, and so is a `torchrun` (or `torch.distributed.launch`/`run`) with no such sign: plain DDP."""
    line = site.line
    if line.tool not in _PLAIN_STARTERS or site.config_option is not None:
        return True
    written = [option.name for option in line.options] + list(line.lost_options)
    if any("deepspeed" in name.lower() for name in written):
        return True
    return site.script is not None and b"deepspeed" in sources.get(site.script, b"")


def _annotated_listing(site: LaunchSite, launcher_text: Callable[[str], str | None]) -> bool:
    """A document's command whose lines each end in a backslash and a note (`--lr 1e-5 \\ # the peak rate`), the
    one after the cut too: a listing that explains its options, not a command to paste (one note in a command
    meant to be pasted, or a launcher script's, stays reported)."""
    line = site.line
    if not line.launcher.endswith(DOCUMENT_LAUNCHER_SUFFIXES) or line.cut_cause != "space":
        return False
    physical = (launcher_text(line.launcher) or "").splitlines()
    noted = [_NOTED_BACKSLASH.search(raw) is not None for raw in physical[line.cut_line - 1 : line.cut_line + 1]]
    return noted == [True, True]


_NOTED_BACKSLASH = re.compile(r"\\[ \t]+#")


def _unjoined(site: LaunchSite, launcher_text: Callable[[str], str | None]) -> LaunchIssue:
    """The command's last line, from its backslash (a space after it) or its first word (no backslash)."""
    line = site.line
    physical = (launcher_text(line.launcher) or "").splitlines()
    raw = physical[line.cut_line - 1] if 0 < line.cut_line <= len(physical) else ""
    code = strip_comment(raw).rstrip()
    end = len(code) + 1
    column = end - 1 if line.cut_cause == "space" else len(raw) - len(raw.lstrip()) + 1
    return LaunchIssue(
        "unjoined", line.cut_line, column, end, line.script, line.lost_options, (site.launch,), cause=line.cut_cause
    )


def _local_rank_refusal(site: LaunchSite, store: SummaryStore, sources: dict[str, bytes]) -> LaunchIssue | None:
    """`deepspeed train.py` where train.py's own parser refuses the `--local_rank=N` the launcher appends
    (`dslint.project.script_parser`). Only the launches that start each rank through `launcher/launch.py`: the
    `deepspeed` runner without `--no_local_rank`, with no other multi-node backend (`--launcher openmpi` starts
    the script itself) and not under a wrapper that starts the processes (`srun`, `mpirun`)."""
    line, script = site.line, site.script
    if line.tool not in DEEPSPEED_RUNNERS or script is None or not script.endswith(".py") or line.spawned_by:
        return None
    if _no_local_rank(line):
        return None
    backend = line.launcher_option("launcher")
    if backend is not None and (backend.value or "").lower() != "pdsh":
        return None
    where = _parse_call(script, store, sources, refusing_parse, "parses its command line without --local_rank")
    if where is None:
        return None
    end = line.column + len(line.tool)
    return LaunchIssue("local_rank_refused", line.line, line.column, end, line.script, related=(where,))


def _no_local_rank(line: LaunchLine) -> bool:
    """The runner is told not to append `--local_rank=N` (`deepspeed --no_local_rank`)."""
    return any(word == "--no_local_rank" for word, _, _ in line.launcher_words)


def _parse_call(
    script: str,
    store: SummaryStore,
    sources: dict[str, bytes],
    reading: Callable[[ModuleSummary, bytes], ast.Call | None],
    note: str,
) -> Related | None:
    """Where the script parses its command line, when `reading` (`dslint.project.script_parser`) finds the
    mistake in its parser."""
    data, summary = sources.get(script), store.get(script)
    parse = reading(summary, data) if data is not None and summary is not None else None
    return Related(shown_path(script), parse.lineno, parse.col_offset + 1, note) if parse is not None else None


_FILE_NAME = re.compile(r"[\w./~+-]*\w\.\w+")


def _switch_given_a_value(site: LaunchSite, store: SummaryStore, sources: dict[str, bytes]) -> LaunchIssue | None:
    """`train.py --deepspeed ds.json` where train.py's `--deepspeed` is only the switch
    `deepspeed.add_config_arguments` adds (`dslint.project.script_parser`): the path is an unrecognized
    argument, and the config option is `--deepspeed_config`."""
    script = site.script
    option = site.line.option("deepspeed")
    # a file name as written (`ds.json`, `configs/zero2.json`), not `"$@"` or a redirection (`2>&1`)
    if script is None or option is None or not option.value or not _FILE_NAME.fullmatch(option.value):
        return None
    note = "takes --deepspeed as a switch (add_config_arguments)"
    where = _parse_call(script, store, sources, switch_only_parse, note)
    if where is None:
        return None
    end = option.column + len("--deepspeed")
    return LaunchIssue("deepspeed_switch_value", option.line, option.column, end, option.value, related=(where,))


def _runs_deepspeed(site: LaunchSite) -> bool:
    """The command itself says it runs DeepSpeed: the `deepspeed` runner, a config option, or an option named for
    DeepSpeed (a `python tool.py` of a DeepSpeed project, an `accelerate launch` with no such sign: not known)."""
    line = site.line
    written = [option.name for option in line.options] + list(line.lost_options)
    return line.tool in DEEPSPEED_RUNNERS or site.config_option is not None or any("deepspeed" in w for w in written)


def _unknown_options(
    site: LaunchSite, store: SummaryStore, sources: dict[str, bytes], launcher_text: Callable[[str], str | None]
) -> list[LaunchIssue]:
    """`deepspeed train.py --max_gpus 4` where train.py's own strict parser has no such option
    (`dslint.project.script_parser.unknown_options`): argparse stops every rank with "unrecognized arguments"."""
    line, script = site.line, site.script
    if script is None or not script.endswith(".py") or line.module or not _runs_deepspeed(site):
        return []
    data, summary = sources.get(script), store.get(script)
    found = unknown_options(summary, data, [o.name for o in line.options]) if data and summary else None
    bare = (
        bare_abbreviations(summary, data, [o.name for o in line.options if o.value is None]) if data and summary else {}
    )
    parser = strict_parser(summary, data) if bare and data and summary else None
    if found is None and parser is None:
        return []
    parse, refused = found or (parser.parse if parser else None, set())
    assert parse is not None
    refused = {*refused, *bare}
    where = Related(shown_path(script), parse.lineno, parse.col_offset + 1, "parses its command line strictly")
    physical = (launcher_text(line.launcher) or "").splitlines()
    issues = []
    for option in line.options:
        if option.name not in refused:
            continue
        text = physical[option.line - 1][option.column - 1 :] if 0 < option.line <= len(physical) else ""
        word = re.match(r"--[\w.-]+", text)
        if word is None or stored_name(word.group()) != option.name:
            continue  # not where the text says (an option from a variable's value): no position to show
        end = option.column + len(word.group())
        given = (word.group(), bare[option.name]) if option.name in bare else (word.group(),)
        issues.append(LaunchIssue("unknown_option", option.line, option.column, end, line.script, given, (where,)))
    return issues


def _required_not_given(site: LaunchSite, store: SummaryStore, sources: dict[str, bytes]) -> LaunchIssue | None:
    """`deepspeed train.py --epochs 3` where train.py's strict parser declares `--config` with `required=True` (or a
    required group none of whose options is given), and every word of the command is known
    (`dslint.project.script_parser.missing_required`): argparse stops every rank at start-up."""
    line, script = site.line, site.script
    if script is None or not script.endswith(".py") or line.module or line.open_words or line.cut_line:
        return None
    if not _runs_deepspeed(site):
        return None
    data, summary = sources.get(script), store.get(script)
    written = [o.name for o in line.options]
    # a short option (`-c cfg.yaml` for `--config`/`-c`), as argparse stores it; its first letter with a value
    # attached (`-cconfig.yaml`)
    written += [stored_name(word) for word in line.short_options] + [word[1] for word in line.short_options]
    if line.tool in {*DEEPSPEED_RUNNERS, "torch.distributed.launch"} and not _no_local_rank(line):
        written.append("local_rank")  # the launcher appends `--local_rank=N` to every rank's command line
    missing = missing_required(summary, data, written) if data and summary else None
    if not missing:
        return None
    names = [" or ".join(group) for group, _ in missing]
    related = tuple(
        Related(shown_path(script), call.lineno, call.col_offset + 1, f"requires {' or '.join(group)}")
        for group, call in missing
    )
    end = line.column + len(line.tool)
    return LaunchIssue("missing_required", line.line, line.column, end, line.script, tuple(names), related)


def _takes_every_option(site: LaunchSite, store: SummaryStore, sources: dict[str, bytes], path: str) -> bool:
    """Whether the project file `path` parses its command line strictly and takes every option `site` passes
    (the script the launch means, moved since: DSL444 names it)."""
    data, summary = sources.get(path), store.get(path)
    if data is None or summary is None or strict_parser(summary, data) is None:
        return False
    return unknown_options(summary, data, [option.name for option in site.line.options]) is None


def _configless_trainer(
    site: LaunchSite, store: SummaryStore, sources: dict[str, bytes], unread: bool = False
) -> LaunchIssue | None:
    """`deepspeed train.py` where train.py's Hugging Face Trainer gets no DeepSpeed config from this launch
    (`dslint.project.trainer_without_config`): it trains as plain DDP. `unread`: the launch gives a config the
    script never reads (`unread_config`): the issue says so (`options`)."""
    line, script = site.line, site.script
    if line.tool not in DEEPSPEED_RUNNERS or script is None or not script.endswith(".py") or line.spawned_by:
        return None
    config_given, unused = site.config_option is not None and not unread, None
    if (
        site.config_option is not None
        and config_given
        and option_never_used(script, site.config_option, store, sources)
    ):
        config_given, unused = False, site.config_option  # declared by the script's parser, read nowhere
    if config_given or any("deepspeed" in option for option in line.lost_options):
        return None  # a config given (read: `unread_config` asks), or cut off (`cut`, `unjoined`)
    summary = store.get(script)
    if summary is None:
        return None
    backend = line.launcher_option("launcher")  # only launch.py (pdsh, one node) appends `--local_rank=N`
    rank_first = not _no_local_rank(line) and (backend is None or (backend.value or "").lower() == "pdsh")
    options = {option.name for option in line.options} | ({"*"} if line.open_words else set())
    trainer = configless_trainer(summary, options, store, rank_first)
    if trainer is None:
        return None
    where = Related(shown_path(script), trainer.lineno, trainer.col_offset + 1, "builds a Trainer without a config")
    end = line.column + len(line.tool)
    given = ("unread",) if unread else (f"unused:--{unused}",) if unused is not None else ()
    return LaunchIssue("configless_trainer", line.line, line.column, end, line.script, given, related=(where,))


def _spreads(site: LaunchSite, sources: Mapping[str, bytes]) -> bool:
    """The launched script's folder holds code that may use every GPU it sees (`device_map`, `device_count()`), or
    the script is not known."""
    if site.script is None:
        return True
    folder = os.path.dirname(site.script)
    return any(
        os.path.dirname(path) == folder and (b"device_map" in data or b"device_count()" in data)
        for path, data in sources.items()
    )

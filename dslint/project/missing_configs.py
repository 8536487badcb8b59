"""A config path a launch names that no file of the project is (`launch_issues.py`'s `missing_config`): where the
file would be, whether the project has one of that name elsewhere, and whether anything writes one.

Paths are judged as written where the command runs; an absolute or home path (the user's machine), a path built
at run time, a name any other Python source mentions, and a path the launcher writes itself answer "may exist".
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from dslint.project.accelerate_yaml import parse_accelerate_yaml
from dslint.project.inputs import absolute, find_written, shown_path
from dslint.project.launch_documents import DOCUMENT_LAUNCHER_SUFFIXES
from dslint.project.launchers import LaunchLine, ScriptOption
from dslint.project.project_index import LaunchIssue, LaunchSite, TrainerLiteral
from dslint.project.shell_directories import UNKNOWN_VALUE
from dslint.project.shell_files import tested_files, written_files

# Signs that a Python source writes a file (a config it generates): a dump, a write, a copy, an open for writing.
# A source that only names the file (an option's default, a message) does not make it.
_WRITES = re.compile(
    rb"json\.dump|yaml\.(?:safe_)?dump|\.write\(|write_text|shutil\.copy|copyfile|open\([^)\n]*['\"][wax]"
)


def _may_write(data: bytes, name: bytes) -> bool:
    """The source names the file within three lines of a write (`with open("ds.json", "w")`, `path = "ds.json"`
    then `json.dump(cfg, open(path, "w"))`)."""
    if name not in data:
        return False
    lines = data.splitlines()
    return any(
        _WRITES.search(b"\n".join(lines[max(0, i - 3) : i + 4])) is not None
        for i, line in enumerate(lines)
        if name in line
    )


def missing_config(
    written: str,
    sources: dict[str, bytes],
    launcher_path: str,
    launcher: str | None,
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
    roots: Sequence[str] = (),
    opened: bool = False,
) -> tuple[str, ...] | None:
    """Whether a config path a launch writes names no file of the project, and nothing there writes one: None
    when it may exist. An absolute or home path (the user's machine), the name in a Python source other than the
    launcher within three lines of a write (a dump, a write, a copy: a config generated before the launch) or
    elsewhere in the launcher, a redirection writing the path in the launcher (`cat > ds.json <<EOF`,
    `echo '{...}' > ds.json`, `tee ds.json`), or a test of its existence there (`[ -f "$DS_CONFIG" ] || exit 1`:
    the launcher expects it may be absent and says so itself) answer None. Otherwise
    the project's files of that name (empty: none anywhere); a file of that name elsewhere counts only when the
    written path has a folder (`configs/ds.json` where only `config/ds.json` exists: a wrong folder), not for a
    bare name, which the user may be meant to copy beside the launcher; for a launcher script, only a file beside
    its own folder; for a document's command, which its reader may run from any folder, only where no file of
    the project lies at a path ending as the written one does, nor at the written path from the document's own
    folder (`../configs/x.yaml` in `sub/README.md`, whatever an earlier section's `cd` entered). A project file
    whose path ends as the written one does but for letter case (`ds.JSON` for `ds.json`, `SFT/` for `sft/`) is
    what was meant (`case_twins`): file systems on Linux, where DeepSpeed runs, tell them apart. `opened`: the
    launched script surely opens the path (the HF Trainer's `--deepspeed`): then a launcher's path with a folder
    (`./scripts/zero2.json`) that reaches no file is missing even when a file of that name lies in another folder
    of the project (`./zero2.json`), named as where that one is."""
    if os.path.isabs(written) and roots:
        # another machine's checkout (`/home/<user>/<repo>/scripts/ds_z2.json` from scripts/run.sh): the path
        # within it is the launcher's own folder and a DeepSpeed config's name; judged as that relative path
        written = _within_checkout(written, launcher_path, roots) or written
    if os.path.isabs(written) or written.startswith("~") or UNKNOWN_VALUE in written:
        return None
    name = os.path.basename(written)
    if not name:
        return None
    twins = case_twins(written, file_names)
    if twins:  # the path of a project file but for letter case: no such file on the Linux machines DeepSpeed runs on
        return twins
    elsewhere = file_names().get(name, ())
    document = launcher_path.endswith(DOCUMENT_LAUNCHER_SUFFIXES)
    if document and os.path.normpath(os.path.join(os.path.dirname(absolute(launcher_path)), written)) in elsewhere:
        return None  # a document's command run from the document's own folder (`../configs/x.yaml` from `sub/`)
    if elsewhere and document:
        # a document's command is often adapted by its reader (run from another folder): a wrong folder only
        # where no file of the project lies at the path written, from any folder (`configs/ds.json` written, the
        # project's one file of that name at the top)
        tail = os.sep + os.path.normpath(written).removeprefix("." + os.sep)
        if os.path.dirname(os.path.normpath(written)) in ("", ".") or any(p.endswith(tail) for p in elsewhere):
            return None
    elif elsewhere:
        # a wrong folder only beside the launcher's own (`configs/` written, `config/` there), in a launcher
        # script: a file in another example is another's
        folder = os.path.dirname(absolute(launcher_path)) + os.sep
        near = tuple(path for path in elsewhere if path.startswith(folder))
        if os.path.dirname(os.path.normpath(written)) in ("", "."):
            return None
        if near or not opened:
            elsewhere = near
        if not elsewhere:
            return None
    encoded = name.encode()
    if any(_may_write(data, encoded) for path, data in sources.items() if path != launcher_path):
        return None
    if launcher is not None and (writes(launcher, written) or tests(launcher, written)):
        return None
    if launcher is not None and launcher.count(name) > launcher.count(written):
        return None
    return elsewhere


def missing_trainer_configs(
    unfound: Sequence[TrainerLiteral],
    sources: dict[str, bytes],
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> dict[str, list[LaunchIssue]]:
    """The config paths scripts write for the HF Trainer or accelerate (`TrainingArguments(deepspeed="ds.json")`)
    that name no file (`unfound`: from the script's folder up to the project root, as `config_reading.
    trainer_literals` read them) and that nothing writes (`missing_config`, with the script as the launcher; the
    script's own writes count): by script, the issue at the keyword. `TrainingArguments.__post_init__` opens the
    file: every rank stops."""
    found: dict[str, list[LaunchIssue]] = {}
    for literal in unfound:
        data = sources.get(literal.path, b"")
        if _may_write(data, os.path.basename(literal.written).encode()):
            continue
        text = data.decode("utf-8", errors="replace")
        missing = missing_config(literal.written, sources, literal.path, text, file_names)
        if missing is not None:
            shown = tuple(shown_path(other) for other in missing)
            end = literal.column + len(literal.keyword)
            issue = LaunchIssue("missing_config", literal.line, literal.column, end, literal.written, elsewhere=shown)
            found.setdefault(literal.path, []).append(issue)
    return found


# `TrainingArguments(**cfg["train"])` (a TRL config too): the script builds its Trainer's arguments from a mapping
_SPLATTED_ARGUMENTS = re.compile(rb"(?:TrainingArguments|\b[A-Z]\w*Config)\s*\(\s*\*\*")
_YAML_KEY = re.compile(r"^([ \t]*)deepspeed[ \t]*:[ \t]*['\"]?([^'\"\s#]+\.json)")


def missing_in_yaml(
    script: str,
    yaml_path: str,
    number: int,
    sources: dict[str, bytes],
    launcher_text: Callable[[str], str | None],
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> tuple[int, str] | None:
    """The `deepspeed: ds.json` key of a YAML the launch passes (the Trainer's arguments kept in YAML), when the
    script builds `TrainingArguments(**mapping)` and no file of that name is anywhere in the project (nor written
    by it): the key's column and the path as written."""
    if _SPLATTED_ARGUMENTS.search(sources.get(script, b"")) is None:
        return None
    text = launcher_text(yaml_path) or ""
    physical = text.splitlines()
    key = _YAML_KEY.match(physical[number - 1]) if 0 < number <= len(physical) else None
    if key is None:
        return None
    written = key.group(2)
    if missing_config(written, sources, yaml_path, text, file_names) != ():
        return None  # a file of the name elsewhere, or one the project writes: not this shape's evidence
    return len(key.group(1)) + 1, written


def beside(elsewhere: tuple[str, ...], line: LaunchLine, script: str | None, sources: dict[str, bytes]) -> bool:
    """Whether the project's file of the name may be the one the launch opens: after a `cd` to a folder outside the
    project (an absolute path of the user's machine) or built at run time, the written folder cannot be judged;
    a file in the launcher's or the script's own folder may be read from there by a script that finds files by
    its own location (`__file__`). A script that never names `__file__` opens the path it is given from where it
    runs (`open`, `TrainingArguments(deepspeed=...)`), where the file is not."""
    if elsewhere and (os.path.isabs(line.directory) or UNKNOWN_VALUE in line.directory or "$" in line.directory):
        return True
    data = sources.get(script) if script is not None else None
    if data is not None and b"__file__" not in data:
        return False
    folders = {os.path.dirname(absolute(line.launcher)), *([os.path.dirname(script)] if script else [])}
    return any(os.path.dirname(path) in folders for path in elsewhere)


def writes(launcher: str, written: str) -> bool:
    """Whether the launcher writes the path with a redirection or `tee`, as written or through its variables
    (`CONFIG=ds.json` ... `cat > "$CONFIG" <<EOF`; `sed ... > ${config_json}` after
    `config_json=config_${MODEL}.json`)."""
    return os.path.normpath(written) in written_files(launcher)


def tests(launcher: str, written: str) -> bool:
    """Whether the launcher tests that the path exists (`[ ! -f "$DS_CONFIG" ]`, `test -e ds.json`), as written
    or through its variables."""
    return os.path.normpath(written) in tested_files(launcher)


def case_twins(written: str, file_names: Callable[[], Mapping[str, tuple[str, ...]]]) -> tuple[str, ...]:
    """The project's files whose path ends with `written`'s parts when letter case is ignored, though not as
    written (`configs/ds_z3.JSON` for `configs/ds_z3.json`): a path that names no file on a case-sensitive file
    system, for a file that is there. A path that climbs (`../x.json`) is not judged."""
    parts = [part for part in os.path.normpath(written).split(os.sep) if part not in ("", ".")]
    if not parts or ".." in parts:
        return ()
    tail = os.sep + os.sep.join(parts)
    lowered = parts[-1].lower()
    twins: list[str] = []
    for name, paths in file_names().items():
        if name.lower() != lowered:
            continue
        twins.extend(p for p in paths if p.lower().endswith(tail.lower()) and not p.endswith(tail))
    return tuple(sorted(twins))


def _within_checkout(written: str, launcher_path: str, roots: Sequence[str]) -> str | None:
    """The path below a checkout that an absolute path of another machine names, when it ends with the launcher's
    own folder (relative to the checked root holding it, not the root itself) and a DeepSpeed config's name:
    `scripts/ds_config_zero2.json` for `/data/u/repo/scripts/ds_config_zero2.json` written in scripts/run.sh.
    None otherwise (any other absolute path is the user's machine)."""
    folder = absolute(os.path.dirname(absolute(launcher_path)))
    root = next((r for r in roots if folder.startswith(r.rstrip(os.sep) + os.sep)), None)
    name = os.path.basename(written)
    if root is None or _DEEPSPEED_NAME.search(name.lower()) is None or os.path.isdir(os.path.dirname(written)):
        return None
    relative = os.path.relpath(folder, root)
    tail = os.sep + os.path.join(relative, name)
    return os.path.join(relative, name) if relative != "." and written.endswith(tail) else None


# A name that says the file sets up DeepSpeed (`deepspeed_zero3.yaml`, `ds_config.json`, `zero2.yaml`)
_DEEPSPEED_NAME = re.compile(r"deepspeed|zero|(?:^|[^a-z])ds(?:[^a-z]|$)")
_PLACEHOLDER = re.compile(r"[<>{}*\[\]\s]|\.\.\.|path/to|your|YOUR")


def missing_launch_configs(
    site: LaunchSite,
    sources: dict[str, bytes],
    launcher: str | None,
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> list[LaunchIssue]:
    """The files an `accelerate launch` names on its own command line that are not there: its `--config_file`
    (`missing_accelerate_config`) and its `--deepspeed_config_file` (`missing_flag_config`)."""
    found = (check(site, sources, launcher, file_names) for check in (missing_accelerate_config, missing_flag_config))
    return [issue for issue in found if issue is not None]


def missing_accelerate_config(
    site: LaunchSite,
    sources: dict[str, bytes],
    launcher: str | None,
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> LaunchIssue | None:
    """The `--config_file` of an `accelerate launch` that names no file of the project (`site.accelerate_config`:
    the file the index found for it), with the project's files meant instead (`missing_config` judges the path),
    when the launch is DeepSpeed's: the file's name says so, or the script it starts mentions DeepSpeed.
    accelerate raises FileNotFoundError for a `--config_file` that is not a file, before any process starts."""
    line = site.line
    option = line.launcher_option("config_file")
    if line.tool != "accelerate" or site.accelerate_config is not None or option is None or not option.value:
        return None
    if _PLACEHOLDER.search(option.value) is not None:  # `<CONFIG.yaml>`, `zero{1,2,3}.yaml`, `path/to/...`
        return None
    data = sources.get(site.script, b"") if site.script is not None else b""
    if _DEEPSPEED_NAME.search(os.path.basename(option.value).lower()) is None and b"deepspeed" not in data.lower():
        return None
    # a bare name may be the file the reader makes with `accelerate config --config_file NAME`: only a path into
    # the project's folders (or a project file's path but for case) says the file was meant to ship
    if os.path.dirname(os.path.normpath(option.value)) in ("", ".") and not case_twins(option.value, file_names):
        return None
    missing = missing_config(option.value, sources, line.launcher, launcher, file_names)
    if missing is None or beside(missing, line, site.script, sources):
        return None
    return _missing_at(option, "--config_file", missing)


def missing_flag_config(
    site: LaunchSite,
    sources: dict[str, bytes],
    launcher: str | None,
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> LaunchIssue | None:
    """`accelerate launch --use_deepspeed --deepspeed_config_file PATH` where PATH names no file of the project
    (`missing_config` judges it, as a path surely opened): accelerate hands it to every process's
    `DeepSpeedPlugin`, whose `HfDeepSpeedConfig` raises ValueError for a path that is no file, before training
    starts. Without `--use_deepspeed` the flag is never read (DSL462's)."""
    line = site.line
    option = line.launcher_option("deepspeed_config_file")
    if line.tool != "accelerate" or option is None or not option.value or line.launcher_option("use_deepspeed") is None:
        return None
    if _PLACEHOLDER.search(option.value) is not None or find_written(option.value, line.launcher, (), line.directory):
        return None  # found where the command runs (after its `cd`)
    missing = missing_config(option.value, sources, line.launcher, launcher, file_names, opened=True)
    if missing is None or beside(missing, line, site.script, sources):
        return None
    return _missing_at(option, "--deepspeed_config_file", missing)


def _missing_at(option: ScriptOption, flag: str, missing: tuple[str, ...]) -> LaunchIssue:
    """The missing-config issue at an accelerate flag (`--config_file`), naming the project's files meant."""
    end = option.column + len(flag)
    shown = tuple(shown_path(path) for path in missing)
    return LaunchIssue("missing_config", option.line, option.column, end, option.value or "", (flag,), elsewhere=shown)


def missing_in_configs(
    site: LaunchSite,
    sources: dict[str, bytes],
    launcher_text: Callable[[str], str | None],
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> list[tuple[str, LaunchIssue]]:
    """The config paths named inside the files a launch passes that name no file: the `deepspeed:` key of the
    Trainer's YAML (`missing_in_yaml`), the `deepspeed_config_file:` of the accelerate config
    (`missing_plugin_config`); each with its file, related to the launch."""
    found: list[tuple[str, LaunchIssue]] = []
    if site.script is not None and site.config_yaml is not None:
        yaml_path, number = site.config_yaml
        key = missing_in_yaml(site.script, yaml_path, number, sources, launcher_text, file_names)
        if key is not None:
            column, written = key
            found.append((yaml_path, LaunchIssue("missing_config", number, column, column + 9, written)))
    plugin = missing_plugin_config(site, sources, launcher_text, file_names)
    if plugin is not None:
        found.append(plugin)
    return [(path, replace(issue, related=(site.launch,))) for path, issue in found]


def missing_plugin_config(
    site: LaunchSite,
    sources: dict[str, bytes],
    launcher_text: Callable[[str], str | None],
    file_names: Callable[[], Mapping[str, tuple[str, ...]]],
) -> tuple[str, LaunchIssue] | None:
    """The `deepspeed_config_file:` of the accelerate config an `accelerate launch` passes (`site.
    accelerate_config`, found), under `distributed_type: DEEPSPEED`, when no file of that name is anywhere in the
    project and nothing writes one (`missing_config`; an absolute or placeholder path is the user's to make): the
    YAML and the issue at its key. Every process's `DeepSpeedPlugin` hands the path to `HfDeepSpeedConfig`, which
    raises ValueError for a path that is no file, before training starts."""
    yaml_path = site.accelerate_config
    if site.line.tool != "accelerate" or yaml_path is None:
        return None
    text = launcher_text(yaml_path)
    parsed = parse_accelerate_yaml(yaml_path, text) if text is not None else None
    if parsed is None or text is None or (parsed.distributed_type or "").upper() != "DEEPSPEED":
        return None
    written, number = parsed.deepspeed_config_file, parsed.deepspeed_config_file_line
    if not written or not number or os.path.isabs(written) or written.startswith(("~", "$")):
        return None
    if _PLACEHOLDER.search(written) is not None or not written.lower().endswith(".json"):
        return None
    if missing_config(written, sources, yaml_path, text, file_names) != ():
        return None  # a file of the name elsewhere (where accelerate is started from may hold it), or written
    line = text.splitlines()[number - 1]
    column = line.find("deepspeed_config_file") + 1
    end = column + len("deepspeed_config_file")
    return yaml_path, LaunchIssue("missing_config", number, column, end, written, ("deepspeed_config_file",))

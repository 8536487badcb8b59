"""The config files `dslint fix` fixes, and fixing one of them (the script side lives in `dslint.commands.fix`).

A config is fixed when the run checks it: a JSON/HJSON file among the paths, or a file a script among them hands
to DeepSpeed (`check` reports that file's findings through the script, so `fix` fixes them too). Who reads it
decides what `"auto"` means (DSL405): `deepspeed.initialize` when every script that names it passes it there.
Configs are fixed before scripts, since script rules read the config (a renamed `zero_optimization` changes the
ZeRO stage the script is checked for).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dslint.commands.fix_report import FixReport
from dslint.config.facts import Origin
from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.fix.config import config_readers, fix_config_source, reader_origin
from dslint.fix.write import SourceError, read_text_source
from dslint.limits import TooLarge, read_capped
from dslint.lint.files import FileJob
from dslint.lint.isolation import Crashed, map_guarded
from dslint.project.project_index import ConfigReading, ProjectIndex
from dslint.selection import RuleSelection


@dataclass
class ConfigTarget:
    path: Path
    name: str  # as findings name it: the path given, or the script's reference normalised
    selection: RuleSelection
    unsafe: bool
    known_config: bool  # a script hands it to DeepSpeed: a DeepSpeed config whatever its name
    origins: list[Origin] = field(default_factory=list)
    # What the project index knows of its readers (a launcher names it, Lightning reads it, keys replaced in
    # code first), as `dslint check` lints the file; None: only the scripts' own references (`origins`) say.
    reading: ConfigReading | None = None


def config_targets(jobs: Sequence[FileJob], project: ProjectIndex | None = None) -> list[ConfigTarget]:
    """The configs among `jobs`, then the existing config files their scripts hand to DeepSpeed, each once."""
    targets: dict[Path, ConfigTarget] = {}
    for job in jobs:
        if job.path.suffix.lower() in CONFIG_SUFFIXES:
            key = job.path.resolve()
            reading = project.config_reading(job.path) if project is not None else None
            targets.setdefault(
                key, ConfigTarget(job.path, str(job.path), job.selection, job.settings.unsafe_fixes, False, [], reading)
            )
    scripts: list[tuple[FileJob, bytes]] = []
    for job in jobs:
        if job.path.suffix != ".py":
            continue
        try:
            scripts.append((job, read_capped(job.path, job.settings.limits.max_file_size, "max-file-size")))
        except (OSError, TooLarge):
            continue  # the script's own fix reports it
    # parsed in a forked child (dslint.lint.isolation): a script whose parse aborts names no config here, and
    # its own fix reports the crash
    readers = map_guarded(
        lambda item: config_readers(item[0].path, item[1], item[0].settings.limits.max_nesting), scripts
    )
    for (job, _), found in zip(scripts, readers, strict=True):
        for path, origin in found if not isinstance(found, Crashed) else []:
            if not path.is_file():
                continue
            key = path.resolve()
            target = targets.get(key)
            if target is None:
                name = os.path.normpath(str(path))
                reading = project.config_reading(path) if project is not None else None
                target = targets[key] = ConfigTarget(
                    path, name, job.selection, job.settings.unsafe_fixes, True, [], reading
                )
            target.known_config = True
            target.origins.append(origin)
    return list(targets.values())


def fix_config_file(target: ConfigTarget, *, diff: bool, report: FixReport) -> None:
    """Fix one config file (or compute its diff), adding what happened to `report`."""
    try:
        source = read_text_source(target.path)
    except SourceError:
        return  # not UTF-8: its DSL400 finding says so, and nothing can be fixed
    try:
        reading = target.reading
        outcome = fix_config_source(
            target.name,
            source.text,
            unsafe=target.unsafe,
            selection=target.selection,
            origin=reading.origin if reading is not None else reader_origin(target.origins),
            known_config=target.known_config or (reading is not None and reading.named),
            replaced_keys=reading.replaced if reading is not None else frozenset(),
        )
    except RecursionError:
        report.errors.append(f"{target.name}: internal error: the file is nested too deeply to analyse; not fixed")
        return
    except Exception as error:  # one file's failure must not stop the others
        report.errors.append(f"{target.name}: internal error: {type(error).__name__}: {error}; not fixed")
        return
    report.record(target.name, source, outcome, diff=diff)

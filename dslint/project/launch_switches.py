"""The switches of a launched script's parser that none of its launches turns on (`ProjectFacts.switches_never_on`),
or that all of them leave on (`switches_always_on`: a boolean field of the dataclasses `HfArgumentParser` builds, on
by default or given a true value by every launch; such a field off by default and turned on by none is never on).

`if args.use_amp:` with `parser.add_argument("--use_amp", action="store_true")`, and every launch of the script
the project holds written out without `--use_amp`: no run the project ships takes that side, and no script rule
reports there (`script/branches.py`), as on the plain-PyTorch side of `if args.deepspeed:`. Only where every launch
of the script is known and read whole (no launcher whose launch is not read, no `"$@"` passing the launcher's own
arguments on), and not for a switch the script sets itself (`args.use_amp = True`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import replace

from dslint.model.classes import Hierarchy
from dslint.model.summary import SummaryStore
from dslint.project.dataclass_defaults import parsed_switches
from dslint.project.script_parser import assigned_attributes, off_switches
from dslint.project.trainer_matches import flag_value
from dslint.script.project_facts import ProjectFacts


def record_switches_never_on(files: MutableMapping[str, ProjectFacts], store: SummaryStore) -> None:
    hierarchy = Hierarchy(store)
    for script, facts in list(files.items()):
        if not facts.launches or facts.launches_partial or facts.launches_open:
            continue
        data = store.sources.get(script, b"")
        summary = store.get(script) if b"store_true" in data or b"HfArgumentParser" in data else None
        if summary is None:
            continue
        given = {name for launch in facts.launches for name in launch.options}
        assigned = assigned_attributes(summary.tree)
        off = off_switches(summary.tree) - given - assigned
        on: set[str] = set()
        for name, default in parsed_switches(summary.tree, summary, hierarchy).items():
            values = {_parsed_value(launch.options, name, default) for launch in facts.launches}
            if name in assigned:
                continue
            if values == {False}:
                off.add(name)
            elif values == {True}:
                on.add(name)
        if off or on:
            files[script] = replace(facts, switches_never_on=frozenset(off), switches_always_on=frozenset(on))


def _parsed_value(options: Mapping[str, str | None], name: str, default: bool) -> bool | None:
    """What `HfArgumentParser` makes of a boolean field under a launch's options: `--name` alone is true, `--name
    False` false, `--no_name` (the complement it adds for a field on by default) false, none of them the default;
    a value built at run time: None."""
    if f"no_{name}" in options:
        return False
    if name not in options:
        return default
    value = options[name]
    return flag_value(value.strip("'\"") if value is not None else None)

"""The switches of a launched script's parser that none of its launches turns on (`ProjectFacts.switches_never_on`).

`if args.use_amp:` with `parser.add_argument("--use_amp", action="store_true")`, and every launch of the script
the project holds written out without `--use_amp`: no run the project ships takes that side, and no script rule
reports there (`script/branches.py`), as on the plain-PyTorch side of `if args.deepspeed:`. Only where every launch
of the script is known and read whole (no launcher whose launch is not read, no `"$@"` passing the launcher's own
arguments on), and not for a switch the script sets itself (`args.use_amp = True`).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import replace

from dslint.model.summary import SummaryStore
from dslint.project.script_parser import assigned_attributes, off_switches
from dslint.script.project_facts import ProjectFacts


def record_switches_never_on(files: MutableMapping[str, ProjectFacts], store: SummaryStore) -> None:
    for script, facts in list(files.items()):
        if not facts.launches or facts.launches_partial or facts.launches_open:
            continue
        summary = store.get(script) if b"store_true" in store.sources.get(script, b"") else None
        if summary is None:
            continue
        given = {name for launch in facts.launches for name in launch.options}
        off = off_switches(summary.tree) - given - assigned_attributes(summary.tree)
        if off:
            files[script] = replace(facts, switches_never_on=frozenset(off))

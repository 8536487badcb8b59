"""`ProjectFacts.built_arguments`: the calls of a file that receive Trainer arguments a project function has already
built (`model/returned_arguments.py`), for DSL440 (a `deepspeed` set on them afterwards is never applied). Read
only in files that set an attribute named `deepspeed`."""

from __future__ import annotations

import re
from dataclasses import replace

from dslint.diagnostics import Related
from dslint.model.evaluate import Evaluator
from dslint.model.returned_arguments import arguments_calls
from dslint.model.summary import character_column
from dslint.project.engine_facts import facts_of
from dslint.project.inputs import shown_path
from dslint.script.project_facts import ProjectFacts

_SETS_DEEPSPEED = re.compile(rb"\.deepspeed\s*=[^=]")


def record_built_arguments(files: dict[str, ProjectFacts], model: Evaluator) -> None:
    """Each call, in a file that sets `X.deepspeed = ...`, of a project function returning the Trainer arguments it
    builds, with where it builds them."""
    sources = model.store.sources
    paths = sorted(path for path, data in sources.items() if _SETS_DEEPSPEED.search(data))
    for call in arguments_calls(model, paths):
        path, line, column = call.built
        lines = sources.get(path, b"").splitlines()
        made = f"{call.callee[1]}() builds them"
        where = Related(shown_path(path), line, character_column(lines, line, column) + 1, made)
        facts = facts_of(files, call.path)
        files[call.path] = replace(facts, built_arguments={**facts.built_arguments, (call.line, call.column): where})

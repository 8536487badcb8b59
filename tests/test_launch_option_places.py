"""Where a launch writes each of its script's options (`LaunchedConfig.option_places`): findings about an option
a launch passes relate its own line, not only the command's first line (fixtures/projects/scheduler_option_places)."""

from __future__ import annotations

import os

from fixture_support import FIXTURES
from test_chosen_configs import _findings


def test_a_launch_option_finding_names_the_line_writing_the_option() -> None:
    """DSL454 from two launches: the script's parser is where it is reported; the launch command, the line of its
    multi-line command that writes `--lr_scheduler_type`, of each launch, and the config's scheduler are its related
    places: one finding naming both launches."""
    project = FIXTURES / "projects" / "scheduler_option_places"
    (finding,) = [d for d in _findings(project) if d.code == "DSL454"]
    assert finding.start.line == 7
    assert finding.message.endswith("not lr_scheduler_type='cosine' from 2 launches; drop its scheduler section")
    assert [(os.path.basename(r.path), r.line, r.message) for r in finding.related] == [
        ("run.sh", 2, "deepspeed launches finetune.py"),
        ("run.sh", 5, "--lr_scheduler_type cosine"),
        ("run_long.sh", 2, "deepspeed launches finetune.py"),
        ("run_long.sh", 3, "--lr_scheduler_type cosine"),
        ("ds_config.json", 5, "scheduler.type"),
    ]

"""DSL443 against DeepSpeed itself: `add_config_arguments` makes `--deepspeed` a switch, and a strict parser stops on
the path written after it (the rule's own script, run with the installed DeepSpeed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dslint.rules.deepspeed_switch_given_a_path import _OWN, _SWITCH


def _run(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "train.py").write_text(script + "print('parsed', args.deepspeed)\n")
    return subprocess.run(
        [sys.executable, "train.py", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_path_after_the_switch_stops_the_parser(tmp_path: Path) -> None:
    refused = _run(tmp_path, _SWITCH, "--deepspeed", "ds.json")
    assert refused.returncode == 2 and "unrecognized arguments: ds.json" in refused.stderr
    accepted = _run(tmp_path, _SWITCH, "--deepspeed", "--deepspeed_config", "ds.json")
    assert accepted.returncode == 0 and "parsed True" in accepted.stdout
    own = _run(tmp_path, _OWN, "--deepspeed", "ds.json")  # the script's own path option: no switch
    assert own.returncode == 0 and "parsed ds.json" in own.stdout

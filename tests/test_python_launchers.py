"""Launch commands a Python script runs itself (`dslint.project.python_launchers`), read as shell text."""

from __future__ import annotations

from dslint.project.python_launchers import python_launch_text
from dslint.project.shell_directories import UNKNOWN_VALUE


def _commands(source: str) -> dict[int, str]:
    text = python_launch_text(source.encode())
    return {n: line for n, line in enumerate((text or "").splitlines(), start=1) if line}


def test_a_list_with_parser_defaults_and_appended_flags() -> None:
    source = (
        "import argparse, subprocess as sp\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--nodes', type=int, default=2)\n"
        "args = p.parse_args()\n"
        "cmd = ['torchrun', f'--nnodes={args.nodes}', 'train.py']\n"
        "cmd += ['--deepspeed', 'ds.json']\n"
        "sp.check_call(cmd)\n"
    )
    assert _commands(source) == {7: "torchrun --nnodes=2 train.py --deepspeed ds.json"}


def test_a_string_command_and_a_value_known_only_at_run_time() -> None:
    source = "import os\nimport sys\nos.system(f'deepspeed --num_gpus {sys.argv[1]} train.py')\n"
    assert _commands(source) == {3: f"deepspeed --num_gpus {UNKNOWN_VALUE} train.py"}


def test_other_subprocesses_are_no_launches() -> None:
    source = "import subprocess\nsubprocess.run(['git', 'clone', 'https://x/deepspeed.git'])\n"
    assert python_launch_text(source.encode()) is None
    assert python_launch_text(b"import subprocess\nsubprocess.run(['deepspeed', 'train.py'\n") is None  # no parse

"""Launch commands a Python script runs itself (`dslint.project.python_launchers`), read as shell text."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.project.python_launchers import launch_text_of, python_launch_text
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


_PROGRAMS = st.sampled_from(["deepspeed", "torchrun", "accelerate", "/opt/env/bin/deepspeed", "python", "echo"])
_QUOTES = st.sampled_from(["'", '"', '"""', "f'", 'f"', "b'"])


@given(_PROGRAMS, _QUOTES, st.sampled_from(["", " ", "\n"]), st.sampled_from(["list", "string", "default"]))
@example("/opt/env/bin/deepspeed", "f'", "", "string")
@example("deepspeed", '"""', "\n", "string")
@settings(max_examples=examples(200))
def test_the_text_test_keeps_every_module_that_runs_a_launch(program: str, quote: str, space: str, form: str) -> None:
    """`python_launch_text` reads only modules whose text holds a launcher as a command's first word: it answers
    as the parse of every module (`launch_text_of`) does."""
    close = quote.lstrip("fb")
    if form == "list":
        call = f"subprocess.run([{quote}{space}{program}{close}, 'train.py'])"
    elif form == "string":
        call = f"os.system({quote}{space}{program} --num_gpus 2 train.py{close})"
    else:
        call = f"p.add_argument('--launcher', default={quote}{program}{close})\nos.system(f'{{args.launcher}} x.py')"
    source = f"import os, subprocess, argparse\np = argparse.ArgumentParser()\nargs = p.parse_args()\n{call}\n"
    data = source.encode()
    assert python_launch_text(data) == launch_text_of(data)

"""Launch commands a Python script runs itself (`dslint.project.python_launchers`), read as shell text."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.cli import main
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


def test_a_comment_telling_how_to_run_the_file_itself() -> None:
    """`# deepspeed ... train.py ...` in train.py is its documented launch, at its line and columns (a backslash
    carries it onto the next comment line); a command for another script, or a commented-out line of code, is
    not."""
    source = (
        "import torch\n"
        "## deepspeed --num_gpus=4 train.py | always the first four GPUs\n"
        "#   deepspeed --include localhost:1 train.py \\\n"
        "#       --deepspeed ds.json\n"
        "# deepspeed other.py --deepspeed ds.json\n"
        "# model = model.cuda()\n"
        "x = 1  # deepspeed train.py\n"
    )
    text = python_launch_text(source.encode(), "train.py")
    lines = {n: line for n, line in enumerate((text or "").splitlines(), start=1) if line}
    assert lines == {
        2: "   deepspeed --num_gpus=4 train.py | always the first four GPUs",
        3: "    deepspeed --include localhost:1 train.py \\",
        4: "        --deepspeed ds.json",
    }
    assert python_launch_text(source.encode(), "other_name.py") is None


def test_a_commented_launch_is_checked_as_a_documented_one(tmp_path: Path) -> None:
    """DSL442 at the comment of a training script whose Trainer gets no DeepSpeed config; an evaluation script
    (no `.train(...)`) is left alone."""
    script = (
        "from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
        "args = Seq2SeqTrainingArguments(output_dir='out')\n"
        "trainer = Seq2SeqTrainer(model=None, args=args)\n"
        "trainer.train()\n"
        "\n"
        "# deepspeed --include localhost:1,2 train.py\n"
    )
    (tmp_path / "train.py").write_text(script, encoding="utf-8")

    def found() -> list[tuple[int, str]]:
        result = CliRunner().invoke(
            main, ["check", "--isolated", "--no-cache", "--output-format", "concise", str(tmp_path)]
        )
        return [(int(line.split(":")[1]), line.split()[1]) for line in result.output.splitlines() if ": DSL" in line]

    assert found() == [(6, "DSL442")]
    (tmp_path / "train.py").write_text(script.replace("trainer.train()", "trainer.evaluate()"), encoding="utf-8")
    assert found() == []


def test_a_usage_note_in_the_module_docstring() -> None:
    """The module docstring's lines are usage notes too: a label (`Usage:`, a full-width colon) and a `$ ` prompt
    are dropped, a backslash continues the command; a command for another script, or a docstring below the first
    statement, is not this file's launch."""
    source = (
        "#!/usr/bin/env python\n"
        '"""Pretraining.\n'
        "\n"
        "用法\uff1a deepspeed --num_gpus=2 train.py\n"
        "Usage:\n"
        "    $ deepspeed train.py --deepspeed ds.json \\\n"
        "        --lr 1e-4\n"
        "    deepspeed other.py --deepspeed ds.json\n"
        '"""\n'
        "import torch\n"
        "def f():\n"
        '    """deepspeed --num_gpus=8 train.py"""\n'
    )
    text = python_launch_text(source.encode(), "train.py")
    lines = {n: line.strip() for n, line in enumerate((text or "").splitlines(), start=1) if line}
    assert lines == {
        4: "deepspeed --num_gpus=2 train.py",
        6: "deepspeed train.py --deepspeed ds.json \\",
        7: "--lr 1e-4",
    }
    assert (
        python_launch_text(
            source.replace('"""Pretraining.', "x = 1\n'''Pretraining.").replace('"""\nimport', "'''\nimport").encode(),
            "train.py",
        )
        is None
    )


def test_a_command_built_in_the_arms_of_an_if() -> None:
    """`cmd` bound in both arms of an `if` (a plain run for one GPU, the DeepSpeed launcher for several): the arm
    that launches is the command; the launcher's own `--script` at its default; a count it tests stays unknown."""
    source = (
        "import argparse, subprocess, sys\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--gpus', type=int, default=1)\n"
        "parser.add_argument('--script', default='train.py')\n"
        "args = parser.parse_args()\n"
        "if args.gpus == 1:\n"
        "    cmd = [sys.executable, args.script]\n"
        "else:\n"
        "    cmd = ['deepspeed', '--num_gpus', str(args.gpus), args.script, '--deepspeed_config', 'ds.json']\n"
        "subprocess.run(cmd, check=True)\n"
    )
    text = python_launch_text(source.encode(), "launch.py")
    lines = [line for line in (text or "").splitlines() if line]
    assert len(lines) == 1
    words = lines[0].split()
    assert words[0] == "deepspeed" and words[1] == "--num_gpus" and UNKNOWN_VALUE in words[2]
    assert words[3:] == ["train.py", "--deepspeed_config", "ds.json"]

"""Reading launch commands from shell scripts, Makefiles, accelerate YAML (dslint.project.launchers) and
documents: Markdown, reStructuredText, notebooks (dslint.project.launch_documents)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dslint.project.accelerate_yaml import parse_accelerate_yaml
from dslint.project.config_reading import creates_engine
from dslint.project.launch_documents import markdown_code_blocks, notebook_shells, rst_code_blocks, shell_texts
from dslint.project.launchers import (
    UNKNOWN_VALUE,
    parse_makefile,
    parse_shell,
)
from dslint.project.shell_directories import command_segments


def test_deepspeed_torchrun_python_m_and_accelerate_shapes() -> None:
    text = """#!/bin/bash
# deepspeed commented.py --deepspeed_config no.json
deepspeed --num_gpus 8 train.py --deepspeed_config ds.json
deepspeed main.py --deepspeed ds_z3.json --fp16
torchrun --nproc_per_node=2 --master_port 29500 train.py --zero_stage 3
python -m torch.distributed.launch --nproc_per_node 4 finetune.py --ds_config=cfg.json
accelerate launch --config_file acc.yaml train_acc.py --lr 1e-4
CUDA_VISIBLE_DEVICES=0,1 nohup python3 eval.py --deepspeed_config eval.json > log.txt &
python -m pip install -r requirements.txt
echo train.py
"""
    launches = parse_shell("run.sh", text)
    assert [(lnch.line, lnch.tool, lnch.script) for lnch in launches] == [
        (3, "deepspeed", "train.py"),
        (4, "deepspeed", "main.py"),
        (5, "torchrun", "train.py"),
        (6, "torch.distributed.launch", "finetune.py"),
        (7, "accelerate", "train_acc.py"),
        (8, "python3", "eval.py"),
        (9, "python", "pip.py"),  # a module launch: the index drops a module of no file in the project
    ]
    assert launches[0].option("deepspeed_config").value == "ds.json"  # type: ignore[union-attr]
    assert launches[1].option("deepspeed").value == "ds_z3.json"  # type: ignore[union-attr]
    assert launches[1].option("fp16").value is None  # type: ignore[union-attr]
    assert launches[2].option("zero_stage").value == "3"  # type: ignore[union-attr]
    assert launches[3].option("ds_config").value == "cfg.json"  # type: ignore[union-attr]
    assert launches[4].accelerate_config == "acc.yaml"


def test_continuations_variables_and_run_time_values() -> None:
    text = """STAGE=3
CONFIG="configs/ds_z${STAGE}.json"
OUT=$1
NOW=$(date +%s)
deepspeed \\
    train.py \\
    --deepspeed_config $CONFIG \\
    --output_dir ${OUT} --run $NOW
"""
    (launch,) = parse_shell("run.sh", text)
    assert (launch.line, launch.script) == (5, "train.py")
    config = launch.option("deepspeed_config")
    assert config is not None and (config.value, config.line) == ("configs/ds_z3.json", 7)
    assert launch.option("output_dir").value == UNKNOWN_VALUE  # type: ignore[union-attr]
    assert launch.option("run").value == UNKNOWN_VALUE  # type: ignore[union-attr]


def test_values_set_only_by_the_launchers_own_argument_parsing_keep_their_defaults() -> None:
    """`--deepspeed) shift; DS=$1 ;;` in a `case "$1"` (or `case $key` after `key="$1"`, `case $opt` under
    getopts) runs only when the launcher is given that argument: as written, run without arguments, the launch
    gets the value set before. An assignment from `$1` outside any such `case` is the argument itself: unknown."""
    parsing = {
        "while": 'while [[ "$1" != "" ]]; do\n  case $1 in\n    --deepspeed ) shift\n      DS=$1\n      ;;\n'
        "    --fp16 ) PREC=fp16 ;;\n  esac\n  shift\ndone\n",
        "key": 'while [[ $# -gt 0 ]]; do\n  key="$1"\n  case $key in\n    -c|--config) DS="$2"; shift ;;\n'
        "  esac\n  shift\ndone\n",
        "getopts": 'while getopts "c:" opt; do\n  case "$opt" in\n    c) DS=$OPTARG ;;\n  esac\ndone\n',
    }
    for name, block in parsing.items():
        text = f"DS=configs/ds_z2.json\n{block}deepspeed train.py --deepspeed_config $DS\n"
        (launch,) = parse_shell("run.sh", text)
        config = launch.option("deepspeed_config")
        assert config is not None and config.value == "configs/ds_z2.json", name
    (launch,) = parse_shell("run.sh", "DS=configs/ds_z2.json\nDS=$1\ndeepspeed train.py --deepspeed_config $DS\n")
    assert launch.option("deepspeed_config").value == UNKNOWN_VALUE  # type: ignore[union-attr]
    text = (
        'DS=a.json\ncase "$MODE" in\n  big)\n    DS=b.json\n    ;;\nesac\ndeepspeed train.py --deepspeed_config $DS\n'
    )
    (launch,) = parse_shell("run.sh", text)  # a case on another variable: its arm's assignment is read as before
    assert launch.option("deepspeed_config").value == "b.json"  # type: ignore[union-attr]


def test_the_launchers_own_arguments_are_unknown_values_not_text() -> None:
    """`./configs/$3.json` (the launcher's third argument) names no file: a value known only when the launcher runs,
    never the literal text `$3`; a default written for one (`${2:-ds.json}`) is read."""
    text = "deepspeed train.py --deepspeed_config ./configs/$3.json --output_dir ${1} --extra ${2:-ds.json}\n"
    (launch,) = parse_shell("run.sh", text)
    assert UNKNOWN_VALUE in launch.option("deepspeed_config").value  # type: ignore[union-attr,operator]
    assert launch.option("output_dir").value == UNKNOWN_VALUE  # type: ignore[union-attr]
    assert launch.option("extra").value == "ds.json"  # type: ignore[union-attr]


def test_shell_arithmetic_over_known_integers() -> None:
    """`$(( ))` over integers and variables holding them is bash's integer arithmetic (truncating division,
    `%`, parentheses, names with or without `$`); over a value built at run time it stays unknown."""
    text = """TOTAL=128
GPUS=2
PER=1
ACC=$(($TOTAL/$GPUS/$PER))
deepspeed train.py --gradient_accumulation_steps $ACC --steps $(( (TOTAL - 1) % GPUS * 7 )) --seed $((RANDOM+1))
"""
    (launch,) = parse_shell("run.sh", text)
    assert launch.option("gradient_accumulation_steps").value == "64"  # type: ignore[union-attr]
    assert launch.option("steps").value == "7"  # type: ignore[union-attr]
    assert launch.option("seed").value == UNKNOWN_VALUE  # type: ignore[union-attr]


def test_null_command_defaults() -> None:
    """`: "${NAME:=value}"` assigns NAME where the file left it unset (or empty), not over a value it set."""
    text = """: "${SCRIPT:=train.py}"
: ${CFG:=ds.json}
OTHER=a.json
: "${OTHER:=b.json}"
deepspeed $SCRIPT --deepspeed_config $CFG --other $OTHER
"""
    (launch,) = parse_shell("run.sh", text)
    assert launch.script == "train.py"
    assert [(o.name, o.value) for o in launch.options] == [("deepspeed_config", "ds.json"), ("other", "a.json")]


def test_makefile_targets_and_variables() -> None:
    text = (
        "CONFIG := ds_z2.json\n\ntrain:\n\tdeepspeed train.py --deepspeed_config $(CONFIG)\n\nlint:\n\truff check .\n"
    )
    (launch,) = parse_makefile("Makefile", text)
    assert (launch.target, launch.line, launch.script) == ("train", 4, "train.py")
    assert launch.option("deepspeed_config").value == "ds_z2.json"  # type: ignore[union-attr]


def test_accelerate_yaml_file_or_inline() -> None:
    from_file = parse_accelerate_yaml(
        "a.yaml", "deepspeed_config:\n  deepspeed_config_file: ds.json\ndistributed_type: DEEPSPEED\n"
    )
    assert from_file is not None and (from_file.deepspeed_config_file, from_file.deepspeed_config_file_line) == (
        "ds.json",
        2,
    )
    inline = parse_accelerate_yaml(
        "b.yaml", "deepspeed_config:\n  zero_stage: 3\ndistributed_type: DEEPSPEED\nmixed_precision: bf16\n"
    )
    assert inline is not None and (inline.zero_stage, inline.mixed_precision) == (3, "bf16")
    assert parse_accelerate_yaml("c.yaml", "name: not accelerate\n") is None


def test_engine_creation_text_test() -> None:
    assert creates_engine(b"import deepspeed\nengine, *_ = deepspeed.initialize(model=m)\n")
    assert creates_engine(b"import deepspeed as ds\ne = ds.initialize(model=m)\n")
    assert creates_engine(b"from deepspeed import initialize\ne = initialize(model=m)\n")
    assert not creates_engine(b'import deepspeed\n"""\ne = deepspeed.initialize(model=m)\n"""\n')
    assert not creates_engine(b"import deepspeed\n# call deepspeed.initialize(model=m) first\n")
    assert not creates_engine(b"import deepspeed\nraise ValueError('call deepspeed.initialize(')\n")


def test_cd_pushd_and_subshells_set_where_a_command_runs() -> None:
    text = """cd training
deepspeed a.py --deepspeed_config ../ds.json
pushd sub && deepspeed b.py
popd
(cd other && deepspeed c.py)
deepspeed d.py
cd $UNKNOWN_DIR
deepspeed e.py
cd ~/elsewhere && deepspeed f.py
"""
    launches = parse_shell("scripts/run.sh", text)
    assert [(lnch.script, lnch.directory) for lnch in launches] == [
        ("a.py", "training"),
        ("b.py", "training/sub"),
        ("c.py", "training/other"),  # the subshell's cd ends with its line
        ("d.py", "training"),
        ("e.py", "training"),  # a directory built at run time is not guessed: the last known one stays
        ("f.py", "training"),
    ]


def test_a_module_launch_runs_the_modules_file() -> None:
    text = """python -m pkg.train --epochs 2
deepspeed --num_gpus=1 --module src.training.train --config configs/train.yaml
torchrun --nproc_per_node 2 -m tools.finetune
python -m torch.distributed.launch --nproc_per_node 2 run.py
python -m pip install -r requirements.txt
"""
    launches = parse_shell("run.sh", text)
    assert [(lnch.tool, lnch.script, lnch.module) for lnch in launches] == [
        ("python", "pkg/train.py", "pkg.train"),
        ("deepspeed", "src/training/train.py", "src.training.train"),
        ("torchrun", "tools/finetune.py", "tools.finetune"),
        ("torch.distributed.launch", "run.py", ""),
        ("python", "pip.py", "pip"),  # the index drops a module of no file in the project
    ]
    assert launches[0].option("epochs").value == "2"  # type: ignore[union-attr]
    assert launches[1].launcher_option("num_gpus").value == "1"  # type: ignore[union-attr]


def test_cd_into_a_clone_enters_this_repository() -> None:
    """A README's `git clone URL` then `cd NAME` is the reader entering this repository, not a folder of it."""
    text = """git clone https://github.com/someone/tiny_trainer.git
cd tiny_trainer
accelerate launch --config_file acc.yaml train.py
cd scripts && deepspeed a.py
cd /tmp
git clone --depth 1 -b main git@github.com:someone/other.git renamed && cd renamed/examples
deepspeed b.py
cd elsewhere
deepspeed c.py
cd /tmp
git clone https://github.com/NVIDIA/apex
cd apex && pip install .
cd ..
deepspeed d.py
"""
    launches = parse_shell("README.md", text)
    assert [(lnch.script, lnch.directory) for lnch in launches] == [
        ("train.py", ""),
        ("a.py", "scripts"),
        ("b.py", "examples"),  # the clone's folder named by git clone's second argument
        ("c.py", "examples/elsewhere"),  # a folder that was not cloned stays a folder of this repository
        ("d.py", "/tmp"),  # out of a dependency's clone: back where it was made
    ]


def test_a_clone_inside_a_clone_is_where_its_reader_runs_whatever_the_hash_seed() -> None:
    """A document that clones the same repository twice in one session (the second time from inside the first
    clone) has the reader in the inner clone: the answer is the innermost clone's, never the order of a set."""
    text = """git clone https://github.com/someone/tiny_trainer.git
cd tiny_trainer
make
git clone https://github.com/someone/tiny_trainer.git
cd tiny_trainer
deepspeed train.py --deepspeed configs/z2.json
"""
    launches = parse_shell("README.md", text)
    assert [(lnch.script, lnch.directory) for lnch in launches] == [("train.py", "")]
    for seed in ("1", "2", "3"):
        code = "from dslint.project.launchers import parse_shell; import sys; "
        code += "print([l.directory for l in parse_shell('README.md', sys.stdin.read())])"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        shown = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, env=env)
        assert shown.stdout.strip() == "['']", shown.stderr


def test_the_launchers_own_directory_is_known_wherever_it_is_started() -> None:
    text = """HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$0")/..
LATER=$(dirname "$0")/$SUB
UP="$( cd "$( dirname "$0" )" && cd .. && pwd )"
WHERE=$(pwd)
deepspeed "$HERE/train.py" --deepspeed_config "$ROOT/configs/z3.json"
deepspeed $LATER/x.py
deepspeed $WHERE/y.py
deepspeed $UP/z.py
"""
    here = os.path.abspath("project/scripts")
    launch, working, up = parse_shell("project/scripts/run.sh", text)
    assert launch.script == os.path.join(here, "train.py")
    assert working.script == "./y.py"  # `$(pwd)`: where the command runs, as a relative path is read
    assert up.script == os.path.join(os.path.dirname(here), "z.py")
    assert launch.option("deepspeed_config").value == os.path.join(os.path.dirname(here), "configs/z3.json")  # type: ignore[union-attr]


def test_the_working_directory_is_where_the_command_runs_until_a_cd() -> None:
    """`$PWD`, `$(pwd)` and a backquoted `pwd` are the folder the command runs in ("."; relative paths are read
    from there); a variable holding it keeps that folder only until the launcher changes directory."""
    text = """base_dir=`pwd`
deepspeed ${base_dir}/train.py --deepspeed_config $PWD/configs/ds.json
ROOT="$(pwd)"
cd tools
deepspeed $ROOT/eval.py
deepspeed $PWD/tool.py
CURRENT=$(pwd -P)/
deepspeed ${CURRENT}tune.py
"""
    launches = parse_shell("run.sh", text)
    assert [(lnch.script, lnch.directory) for lnch in launches] == [
        ("./train.py", ""),
        ("./tool.py", "tools"),
        ("./tune.py", "tools"),
    ]
    assert launches[0].option("deepspeed_config").value == "./configs/ds.json"  # type: ignore[union-attr]


def test_document_code_blocks_keep_their_line_numbers() -> None:
    markdown = "Run:\n\n```bash\ndeepspeed a.py\n```\n\ndeepspeed prose.py\n"
    assert markdown_code_blocks(markdown).split("\n") == ["", "", "", "deepspeed a.py", "", "", ""]
    # a README written without code blocks: a line that is a launch command is one; prose stays prose
    bare = "On two nodes:\ndeepspeed --hostfile hostfile train.py\nDeepSpeed runs train.py on each host.\n"
    assert markdown_code_blocks(bare).split("\n") == ["", "deepspeed --hostfile hostfile train.py", ""]
    rst = """Guide
=====

.. code-block:: bash
   :caption: run

   deepspeed a.py \\
       --x 1

Literal::

    deepspeed b.py

deepspeed prose.py
"""
    lines = rst_code_blocks(rst).splitlines()
    assert [(n + 1, line.strip()) for n, line in enumerate(lines) if line.strip()] == [
        (7, "deepspeed a.py \\"),
        (8, "--x 1"),
        (12, "deepspeed b.py"),
    ]
    (shell,) = shell_texts("guide.rst", rst)
    assert [(lnch.line, lnch.script) for lnch in parse_shell("guide.rst", shell)] == [
        (7, "a.py"),
        (12, "b.py"),
    ]


def test_a_text_file_of_commands_is_read_for_its_bare_launch_lines() -> None:
    text = (
        "Training notes\n"
        "deepspeed train.py --deepspeed_config ds.json \\\n"
        "    --epochs 3\n"
        "then evaluate with python eval.py\n"
        "deepspeed==0.9.2\n"
        "torchrun --nproc_per_node 2 finetune.py\n"
    )
    (shell,) = shell_texts("cmd.txt", text)
    assert shell.split("\n") == [
        "",
        "deepspeed train.py --deepspeed_config ds.json \\",
        "    --epochs 3",
        "",
        "",
        "torchrun --nproc_per_node 2 finetune.py",
    ]
    launches = parse_shell("cmd.txt", shell)
    assert [(lnch.line, lnch.script) for lnch in launches] == [(2, "train.py"), (6, "finetune.py")]
    assert launches[0].option("epochs").value == "3"  # type: ignore[union-attr]


def test_notebook_cells_kept_in_a_text_file() -> None:
    """Colab cells pasted into a text file: `!` commands and the `%cd` magic, read as the shell lines they run (a
    `%cd` into the folder an earlier `!git clone` made enters this repository; a `!cd` moves nothing after it)."""
    text = (
        "!git clone https://github.com/someone/tiny.git\n"
        "%cd tiny/\n"
        "!pip install deepspeed\n"
        "!cd tools\n"
        "!deepspeed -- ./code/train.py --train_args_file './code/args.json'\n"
        "!python evaluate.py\n"
    )
    (shell,) = shell_texts("notes.txt", text)
    assert shell.split("\n") == [
        " git clone https://github.com/someone/tiny.git",
        " cd tiny/",
        "",
        "",
        " deepspeed -- ./code/train.py --train_args_file './code/args.json'",
        "",
    ]
    (launch,) = parse_shell("notes.txt", shell)
    assert (launch.line, launch.column, launch.script, launch.directory) == (5, 2, "./code/train.py", "")
    assert launch.option("train_args_file").value == "./code/args.json"  # type: ignore[union-attr]


def test_notebook_shell_lines_and_bash_cells_at_their_json_lines() -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["!deepspeed markdown.py\n"]},
            {
                "cell_type": "code",
                "outputs": [{"output_type": "stream", "text": ["!deepspeed printed.py\n"]}],
                "source": ["import os\n", "!deepspeed --num_gpus 2 a.py \\\n", "    --deepspeed_config ds.json\n"],
            },
            {"cell_type": "code", "outputs": [], "source": ["%%bash\n", "cd sub\n", "deepspeed b.py\n"]},
            {"cell_type": "code", "outputs": [], "source": "!torchrun c.py"},
            {"cell_type": "raw", "source": 3},
        ]
    }
    text = json.dumps(notebook, indent=1)
    physical = text.splitlines()
    shells = notebook_shells(text)
    assert len(shells) == 3  # the `!` command, the %%bash cell, the one-string cell's command
    launches = [launch for shell in shells for launch in parse_shell("nb.ipynb", shell)]
    # the %%bash cell's `cd` ends with its cell
    assert [(lnch.script, lnch.directory) for lnch in launches] == [("a.py", ""), ("b.py", "sub"), ("c.py", "")]
    assert "a.py" in physical[launches[0].line - 1] and "b.py" in physical[launches[1].line - 1]
    assert launches[0].option("deepspeed_config").value == "ds.json"  # type: ignore[union-attr]
    assert notebook_shells("not json") == [] and notebook_shells("[1, 2]") == []


def test_a_notebooks_cd_magic_and_clone_hold_for_its_later_shells() -> None:
    """`%cd` moves the kernel for every later `!` command; a `%cd` into a folder a `!git clone` made is this
    repository, as the reader of a Colab notebook has it."""
    notebook = {
        "cells": [
            {"cell_type": "code", "source": ["!git clone https://github.com/someone/tiny_trainer\n"]},
            {"cell_type": "code", "source": ["%cd tiny_trainer\n", "!deepspeed train.py\n"]},
            {"cell_type": "code", "source": ["%cd examples\n"]},
            {"cell_type": "code", "source": ["!deepspeed a.py\n", "!cd sub && deepspeed b.py\n", "!deepspeed c.py\n"]},
        ]
    }
    text = json.dumps(notebook, indent=1)
    launches = [launch for shell in notebook_shells(text) for launch in parse_shell("nb.ipynb", shell)]
    assert [(lnch.script, lnch.directory) for lnch in launches] == [
        ("train.py", ""),
        ("a.py", "examples"),
        ("b.py", "examples/sub"),
        ("c.py", "examples"),  # the `!cd` ended with its own shell
    ]


def test_a_backslash_in_a_comment_continues_nothing() -> None:
    """bash drops a comment with its trailing backslash: the next line is a command of its own, and a comment
    line inside a continued command ends that command there."""
    text = """# python -m torch.distributed.launch --nproc_per_node 8 old.py \\
deepspeed new.py --deepspeed ds.json \\
    --lr 1e-5 \\
    # --fp16 \\
    --bf16
"""
    (launch,) = parse_shell("run.sh", text)
    assert (launch.line, launch.script) == (2, "new.py")
    assert [option.name for option in launch.options] == ["deepspeed", "lr"]


def test_a_launch_run_in_the_projects_environment() -> None:
    """`uv run deepspeed ...`, `conda run -n env torchrun ...`: the launcher after the environment runner and its
    options; `uv pip install` is no launch."""
    text = (
        "uv run deepspeed --num_gpus=2 train_ds.py\n"
        "conda run -n dsenv --no-capture-output torchrun --nproc_per_node 4 train.py --deepspeed ds.json\n"
        "uv pip install deepspeed\n"
    )
    launches = parse_shell("run.sh", text)
    assert [(launch.tool, launch.script, launch.line) for launch in launches] == [
        ("deepspeed", "train_ds.py", 1),
        ("torchrun", "train.py", 2),
    ]
    assert launches[1].option("deepspeed") is not None


def test_a_launch_run_in_a_container() -> None:
    """`singularity exec [options] IMAGE cmd`, `apptainer exec`, `docker run [options] IMAGE cmd`: the launcher is
    the first launcher word after the image (an option's value is never the command); `singularity run` hands its
    words to the image's runscript, and a container line without a launcher word is no launch."""
    text = (
        "srun singularity exec --nv --bind /data:/data --env A=1 image.sif accelerate launch --config_file a.yaml"
        " train.py --lr 1e-5\n"
        "apptainer exec ds.sif deepspeed --num_gpus 2 pretrain.py --deepspeed_config ds.json\n"
        "docker run --gpus all -v $PWD:/w -w /w pytorch/pytorch:2.3 torchrun --nproc_per_node 4 sft.py"
        " --deepspeed z.json\n"
        "singularity run image.sif python other.py\n"
        "docker run --rm busybox ls train.py\n"
    )
    launches = parse_shell("job.sh", text)
    assert [(launch.tool, launch.script, launch.line) for launch in launches] == [
        ("accelerate", "train.py", 1),
        ("deepspeed", "pretrain.py", 2),
        ("torchrun", "sft.py", 3),
    ]
    assert launches[0].accelerate_config == "a.yaml"
    assert launches[0].spawned_by == "srun"


def test_a_command_and_options_held_in_variables_are_split_where_expanded() -> None:
    # bash splits an unquoted `$CMD` into words: the launcher, its options, the script's options
    text = """NUM=$(nvidia-smi -L | wc -l)
config_json="./ds/zero2.json"
DS_ARGS=" \\
    --deepspeed \\
    --deepspeed_config ${config_json} \\
    "
if [ $NODES -gt 1 ]; then
    CMD="torchrun --nnodes=$NODES --nproc_per_node=$NUM
    --rdzv_backend=c10d --rdzv_endpoint=$MASTER"
else
    CMD="torchrun --nproc_per_node=$NUM --master_port=$PORT"
fi
srun $CMD \\
train.py \\
--lr=4e-6 \\
$DS_ARGS \\
--epochs 2
"""
    (launch,) = parse_shell("run.sh", text)
    assert (launch.line, launch.tool, launch.script) == (13, "torchrun", "train.py")
    assert launch.option("deepspeed_config").value == "./ds/zero2.json"  # type: ignore[union-attr]
    assert launch.option("deepspeed").value is None  # type: ignore[union-attr]
    assert launch.option("epochs").value == "2"  # type: ignore[union-attr]
    # a part of the command built at run time stays unknown, never guessed
    assert launch.launcher_option("nproc_per_node").value == UNKNOWN_VALUE  # type: ignore[union-attr]
    assert launch.lost_options == ()


def test_a_variable_holding_a_run_time_word_or_a_stray_quote_stays_unknown() -> None:
    text = """LAUNCHER="$(which deepspeed) --num_gpus 2"
$LAUNCHER train.py --deepspeed_config ds.json
CONFIG="configs/$MODEL.json"
deepspeed eval.py --deepspeed_config $CONFIG
NOTE="it's one word
deepspeed other.py --deepspeed_config other.json
"""
    launches = parse_shell("run.sh", text)
    # the first launcher is built at run time: no launch; the config of the second is unknown as a whole; a quote
    # that no line closes (a stray one) joins nothing
    assert [(lnch.line, lnch.script) for lnch in launches] == [(4, "eval.py"), (6, "other.py")]
    assert launches[0].option("deepspeed_config").value == UNKNOWN_VALUE  # type: ignore[union-attr]


def test_a_makefile_variable_of_several_words() -> None:
    text = """ARGS := --deepspeed --deepspeed_config ds.json
train:
\tdeepspeed --num_gpus 2 train.py $(ARGS)
"""
    (launch,) = parse_makefile("Makefile", text)
    assert launch.option("deepspeed_config").value == "ds.json"  # type: ignore[union-attr]


def test_arrays_and_appended_words_are_the_commands_words() -> None:
    text = """ds_args=""
ds_args=" --deepspeed ${ds_args}"
ds_args+=" --deepspeed_config=ds.json"
ARGS=(
    --lr 1e-5  # the learning rate
    --epochs "3"
)
ARGS+=(--seed 1)
declare -a LAUNCH=(deepspeed --num_gpus 4)
"${LAUNCH[@]}" train.py "${ARGS[@]}" $ds_args
"""
    (launch,) = parse_shell("run.sh", text)
    assert (launch.line, launch.tool, launch.script) == (10, "deepspeed", "train.py")
    assert [(o.name, o.value) for o in launch.options] == [
        ("lr", "1e-5"),
        ("epochs", "3"),
        ("seed", "1"),
        ("deepspeed", None),
        ("deepspeed_config", "ds.json"),
    ]
    assert launch.launcher_option("num_gpus").value == "4"  # type: ignore[union-attr]
    # a value that closes its quote a few lines on is one value: bash runs no command of its lines
    assert parse_shell("run.sh", 'NOTE="first line\ndeepspeed x.py --deepspeed_config a.json\n"\n') == []


def test_a_cd_to_a_folder_of_another_machine_is_the_launchers_deployed_copy(tmp_path) -> None:
    """`cd /scratch/<user>/<repo>` (no such folder here) then `deepspeed train.py`: the path is read as if there
    were no `cd`; after a `cd` to a folder this machine has (`/tmp`), it is read there only."""
    from dslint.project.inputs import absolute, find_written

    (tmp_path / "train.py").write_text("import deepspeed\n")
    launcher = str(tmp_path / "run.sh")
    roots = [absolute(tmp_path)]
    elsewhere = "/scratch/someone/pretrain/param-7b"
    assert find_written("train.py", launcher, roots, elsewhere) == absolute(tmp_path / "train.py")
    assert find_written("missing.py", launcher, roots, elsewhere) is None
    assert find_written("train.py", launcher, roots, str(tmp_path.parent)) is None


def test_a_config_path_of_another_machine_is_the_projects_only_config_of_that_name(tmp_path) -> None:
    """`deepspeed train.py --deepspeed /nas/me/exp/zero3.json`: no tail of two parts is here, but the project's
    one `zero3.json` is a DeepSpeed config: that file. Two of that name, or one that is no DeepSpeed config: not
    known."""
    from dslint.project.inputs import absolute, forget_file_names
    from dslint.project.launched_configs import launched_config

    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "zero3.json").write_text('{"zero_optimization": {"stage": 3}}\n')
    (tmp_path / "notes.json").write_text('{"title": "run notes"}\n')
    launcher = str(tmp_path / "run.sh")
    roots = [absolute(tmp_path)]
    forget_file_names()
    (given,) = parse_shell("run.sh", "deepspeed train.py --deepspeed /nas/me/exp/zero3.json\n")
    assert launched_config(given, launcher, roots, None).config_path == absolute(tmp_path / "configs" / "zero3.json")
    (other,) = parse_shell("run.sh", "deepspeed train.py --deepspeed /nas/me/exp/notes.json\n")
    assert launched_config(other, launcher, roots, None).config_path is None
    (tmp_path / "zero3.json").write_text('{"zero_optimization": {"stage": 2}}\n')
    forget_file_names()
    assert launched_config(given, launcher, roots, None).config_path is None


def test_accelerate_flags_say_deepspeed_without_a_yaml(tmp_path) -> None:
    """`accelerate launch --use_deepspeed --deepspeed_config_file ds.json` (no YAML): the config accelerate hands
    DeepSpeed; `--zero_stage 2`: the stage; without `--use_deepspeed` nothing is DeepSpeed's."""
    from dslint.project.inputs import absolute
    from dslint.project.launched_configs import launched_config

    (tmp_path / "ds.json").write_text("{}\n")
    launcher = str(tmp_path / "run.sh")
    roots = [absolute(tmp_path)]
    (given,) = parse_shell("run.sh", "accelerate launch --use_deepspeed --deepspeed_config_file ds.json train.py\n")
    config = launched_config(given, launcher, roots, None)
    assert (config.option, config.config_path) == ("accelerate", absolute(tmp_path / "ds.json"))
    (staged,) = parse_shell("run.sh", "accelerate launch --use_deepspeed --zero_stage 2 train.py\n")
    assert launched_config(staged, launcher, roots, None).inline_stage == 2
    (plain,) = parse_shell("run.sh", "accelerate launch --deepspeed_config_file ds.json train.py\n")
    assert launched_config(plain, launcher, roots, None).option is None


def test_a_wrapper_forwarding_its_arguments_is_its_launcher() -> None:
    # `ds_wrapper.sh` sets up the environment, then runs deepspeed with every argument it is given
    wrappers = {
        "ds_wrapper.sh": 'export DS_BUILD_OPS=0\n# deepspeed "$@" in a comment\nexec deepspeed "$@"\n',
        "env_only.sh": "export CUDA_HOME=/usr/local/cuda\n",  # forwards nothing: no launch
        "two.sh": 'if [ -n "$A" ]; then\n  deepspeed --num_gpus 2 "$@"\nelse\n  torchrun "$@"\nfi\n',
        "built.sh": 'deepspeed --num_gpus $NGPU "$@"\n',  # a word built at run time: not guessed
    }
    text = (
        "bash ds_wrapper.sh --num_gpus=1 finetune.py \\\n  --deepspeed_config ds_zero3.json\n"
        "./env_only.sh train.py\nsh two.sh train.py\nbash built.sh train.py\n"
    )
    (launch,) = parse_shell("README.sh", text, wrappers.get)
    assert (launch.line, launch.tool, launch.script) == (1, "deepspeed", "finetune.py")
    assert launch.option("deepspeed_config").value == "ds_zero3.json"  # type: ignore[union-attr]
    assert [(option.name, option.value) for option in launch.launcher_options] == [("num_gpus", "1")]
    assert parse_shell("README.sh", text) == []  # without a reader no wrapper is opened


def test_command_segments_split_outside_quotes_only() -> None:
    """A regex option's `|` inside quotes (`--lora_target_modules '...(q_proj|v_proj)'`) is not a pipe: the
    launch command stays whole, where splitting there lost the command (its options after the quote)."""
    line = "torchrun train.py --targets 'layers\\.(q_proj|v_proj)' --deepspeed ds.json | tee log && echo done"
    assert command_segments(line) == [
        "torchrun train.py --targets 'layers\\.(q_proj|v_proj)' --deepspeed ds.json ",
        " tee log ",
        " echo done",
    ]
    assert command_segments('python x.py --sep "a;b" ; echo "x||y"') == ['python x.py --sep "a;b" ', ' echo "x||y"']
    assert command_segments("python x.py --sep a\\|b | cat") == ["python x.py --sep a\\|b ", " cat"]
    assert command_segments("python x.py | tee log && make", pipes=False) == ["python x.py | tee log ", " make"]
    assert command_segments("python x.py --name 'open | quote") == ["python x.py --name 'open | quote"]


@pytest.mark.parametrize("forwarded", ['"$@"', "$@", "$*", '"${@}"'])
def test_the_scripts_own_arguments_are_never_an_options_value(forwarded: str) -> None:
    """`--deepspeed "$@"`: the switch takes no value from the words the launcher forwards (zero or more of them),
    and those words may be any option: the command is open."""
    (line,) = parse_shell("/tmp/run.sh", f"deepspeed train.py --deepspeed {forwarded}\n")
    assert line.open_words and [(o.name, o.value) for o in line.options] == [("deepspeed", None)]


def test_a_fence_naming_a_language_inside_a_block_does_not_close_it() -> None:
    """A README whose block is left open before the next one (```bash ... ```bash): CommonMark reads the second
    fence as the first block's text (a closing fence has no info string), and the command after it is code."""
    text = "```bash\nconda activate rl\n\n2. Then run\n```bash\ndeepspeed train.py --deepspeed ds.json\n```\nAfter.\n"
    code = markdown_code_blocks(text).split("\n")
    assert code[5] == "deepspeed train.py --deepspeed ds.json" and code[7] == ""


def test_a_script_under_a_folder_built_at_run_time_keeps_its_known_tail() -> None:
    """`RUN_PY="$(dirname "$(pwd)")/src/train.py"`: the folder is known only when the launcher runs, the script's
    folder and name are not; a bare `$DIR/train.py` (no folder of its own) stays unknown."""
    text = 'ROOT="$(dirname "$(pwd)")"\nRUN_PY="${ROOT}/src/train.py"\ndeepspeed "${RUN_PY}" --deepspeed ds.json\n'
    (line,) = parse_shell("/tmp/run.sh", text)
    assert (line.script, line.script_root_unknown) == ("src/train.py", True)
    assert parse_shell("/tmp/run.sh", 'deepspeed "${DIR}/train.py" --deepspeed ds.json\n') == []

"""Launch rules (DSL422-DSL424, DSL427) over fixtures/projects/launch_mistakes, both ways, and what the launcher parser
follows for them: `${VAR:-default}`, sourced files, comment lines inside a continued command, noqa comments."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES

from dslint.cli import main
from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.launcher import launcher_results, lint_launcher
from dslint.lint.result import FileResult
from dslint.project.launchers import parse_shell
from dslint.project.project_index import LaunchIssue
from dslint.selection import RuleSelection

PROJECT = FIXTURES / "projects" / "launch_mistakes"


def _findings() -> list[tuple[str, int, str, str]]:
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    selection = RuleSelection()
    results = launcher_results(index.launch_issues, lambda _: selection, lambda p: Path(p).read_text("utf-8"))
    return sorted(
        (os.path.relpath(d.path, PROJECT), d.start.line, d.code, d.message) for r in results for d in r.diagnostics
    )


def test_launch_mistakes_are_reported_in_their_launchers_and_their_twins_are_silent() -> None:
    found = _findings()
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("docs/README.md", 7, "DSL422"),
        ("scripts/grpo.sh", 1, "DSL442"),  # and the Trainer it builds gets no config either
        ("scripts/grpo.sh", 2, "DSL424"),
        ("scripts/sft_accelerate_missing.sh", 3, "DSL423"),  # accelerate's own --deepspeed_config_file
        ("scripts/sft_cut.sh", 4, "DSL422"),
        ("scripts/sft_missing.sh", 3, "DSL423"),
        ("scripts/sft_pick_gpus.sh", 3, "DSL427"),
        ("scripts/sft_visible_nodes.sh", 3, "DSL427"),
    ]
    messages = {path: message for path, _, code, message in found if code != "DSL442"}
    assert messages["scripts/sft_cut.sh"].startswith(
        "this comment line ends the continued command that runs finetune.py: --model_name_or_path, "
        "--learning_rate, --deepspeed_config never reach it"
    )
    assert messages["docs/README.md"].startswith(
        "this comment line ends the continued command that runs finetune.py: --model_name_or_path never reaches it"
    )
    # ${STAGE:-1}: the default, as the launcher runs without STAGE set
    assert messages["scripts/sft_missing.sh"].startswith("configs/ds_zero1.json: no such file in the project")
    assert messages["scripts/grpo.sh"].startswith("grpo_in_code.py never reads its command line")
    assert messages["scripts/sft_pick_gpus.sh"].startswith("deepspeed refuses --include with --num_gpus")
    assert messages["scripts/sft_visible_nodes.sh"].startswith(
        "deepspeed refuses CUDA_VISIBLE_DEVICES with --num_nodes"
    )
    assert not any(path.startswith("silent/") for path, *_ in found)


def test_a_sourced_file_gives_the_launcher_its_variables() -> None:
    """silent/sft_present.sh sources stage.env.sh (STAGE=2): its config is found, so nothing is missing."""
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    (launch,) = [launch for launch in index.launches if launch.line.launcher.endswith("sft_present.sh")]
    assert launch.config.config_path == str(PROJECT / "configs" / "ds_zero2.json")


def test_defaults_and_sourced_assignments() -> None:
    text = "N=${N:-4}\nsource vars.sh\ndeepspeed --num_gpus $N ${SRC:-src}/train.py --deepspeed $CFG\n"
    (line,) = parse_shell("run.sh", text, lambda name: "export CFG=ds_z3.json\n" if name == "vars.sh" else None)
    assert line.script == "src/train.py"
    assert line.launcher_option("num_gpus").value == "4"
    assert line.option("deepspeed").value == "ds_z3.json"
    # a variable set at run time stays unknown, default or not; an unread sourced file leaves it unknown
    (line,) = parse_shell("run.sh", "N=$(nproc)\ndeepspeed --num_gpus ${N:-4} train.py\n")
    assert line.launcher_option("num_gpus").value == "\x00unknown"
    (line,) = parse_shell("run.sh", "source vars.sh\ndeepspeed train.py --deepspeed $CFG\n")
    assert line.option("deepspeed").value == "\x00unknown"


def test_a_comment_line_cuts_a_continued_command_only_when_options_follow() -> None:
    cut = "deepspeed train.py \\\n  # the model\n  --model m \\\n  --lr 1\n"
    (line,) = parse_shell("run.sh", cut)
    assert (line.cut_line, line.lost_options, line.options) == (2, ("--model", "--lr"), ())
    # a comment after the last line of a command cuts nothing
    (line,) = parse_shell("run.sh", "deepspeed train.py \\\n  --model m\n# the model\necho done\n")
    assert (line.cut_line, line.lost_options) == (0, ())


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("deepspeed train.py \\\n  --model m \\ \n  --lr 1 \\\n  --deepspeed ds.json\n", "space"),
        ("deepspeed train.py \\\n  --model m \\   # the model\n  --lr 1\n", "space"),
        ("deepspeed train.py \\\n  --model m\n  --lr 1 \\\n  --deepspeed ds.json\n", "newline"),
        ("deepspeed train.py --model m\n  --lr 1 \\\n  --deepspeed ds.json\n", "newline"),
        ("deepspeed train.py \\\n  # the model\n  --model m\n", "comment"),
        ("deepspeed train.py \\\n  --model m \\\n  --lr 1\n", ""),
    ],
)
def test_a_command_ends_where_bash_ends_it(tmp_path: Path, text: str, cause: str) -> None:
    """The options the script gets are those bash gives it (a stand-in `deepspeed` function prints them), and
    the lost ones are the option lines bash then runs as commands of their own."""
    (line,) = parse_shell("run.sh", text)
    script = "deepspeed() { printf '%s\\n' \"$@\" > " + str(tmp_path / "args") + "; }\n" + text
    subprocess.run(["bash", "-c", script], capture_output=True, check=False)
    given = [word for word in (tmp_path / "args").read_text().split("\n") if word.startswith("--")]
    assert [f"--{option.name}" for option in line.options] == given
    assert line.cut_cause == cause
    written = [word for word in text.split() if word.startswith("--")]
    assert list(line.lost_options) == written[len(given) :]


def test_noqa_in_a_shell_launcher() -> None:
    issue = LaunchIssue("missing_config", 1, 32, 43, "ds1.json")
    text = "deepspeed --num_gpus 2 train.py --deepspeed ds1.json  # noqa: DSL423\n"
    result = lint_launcher("run.sh", [issue], RuleSelection(), text)
    assert (result.diagnostics, result.suppressed) == ([], 1)
    text = "# dslint: noqa: DSL423\ndeepspeed --num_gpus 2 train.py --deepspeed ds1.json\n"
    moved = LaunchIssue("missing_config", 2, 32, 43, "ds1.json")
    assert lint_launcher("run.sh", [moved], RuleSelection(), text).diagnostics == []
    # a document has no comment dslint reads: the finding stays
    (finding,) = lint_launcher("README.md", [issue], RuleSelection(), text).diagnostics
    assert finding.code == "DSL423"


PROCESSES = FIXTURES / "projects" / "launch_processes"


def test_device_map_and_one_rank_generation_follow_the_launches() -> None:
    """load_spread.py runs as 2 processes (DSL425), load_single.py as one (silent); sample_z3.py generates in
    main_process_first under the z3 config its launcher gives (DSL426), sample_z2.py under z2 (silent)."""
    files = discover([str(PROCESSES)]).files
    index = index_project(files, [str(PROCESSES)])
    found = []
    for result in lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index):
        assert isinstance(result, FileResult)
        found += [(os.path.relpath(d.path, PROCESSES), d.start.line, d.code, d.message) for d in result.diagnostics]
    assert [(path, line, code) for path, line, code, _ in sorted(found)] == [
        ("load_spread.py", 6, "DSL425"),
        ("load_spread.py", 7, "DSL452"),  # its ZeRO-2 config and initialize name no optimizer
        ("sample_z3.py", 16, "DSL426"),
    ]
    messages = {code: message for _, _, code, message in found}
    assert messages["DSL425"].startswith(
        'device_map="auto" under 2 processes a node: each spreads a full copy over all GPUs; drop device_map ('
    )
    assert messages["DSL426"].startswith("under ZeRO-3, generate on one rank hangs")
    assert messages["DSL426"].endswith("(ZeRO-3 from " + os.path.relpath(PROCESSES / "configs" / "z3.json") + ")")


def test_refused_launcher_options_follow_the_runner() -> None:
    """`runner.main` (DeepSpeed 0.19.8): a count beside a filter, a filter beside the other, and the include the
    runner makes of CUDA_VISIBLE_DEVICES beside --num_nodes; a filter that may be empty is no evidence."""
    from dslint.project.launch_issues import refused_options

    def refused(text: str) -> tuple[str, ...] | None:
        (line,) = parse_shell("run.sh", text)
        issue = refused_options(line)
        return None if issue is None else issue.options

    assert refused("deepspeed --num_gpus=2 --include=localhost:0,1 t.py\n") == ("--num_gpus", "--include")
    assert refused("deepspeed --exclude localhost:0 --num_nodes $N t.py\n") == ("--exclude", "--num_nodes")
    assert refused("deepspeed --include a --exclude a:1 t.py\n") == ("--include", "--exclude")
    assert refused("python -m deepspeed.launcher.runner --include a --num_gpus 1 t.py\n") is not None
    assert refused("CUDA_VISIBLE_DEVICES=0 deepspeed --num_nodes=1 t.py\n") == ("CUDA_VISIBLE_DEVICES", "--num_nodes")
    assert refused('deepspeed --include "$GPUS" --num_gpus 2 t.py\n') is None
    assert refused("deepspeed --include localhost:0 t.py --num_gpus 2\n") is None  # the script's own option
    assert refused("CUDA_VISIBLE_DEVICES=0 deepspeed -H hosts --num_nodes 1 t.py\n") is None
    assert refused("CUDA_VISIBLE_DEVICES=0 deepspeed --num_nodes 2 t.py\n") is None
    assert refused("torchrun --nnodes 1 --nproc_per_node 2 t.py\n") is None


def test_a_notebook_launch_is_reported_in_its_cell_beside_the_notebook_own_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `!` launch naming a config the project lacks: one result for the notebook, the finding in the cell that
    holds the command (its line and column in the cell, past the `!`), as the measure maps cells back to lines."""
    import json

    from click.testing import CliRunner

    from dslint.cli import main

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Train\n"]},
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": ["%%time\n", "  !deepspeed --num_gpus 2 train.py --deepspeed_config ds_zero1.json"],
        },
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    (tmp_path / "train.py").write_text("import argparse\nimport deepspeed\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DSLINT_NO_CACHE", "1")
    result = CliRunner().invoke(
        main, ["check", "--isolated", "--quiet", "--select", "DSL423", "--output-format", "json", "."]
    )
    found = json.loads(result.output)
    assert [(d["filename"], d["cell"], d["location"]["line"], d["location"]["column"]) for d in found] == [
        ("train.ipynb", 2, 2, 36)
    ]


def test_a_missing_script_named_by_a_variable_is_reported_at_its_command(tmp_path: Path) -> None:
    """`deepspeed $SCRIPT` with SCRIPT naming no file: the command is the finding's place, not a comment that
    happens to hold the name (nor is a finding dropped when only a comment does)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(
        "import argparse\nimport deepspeed\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n"
        "p.add_argument('--deepspeed_config')\nengine, *_ = deepspeed.initialize(args=p.parse_args(), model=net)\n",
        encoding="utf-8",
    )
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    (tmp_path / "run.sh").write_text(
        "SCRIPT=train_v2.py\nsrun deepspeed --num_gpus 2 $SCRIPT \\\n"
        "    --deepspeed_config ds.json  # train_v2.py: new\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)])
    found = [line for line in result.output.splitlines() if "DSL444" in line]
    assert len(found) == 1 and found[0].split(":")[1:3] == ["2", "6"], result.output


def test_a_launch_stopped_by_its_options_has_no_batch_finding(tmp_path: Path) -> None:
    """A command whose `--deepspeed ds.json` the script refuses (DSL443) never reaches DeepSpeed's batch check: its
    world size against the config is not reported; the same launch passing `--deepspeed_config` is (DSL407)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(
        "import argparse\nimport deepspeed\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--local_rank', type=int, default=-1)\nparser = deepspeed.add_config_arguments(parser)\n"
        "args = parser.parse_args()\nengine, *_ = deepspeed.initialize(args=args, model=model)\n",
        encoding="utf-8",
    )
    (tmp_path / "ds_config.json").write_text(
        '{"train_batch_size": 48, "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1}\n',
        encoding="utf-8",
    )
    (tmp_path / "good.sh").write_text("deepspeed --num_gpus 4 train.py --deepspeed_config ds_config.json\n")
    (tmp_path / "bad.sh").write_text("deepspeed --num_gpus 4 train.py --deepspeed ds_config.json\n")
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)])
    lines = [line for line in result.output.splitlines() if ": DSL" in line]
    found = sorted((line.split(":")[0].rsplit("/", 1)[-1], line.split()[1]) for line in lines)
    assert found == [("bad.sh", "DSL443"), ("good.sh", "DSL407")], result.output

"""The ruff habits users type without thinking, one test each: stdin, --statistics, --extend-ignore, check --fix,
--show-files, colour (NO_COLOR / FORCE_COLOR / a terminal), the progress bar, --fail-on, honest summaries."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

from dslint.commands.progress import Progress
from dslint.report.colour import wants_colour

ROOT = Path(__file__).resolve().parent.parent
BAD = textwrap.dedent(
    """\
    import deepspeed
    import torch
    model = Net()
    model.cuda()
    engine, *_ = deepspeed.initialize(model=model, config="ds.json")
    state = torch.load("w.pt", map_location="cuda")
    """
)
CONFIG = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimisation": {"stage": 2}\n}\n'


def run(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={
            "PYTHONPATH": str(ROOT),
            "PATH": "/usr/bin:/bin",
            "DSLINT_CACHE_DIR": os.environ["DSLINT_CACHE_DIR"],
            **(env or {}),
        },
    )


def test_stdin_with_stdin_filename(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text(CONFIG, encoding="utf-8")
    result = run("check", "--isolated", "-", "--stdin-filename", "train.py", cwd=tmp_path, stdin=BAD)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line.split(" ")[:2] for line in lines] == [
        ["ds.json:3:3:", "DSL401"],  # the config the unsaved buffer points at, next to it
        ["train.py:4:1:", "DSL101"],
        ["train.py:6:41:", "DSL201"],
    ]
    fixed = run("fix", "--isolated", "-", "--stdin-filename", "train.py", cwd=tmp_path, stdin=BAD)
    assert fixed.stdout == BAD.replace('"cuda"', '"cpu"'), fixed.stderr
    assert "train.py:4:1: DSL101" in fixed.stderr and fixed.returncode == 1


def test_statistics(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD + "other = torch.load('x.pt', map_location='cuda')\n", encoding="utf-8")
    result = run("check", "--isolated", "--statistics", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "2  DSL201  [*] torch-load-to-cuda",
        "1  DSL101  [-] model-moved-before-initialize",
    ]


def test_extend_ignore(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.dslint]\nignore = ["DSL101"]\n', encoding="utf-8")
    result = run("check", "--extend-ignore", "DSL201", "train.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")  # both the pyproject's ignore and the option's apply
    assert run("check", "train.py", cwd=tmp_path).stdout.split(" ")[1] == "DSL201"


def test_check_fix_is_fix(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    result = run("check", "--isolated", "--fix", "train.py", cwd=tmp_path)
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == BAD.replace('"cuda"', '"cpu"')
    assert "train.py: fixed DSL201" in result.stdout and result.returncode == 1  # DSL101's fix is unsafe


def test_show_files(tmp_path: Path) -> None:
    for name in ("train.py", "ds_config.json", "notes.md", "sub/helper.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}" if name.endswith(".json") else "x = 1\n", encoding="utf-8")
    result = run("check", "--isolated", "--show-files", ".", "accelerate.yaml", cwd=tmp_path)
    assert result.returncode == 2  # accelerate.yaml does not exist
    assert result.stdout.splitlines() == ["ds_config.json", "sub/helper.py", "train.py"]
    (tmp_path / "accelerate.yaml").write_text("distributed_type: MULTI_GPU\n", encoding="utf-8")
    named = run("check", "--show-files", "accelerate.yaml", cwd=tmp_path)
    assert named.stdout.startswith("accelerate.yaml  (skipped: a YAML file") and named.returncode == 0
    (tmp_path / "accelerate.yaml").write_text("distributed_type: DEEPSPEED\n", encoding="utf-8")  # read
    assert run("check", "--show-files", "accelerate.yaml", cwd=tmp_path).stdout == "accelerate.yaml\n"


def _in_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run dslint with stdout and stderr on a pseudo-terminal; what it printed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd,
        stdout=follower,
        stderr=follower,
        env={
            "PYTHONPATH": str(ROOT),
            "PATH": "/usr/bin:/bin",
            "DSLINT_CACHE_DIR": os.environ["DSLINT_CACHE_DIR"],
            "TERM": "xterm",
            **env,
        },
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8")


def test_colour_on_a_terminal_and_no_color_and_force_color(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    args = ["check", "--isolated", "train.py"]
    assert "\x1b[1;33mDSL101\x1b[0m" in _in_a_terminal(args, tmp_path, {})
    assert "\x1b[" not in _in_a_terminal(args, tmp_path, {"NO_COLOR": "1"})
    assert "\x1b[" not in run(*args, cwd=tmp_path).stdout  # a pipe
    assert "\x1b[1m" in run(*args, cwd=tmp_path, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in run(*args, cwd=tmp_path, env={"FORCE_COLOR": "0"}).stdout
    terminal = io.StringIO()
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    assert wants_colour(terminal, {}) and not wants_colour(terminal, {"NO_COLOR": "x"})
    assert not wants_colour(terminal, {"TERM": "dumb"}) and wants_colour(io.StringIO(), {"FORCE_COLOR": "1"})


def test_progress_bar_only_on_a_terminal_after_a_second() -> None:
    terminal = io.StringIO()
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    quick = Progress(40, terminal)
    quick.advance(40)
    quick.finish()
    assert terminal.getvalue() == "", "a run under a second draws nothing"
    slow = Progress(40, terminal, delay=0.0)
    slow.advance(10)
    assert terminal.getvalue().endswith("\r[#######.......................] 10/40 files")
    slow.finish()
    assert terminal.getvalue().endswith("\r")
    pipe = io.StringIO()
    piped = Progress(40, pipe, delay=0.0)
    piped.advance(40)
    assert pipe.getvalue() == ""


def test_fail_on(tmp_path: Path) -> None:
    (tmp_path / "ds_config.json").write_text(
        '{"train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": true, "loss_scale": 128}}\n', encoding="utf-8"
    )
    assert run("check", "--isolated", "ds_config.json", cwd=tmp_path).returncode == 1  # DSL413 is info
    assert run("check", "--isolated", "--fail-on", "warning", "ds_config.json", cwd=tmp_path).returncode == 0
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")  # warnings
    assert run("check", "--isolated", "--fail-on", "warning", "train.py", cwd=tmp_path).returncode == 1
    assert run("check", "--isolated", "--fail-on", "error", "train.py", cwd=tmp_path).returncode == 0


def test_summaries_cannot_contradict_themselves(tmp_path: Path) -> None:
    missing = run("check", "missing.py", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        "dslint: error: missing.py: no such file or directory",
        "Nothing checked; 1 file could not be checked (see the errors above).",
    ]
    (tmp_path / "ds.json").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    linked = run("check", "--isolated", "train.py", cwd=tmp_path)
    summary = "Found 3 findings: 2 in 1 of 1 file checked, 1 in 1 config file it points at."
    assert linked.stderr.splitlines()[0] == summary
    script = 'import deepspeed\nengine, *_ = deepspeed.initialize(config="ds.json")\n'
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    only_config = run("check", "--isolated", "train.py", cwd=tmp_path)
    assert only_config.stderr.splitlines()[0] == "Found 1 finding in 1 config file that the file checked points at."
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "launch.sh").write_text("deepspeed train.py --deepspeed ds.json\n", encoding="utf-8")
    skipped = run("check", "--isolated", "launch.sh", cwd=tmp_path)
    assert skipped.returncode == 0 and "DSL001" not in skipped.stdout
    assert skipped.stderr.splitlines()[-1] == "No files checked; 1 file skipped (see above)."


def test_show_fixes_lists_each_fix_and_what_dslint_fix_applies(tmp_path: Path) -> None:
    """`check --show-fixes`: every finding's fix with its applicability, on stderr (stdout keeps the findings),
    and how many `dslint fix` applies with the settings in force; nothing is written."""
    (tmp_path / "train.py").write_text(BAD)
    result = run("check", "--no-cache", "--show-fixes", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    listing = [line for line in result.stderr.splitlines() if line.startswith("  train.py:")]
    assert listing == [
        "  train.py:4:1: DSL101 (unsafe) Remove `.cuda(...)`",
        '  train.py:6:41: DSL201 (safe) Load to the CPU: map_location="cpu"',
    ]
    assert "2 fixable (1 safe, 1 unsafe); `dslint fix` applies 1, `dslint fix --unsafe-fixes` all" in result.stderr
    assert "fixable" not in result.stdout and (tmp_path / "train.py").read_text() == BAD
    unsafe = run("check", "--no-cache", "--show-fixes", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert "2 fixable (1 safe, 1 unsafe); `dslint fix` applies 2\n" in unsafe.stderr
    (tmp_path / "clean.py").write_text("import deepspeed\n")
    clean = run("check", "--no-cache", "--show-fixes", "clean.py", cwd=tmp_path)
    assert clean.returncode == 0 and "0 fixable (0 safe, 0 unsafe); `dslint fix` applies 0" in clean.stderr

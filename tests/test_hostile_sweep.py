"""The second hostile-input sweep (issue #26): nothing hangs, leaks or is lost.

Each case runs the real command (`python -m dslint`) with a time limit and a memory limit, so a case that would
hang or read forever fails instead of taking the suite down, next to a good file whose finding must still be
reported. Cases that need what root cannot do are simulated in process, by monkeypatching.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEADER = 'import deepspeed\nimport torch\nengine, *_ = deepspeed.initialize(model=m, config="ds.json")\n'
GOOD = HEADER + 'state = torch.load("w.pt")\n'  # DSL202, fixable
GOOD_FINDING = "good.py:4:9: DSL202"
MEMORY = 3 * 1024 * 1024 * 1024


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def dslint(
    cwd: Path,
    *args: str,
    timeout: float = 60,
    stdin: int | None = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real command, killed after `timeout` seconds (a hang fails the test) and held to 3 GB of memory."""
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout,
        stdin=stdin,
        preexec_fn=_limit_memory,
    )


def assert_one_clear_line(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """Exit `code`, no traceback, and one line holding every needle."""
    everything = result.stdout + result.stderr
    assert "Traceback" not in everything and "internal error" not in everything, everything
    assert result.returncode == code, everything
    lines = [line for line in everything.splitlines() if all(needle in line for needle in needles)]
    assert len(lines) == 1, everything
    if code == 2:
        assert "All checks passed" not in everything
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    return tmp_path


# -- FIFOs and devices are never opened blocking, nor read without a limit ----------------------------------------


def test_a_fifo_in_a_walked_tree_or_named_is_refused_without_opening_it(project: Path) -> None:
    os.mkfifo(project / "pipe.py")
    (project / "sub").mkdir()
    os.mkfifo(project / "sub" / "ds_config.json")  # named like a config: the walk reads those
    os.mkfifo(project / "sub" / "other.json")  # a candidate config: peeked at
    result = dslint(project, "check", ".", timeout=30)
    assert_one_clear_line(result, 2, "dslint: error: pipe.py: cannot read: not a regular file (a pipe)")
    assert_one_clear_line(result, 2, "ds_config.json", "not a regular file (a pipe)")
    assert GOOD_FINDING in result.stdout
    named = dslint(project, "check", "pipe.py", "good.py", timeout=30)
    assert_one_clear_line(named, 2, "dslint: error: pipe.py: cannot read: not a regular file (a pipe)")
    assert GOOD_FINDING in named.stdout
    fix = dslint(project, "fix", ".", timeout=30)
    assert_one_clear_line(fix, 2, "pipe.py", "not a regular file (a pipe)")
    assert "fixed DSL202" in fix.stdout


def test_a_config_a_script_points_at_that_is_a_fifo(project: Path) -> None:
    (project / "ds.json").unlink()
    os.mkfifo(project / "ds.json")
    result = dslint(project, "check", "--output-format", "full", "good.py", timeout=30)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert "good.py:4:9: DSL202" in result.stdout


def test_cache_entries_that_are_fifos_or_dev_zero_are_rebuilt(project: Path) -> None:
    cache = project / "cache"
    env = {"DSLINT_CACHE_DIR": str(cache)}
    first = dslint(project, "check", "good.py", env=env)
    assert first.returncode == 1 and GOOD_FINDING in first.stdout, first.stderr
    entries = [path for path in cache.rglob("*") if path.parent.parent.name.startswith("v") and path.is_file()]
    assert entries
    for index, entry in enumerate(entries):
        entry.unlink()
        if index % 2:
            entry.symlink_to("/dev/zero")
        else:
            os.mkfifo(entry)
    again = dslint(project, "check", "good.py", env=env, timeout=30)
    assert again.returncode == 1 and again.stdout == first.stdout, again.stdout + again.stderr


# -- nothing outside the project is read or printed, nothing outside it is written -------------------------------


def _repository(tmp_path: Path) -> Path:
    """A repository (`.git`) inside `tmp_path`, with a secret file beside it, outside it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "good.py").write_text(GOOD, encoding="utf-8")
    (repo / "ds.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    (tmp_path / "secret.json").write_text('{"hunter2_user": "hash", "train_batch_size": 8}\n', encoding="utf-8")
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n")
    return repo


OUTSIDE = ["{secret}", "../secret.json", "../passwd", "/etc/passwd", "link.json", "{secret_link}"]
FORMATS = ["concise", "full", "json", "github", "sarif"]


@pytest.mark.parametrize(
    ("config", "output_format"), [*((c, "full") for c in OUTSIDE), *(("/etc/passwd", f) for f in FORMATS)]
)
def test_a_config_outside_the_project_is_never_read(tmp_path: Path, config: str, output_format: str) -> None:
    repo = _repository(tmp_path)
    (repo / "link.json").symlink_to(tmp_path / "secret.json")
    config = config.format(secret=tmp_path / "secret.json", secret_link=repo / "link.json")
    (repo / "train.py").write_text(
        f"import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config={config!r})\n", encoding="utf-8"
    )
    result = dslint(repo, "check", "--output-format", output_format, "train.py", "good.py")
    everything = result.stdout + result.stderr
    assert "hunter2" not in everything and "alice" not in everything and "root:x" not in everything, everything
    assert "Traceback" not in everything and result.returncode == 1, everything
    assert "is outside the project" in everything and "dslint checks nothing in it" in everything
    if output_format == "concise":
        assert_one_clear_line(
            result, 1, "train.py:2:", "DSL400 [warning] DeepSpeed config not read:", "outside the project"
        )


def _unversioned_project(tmp_path: Path) -> Path:
    """A project without `.git` whose launcher, in a subfolder, names the config at the project's top (`$PWD`: the
    command runs from there), with a secret beside the project."""
    top = tmp_path / "project"
    (top / "scripts").mkdir(parents=True)
    (top / "train.py").write_text(
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=2)\n", "utf-8"
    )
    (top / "z.yaml").write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n")
    (top / "ds.json").write_text('{"gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2}}\n')
    launch = 'RUN_DIR="$PWD"\naccelerate launch --config_file ${RUN_DIR}/z.yaml ${RUN_DIR}/train.py\n'
    (top / "scripts" / "run.sh").write_text(launch, encoding="utf-8")
    (tmp_path / "secret.json").write_text('{"hunter2_user": "hash"}\n', encoding="utf-8")
    return top


@pytest.mark.parametrize("cwd", ["scripts", ".", ".."])
def test_outside_a_repository_the_checked_folder_is_the_project(tmp_path: Path, cwd: str) -> None:
    """Without `.git`, the folder given to `check` bounds what configs may be read, wherever dslint runs from: the
    launcher in `scripts/` names the top's config (read from every working directory), never a file above it."""
    top = _unversioned_project(tmp_path)
    result = dslint((top / cwd).resolve(), "check", "--isolated", "--no-cache", str(top))
    assert "DSL477" in result.stdout and result.returncode == 1, result.stdout + result.stderr
    (top / "scripts" / "run.sh").write_text("accelerate launch --config_file ../z.yaml ../train.py\n")
    (top / "z.yaml").write_text(
        "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ../secret.json\n"
    )
    result = dslint((top / cwd).resolve(), "check", "--isolated", "--no-cache", str(top))
    assert "hunter2" not in result.stdout + result.stderr and "DSL477" not in result.stdout, result.stdout


def test_a_config_that_is_not_json_is_not_taken_for_keys(project: Path) -> None:
    (project / "settings.txt").write_text("root: 1\nalice: 2\ntrain_batch_size: 8\n", encoding="utf-8")
    (project / "train.py").write_text(
        'import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config="settings.txt")\n', encoding="utf-8"
    )
    result = dslint(project, "check", "train.py", "--output-format", "full")
    assert "alice" not in result.stdout + result.stderr and "DSL401" not in result.stdout, result.stdout
    assert_one_clear_line(result, 1, "train.py:2:", "DSL400", "settings.txt is not a JSON or HJSON file")
    (project / "hjson_config").write_text("{\n  train_batch_size: 8\n  fp16: {enabled: true}\n  bogus: 1\n}\n")
    (project / "train.py").write_text(
        'import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config="hjson_config")\n', encoding="utf-8"
    )
    hjson = dslint(project, "check", "train.py")  # an object without a .json name is still read
    assert "DSL401" in hjson.stdout and "bogus" in hjson.stdout, hjson.stdout + hjson.stderr


def test_the_walk_does_not_follow_links_out_of_the_project(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    (tmp_path / "outside.py").write_text("root:x:0:0:alice\n", encoding="utf-8")
    (repo / "evil.py").symlink_to(tmp_path / "outside.py")
    (repo / "ds_config.json").symlink_to(tmp_path / "secret.json")
    (repo / "inner.py").symlink_to("good.py")  # inside: followed
    result = dslint(repo, "check", "--output-format", "full", ".")
    assert "alice" not in result.stdout + result.stderr and "hunter2" not in result.stdout + result.stderr
    assert_one_clear_line(result, 1, "evil.py: not read: a symbolic link to a file outside the project")
    assert_one_clear_line(result, 1, "ds_config.json: not read: a symbolic link to a file outside the project")
    assert "inner.py" not in result.stdout + result.stderr and GOOD_FINDING in result.stdout  # the same file


def test_fix_does_not_write_through_a_link_out_of_the_project_unless_asked(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text(GOOD, encoding="utf-8")
    (repo / "train.py").symlink_to(elsewhere)
    walked = dslint(repo, "fix", ".")
    assert_one_clear_line(walked, 0, "train.py: not read: a symbolic link to a file outside the project")
    named = dslint(repo, "fix", "train.py")
    line = assert_one_clear_line(named, 2, "train.py", "not written: a symbolic link to a file outside the project")
    assert "--write-through-links" in line and "Fixed 0 findings in 0 files." in named.stderr
    assert elsewhere.read_text(encoding="utf-8") == GOOD
    asked = dslint(repo, "fix", "--write-through-links", "train.py")
    assert asked.returncode == 0 and "Fixed 1 finding in 1 file." in asked.stderr, asked.stderr
    assert 'map_location="cpu"' in elsewhere.read_text(encoding="utf-8") and (repo / "train.py").is_symlink()


# -- fix loses nothing -----------------------------------------------------------------------------------------


def _invoke(monkeypatch: pytest.MonkeyPatch, cwd: Path, *args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from dslint.cli import main

    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_fix_refuses_a_file_edited_while_it_runs(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    import dslint.fix.write as write

    real = tempfile.mkstemp
    edited = GOOD + "x = 1  # the user's edit\n"

    def edit_then_mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        (project / "good.py").write_text(edited, encoding="utf-8")  # the editor saves meanwhile
        return real(*args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(write.tempfile, "mkstemp", edit_then_mkstemp)
    code, _, err = _invoke(monkeypatch, project, "fix", "good.py")
    assert code == 2, err
    assert "good.py: not written: the file changed while dslint was fixing it" in err
    assert (project / "good.py").read_text(encoding="utf-8") == edited
    assert not [p for p in project.iterdir() if p.name.endswith(".dslint-tmp")]


def test_a_failed_write_is_not_counted_as_fixed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import dslint.fix.write as write

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(write.os, "replace", full)
    code, out, err = _invoke(monkeypatch, project, "fix", "good.py")
    assert code == 2 and "good.py: cannot write: No space left on device" in err
    assert "Fixed 0 findings in 0 files." in err and "fixed DSL202" not in out, (out, err)
    assert GOOD_FINDING in out  # it remains, and is reported


def test_fix_handles_cr_only_files(project: Path) -> None:
    (project / "good.py").write_bytes(GOOD.replace("\n", "\r").encode())
    result = dslint(project, "fix", "good.py")
    assert result.returncode == 0 and "Fixed 1 finding in 1 file." in result.stderr, result.stderr
    written = (project / "good.py").read_bytes()
    assert b"\n" not in written and written.count(b"\r") == GOOD.count("\n")
    assert b'torch.load("w.pt", map_location="cpu")\r' in written
    assert dslint(project, "check", "good.py").returncode == 0


@pytest.mark.parametrize("command", ["check", "fix"])
def test_an_empty_select_is_a_usage_error(project: Path, command: str) -> None:
    for empty in ("", ",", " , "):
        result = dslint(project, command, "--select", empty, ".")
        assert result.returncode == 2 and "--select names no rule code" in result.stderr, result.stderr
        assert "No files checked" not in result.stderr
    assert (project / "good.py").read_text(encoding="utf-8") == GOOD


# -- file names cannot forge lines, workflow commands or terminal sequences ---------------------------------------

HOSTILE_NAMES = ["gh\n::error file=evil.py::X.py", "forged.py:1:1: DSL999 fake\nx.py", "esc\x1b[2J\x1b]0;t\x07.py"]


def _forged(lines: list[str]) -> list[str]:
    """Lines a hostile name would have made: a workflow command of its own, a finding line of its own, the rest
    of a name split by its newline."""
    return [
        line
        for line in lines
        if line.startswith(("::error file=evil", "::error::", "x.py", "y.py")) or line == "forged.py:1:1: DSL999 fake"
    ]


@pytest.mark.parametrize("output_format", ["concise", "full", "github"])
def test_file_names_are_escaped_in_every_text_format(project: Path, output_format: str) -> None:
    for name in HOSTILE_NAMES:
        (project / name).write_text(GOOD, encoding="utf-8")
    result = dslint(project, "check", "--output-format", output_format, ".")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    everything = result.stdout + result.stderr
    assert "\x1b" not in everything and "\x07" not in everything
    assert not _forged(everything.splitlines()), everything
    if output_format == "concise":
        assert len(result.stdout.splitlines()) == len(HOSTILE_NAMES) + 1  # one line per finding, no more
        assert "gh\\n::error file=evil.py::X.py:4:9: DSL202" in result.stdout
        assert "esc\\x1b[2J\\x1b]0;t\\x07.py:4:9: DSL202" in result.stdout
    if output_format == "github":
        assert len(result.stdout.splitlines()) == len(HOSTILE_NAMES) + 1
        assert all(line.startswith("::warning file=") for line in result.stdout.splitlines())


def test_file_names_are_escaped_in_errors_and_fix_output(project: Path) -> None:
    for name in HOSTILE_NAMES:
        (project / name).write_text(GOOD, encoding="utf-8")
    (project / "bad\n::error::x.py").write_text("def (:\n", encoding="utf-8")
    os.mkfifo(project / "pipe\n::error::y.py")
    for args in (["check", "--show-files", "."], ["fix", "--diff", "."], ["fix", "."], ["check", "."]):
        result = dslint(project, *args)
        everything = result.stdout + result.stderr
        assert "Traceback" not in everything and "\x1b" not in everything, everything
        assert not _forged(everything.splitlines()), (args, everything)
    assert "dslint: error: pipe\\n::error::y.py: cannot read: not a regular file (a pipe)" in result.stderr


# -- one line, never a traceback ----------------------------------------------------------------------------------


def test_an_unsearchable_subdirectory_is_one_error_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user who may not search `locked/`, `locked/pyvenv.cfg` cannot even be looked for (root can, so the
    refusal is simulated)."""
    import errno

    locked = project / "locked"
    locked.mkdir()
    (locked / "b.py").write_text(GOOD, encoding="utf-8")
    real_stat = os.stat
    real_scandir = os.scandir

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if "locked" in os.fsdecode(path) and os.fsdecode(path).rstrip("/").split("/")[-1] != "locked":
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def scandir(path: object) -> object:
        if os.fsdecode(path).rstrip("/").endswith("locked"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = _invoke(monkeypatch, project, "check", ".")
    assert code == 2 and GOOD_FINDING in out, err
    assert [line for line in err.splitlines() if "locked" in line] == [
        "dslint: error: locked: cannot read directory: Permission denied"
    ]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args", [["check", "."], ["check", "--output-format", "full", "."], ["fix", "--diff", "."], ["rules"]]
)
def test_stdout_on_a_full_disk_is_one_error_line(project: Path, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "dslint", *args],
            cwd=project,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=60,
        )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    assert [line for line in result.stderr.splitlines() if "error" in line] == [
        "dslint: error: cannot write the output: No space left on device"
    ]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_stdin_filename_over_the_name_limit_is_a_usage_error(project: Path, command: str) -> None:
    with open(project / "good.py", "rb") as text:
        result = dslint(project, command, "-", "--stdin-filename", "a" * 300 + ".py", stdin=text.fileno())
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "--stdin-filename: a name in it is 303 bytes long, over the system's limit of 255" in result.stderr


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_closed_stdin_is_a_usage_error(project: Path, command: str) -> None:
    result = subprocess.run(
        f"{sys.executable} -m dslint {command} - <&-",
        shell=True,
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "Error: `-` reads the text from stdin, which is closed" in result.stderr


# -- a parser that aborts the process is one file's error, whatever the batch size -------------------------------

ABORTING_PARSER = """
import os, sys
import libcst
real = libcst.parse_module
def parse(data, *args, **kwargs):
    if ("CRASH_ME" if isinstance(data, str) else b"CRASH_ME") in data:
        os.abort()  # what libcst's native parser does when it runs out of memory
    return real(data, *args, **kwargs)
libcst.parse_module = parse
from dslint.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("args", [["check", "."], ["check", "-j", "1", "."], ["fix", "."], ["fix", "--diff", "."]])
def test_a_parser_abort_in_a_small_batch_is_that_files_error(project: Path, args: list[str]) -> None:
    (project / "crash.py").write_text(GOOD + "# CRASH_ME\n", encoding="utf-8")
    (project / "other.py").write_text(GOOD, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", ABORTING_PARSER, *args],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    everything = result.stdout + result.stderr
    assert result.returncode == 2, everything
    assert [line for line in everything.splitlines() if "crash.py" in line] == [
        "dslint: error: crash.py: internal error: dslint's parser crashed on this file (SIGABRT)"
        + ("; not fixed" if args[0] == "fix" else "")
    ]
    if args == ["fix", "."]:
        assert "good.py: fixed DSL202" in result.stdout and "other.py: fixed DSL202" in result.stdout
        assert 'map_location="cpu"' in (project / "other.py").read_text(encoding="utf-8")
    elif args[0] == "check":
        assert GOOD_FINDING in result.stdout and "other.py:4:9: DSL202" in result.stdout
    assert (project / "crash.py").read_text(encoding="utf-8") == GOOD + "# CRASH_ME\n"


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_parser_abort_on_stdin_is_one_error_line(project: Path, command: str) -> None:
    text = GOOD + "# CRASH_ME\n"
    result = subprocess.run(
        [sys.executable, "-c", ABORTING_PARSER, command, "-", "--stdin-filename", "crash.py"],
        cwd=project,
        input=text,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "dslint: error: crash.py: internal error: dslint's parser crashed on this file (SIGABRT)" in result.stderr
    if command == "fix":
        assert result.stdout == text  # the editor gets its text back

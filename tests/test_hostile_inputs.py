"""Nothing crashes the run, nothing is lost (issue #15): each hostile input ends with exit 0/1/2 and one line that
names the file and the reason, the other files' findings are still reported, and no traceback reaches the user.

Each case is run through the real command (`python -m dslint`, real streams and encodings) next to a good file
whose finding must still be reported. Cases that need what root cannot do (an unreadable directory, a read-only
one) or a full disk simulate the failure by monkeypatching, in process.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import crash_on

from dslint.cli import main
from dslint.limits import Limits, parse_size, read_capped
from dslint.lint.batch import FileFailure, lint_files
from dslint.lint.parse_guard import refusal, tree_depth
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection
from dslint.settings import SettingsResolver

ROOT = Path(__file__).resolve().parent.parent
HEADER = 'import deepspeed\nimport torch\nengine, *_ = deepspeed.initialize(model=m, config="ds.json")\n'
GOOD = HEADER + 'state = torch.load("w.pt")\n'  # DSL202, fixable
GOOD_FINDING = "good.py:4:9: DSL202"


def dslint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        env=env,
        timeout=300,
    )


def assert_one_clear_line(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """Exit `code`, no traceback, the good file's finding kept, and one line holding every needle."""
    everything = result.stdout + result.stderr
    assert "Traceback" not in everything, everything
    assert result.returncode == code, everything
    lines = [line for line in everything.splitlines() if all(needle in line for needle in needles)]
    assert len(lines) == 1, everything
    if code == 2:
        assert "All checks passed" not in everything
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    return tmp_path


# -- parsing: CPython first, then a depth limit; never a crash --------------------------------------------------

DEEP = {
    "parens": "x = " + "(" * 1000 + "1" + ")" * 1000,
    "lists": "x = " + "[" * 1000 + "1" + "]" * 1000,
    "dicts": "x = " + "{1: " * 1000 + "1" + "}" * 1000,
    "calls": "x = " + "f(" * 1000 + "1" + ")" * 1000,
    "unary": "x = " + "-" * 20000 + "1",
    "not": "x = " + "not " * 20000 + "1",
    "lambdas": "x = " + "lambda: " * 5000 + "1",
    "attributes": "x = a" + ".b" * 20000,
    "plus": "x = " + " + ".join(["a"] * 20000),
    "elif": "if a:\n    pass\n" + "elif a:\n    pass\n" * 20000,
    "and": "x = " + " and ".join(["a"] * 20000),  # CPython compiles it; libcst's parser crashed on it
    "strings": "x = " + " ".join(['"a"'] * 20000),  # the same: implicit concatenation
}


def test_deep_files_are_findings_and_the_others_are_checked(project: Path) -> None:
    for name, body in DEEP.items():
        (project / f"deep_{name}.py").write_text(HEADER + body + "\n", encoding="utf-8")
    result = dslint(project, "check", ".")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert GOOD_FINDING in result.stdout
    for name in DEEP:
        lines = [line for line in result.stdout.splitlines() if line.startswith(f"deep_{name}.py:")]
        assert len(lines) == 1, (name, result.stdout)
        assert (
            " DSL001 [error] cannot parse this file: " in lines[0]
            or " DSL002 [error] not checked: too deep" in lines[0]
        )
    deep_and = next(line for line in result.stdout.splitlines() if line.startswith("deep_and.py:"))
    assert "DSL002" in deep_and and "max-nesting is 200" in deep_and
    assert "too many nested parentheses" in result.stdout  # CPython's own message


def test_fix_agrees_with_check_on_deep_files(project: Path) -> None:
    (project / "deep.py").write_text(HEADER + DEEP["and"] + "\n", encoding="utf-8")
    result = dslint(project, "fix", ".")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "deep.py:4:1: DSL002" in result.stdout
    assert "fixed DSL202" in result.stdout  # the good file is fixed all the same


@pytest.mark.parametrize("kind", ["lists", "unary", "and", "attributes"])
def test_files_at_the_nesting_limit_are_linted_and_fixed(kind: str) -> None:
    """The default limit leaves room: a file just under it goes through lint and fix without an error."""
    from dslint.fix.loop import fix_source

    def body(n: int) -> str:
        return {
            "lists": "x = " + "[" * n + "1" + "]" * n,
            "unary": "x = " + "-" * n + "1",
            "and": "x = " + " and ".join(["a"] * n),
            "attributes": "x = a" + ".b" * n,
        }[kind]

    n = 1
    while refusal("x.py", (GOOD + body(n + 1) + "\n").encode(), Limits().max_nesting) is None:
        n += 1
    text = GOOD + body(n) + "\n"
    outcome = fix_source("train.py", text)
    assert outcome.error is None and outcome.changed
    assert [d.code for d in outcome.applied] == ["DSL202"]


def test_tree_depth_counts_what_libcst_nests() -> None:
    def depth(source: str) -> int:
        return tree_depth(compile(source, "x", "exec", 0x400), source.encode())[0]

    assert depth("x = " + " and ".join(["a"] * 500)) > 500
    assert depth("x = " + " ".join(['"a"'] * 500)) > 500
    assert depth("x = a < b < c < d") < 10  # a comparison chain is flat in libcst too
    assert depth("x = " + "[" * 50 + "]" * 50) > 100  # an element is a node of its own in libcst


def test_cpython_refusals_keep_cpythons_message(project: Path) -> None:
    (project / "cookie.py").write_text("# -*- coding: uft-8 -*-\n" + GOOD, encoding="utf-8")
    (project / "nul.py").write_bytes(GOOD.encode() + b"x = 1\x00\n")
    check = dslint(project, "check", ".")
    assert_one_clear_line(check, 1, "cookie.py:1:1: DSL001", "unknown encoding: uft-8")
    assert_one_clear_line(check, 1, "nul.py:", "DSL001", "null")
    fix = dslint(project, "fix", ".")
    assert_one_clear_line(fix, 1, "cookie.py:1:1: DSL001", "unknown encoding: uft-8")
    assert_one_clear_line(fix, 1, "nul.py:", "DSL001", "null")


def test_check_and_fix_agree_on_undecodable_files_dslint_does_not_own(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: ascii -*-\nname = '\xe9'\n")  # no DeepSpeed in it
    assert dslint(tmp_path, "check", ".").returncode == 0
    fix = dslint(tmp_path, "fix", ".")
    assert fix.returncode == 0, fix.stderr


# -- limits -----------------------------------------------------------------------------------------------------


def test_max_file_size_skips_with_one_line_and_is_a_setting(project: Path) -> None:
    big = project / "big.py"
    big.write_text(GOOD + "x = 1\n" * 400_000, encoding="utf-8")  # 2.4 MB: over the default, never parsed
    # a limit is a setting, not a tool error: the file is reported as skipped, and the exit status is the others'
    line = assert_one_clear_line(dslint(project, "check", "."), 1, "big.py", "skipped")
    assert line == "dslint: skipped big.py: 2.3 MB over max-file-size (1.0 MB)"
    assert_one_clear_line(dslint(project, "fix", "--diff", "."), 1, "dslint: skipped big.py: 2.3 MB over")
    big.write_text(GOOD + "x = 1\n" * 400, encoding="utf-8")
    (project / "pyproject.toml").write_text('[tool.dslint]\nmax-file-size = "2 kB"\n', encoding="utf-8")
    line = assert_one_clear_line(dslint(project, "check", "."), 1, "big.py", "skipped")
    assert line == "dslint: skipped big.py: 2.5 kB over max-file-size (2.0 kB)"
    (project / "pyproject.toml").write_text('[tool.dslint]\nmax-file-size = "3 kB"\n', encoding="utf-8")
    result = dslint(project, "check", ".")
    assert result.returncode == 1 and "big.py:4:9: DSL202" in result.stdout and GOOD_FINDING in result.stdout


def test_limits_are_shown_by_settings_and_validated(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dslint]\nmax-file-size = "512 kB"\nmax-nesting = 120\nmax-config-size = 65536\n', encoding="utf-8"
    )
    shown = dslint(tmp_path, "settings", ".")
    assert "max-file-size: 512.0 kB" in shown.stdout
    assert "max-nesting: 120" in shown.stdout and "max-config-size: 64.0 kB" in shown.stdout
    limits = SettingsResolver(cwd=tmp_path).for_path(tmp_path / "x.py").limits
    assert limits == Limits(max_file_size=512 * 1024, max_nesting=120, max_config_size=65536)
    (tmp_path / "pyproject.toml").write_text("[tool.dslint]\nmax-nesting = true\n", encoding="utf-8")
    bad = dslint(tmp_path, "check", ".")
    assert bad.returncode == 2 and "max-nesting: expected a whole number" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_parse_size() -> None:
    assert parse_size(1000) == 1000
    assert parse_size("2MB") == parse_size("2 mb") == 2 * 1024 * 1024
    assert parse_size("1.5 kB") == 1536
    for bad in (0, -1, True, "two", "2 TB", "9" * 100, None):
        assert parse_size(bad) is None


def test_read_capped_stops_at_the_limit(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="character device"):
        read_capped("/dev/zero", 1024, "max-file-size")
    small = tmp_path / "a.py"
    small.write_bytes(b"x" * 10)
    assert read_capped(small, 10, "max-file-size") == b"x" * 10


# -- the file system ----------------------------------------------------------------------------------------------


def test_symlink_loops_in_a_directory(project: Path) -> None:
    (project / "loop.py").symlink_to("loop.py")
    (project / "sub").mkdir()
    (project / "sub" / "up").symlink_to("..")  # a loop through a directory link: not followed
    assert_one_clear_line(dslint(project, "check", "."), 2, "loop.py", "symbolic link loop")


def test_a_py_symlink_to_dev_zero(project: Path) -> None:
    (project / "zero.py").symlink_to("/dev/zero")
    result = dslint(project, "check", ".")
    assert_one_clear_line(result, 2, "dslint: error: zero.py: cannot read: not a regular file (a character device)")
    assert GOOD_FINDING in result.stdout
    fix = dslint(project, "fix", ".")
    assert_one_clear_line(fix, 2, "zero.py", "not a regular file")
    assert "fixed DSL202" in fix.stdout
    (project / "loop.py").symlink_to("loop.py")
    named = dslint(project, "check", "zero.py", "loop.py", "good.py")  # named on the command line
    assert_one_clear_line(named, 2, "dslint: error: zero.py: cannot read: not a regular file (a character device)")
    assert_one_clear_line(named, 2, "dslint: error: loop.py: cannot read: a broken or looping symbolic link")


def test_a_config_path_that_is_dev_zero(project: Path) -> None:
    result = dslint(project, "check", "--config", "/dev/zero", ".")
    assert_one_clear_line(result, 2, "/dev/zero", "not a regular file")
    (project / "ds_config.json").symlink_to("/dev/zero")
    assert_one_clear_line(dslint(project, "check", "."), 2, "ds_config.json", "not a regular file")


def test_a_file_name_that_is_not_utf8(project: Path) -> None:
    name = os.fsdecode(b"\xff\xfe.py")
    (project / name).write_text(GOOD, encoding="utf-8")
    result = dslint(project, "check", ".")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "\\udcff\\udcfe.py:4:9: DSL202" in result.stdout and GOOD_FINDING in result.stdout
    for output_format in ("json", "sarif", "github", "full"):
        formatted = dslint(project, "check", "--output-format", output_format, ".")
        assert formatted.returncode == 1 and "Traceback" not in formatted.stderr, output_format


def test_a_json_config_key_holding_a_lone_surrogate(project: Path) -> None:
    (project / "ds_config.json").write_text('{"\\ud800": 1, "train_batch_size": 8}', encoding="utf-8")
    result = dslint(project, "check", ".")
    assert_one_clear_line(result, 1, "ds_config.json:1:2: DSL401", "\\ud800")


def test_a_4000_digit_integer_in_a_config(project: Path) -> None:
    (project / "ds_config.json").write_text('{"train_batch_size": ' + "9" * 4000 + "}", encoding="utf-8")
    huge = "9" * 4000
    (project / "ds2_config.json").write_text(
        f'{{"train_batch_size": 8, "train_micro_batch_size_per_gpu": {huge}, "zero_optimization": {{"stage": {huge},'
        f' "offload_optimizer": {{"device": "cpu", "ratio": {huge}}}}},'
        f' "fp16": {{"enabled": true, "loss_scale": {huge}}},'
        f' "deep": {"[" * 3000}{"]" * 3000}}}',
        encoding="utf-8",
    )
    result = dslint(project, "check", ".")
    assert result.returncode == 1 and "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert GOOD_FINDING in result.stdout


def _invoke(monkeypatch: pytest.MonkeyPatch, cwd: Path, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_an_unreadable_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = project / "locked"
    locked.mkdir()
    (locked / "b.py").write_text(GOOD, encoding="utf-8")
    real = os.scandir

    def scandir(path: str | os.PathLike[str]) -> object:
        if Path(path).name == "locked":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = _invoke(monkeypatch, project, "check", ".")
    assert code == 2 and GOOD_FINDING in out
    assert [line for line in err.splitlines() if "locked" in line] == [
        "dslint: error: locked: cannot read directory: Permission denied"
    ]
    assert "All checks passed" not in err


def _read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def refuse(*args: object, **kwargs: object) -> object:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)


@pytest.mark.parametrize("args", [["fix", "."], ["check", "--add-noqa", "."]])
def test_writers_in_a_read_only_directory(project: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    _read_only(monkeypatch)
    code, _, err = _invoke(monkeypatch, project, *args)
    assert code == 2
    assert [line for line in err.splitlines() if "error" in line] == [
        "dslint: error: good.py: cannot write: Permission denied"
    ]
    assert (project / "good.py").read_text(encoding="utf-8") == GOOD


@pytest.mark.parametrize("args", [["fix", "target.py"], ["check", "--add-noqa", "target.py"]])
def test_every_writer_writes_through_symlinks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    """The symlink policy (README): a link stays a link; the file it points at gets the change."""
    real = tmp_path / "real.py"
    real.write_bytes(b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode())
    (tmp_path / "target.py").symlink_to("real.py")
    code, _, err = _invoke(monkeypatch, tmp_path, *args)
    assert code == 0, err
    assert (tmp_path / "target.py").is_symlink()
    written = real.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") and b"\r\n" in written and b"\n" not in written.replace(b"\r\n", b"")
    assert written != b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode()


def test_output_file_in_a_missing_directory_or_on_a_full_disk(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dslint(project, "check", "-o", str(project / "no" / "such" / "report.txt"), ".")
    line = assert_one_clear_line(missing, 2, "report.txt", "cannot write the report")
    assert line.endswith("No such file or directory")
    assert GOOD_FINDING in missing.stdout  # nothing is lost: the report goes to stdout instead
    if Path("/dev/full").exists():
        full = dslint(project, "check", "-o", "/dev/full", ".")
        assert_one_clear_line(full, 2, "/dev/full: cannot write the report: No space left on device")

    def no_space(self: Path, *args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", no_space)
    code, out, err = _invoke(monkeypatch, project, "check", "-o", "report.txt", ".")
    assert code == 2 and GOOD_FINDING in out and "report.txt: cannot write the report: No space left" in err


# -- settings files and patterns ----------------------------------------------------------------------------------

PYPROJECTS: dict[str, Callable[[Path], None]] = {
    "not UTF-8": lambda p: p.write_bytes(b'[tool.dslint]\nselect = ["\xff"]\n'),
    "UTF-16": lambda p: p.write_text('[tool.dslint]\nselect = ["DSL"]\n', encoding="utf-16"),
    "nested 1,000 deep": lambda p: p.write_text("[tool.dslint]\nx = " + "[" * 1000 + "]" * 1000 + "\n"),
    "a symlink loop": lambda p: p.symlink_to(p.name),
}
PYPROJECT_REASONS = {
    "not UTF-8": "not UTF-8 text",
    "UTF-16": "not UTF-8 text",
    "nested 1,000 deep": "nested too deeply",
    "a symlink loop": "Too many levels of symbolic links",
}


@pytest.mark.parametrize("case", PYPROJECTS)
def test_a_bad_pyproject(project: Path, case: str) -> None:
    PYPROJECTS[case](project / "pyproject.toml")
    assert_one_clear_line(dslint(project, "check", "."), 2, "pyproject.toml", PYPROJECT_REASONS[case])


@pytest.mark.parametrize(
    ("table", "setting"),
    [
        ('exclude = ["[z-a]"]', "exclude: bad pattern '[z-a]'"),
        ('extend-exclude = ["[z-a]"]', "extend-exclude: bad pattern '[z-a]'"),
        ('per-file-ignores = {"[z-a].py" = ["DSL2"]}', "per-file-ignores: bad pattern '[z-a].py'"),
    ],
)
def test_a_bad_glob_range_in_a_setting(project: Path, table: str, setting: str) -> None:
    (project / "pyproject.toml").write_text(f"[tool.dslint]\n{table}\n", encoding="utf-8")
    assert_one_clear_line(dslint(project, "check", "."), 2, setting, "bad character range z-a")


def test_a_bad_glob_range_in_gitignore_is_skipped_as_git_does(project: Path) -> None:
    (project / ".gitignore").write_text("[z-a]\nignored.py\n", encoding="utf-8")
    (project / "ignored.py").write_text(GOOD, encoding="utf-8")
    result = dslint(project, "check", ".")
    line = assert_one_clear_line(result, 1, ".gitignore:1", "[z-a]")
    assert line.startswith("dslint: warning: ") and "bad character range z-a" in line
    assert GOOD_FINDING in result.stdout and "ignored.py" not in result.stdout  # the other lines still apply


# -- a worker that dies -------------------------------------------------------------------------------------------


def test_a_worker_that_dies_is_that_files_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crash_on(monkeypatch, "crash.py")
    paths = []
    for index in range(20):
        path = tmp_path / ("crash.py" if index == 7 else f"f{index:02}.py")
        path.write_text(GOOD, encoding="utf-8")
        paths.append(path)
    results = lint_files([(path, RuleSelection()) for path in paths], jobs=2)
    failures = [r for r in results if isinstance(r, FileFailure)]
    assert [(Path(f.path).name, f.message) for f in failures] == [
        ("crash.py", "internal error: dslint's parser crashed on this file (SIGSEGV)")
    ]
    assert sum(1 for r in results if isinstance(r, FileResult) and r.diagnostics) == 19

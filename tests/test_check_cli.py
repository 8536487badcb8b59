"""`dslint check` end to end: output format, summary, exit codes, bad input, discovery."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main

ROOT = Path(__file__).resolve().parent.parent

BAD = textwrap.dedent(
    """\
    import deepspeed
    model = Net()
    model.cuda()
    engine, *_ = deepspeed.initialize(model=model, config="ds.json")
    """
)
GOOD = textwrap.dedent(
    """\
    import deepspeed
    model = Net()
    engine, *_ = deepspeed.initialize(model=model, config="ds.json")
    """
)


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DSLINT_CACHE_DIR": os.environ["DSLINT_CACHE_DIR"]},
    )


def test_findings_are_flake8_lines_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    result = run("check", str(tmp_path / "train.py"))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{tmp_path / 'train.py'}:3:1: DSL101 [warning] model moved to a device before deepspeed.initialize; "
        "remove the move: the engine places it"
    ]
    assert "Found 1 finding in 1 of 1 file." in result.stderr
    assert "1 more fixable with `dslint fix --unsafe-fixes`." in result.stderr


def test_clean_exit_0_and_quiet(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(GOOD)
    result = run("check", "-q", str(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    loud = run("check", str(tmp_path))
    assert loud.returncode == 0 and "All checks passed (1 file checked)." in loud.stderr


def test_default_path_is_current_directory(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    result = run("check", "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("train.py:3:1: DSL101 ")


def test_unparsable_file_is_a_finding_and_others_are_still_checked(tmp_path: Path) -> None:
    (tmp_path / "a_broken.py").write_text("import deepspeed\ndef main(:\n    deepspeed.initialize(model=m)\n")
    (tmp_path / "b_train.py").write_text(BAD)
    result = run("check", "-q", str(tmp_path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{tmp_path / 'a_broken.py'}:2:10: DSL001 [error] cannot parse this file: invalid syntax"
    assert lines[1].startswith(f"{tmp_path / 'b_train.py'}:3:1: DSL101 ")
    assert "Traceback" not in result.stderr


def test_undecodable_file_is_reported_not_crashed(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"import deepspeed\nname = '\xff\xfe'\ndeepspeed.initialize(model=m)\n")
    result = run("check", "-q", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.startswith(f"{tmp_path / 'latin.py'}:")
    assert "DSL001" in result.stdout and "Traceback" not in result.stderr


def test_missing_path_is_an_error_but_others_are_checked(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    result = run("check", str(tmp_path / "nope.py"), str(tmp_path / "train.py"))
    assert result.returncode == 2
    assert "nope.py: no such file or directory" in result.stderr
    assert "DSL101" in result.stdout


def test_unknown_rule_code_is_a_usage_error(tmp_path: Path) -> None:
    result = run("check", "--select", "DSL999", str(tmp_path))
    assert result.returncode == 2
    assert "matches no rule code" in result.stderr


def test_select_and_ignore_prefixes(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    assert run("check", "-q", "--ignore", "DSL1", str(tmp_path)).returncode == 0
    assert run("check", "-q", "--select", "DSL0", str(tmp_path)).returncode == 0
    assert run("check", "-q", "--select", "DSL0", "--extend-select", "DSL101", str(tmp_path)).returncode == 1
    assert run("check", "-q", "--ignore", "DSL1", "--select", "DSL101", str(tmp_path)).returncode == 1


def test_discovery_skips_excluded_and_gitignored(tmp_path: Path) -> None:
    for folder in (".venv/lib", "build", "node_modules/x", "ignored", "kept", "pkg.egg-info"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "train.py").write_text(BAD)
    (tmp_path / "venv2").mkdir()
    (tmp_path / "venv2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "venv2" / "train.py").write_text(BAD)
    (tmp_path / ".gitignore").write_text("ignored/\n*.generated.py\n!keep.generated.py\n")
    (tmp_path / "kept" / "x.generated.py").write_text(BAD)
    (tmp_path / "kept" / "keep.generated.py").write_text(BAD)
    result = run("check", "-q", str(tmp_path))
    reported = sorted(
        {Path(line.split(":")[0]).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines()}
    )
    assert reported == ["kept/keep.generated.py", "kept/train.py"]


def test_discovery_reads_a_script_without_a_suffix_by_its_python_shebang(tmp_path: Path) -> None:
    """`./train` run as a program: a file without a suffix whose first line is a Python shebang is a script;
    one with another interpreter's shebang, a file with another suffix, or one ignored, is not read."""
    (tmp_path / "train").write_text("#!/usr/bin/env python3\n" + BAD)
    (tmp_path / "run").write_text("#!/bin/bash\n" + BAD)
    (tmp_path / "train.txt").write_text("#!/usr/bin/env python3\n" + BAD)
    (tmp_path / "old").write_text("#!/usr/bin/python\n" + BAD)
    (tmp_path / ".gitignore").write_text("old\n")
    result = run("check", "-q", str(tmp_path))
    reported = {Path(line.split(":")[0]).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines()}
    assert reported == {"train"}, result.stdout


def test_a_gitignored_config_that_a_launcher_names_is_checked(tmp_path: Path) -> None:
    """`*.json` in .gitignore, the config committed all the same: the config a launcher passes is the run's and is
    checked (shown as the walk shows files); an ignored config nothing names, and one in an excluded folder, are
    not."""
    (tmp_path / ".gitignore").write_text("*.json\n")
    (tmp_path / "train.py").write_text(GOOD)
    bad = '{"train_batch_size": 8, "zero_optimisation": {"stage": 2}}\n'
    for name in ("ds.json", "ds_other.json", "build/ds_built.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(bad)
    (tmp_path / "run.sh").write_text(
        "deepspeed train.py --deepspeed_config ds.json\ndeepspeed train.py --deepspeed_config build/ds_built.json\n"
    )
    result = run("check", "-q", "--select", "DSL401", ".", cwd=tmp_path)
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["ds.json"], result.stdout


def test_discovery_skips_a_libraries_unpacked_source(tmp_path: Path) -> None:
    """`third_party/deepspeed-0.14.5/` (a library's sdist, unpacked): its files are the library's, not the
    project's; a folder merely named after the library is the project's own, and `exclude = []` walks all."""
    for folder in ("third_party/deepspeed-0.14.5/deepspeed", "transformers-4.56.2/tests", "deepspeed", "trl-tools"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "train.py").write_text(BAD)
    result = run("check", "-q", str(tmp_path))
    reported = sorted(
        {Path(line.split(":")[0]).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines()}
    )
    assert reported == ["deepspeed/train.py", "trl-tools/train.py"]
    (tmp_path / "pyproject.toml").write_text("[tool.dslint]\nexclude = []\n")
    result = run("check", "-q", str(tmp_path))
    assert len({line.split(":")[0] for line in result.stdout.splitlines()}) == 4


def test_explicitly_named_file_is_checked_even_if_ignored(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "train.py").write_text(BAD)
    assert run("check", "-q", str(tmp_path)).returncode == 0
    assert run("check", "-q", str(tmp_path / "train.py")).returncode == 1


@functools.cache
def serial_over_fixtures() -> subprocess.CompletedProcess[str]:
    """One serial run over fixtures/, the reference both cases below compare against."""
    return run("check", "-q", "-j", "1", "fixtures")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parallel_and_serial_agree(jobs: str) -> None:
    serial = serial_over_fixtures()
    parallel = run("check", "-q", "-j", jobs, "fixtures")
    assert serial.stdout == parallel.stdout and serial.stdout


def test_many_files_use_workers_with_same_result(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"train_{i:02d}.py").write_text(BAD if i % 2 else GOOD)
    result = run("check", "-q", "-j", "2", str(tmp_path))
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 20


def test_rules_and_explain() -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["rules"])
    assert listing.exit_code == 0 and "DSL101  model-moved-before-initialize" in listing.output
    explained = runner.invoke(main, ["explain", "dsl101"])
    assert explained.exit_code == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in explained.output
    assert runner.invoke(main, ["explain", "DSL999"]).exit_code == 2


def test_linting_never_imports_torch_or_deepspeed() -> None:
    probe = textwrap.dedent(
        """
        import sys
        from click.testing import CliRunner
        from dslint.cli import main
        result = CliRunner().invoke(main, ["check", "-q", "-j", "1", "fixtures"])
        assert result.exit_code == 1, result.output
        heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "deepspeed", "transformers", "numpy"})
        print(heavy)
        """
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "data",
    [
        b"import deepspeed\nengine = deepspeed.initialize(model=m)\n",
        b"\xef\xbb\xbfimport deepspeed\r\nengine = deepspeed.initialize(model=m)\r\n",
        b"# -*- coding: latin-1 -*-\nimport deepspeed\nname = '\xe9'\nengine = deepspeed.initialize(model=m)\n",
    ],
    ids=["utf8", "bom-crlf", "latin1"],
)
def test_result_text_is_what_libcst_parsed(data: bytes) -> None:
    import libcst as cst

    from dslint.lint.script import lint_source

    assert lint_source("train.py", data).text == cst.parse_module(data).code

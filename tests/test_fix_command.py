"""`dslint fix`: diff, exit codes, byte-exact preservation (CRLF, BOM, encoding, mode), refusal, imports."""

from __future__ import annotations

import codecs
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main
from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity
from dslint.fix.edits import fix_text
from dslint.fix.loop import fix_source
from dslint.fix.write import read_source, write_source

ROOT = Path(__file__).resolve().parent.parent

SAFE = (
    "import deepspeed\n"
    "import torch\n"
    'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    'state = torch.load("w.pt")  # keep this comment\n'
)
SAFE_FIXED = SAFE.replace('torch.load("w.pt")', 'torch.load("w.pt", map_location="cpu")')
UNSAFE_ONLY = (
    "import deepspeed\n"
    'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    "engine.load_checkpoint(args.load_dir)\n"
)
CLEAN = 'import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["fix", *args])
    return result.exit_code, result.stdout, result.stderr


def test_fix_writes_safe_fixes_and_exits_zero_when_nothing_remains(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SAFE, encoding="utf-8")
    code, out, err = _invoke(str(script))
    assert code == 0, out + err
    assert script.read_text(encoding="utf-8") == SAFE_FIXED
    assert "fixed DSL202" in out
    assert "No findings remain" in err
    assert _invoke(str(script))[0] == 0  # a second run changes nothing
    assert script.read_text(encoding="utf-8") == SAFE_FIXED


def test_unsafe_fixes_need_the_flag_and_remaining_findings_exit_one(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(UNSAFE_ONLY, encoding="utf-8")
    code, out, err = _invoke(str(script))
    assert code == 1
    assert script.read_text(encoding="utf-8") == UNSAFE_ONLY
    assert "DSL205" in out and "--unsafe-fixes" in err
    code, out, _ = _invoke("--unsafe-fixes", str(script))
    assert code == 0, out
    assert "if load_path is None:" in script.read_text(encoding="utf-8")


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SAFE, encoding="utf-8")
    before = script.stat().st_mtime_ns
    code, out, _ = _invoke("--diff", str(script))
    assert code == 1  # the file on disk still has the finding
    assert script.read_text(encoding="utf-8") == SAFE
    assert script.stat().st_mtime_ns == before
    assert '-state = torch.load("w.pt")  # keep this comment' in out
    assert '+state = torch.load("w.pt", map_location="cpu")  # keep this comment' in out
    assert out.startswith("--- ")


def test_select_and_ignore_limit_the_fixes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SAFE, encoding="utf-8")
    code, _, _ = _invoke("--ignore", "DSL202", str(script))
    assert code == 0
    assert script.read_text(encoding="utf-8") == SAFE
    code, _, _ = _invoke("--select", "DSL201", str(script))
    assert script.read_text(encoding="utf-8") == SAFE
    code, _, _ = _invoke("--select", "DSL201", "--extend-select", "DSL202", str(script))
    assert script.read_text(encoding="utf-8") == SAFE_FIXED
    assert _invoke("--select", "DSL999", str(script))[0] == 2


def test_crlf_bom_encoding_and_mode_are_kept(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    crlf = SAFE.replace("\n", "\r\n")
    script.write_bytes(codecs.BOM_UTF8 + crlf.encode("utf-8"))
    script.chmod(0o751)
    latin = tmp_path / "latin.py"
    latin_text = "# -*- coding: latin-1 -*-\n# Gr\u00fc\u00dfe\n" + SAFE.replace("w.pt", "w\u00e9.pt")
    latin.write_bytes(latin_text.encode("latin-1"))
    code, out, err = _invoke(str(tmp_path))
    assert code == 0, out + err
    assert script.read_bytes() == codecs.BOM_UTF8 + SAFE_FIXED.replace("\n", "\r\n").encode("utf-8")
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    expected = latin_text.replace('torch.load("w\u00e9.pt")', 'torch.load("w\u00e9.pt", map_location="cpu")')
    assert latin.read_bytes() == expected.encode("latin-1")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".dslint-tmp")]


def test_unparsable_file_is_reported_and_the_others_are_fixed(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import deepspeed\ndef (:\nengine = deepspeed.initialize(model=m)\n", encoding="utf-8")
    good = tmp_path / "good.py"
    good.write_text(SAFE, encoding="utf-8")
    code, out, _ = _invoke(str(tmp_path))
    assert code == 1
    assert "DSL001" in out and "broken.py" in out
    assert good.read_text(encoding="utf-8") == SAFE_FIXED
    assert broken.read_text(encoding="utf-8") == "import deepspeed\ndef (:\nengine = deepspeed.initialize(model=m)\n"


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    assert _invoke(str(tmp_path / "nope.py"))[0] == 2


def test_clean_file_is_untouched(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(CLEAN, encoding="utf-8")
    assert _invoke(str(script))[0] == 0
    assert script.read_text(encoding="utf-8") == CLEAN


def _finding(edits: tuple[Edit, ...], imports: tuple[str, ...] = ()) -> Diagnostic:
    at = Location(1, 1)
    return Diagnostic(
        "DSL999", "test", "test", Severity.WARNING, "t.py", at, at, Fix(edits, Applicability.SAFE, "t", imports)
    )


def test_refused_fix_leaves_the_text_and_reports_why() -> None:
    text = "x = 1\n"

    def lint(current: str) -> list[Diagnostic]:
        return [_finding((Edit(Location(1, 1), Location(1, 2), "def"),))] if current == text else []

    outcome = fix_text(text, lint)
    assert outcome.error is not None and "does not parse" in outcome.error
    assert outcome.text == text and not outcome.applied and not outcome.changed


def test_fix_that_never_settles_is_refused() -> None:
    def lint(current: str) -> list[Diagnostic]:
        return [_finding((Edit.insertion(Location(1, 1), "x = 1\n"),))]

    outcome = fix_text("y = 2\n", lint)
    assert outcome.error is not None and "settle" in outcome.error
    assert outcome.text == "y = 2\n"


def test_compiler_errors_that_libcst_accepts_are_refused() -> None:
    text = "f(a=1)\n"

    def lint(current: str) -> list[Diagnostic]:
        return [_finding((Edit.insertion(Location(1, 6), ", a=2"),))] if current == text else []

    outcome = fix_text(text, lint)
    assert outcome.error is not None and "keyword argument repeated" in outcome.error


def test_needed_imports_are_added_once_after_docstring_and_future() -> None:
    text = '"""Doc."""\nfrom __future__ import annotations\n\nimport sys\n\nx = path.join("a")\ny = path.join("b")\n'

    def lint(current: str) -> list[Diagnostic]:
        if "os.path" in current:
            return []
        return [
            _finding((Edit(Location(6, 5), Location(6, 9), "os.path"),), ("import os",)),
            _finding((Edit(Location(7, 5), Location(7, 9), "os.path"),), ("import os", "import sys")),
        ]

    outcome = fix_text(text, lint)
    assert outcome.error is None
    assert outcome.text == (
        '"""Doc."""\nfrom __future__ import annotations\n\nimport os\nimport sys\n\n'
        'x = os.path.join("a")\ny = os.path.join("b")\n'
    )


def test_fix_source_is_the_programmatic_entry_point() -> None:
    outcome = fix_source("train.py", UNSAFE_ONLY, unsafe=True)
    assert outcome.error is None and outcome.changed
    assert [d.code for d in outcome.applied] == ["DSL205"]
    assert fix_source("train.py", UNSAFE_ONLY).text == UNSAFE_ONLY


def test_write_is_atomic_and_keeps_mode(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_bytes(b"x = 1\r\n")
    os.chmod(script, 0o600)
    source = read_source(script)
    write_source(source, "x = 2\r\n")
    assert script.read_bytes() == b"x = 2\r\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


@pytest.mark.parametrize("args", [["fix", "--help"]])
def test_cli_entry_point(args: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "dslint", *args], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0
    assert "--unsafe-fixes" in result.stdout and "--diff" in result.stdout


def test_an_internal_error_in_one_file_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dslint.commands.fix as fix_command

    real = fix_command.fix_source

    def failing(path: str, text: str, **options: object) -> object:
        if path.endswith("bad.py"):
            raise RuntimeError("boom")
        return real(path, text, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(fix_command, "fix_source", failing)
    (tmp_path / "bad.py").write_text(SAFE, encoding="utf-8")
    good = tmp_path / "good.py"
    good.write_text(SAFE, encoding="utf-8")
    code, _, err = _invoke(str(tmp_path))
    assert code == 2
    assert "bad.py: internal error: RuntimeError: boom" in err
    assert good.read_text(encoding="utf-8") == SAFE_FIXED
    assert (tmp_path / "bad.py").read_text(encoding="utf-8") == SAFE


def _check_output(folder: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["check", "--isolated", "--quiet", str(folder)])
    return result.exit_code, sorted(line for line in result.stdout.splitlines() if ": DSL" in line)


def _copy_project(name: str, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / name
    shutil.copytree(ROOT / "fixtures" / "projects" / name, target, ignore=shutil.ignore_patterns("expected.txt"))
    return target


def test_fix_fixes_what_check_finds_through_the_project_index(tmp_path: Path) -> None:
    """A move inside a builder that another module passes to initialize is a finding only the project index
    knows; `fix` uses the same index as `check`, so it fixes it, and what remains is what `check` then says."""
    project = _copy_project("model_builders", tmp_path)
    before_code, before = _check_output(project)
    assert before_code == 1 and any(line.startswith(f"{project}/builders.py") for line in before), before
    code, out, err = _invoke("--isolated", "--unsafe-fixes", str(project))
    assert "builders.py: fixed DSL101" in out, out + err
    assert ".cuda()" not in (project / "builders.py").read_text(encoding="utf-8")
    after_code, after = _check_output(project)
    remaining = sorted(line for line in out.splitlines() if ": DSL" in line and " fixed " not in line)
    assert remaining == after and code == after_code, (out, after)


def test_fix_reports_the_cross_file_findings_it_cannot_fix_as_check_does(tmp_path: Path) -> None:
    """Findings that need another file's fact and have no fix remain in `fix`'s report, as `check` lists them,
    with the same exit status."""
    project = _copy_project("engine_helpers", tmp_path)
    code, out, err = _invoke("--isolated", str(project))
    listed = sorted(line for line in out.splitlines() if ": DSL" in line and " fixed " not in line)
    check_code, checked = _check_output(project)
    assert listed == checked and checked, (out + err, checked)
    assert code == check_code == 1


def test_fix_leaves_a_config_key_alone_that_its_script_replaces_before_initialize(tmp_path: Path) -> None:
    """`check` knows (project index) that the launched script sets `train_batch_size` in code before
    initialize, so the file's "auto" there is not DeepSpeed's problem and no finding is shown; `fix` reads the
    file the same way and does not remove the entry (it would change what no finding flagged)."""
    (tmp_path / "ds.json").write_text(
        '{\n  "train_batch_size": "auto",\n  "train_micro_batch_size_per_gpu": 4,\n'
        '  "gradient_accumulation_steps": 2\n}\n',
        encoding="utf-8",
    )
    (tmp_path / "train.py").write_text(
        "import argparse\nimport json\n\nimport deepspeed\nimport torch\n\n\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        '    parser.add_argument("--ds_config", default="ds.json")\n'
        "    args = parser.parse_args()\n"
        "    with open(args.ds_config) as handle:\n"
        "        settings = json.load(handle)\n"
        '    settings["train_batch_size"] = 64\n'
        "    model = torch.nn.Linear(8, 8)\n"
        "    engine, _, _, _ = deepspeed.initialize(model=model, config=settings)\n"
        "    return engine\n",
        encoding="utf-8",
    )
    (tmp_path / "run.sh").write_text("#!/bin/bash\ndeepspeed train.py --ds_config ds.json\n", encoding="utf-8")
    check_code, checked = _check_output(tmp_path)
    assert not any("ds.json" in line for line in checked), checked
    before = (tmp_path / "ds.json").read_text(encoding="utf-8")
    code, out, err = _invoke("--isolated", "--unsafe-fixes", str(tmp_path))
    assert (tmp_path / "ds.json").read_text(encoding="utf-8") == before, out + err
    assert code == check_code, out + err

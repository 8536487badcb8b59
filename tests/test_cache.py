"""The result cache (dslint/lint/cache.py): a warm run prints what a cold one prints, byte for byte; a change in
any file a result depends on (the file, a config it reads, a launcher that names it) is seen; a corrupt, foreign
or truncated entry is rebuilt; two runs at once leave a sound cache; `dslint clean` removes it."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES

import dslint.lint.cache as cache_module
from dslint.cli import main
from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Related, Severity
from dslint.lint.cache import DIRECTORY_NAME, ResultCache, decode, default_directory, encode
from dslint.lint.result import FileResult

REPOSITORY = FIXTURES.parent


def check(cwd: Path, *args: str) -> str:
    """`dslint check` in-process, in `cwd`; the JSON report."""
    runner = CliRunner()
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        outcome = runner.invoke(main, ["check", "--output-format", "json", "-q", *args], catch_exceptions=False)
    finally:
        os.chdir(previous)
    assert outcome.exit_code in (0, 1), outcome.output
    return outcome.stdout


@functools.cache
def uncached(cwd: Path, path: str) -> str:
    """The report without the cache, the reference the cached runs must print: made once per target for all the
    tests that compare against it (an uncached run reads and writes no cache, so its report never changes)."""
    return check(cwd, path, "--no-cache")


def entries(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file() and p.parent != cache and not p.name.startswith(".tmp")]


@pytest.mark.parametrize("target", ["fixtures", *sorted(p.name for p in (FIXTURES / "projects").iterdir())])
def test_a_warm_run_prints_what_a_cold_one_prints(target: str, tmp_path: Path) -> None:
    cwd, path = (REPOSITORY, "fixtures") if target == "fixtures" else (FIXTURES / "projects" / target, ".")
    expected = uncached(cwd, path)
    cache = tmp_path / "cache"
    cold = check(cwd, path, "--cache-dir", str(cache))
    assert entries(cache)
    warm = check(cwd, path, "--cache-dir", str(cache))
    assert cold == expected
    assert warm == expected


def test_every_diagnostic_field_round_trips() -> None:
    diagnostic = Diagnostic(
        "DSL204",
        "slug",
        "message \udcff é",
        Severity.WARNING,
        "a/b.ipynb",
        Location(3, 4),
        Location(3, 9),
        Fix((Edit(Location(1, 1), Location(1, 2), "x"),), Applicability.UNSAFE, "do it", ("import os",)),
        cell=2,
        related=(Related("run.sh", 2, 1, "deepspeed launches b.py"),),
    )
    result = FileResult("a/b.ipynb", [diagnostic], parsed=True, text="text\n", encoding="latin-1", suppressed=2)
    import json

    back = decode(json.loads(json.dumps(encode(result))))
    assert back == result
    assert back.diagnostics[0].fix == diagnostic.fix
    assert back.diagnostics[0].related == diagnostic.related


def _project(root: Path) -> None:
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "ds_z2.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}\n')
    (root / "configs" / "ds_z3.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 3}}\n')
    (root / "run.sh").write_text("deepspeed train.py --deepspeed_config configs/ds_z3.json\n")
    (root / "train.py").write_text(
        "import deepspeed\nimport torch\n\n\n"
        "def main(args, model):\n"
        "    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())\n"
        '    torch.save(engine.module.state_dict(), "final.pt")\n'
    )
    (root / "literal.py").write_text(
        "import deepspeed\n\n\n"
        "def main(model):\n"
        '    engine, _, _, _ = deepspeed.initialize(model=model, config="own.json")\n'
        "    engine.step()\n"
    )
    (root / "own.txt").write_text("not a config the walk finds\n")


def test_a_launcher_that_changes_is_seen(tmp_path: Path) -> None:
    _project(tmp_path / "p")
    cache = str(tmp_path / "cache")
    first = check(tmp_path / "p", ".", "--cache-dir", cache)
    assert "DSL204" in first
    (tmp_path / "p" / "run.sh").write_text("deepspeed train.py --deepspeed_config configs/ds_z2.json\n")
    second = check(tmp_path / "p", ".", "--cache-dir", cache)
    assert second == check(tmp_path / "p", ".", "--no-cache")
    assert "DSL204" not in second


def test_a_config_read_through_a_script_that_changes_is_seen(tmp_path: Path) -> None:
    """own.json is not among the files checked (only literal.py is named): its findings come through the
    script, and the script's result depends on it."""
    root = tmp_path / "p"
    _project(root)
    cache = str(tmp_path / "cache")
    config = root / "own.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, "bf16": {"enabled": true}}\n')
    flagged = check(root, "literal.py", "--cache-dir", cache)
    assert "own.json" in flagged
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}}\n')
    assert check(root, "literal.py", "--cache-dir", cache) == check(root, "literal.py", "--no-cache")
    config.unlink()  # a config that is gone is a change too
    assert check(root, "literal.py", "--cache-dir", cache) == check(root, "literal.py", "--no-cache")
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, "bf16": {"enabled": true}}\n')
    assert check(root, "literal.py", "--cache-dir", cache) == flagged


def test_settings_are_part_of_the_key(tmp_path: Path) -> None:
    _project(tmp_path / "p")
    cache = str(tmp_path / "cache")
    assert "DSL204" in check(tmp_path / "p", ".", "--cache-dir", cache)
    assert "DSL204" not in check(tmp_path / "p", ".", "--cache-dir", cache, "--ignore", "DSL204")


@pytest.fixture(scope="module")
def projects_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache that one run over fixtures/projects filled; each damage test damages its own copy."""
    cache = tmp_path_factory.mktemp("projects") / "cache"
    check(REPOSITORY, "fixtures/projects", "--cache-dir", str(cache))
    return cache


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "empty"])
def test_a_damaged_entry_is_ignored_and_rebuilt(damage: str, tmp_path: Path, projects_cache: Path) -> None:
    cache = tmp_path / "cache"
    expected = uncached(REPOSITORY, "fixtures/projects")
    shutil.copytree(projects_cache, cache)
    stored = entries(cache)
    assert stored
    other = stored[0].read_bytes()
    for entry in stored:
        data = entry.read_bytes()
        damaged = {
            "garbage": b"\x80\x00not json",
            "truncated": data[: len(data) // 2],
            "foreign": other,
            "empty": b"",
        }[damage]
        entry.write_bytes(damaged)
    assert check(REPOSITORY, "fixtures/projects", "--cache-dir", str(cache)) == expected
    assert check(REPOSITORY, "fixtures/projects", "--cache-dir", str(cache)) == expected  # rebuilt


def test_two_runs_at_once_leave_a_sound_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = uncached(REPOSITORY, "fixtures")
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    argv = [sys.executable, "-m", "dslint", "check", "-q", "--output-format", "json", "--cache-dir", str(cache)]
    runs = [
        subprocess.Popen([*argv, "fixtures"], cwd=REPOSITORY, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [run.communicate()[0] for run in runs]
    assert outputs == [expected, expected]
    assert not [p for p in cache.rglob(".tmp-*")]
    assert check(REPOSITORY, "fixtures", "--cache-dir", str(cache)) == expected


def test_the_default_cache_lives_in_the_project_root_and_ignores_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DSLINT_CACHE_DIR", raising=False)
    _project(tmp_path / "p")
    (tmp_path / "p" / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "p" / "configs" / "deeper").mkdir()
    assert default_directory(tmp_path / "p" / "configs" / "deeper") == tmp_path / "p" / DIRECTORY_NAME
    check(tmp_path / "p", ".")
    folder = tmp_path / "p" / DIRECTORY_NAME
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert CliRunner().invoke(main, ["clean", "--cache-dir", str(folder)]).exit_code == 0
    assert not folder.exists()


def test_clean_leaves_a_folder_that_is_not_a_cache(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep\n")
    outcome = CliRunner().invoke(main, ["clean", "--cache-dir", str(tmp_path / "mine")])
    assert outcome.exit_code == 2
    assert (tmp_path / "mine" / "notes.txt").exists()


def test_a_state_is_read_once_per_run(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    cache = ResultCache(tmp_path / "cache")
    first = cache.state(str(path))
    path.write_text("x = 2\n")
    assert cache.state(str(path)) == first
    assert ResultCache(tmp_path / "cache").state(str(path)) != first
    assert cache.state(str(tmp_path / "gone.json")) == "-"


def test_a_warm_run_without_findings_to_judge_imports_no_libcst(tmp_path: Path) -> None:
    """Served from the cache, a run parses nothing: neither the index nor the report needs libcst (or the rule
    modules that import it), so a warm run does not pay for importing it."""
    (tmp_path / "train.py").write_text(
        "import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config='c.json')\n"
    )
    (tmp_path / "util.py").write_text("def helper(x):\n    return x\n")
    probe = (
        "import sys\n"
        "from dslint.cli import main\n"
        "try:\n"
        "    main(['check', '-q', '--exit-zero', '--cache-dir', sys.argv[1], '.'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('libcst' in sys.modules, file=sys.stderr)\n"
    )
    cache = str(tmp_path / "cache")
    runs = [
        subprocess.run([sys.executable, "-c", probe, cache], cwd=tmp_path, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert runs[1].stderr.strip().splitlines()[-1] == "False"  # (the cold run parsed in a worker process)
    assert runs[0].stdout == runs[1].stdout


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test count as older than the runs after it: no margin for a coarse clock (a file's
    change time cannot be put back; the margin itself is `test_a_file_as_new_as_the_run_is_not_kept`'s)."""
    monkeypatch.setattr(cache_module, "RACY_NS", 0)


def _written(path: Path, text: str) -> None:
    path.write_text(text)
    time.sleep(0.02)  # the next run starts after the file's times


def test_a_kept_hash_is_served_by_stat_and_any_write_reads_the_file_again(tmp_path: Path, settled: None) -> None:
    """A run keeps the content hashes it read (`keep_states`); the next one serves a file whose stat is the same
    without reading it. A write that keeps the size and puts the modification time back still changes the change
    time, which nothing but the kernel sets: the file is read again."""
    path = tmp_path / "a.py"
    _written(path, "x = 1\n")
    first = ResultCache(tmp_path / "cache")
    hashed = first.state(str(path))
    first.keep_states()
    assert (tmp_path / "cache" / "v1" / "states.json").is_file()

    served = ResultCache(tmp_path / "cache")
    kept = served._kept_states()[os.path.abspath(path)]
    served._kept = {os.path.abspath(path): [*kept[:4], "f" * 32]}  # a kept hash that reading would not give
    assert served.state(str(path)) == "f" * 32  # served by stat: the file was not read

    before = os.stat(path)
    path.write_text("x = 2\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the modification time put back
    again = ResultCache(tmp_path / "cache")
    assert again.state(str(path)) != hashed  # its change time moved: read and hashed again


def test_a_file_as_new_as_the_run_is_not_kept(tmp_path: Path) -> None:
    """A file written in the run's first moments (or in the same timestamp tick as its start) could change again
    without a visible difference in its times: its hash is not kept."""
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    cache = ResultCache(tmp_path / "cache")
    cache.state(str(path))
    cache.keep_states()
    assert not (tmp_path / "cache" / "v1" / "states.json").exists()


def test_warm_runs_with_kept_hashes_print_what_a_cold_one_prints(tmp_path: Path, settled: None) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / sorted(p.name for p in (FIXTURES / "projects").iterdir())[0], project)
    time.sleep(0.02)
    cold = check(project, ".", "--no-cache")
    cache = str(tmp_path / "cache")
    assert check(project, ".", "--cache-dir", cache) == cold
    assert (tmp_path / "cache" / "v1" / "states.json").is_file()
    assert check(project, ".", "--cache-dir", cache) == cold


def test_the_pack_serves_a_warm_run_and_a_stale_pack_entry_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entries a run used are packed in one file; the next run is served from it, with no entry file read
    (they are all gone here); an entry whose input changed is rebuilt, from the pack as from its file. (The
    project's few files count as many here.)"""
    monkeypatch.setattr(cache_module, "PACKED_RUN", 1)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / "launchers", project)
    expected = uncached(project, ".")
    cache = tmp_path / "cache"
    assert check(project, ".", "--cache-dir", str(cache)) == expected
    pack = cache / f"v{cache_module.FORMAT}" / cache_module.PACK
    assert pack.is_file()
    for entry in entries(cache):
        if entry.name not in (cache_module.PACK, cache_module.STATES):
            entry.unlink()
    assert check(project, ".", "--cache-dir", str(cache)) == expected
    assert [e.name for e in entries(cache) if e.name not in (cache_module.PACK, cache_module.STATES)] == []
    script = project / "train.py"
    script.write_text(script.read_text() + "\n# edited\n")
    assert check(project, ".", "--cache-dir", str(cache)) == uncached_now(project)


def uncached_now(cwd: Path) -> str:
    """The report without the cache for a project just edited (not memoised)."""
    return check(cwd, ".", "--no-cache")


def test_a_run_over_a_few_files_neither_reads_nor_writes_the_pack(tmp_path: Path) -> None:
    """A pre-commit hook's run over two files: their entries' own files, the whole project's pack left alone."""
    cache = ResultCache(tmp_path / "cache")
    cache.expect(2)
    cache.put("ab" * 32, FileResult("x.py", []), ())
    assert cache.get("ab" * 32) == FileResult("x.py", [])
    cache.keep_states()
    assert not (tmp_path / "cache" / f"v{cache_module.FORMAT}" / cache_module.PACK).exists()
    many = ResultCache(tmp_path / "cache")
    many.expect(cache_module.PACKED_RUN)
    assert many.get("ab" * 32) == FileResult("x.py", [])
    many.keep_states()
    assert (tmp_path / "cache" / f"v{cache_module.FORMAT}" / cache_module.PACK).is_file()


def test_a_settings_file_that_changes_is_seen(tmp_path: Path) -> None:
    """attr_trainer.py's config is the one the project's settings files give `ds_config_file` (`settings_entries.
    project_entry`): a settings file is an input of its result, read or served from the cache."""
    root = tmp_path / "settings_configs"
    shutil.copytree(FIXTURES / "projects" / "settings_configs", root)
    cache = str(tmp_path / "cache")
    flagged = check(root, ".", "--cache-dir", cache)
    assert "DSL204" in flagged
    (root / "configs" / "ds_engine_z2.json").write_text(
        '{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}\n'
    )
    settings = root / "configs" / "trainer.yaml"
    settings.write_text(settings.read_text().replace("ds_engine_z3.json", "ds_engine_z2.json"))
    quiet = check(root, ".", "--cache-dir", cache)
    assert quiet == check(root, ".", "--no-cache") and "DSL204" not in quiet


def test_every_script_answered_from_the_settings_files_depends_on_them(tmp_path: Path) -> None:
    """pkg/trainer.py and sft.py both take their config from the settings files' one `deepspeed`: the files are
    inputs of each result, the second asker's too, whose answer the first one's read is reused for."""
    root = tmp_path / "settings_configs"
    shutil.copytree(FIXTURES / "projects" / "settings_configs", root)
    cache = str(tmp_path / "cache")
    assert check(root, ".", "--cache-dir", cache, "-j", "1").count('"code": "DSL208"') == 2
    for name in ("default.yaml", "sft_short.json", "sft_long.json"):
        path = root / "configs" / name
        path.write_text(path.read_text().replace("ds_zero3.json", "ds_zero2.json"))
    quiet = check(root, ".", "--cache-dir", cache, "-j", "1")
    assert quiet == check(root, ".", "--no-cache") and "DSL208" not in quiet

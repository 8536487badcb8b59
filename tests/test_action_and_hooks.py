"""action.yml and .pre-commit-hooks.yaml: parsed, and their commands run here as GitHub and pre-commit would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import yaml
from test_report import SCHEMA, parse_workflow_commands

import dslint
from dslint.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
BAD = ROOT / "fixtures" / "fix" / "model_moved_before_initialize.in.py"
EXPRESSION = re.compile(r"\$\{\{\s*(inputs|github|steps)\.([A-Za-z0-9_.-]+)\s*\}\}")


def test_action_is_a_composite_action_whose_scripts_take_no_expressions() -> None:
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    assert set(inputs) == {"args", "version", "sarif-file", "fail-on-findings"}
    for step in ACTION["runs"]["steps"]:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], "expressions in `run:` allow script injection; pass them through env"
        for value in step.get("env", {}).values():
            for scope, name in EXPRESSION.findall(value):
                assert scope == "github" or name in inputs, value
    assert ACTION["outputs"]["sarif-file"]["value"] == "${{ steps.check.outputs.sarif-file }}"
    assert ACTION["outputs"]["version"]["value"] == "${{ steps.install.outputs.version }}"


def _substitute(value: str, inputs: dict[str, str], github: dict[str, str]) -> str:
    def lookup(match: re.Match[str]) -> str:
        scope, name = match.groups()
        return inputs[name] if scope == "inputs" else github[name]

    return EXPRESSION.sub(lookup, value)


class Runner:
    """Runs the action's steps as GitHub's runner does: `bash --noprofile --norc -eo pipefail {0}`, inputs with
    their defaults, GITHUB_PATH / GITHUB_OUTPUT files between steps."""

    def __init__(self, tmp: Path, action_path: Path) -> None:
        self.tmp = tmp
        self.workspace = tmp / "workspace"
        self.workspace.mkdir()
        (self.workspace / "train.py").write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
        (self.workspace / "clean.py").write_text("import deepspeed\n", encoding="utf-8")
        self.runner_temp = tmp / "runner_temp"
        self.runner_temp.mkdir()
        self.github_path = tmp / "github_path"
        self.github_path.write_text("", encoding="utf-8")
        self.action_path = action_path

    def run_step(self, index: int, inputs: dict[str, str], **github: str) -> subprocess.CompletedProcess[str]:
        step = ACTION["runs"]["steps"][index]
        values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        values.update(inputs)
        context = {
            "action_path": str(self.action_path),
            "server_url": "https://github.com",
            "action_repository": "",
            "action_ref": "",
            **github,
        }
        output = self.tmp / "github_output"
        output.write_text("", encoding="utf-8")
        # As on a runner: nothing of this test's own environment (its venv, pip or dslint settings) leaks in.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSLINT", "PYTHON", "PIP_", "VIRTUAL_ENV"))}
        extra_path = [line for line in self.github_path.read_text(encoding="utf-8").splitlines() if line]
        env.update(
            {
                "PATH": os.pathsep.join([*reversed(extra_path), str(Path(sys.executable).parent), env["PATH"]]),
                "RUNNER_TEMP": str(self.runner_temp),
                "GITHUB_PATH": str(self.github_path),
                "GITHUB_OUTPUT": str(output),
                "GITHUB_STEP_SUMMARY": str(self.tmp / "step_summary.md"),
                "GITHUB_WORKSPACE": str(self.workspace),
            }
        )
        env.update({key: _substitute(value, values, context) for key, value in step.get("env", {}).items()})
        script = self.tmp / f"step{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    def outputs(self) -> dict[str, str]:
        lines = (self.tmp / "github_output").read_text(encoding="utf-8").splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    tmp = tmp_path_factory.mktemp("action")
    action_path = tmp / "action"
    action_path.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "action.yml"):
        shutil.copy(ROOT / name, action_path / name)
    for package in ("dslint", "runtime_check"):
        shutil.copytree(ROOT / package, action_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    runner = Runner(tmp, action_path)
    result = runner.run_step(0, {})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (runner.runner_temp / "dslint-venv" / "bin" / "dslint").exists()
    assert runner.outputs() == {"version": dslint.__version__}  # installed from the action's own checkout
    return runner


def test_action_annotates_findings_and_fails(installed: Runner) -> None:
    result = installed.run_step(1, {"args": "train.py clean.py"})
    assert result.returncode == 1, result.stderr
    commands = parse_workflow_commands(result.stdout)
    assert [(name, props["file"], props["line"]) for name, props, _ in commands] == [
        ("warning", "train.py", "17"),
        ("warning", "train.py", "18"),
    ]
    assert installed.outputs() == {}
    # the step summary lists every finding (annotations are capped per step)
    summary = (installed.tmp / "step_summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### dslint: 2 findings in 1 file\n")
    assert "| warning | DSL101 | train.py:17:13 |" in summary and "| warning | DSL104 | train.py:18:" in summary


def test_action_writes_sarif_and_can_annotate_only(installed: Runner) -> None:
    result = installed.run_step(
        1,
        {"args": "train.py", "sarif-file": "dslint.sarif", "fail-on-findings": "false"},
        action_repository="owner/dslint",
        action_ref="v1",
    )
    assert result.returncode == 0, result.stderr
    assert len(parse_workflow_commands(result.stdout)) == 2
    assert installed.outputs() == {"sarif-file": "dslint.sarif"}
    assert "::warning title=dslint::no SARIF report" not in result.stdout
    document = json.loads((installed.workspace / "dslint.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    assert rules[0]["helpUri"] == f"https://github.com/owner/dslint/blob/v1/dslint/rules/pages/{rules[0]['id']}.md"
    assert len(document["runs"][0]["results"]) == 2


def test_action_announces_no_sarif_output_it_did_not_write(installed: Runner) -> None:
    result = installed.run_step(
        1, {"args": "train.py", "sarif-file": "no/such/dir/dslint.sarif", "fail-on-findings": "false"}
    )
    assert result.returncode == 0, result.stderr
    assert installed.outputs() == {}
    assert "::warning title=dslint::no SARIF report was written" in result.stdout


def test_action_args_may_name_a_subcommand(installed: Runner) -> None:
    checked = installed.run_step(1, {"args": "check train.py"})
    assert checked.returncode == 1 and len(parse_workflow_commands(checked.stdout)) == 2
    diff = installed.run_step(1, {"args": "fix --diff --unsafe-fixes train.py"})
    assert diff.returncode == 1 and "-    model.half()" in diff.stdout and not parse_workflow_commands(diff.stdout)
    assert "model.half()" in (installed.workspace / "train.py").read_text(encoding="utf-8"), "--diff writes nothing"
    only = installed.run_step(1, {"args": "fix --diff --unsafe-fixes train.py", "fail-on-findings": "false"})
    assert only.returncode == 0
    rules = installed.run_step(1, {"args": "rules --output-format json"})
    assert rules.returncode == 0 and json.loads(rules.stdout)[0]["code"] == "DSL001"


def test_action_default_args_check_the_workspace(installed: Runner) -> None:
    result = installed.run_step(1, {})
    assert result.returncode == 1
    assert {props["file"] for _, props, _ in parse_workflow_commands(result.stdout)} == {"train.py"}


# -- pre-commit ------------------------------------------------------------------------------------------------


def _hook(hook_id: str) -> dict[str, Any]:
    return next(hook for hook in HOOKS if hook["id"] == hook_id)


def test_hooks_are_declared() -> None:
    assert [hook["id"] for hook in HOOKS] == ["dslint", "dslint-fix"]
    for hook in HOOKS:
        assert hook["language"] == "python"
        program, command, *options = hook["entry"].split()
        assert program == "dslint" and command in ("check", "fix")
        assert "--force-exclude" in options, "pre-commit names files itself: exclude must still apply"
    # what each hook is handed: scripts and notebooks; `dslint check` also every config file it reads
    checked = ["train.py", "stubs.pyi", "proto.ipynb", "ds_config.json", "zero3.hjson", "accelerate.yaml", "a.yml"]
    skipped = ["README.md", "launch.sh", "pyproject.toml", "config.json.bak"]
    assert [name for name in checked + skipped if _selects(_hook("dslint"), name)] == checked
    assert [name for name in checked + skipped if _selects(_hook("dslint-fix"), name)] == ["train.py", "proto.ipynb"]


# The tags identify (pre-commit's file classifier) gives these names: HJSON has none, hence `files:` patterns.
TAGS = {".py": {"python"}, ".pyi": {"pyi"}, ".ipynb": {"json", "jupyter"}, ".json": {"json"}, ".yaml": {"yaml"}}
TAGS[".yml"] = TAGS[".yaml"]


def _selects(hook: dict[str, Any], name: str) -> bool:
    """pre-commit's selection: `files` and not `exclude` (regexes searched in the path), every tag of `types`,
    one of `types_or` (tags of a regular text file, by extension)."""
    suffix = Path(name).suffix
    tags = {"file", "text", *TAGS.get(suffix, set())} if suffix not in (".bak",) else {"file", "binary"}
    return (
        re.search(hook.get("files", ""), name) is not None
        and not (hook.get("exclude") and re.search(hook["exclude"], name))
        and set(hook.get("types", ["file"])) <= tags
        and (not hook.get("types_or") or bool(set(hook["types_or"]) & tags))
    )


def _run_hook(hook_id: str, files: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    _, command, *options = _hook(hook_id)["entry"].split()
    env = {k: v for k, v in os.environ.items() if k != "DSLINT_OUTPUT_FORMAT"}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "dslint", command, *options, *_hook(hook_id).get("args", []), *files]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_check_hook_as_pre_commit_runs_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.dslint]\nextend-exclude = ["vendored"]\n', encoding="utf-8")
    (tmp_path / "vendored").mkdir()
    for name in ("train.py", "vendored/third_party.py"):
        (tmp_path / name).write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "clean.py").write_text("import deepspeed\n", encoding="utf-8")
    assert _run_hook("dslint", ["clean.py", "vendored/third_party.py"], tmp_path).returncode == 0
    failing = _run_hook("dslint", ["clean.py", "train.py"], tmp_path)
    assert failing.returncode == 1
    assert {line.split(":")[0] for line in failing.stdout.splitlines()} == {"train.py"}


def test_every_subcommand_is_listed_and_found() -> None:
    """`fix` and the other lazily imported commands are listed (`dslint --help`) and resolve."""
    context = click.Context(cli)
    names = cli.list_commands(context)
    assert {"check", "fix", "lsp", "server", "rules", "explain", "settings", "graph", "clean"} <= set(names)
    assert all(isinstance(cli.get_command(context, name), click.Command) for name in names)


def test_fix_hook_as_pre_commit_runs_it(tmp_path: Path) -> None:
    """The hook applies safe fixes only (DSL101's is unsafe: the file stays, exit 1), all with --unsafe-fixes."""
    (tmp_path / "train.py").write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
    safe = _run_hook("dslint-fix", ["train.py"], tmp_path)
    assert safe.returncode == 1, safe.stderr
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == BAD.read_text(encoding="utf-8")
    hook = {**_hook("dslint-fix"), "args": ["--unsafe-fixes"]}
    _, command, *options = hook["entry"].split()
    env = {k: v for k, v in os.environ.items() if k != "DSLINT_OUTPUT_FORMAT"}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "dslint", command, *options, *hook["args"], "train.py"]
    unsafe = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert unsafe.returncode == 0, unsafe.stdout + unsafe.stderr
    fixed = BAD.with_name(BAD.name.replace(".in.py", ".out.py")).read_text(encoding="utf-8")
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == fixed


SCRIPT_WITH_CONFIG = """import deepspeed

engine, *_ = deepspeed.initialize(model=model, config="ds_config.json")
"""
GOOD_CONFIG = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {"stage": 2}\n}\n'


def _repository_with_a_changed_config(tmp_path: Path) -> Path:
    """A git repository whose script and config were committed clean; then only the config changes (staged)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(SCRIPT_WITH_CONFIG, encoding="utf-8")
    (repo / "ds_config.json").write_text(GOOD_CONFIG, encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "clean"], cwd=repo, check=True)
    typo = GOOD_CONFIG.replace("zero_optimization", "zero_optimisation")
    (repo / "ds_config.json").write_text(typo, encoding="utf-8")
    subprocess.run([*git, "add", "ds_config.json"], cwd=repo, check=True)
    return repo


def test_a_commit_touching_only_a_json_config_fails_the_check_hook(tmp_path: Path) -> None:
    repo = _repository_with_a_changed_config(tmp_path)
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    assert staged == ["ds_config.json"]
    selected = [name for name in staged if _selects(_hook("dslint"), name)]
    assert selected == ["ds_config.json"], "the hook must be handed a commit's config files"
    result = _run_hook("dslint", selected, repo)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("ds_config.json:3:3: DSL401 "), result.stdout


def test_real_pre_commit_fails_a_commit_touching_only_a_json_config(tmp_path: Path) -> None:
    """With pre-commit installed (on PATH, or `$DSLINT_TEST_PRE_COMMIT`): `pre-commit try-repo` installs this
    repository's hook as a user's `.pre-commit-config.yaml` would and runs it on the staged change."""
    program = os.environ.get("DSLINT_TEST_PRE_COMMIT") or shutil.which("pre-commit")
    if program is None:
        pytest.skip("pre-commit is not installed (set DSLINT_TEST_PRE_COMMIT to its executable)")
    repo = _repository_with_a_changed_config(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSLINT_OUTPUT", "PYTHONPATH"))}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "cache")
    result = subprocess.run(
        [program, "try-repo", str(ROOT), "dslint"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "dslint" in result.stdout and "Failed" in result.stdout, result.stdout
    assert "ds_config.json:3:3: DSL401 " in result.stdout, result.stdout

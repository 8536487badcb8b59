"""The README's install commands, CI workflow and pre-commit snippet agree with what the project declares, so a
user who copies them gets something that runs (each was also run as written on a fresh machine: see the
packaging and action tests, which build and install the package and run the action's steps)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def test_no_placeholder_repository_names() -> None:
    for text in (README, (ROOT / "action.yml").read_text(encoding="utf-8")):
        assert "OWNER/" not in text and "owner/dslint" not in text.lower()


def test_install_commands_name_real_extras() -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    (block,) = _blocks(_section("Install"), "sh")
    specs = []
    for line in block.splitlines():
        words = shlex.split(line.split("#", 1)[0])
        if words[:2] in (["pip", "install"], ["pipx", "install"]):
            specs.append(words[2])
    assert len(specs) == 4
    for spec in specs:
        match = re.fullmatch(r"\./dslint(?:\[(?P<extra>[a-z]+)\])?", spec)
        assert match, spec
        assert match["extra"] is None or match["extra"] in extras


def test_the_ci_workflow_uses_the_action_as_it_is_declared() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    (block,) = _blocks(_section("CI: the GitHub Action"), "yaml")
    workflow: dict[str, Any] = yaml.safe_load(block)
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["dslint"]["steps"]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    dslint_checkout = next(s for s in checkouts if "with" in s)
    ours = next(s for s in steps if s.get("uses", "").startswith("./"))
    assert ours["uses"] == "./" + dslint_checkout["with"]["path"]
    assert set(ours["with"]) <= set(action["inputs"])
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["if"].startswith("always()") and upload["with"]["sarif_file"] == ours["with"]["sarif-file"]
    assert "." not in ours["with"]["args"].split(), "`.` would check dslint's own checkout (.dslint/) too"


def test_the_pre_commit_snippet_runs_the_declared_hooks() -> None:
    declared = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))}
    (block,) = _blocks(_section("pre-commit"), "yaml")
    (repo,) = yaml.safe_load(block)["repos"]
    assert repo["repo"] == "local"
    for hook in repo["hooks"]:
        assert hook["language"] == "system"  # the dslint installed from the clone
        assert (hook["entry"], hook["files"]) == (declared[hook["id"]]["entry"], declared[hook["id"]]["files"])
    assert [hook["id"] for hook in repo["hooks"]] == list(declared)

"""dslint at the lowest versions its dependency ranges allow gives the same results as in the pinned test
environment: a range in pyproject.toml is a promise, and this is the test that keeps it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9_.-]+)\s*>=\s*(?P<version>[0-9][0-9A-Za-z.]*)\s*(?:;\s*(?P<marker>.+))?$"
)


def lowest_requirements() -> list[str]:
    """`name==lowest` for every runtime dependency that applies to this Python (each must have a lower bound)."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    pinned = []
    for dependency in dependencies:
        match = REQUIREMENT.match(dependency)
        assert match, f"runtime dependency without a plain lower bound: {dependency!r}"
        marker = match["marker"]
        if marker is not None:
            bound = re.fullmatch(r'python_version\s*<\s*"(\d+)\.(\d+)"', marker.strip())
            assert bound, f"unsupported marker in {dependency!r}"
            if sys.version_info[:2] >= (int(bound[1]), int(bound[2])):
                continue
        pinned.append(f"{match['name']}=={match['version']}")
    return pinned


def test_every_runtime_dependency_has_a_lower_bound() -> None:
    names = {requirement.split("==")[0] for requirement in lowest_requirements()}
    assert {"libcst", "click"} <= names


def _dslint(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSLINT", "PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [str(python), "-m", "dslint", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )


def test_lowest_allowed_dependencies_give_the_same_results(tmp_path: Path) -> None:
    home = tmp_path / "lowest"
    venv.EnvBuilder(with_pip=True).create(home)
    python = home / ("Scripts" if os.name == "nt" else "bin") / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *lowest_requirements()],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    for args in (
        ("check", "fixtures/", "--output-format", "json"),
        ("fix", "--unsafe-fixes", "--diff", "fixtures/"),
    ):
        lowest, pinned = _dslint(python, *args), _dslint(sys.executable, *args)
        assert (lowest.returncode, lowest.stdout) == (pinned.returncode, pinned.stdout), (args, lowest.stderr)
        assert lowest.stdout, args

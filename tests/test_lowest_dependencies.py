"""dslint at the lowest versions its dependency ranges allow gives the same results as in the pinned test
environment: a range in pyproject.toml is a promise, and this is the test that keeps it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from collections.abc import Callable
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


def _dslint(python: Path | str, *args: str, output: Path) -> Callable[[], tuple[int, str, str]]:
    """`python -m dslint ARGS` started, not awaited (the four runs below overlap: the suite's machine has two
    cores and pytest uses one); its output goes to files under `output`, so that no full pipe stalls it. Calling
    the result waits for it: (exit status, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSLINT", "PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(ROOT)
    output.mkdir(parents=True)
    with open(output / "stdout", "wb") as stdout, open(output / "stderr", "wb") as stderr:
        process = subprocess.Popen(
            [str(python), "-m", "dslint", *args], cwd=ROOT, env=env, stdout=stdout, stderr=stderr
        )

    def finish() -> tuple[int, str, str]:
        try:
            code = process.wait(timeout=900)
        finally:
            process.kill()  # nothing when it has ended; a test that failed before waiting leaves no process behind
        read = (output / "stdout").read_text(encoding="utf-8"), (output / "stderr").read_text(encoding="utf-8")
        return code, *read

    return finish


RUNS = (
    ("check", "fixtures/", "--output-format", "json", "--no-cache"),  # no cache: each run lints, none reads the other
    ("fix", "--unsafe-fixes", "--diff", "fixtures/"),
)


def test_lowest_allowed_dependencies_give_the_same_results(tmp_path: Path) -> None:
    # the runs at the pinned versions need no new venv: started first, they run while it is built
    pinned = [_dslint(sys.executable, *args, output=tmp_path / f"pinned-{n}") for n, args in enumerate(RUNS)]
    try:
        home = tmp_path / "lowest"
        venv.EnvBuilder(with_pip=False).create(home)  # the suite's own pip installs into it (`pip --python`)
        python = home / ("Scripts" if os.name == "nt" else "bin") / "python"
        install = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
             "--disable-pip-version-check", *lowest_requirements()],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        assert install.returncode == 0, install.stdout + install.stderr
        lowest = [_dslint(python, *args, output=tmp_path / f"lowest-{n}") for n, args in enumerate(RUNS)]
    except BaseException:
        for finish in pinned:
            finish()
        raise
    for args, low, pin in zip(RUNS, lowest, pinned, strict=True):
        (low_code, low_out, low_err), (pin_code, pin_out, _) = low(), pin()
        assert (low_code, low_out) == (pin_code, pin_out), (args, low_err)
        assert low_out, args

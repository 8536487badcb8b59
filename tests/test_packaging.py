"""The sdist and the wheel, built as the release workflow builds them (sdist first, the wheel from the sdist):
no setuptools warning (a deprecation today is a broken build on its date), the rule pages inside the package, the
SPDX license, and a wheel install whose language-server links lead to a page that exists."""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from dslint.framework.rule_pages import expected_pages

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "dslint", "runtime_check")
PAGES = "dslint/rules/pages/"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("DSLINT", "PYTHONPATH", "PIP_"))}


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(sdist, wheel built from the sdist, everything the two builds printed)."""
    base = tmp_path_factory.mktemp("packaging")
    tree = base / "tree"
    tree.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=ignore)
        else:
            shutil.copy2(source, tree / name)
    dist = base / "dist"
    # The build backend itself, as `python -m build --sdist` calls it, with every warning shown.
    sdist_build = _run(
        sys.executable,
        "-W",
        "always",
        "-c",
        f"import setuptools.build_meta as b; print(b.build_sdist({str(dist)!r}))",
        cwd=tree,
    )
    sdist = dist / sdist_build.stdout.strip().splitlines()[-1]
    unpacked = base / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (source_dir,) = unpacked.iterdir()
    # --check-build-dependencies: the pinned setuptools (the dev extra) is inside [build-system] requires.
    wheel_build = _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-v",
        "--no-deps",
        "--no-build-isolation",
        "--check-build-dependencies",
        "--disable-pip-version-check",
        "-w",
        str(dist),
        str(source_dir),
        cwd=base,
    )
    (wheel,) = dist.glob("*.whl")
    return sdist, wheel, sdist_build.stdout + sdist_build.stderr + wheel_build.stdout + wheel_build.stderr


def test_the_builds_print_no_setuptools_warning(built: tuple[Path, Path, str]) -> None:
    output = built[2]
    for word in ("Deprecat", "deprecated", "SetuptoolsWarning", "UserWarning", "!!"):
        assert word not in output, output


def test_the_wheel_carries_the_rule_pages_and_the_license(built: tuple[Path, Path, str]) -> None:
    _, wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        pages = {name.removeprefix(PAGES): archive.read(name).decode() for name in names if name.startswith(PAGES)}
        metadata_name = next(name for name in names if name.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(metadata_name).decode())
        license_text = archive.read(metadata_name.replace("METADATA", "licenses/LICENSE")).decode()
    assert pages == expected_pages(), "every rule's page, as the rules render it today"
    assert "dslint/py.typed" in names and "runtime_check/harness.py" in names
    assert not [name for name in names if name.startswith(("tests/", "fixtures/", "benchmarks/"))]
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "Apache License" in license_text and "Version 2.0" in license_text


def test_the_sdist_carries_what_the_wheel_is_built_from(built: tuple[Path, Path, str]) -> None:
    sdist, _, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "LICENSE", "PKG-INFO"} <= names
    assert {PAGES + page for page in expected_pages()} <= names


def test_a_wheel_install_links_to_rule_pages_that_exist(built: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, wheel, _ = built
    target = tmp_path / "site"
    _run(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--quiet",
        "--target",
        str(target),
        str(wheel),
        cwd=tmp_path,
    )
    script = (
        "import dslint, pathlib, urllib.parse, urllib.request\n"
        "from dslint.framework.rule_pages import rule_url\n"
        "url = rule_url('DSL401')\n"
        "path = pathlib.Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))\n"
        "print(pathlib.Path(dslint.__file__).parent)\n"
        "print(path.read_text(encoding='utf-8').splitlines()[1])\n"
    )
    env = {**_env(), "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    package, heading = done.stdout.splitlines()
    assert Path(package).is_relative_to(target), "the installed wheel, not this checkout, answered"
    assert heading == "# DSL401: unknown-top-level-config-key"


def test_the_release_workflows_wheel_check_passes_on_the_wheel(built: tuple[Path, Path, str], tmp_path: Path) -> None:
    """.github/workflows/release.yml tests an installed wheel with a Python script: it runs here on ours."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["build"]["steps"]
    commands = "\n".join(step.get("run", "") for step in steps)
    assert "python -m build" in commands and "twine check --strict dist/*" in commands
    run = next(step["run"] for step in steps if step.get("name", "").startswith("Test the wheel"))
    script = run.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    target = tmp_path / "site"
    _run(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--quiet",
        "--target",
        str(target),
        str(built[1]),
        cwd=tmp_path,
    )
    env = {**_env(), "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("rule pages in the wheel\n")

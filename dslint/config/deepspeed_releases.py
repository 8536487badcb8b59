"""The DeepSpeed releases dslint has a config schema for, and how to install one beside the others.

Used by the schema generator (`python -m dslint.config.generate_schema --all`) and by the differential tests;
never while linting. Each release is installed from its sdist with pip into a directory of its own under the
user cache (`~/.cache/dslint/deepspeed/<version>`), without dependencies and without build isolation, so that
its `setup.py` sees the torch already installed; it is then imported with that directory first on `sys.path`
(`python_path`). `DS_BUILD_OPS=0`: no op is compiled, the build takes seconds.

A release whose requirements the current environment does not meet gets them in its own directory as well:
DeepSpeed 0.10 imports `pydantic` 1 directly (0.11 to 0.14 use pydantic 1's API through `pydantic.v1`, which
pydantic 2 still ships; 0.15 on use pydantic 2), and 0.10 to 0.13 import `numpy.BUFSIZE`, gone in numpy 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Release -> the extra requirements it needs beside the environment's packages (installed into its directory).
# Every release from 0.10.0 whose schema differs from the patch before it (the first patch of each run of patches
# with the same schema: a pin is judged by the newest of these not newer than it, so by its own schema; 0.16.2
# lacks `tensor_parallel`, which 0.16.4 added), the latest patch of each minor, and the releases where behaviour
# dslint knows about moved: 0.18.3 (a direct loss.backward() supported under ZeRO), 0.19.2 (buffers no longer
# cast), 0.19.3 (gradient_clipping defaults to 1.0), 0.19.7 (removed features' keys refused; 0.19.6 the last
# without). 0.11.0 and 0.11.1 do not build here (their sdists' metadata step fails); 0.11.2 stands for them.
RELEASES: dict[str, tuple[str, ...]] = {
    "0.10.0": ("pydantic<2", "numpy<2"),
    "0.10.1": ("pydantic<2", "numpy<2"),
    "0.10.2": ("pydantic<2", "numpy<2"),
    "0.10.3": ("pydantic<2", "numpy<2"),
    "0.11.2": ("numpy<2",),
    "0.12.0": ("numpy<2",),
    "0.12.3": ("numpy<2",),
    "0.12.4": ("numpy<2",),
    "0.12.6": ("numpy<2",),
    "0.13.0": ("numpy<2",),
    "0.13.2": ("numpy<2",),
    "0.13.3": ("numpy<2",),
    "0.13.5": ("numpy<2",),
    "0.14.0": ("numpy<2",),
    "0.14.1": ("numpy<2",),
    "0.14.3": ("numpy<2",),
    "0.14.4": (),
    "0.14.5": (),
    "0.15.0": (),
    "0.15.4": (),
    "0.16.0": (),
    "0.16.2": (),
    "0.16.4": (),
    "0.16.5": (),
    "0.16.6": (),
    "0.16.9": (),
    "0.17.0": (),
    "0.17.1": (),
    "0.17.2": (),
    "0.17.5": (),
    "0.17.6": (),
    "0.18.0": (),
    "0.18.1": (),
    "0.18.2": (),
    "0.18.3": (),
    "0.18.4": (),
    "0.18.5": (),
    "0.18.6": (),
    "0.18.9": (),
    "0.19.0": (),
    "0.19.1": (),
    "0.19.2": (),
    "0.19.3": (),
    "0.19.4": (),
    "0.19.6": (),
    "0.19.7": (),
    "0.19.8": (),
}
DONE_MARKER = ".dslint-installed"


class InstallError(Exception):
    """pip could not install a release (no network, a failed build); the message has pip's last lines."""


def cache_root() -> Path:
    """Where releases are installed: `$DSLINT_DEEPSPEED_CACHE`, else the user cache (`$XDG_CACHE_HOME` or
    `~/.cache`) under `dslint/deepspeed`."""
    explicit = os.environ.get("DSLINT_DEEPSPEED_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dslint" / "deepspeed"


def target_dir(version: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / version


def _pip(arguments: list[str], target: Path) -> None:
    env = {**os.environ, "DS_BUILD_OPS": "0", "PYTHONPATH": str(target), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), *arguments]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-8:])
        raise InstallError(f"pip install {' '.join(arguments)} failed:\n{tail}")


def install(version: str, root: Path | None = None) -> Path:
    """Install DeepSpeed `version` (and the extra requirements it needs) into its own directory, once; the
    directory, to put first on `sys.path`. Raises InstallError."""
    target = target_dir(version, root)
    if (target / DONE_MARKER).exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    extras = RELEASES.get(version, ())
    if extras:
        _pip(list(extras), target)
    # The sdist: DeepSpeed's setup.py imports torch (and 0.10's imports deepspeed itself, hence PYTHONPATH).
    _pip(["--no-build-isolation", "--no-binary", "deepspeed", f"deepspeed=={version}"], target)
    (target / DONE_MARKER).write_text(version + "\n", encoding="utf-8")
    return target


def python_path(target: Path) -> str:
    """A PYTHONPATH with the release's directory first and dslint itself (this checkout) after it."""
    checkout = Path(__file__).resolve().parents[2]
    return os.pathsep.join([str(target), str(checkout)])

"""The DeepSpeed configs a project ships beside a script: the evidence left when the script takes its config from
the command line and no launcher of the project gives one (`deepspeed.add_config_arguments`, run by hand).

A rule that would warn "under ZeRO-3" for a stage it cannot read asks whether any config shipped there could be
ZeRO-3: when every one of them is known to run a lower stage, the warning has nothing to stand on
(`shipped_stages`). The other way round, when the config a script is handed comes from outside it (a command-line
option, a parameter) and cannot be read, but every DeepSpeed config the project ships, beside the script or in the
folders above it up to the project's root, runs ZeRO-3, the script runs ZeRO-3 (`shipped_zero3`): there is no
other config to run it with. A finding resting on that names each of those configs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dslint.config import facts as config_facts
from dslint.config.recognition import is_candidate, is_config_name, is_deepspeed_config
from dslint.config.tree import Object, node_at
from dslint.diagnostics import Related
from dslint.project.config_access import load_config_tree
from dslint.project.inputs import absolute, exists, record, shown_path

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext

# Folders beside a script where projects keep its configs.
CONFIG_FOLDERS = ("config", "configs", "ds_config", "ds_configs", "deepspeed", "deepspeed_configs")
MAX_SHIPPED = 40
LEVELS_ABOVE = 2  # folders above the script's searched for the project's configs (`src/train.py`, `configs/`)
# A folder holding one of these is the project's root: the search stops there.
ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
# ... and one holding one of these, unless it is a package of the project (`mlops/infra/README.md` beside an
# `__init__.py`: a package's notes, the project's configs above it)
LOOSE_ROOT_MARKERS = ("requirements.txt", "README.md")


def shipped_stages(script: str) -> list[int] | None:
    """The ZeRO stage of each DeepSpeed config file the project ships near `script`: in its folder and up to
    LEVELS_ABOVE folders above it (stopping at the project's root), each with its config folders (`configs/`...);
    None when there is none, too many to say, or one whose stage cannot be read."""
    found = _shipped(script, project_folders(script))
    return [stage for _, stage, _ in found] if found else None


def ships_only_lower_stages(context: ScriptContext) -> bool:
    """No launch of the script hands it a config (none is known, or they give none: the script finds its config
    itself), and every DeepSpeed config the project ships near it runs below stage 3 (`shipped_stages`): a
    config the script is handed but dslint cannot read shows no sign of ZeRO-3."""
    project = context.facts.project
    if project is not None and any(launch.option is not None for launch in project.launches):
        return False
    stages = shipped_stages(context.path)
    return stages is not None and max(stages) < 3


def shipped_single_steps(script: str) -> bool:
    """Every DeepSpeed config the project ships near `script` (as `shipped_stages` finds them) writes
    `gradient_accumulation_steps` 1 (at least one config; none "auto", absent or another value)."""
    candidates = files_near(project_folders(script), lambda entry: entry.is_file() and is_candidate(entry))
    if not candidates or len(candidates) > MAX_SHIPPED:
        return False
    found = 0
    for path in candidates:
        tree = load_config_tree(path, script)
        if not isinstance(tree, Object) or not is_deepspeed_config(tree, is_config_name(path)):
            continue
        steps = node_at(tree, "gradient_accumulation_steps")
        if steps is None or getattr(steps, "value", None) != 1:
            return False
        found += 1
    return found > 0


def shipped_zero3(script: str) -> tuple[Related, ...]:
    """Where each DeepSpeed config the project ships sets stage 3, when every one does (at least one): those of
    `script`'s folder and of up to LEVELS_ABOVE folders above it (stopping at the project's root), each with its
    config folders; () when there is none, one runs another stage or cannot be read, or there are too many."""
    found = _shipped(script, project_folders(script))
    if not found or any(stage != 3 for _, stage, _ in found):
        return ()
    return tuple(
        Related(shown_path(str(path)), line, column, "zero_optimization.stage 3") for path, _, (line, column) in found
    )


def project_folders(script: str) -> list[Path]:
    """`script`'s folder and up to LEVELS_ABOVE folders above it, stopping at the project's root."""
    folders = [Path(script).parent]
    for _ in range(LEVELS_ABOVE):
        if _is_root(folders[-1]) or folders[-1].parent == folders[-1]:
            break
        folders.append(folders[-1].parent)
    return folders


def config_folders_of(script: str) -> list[str]:
    """The folders (absolute) where a script's own configs lie: its folder and the one above it (unless its own is
    the project's root), each with its config folders (`configs/`, and one nested in it: `configs/deepspeed/`)."""
    folders = project_folders(script)[:2]
    found = []
    for folder in folders:
        found.append(folder)
        found.extend(folder / name for name in CONFIG_FOLDERS)
        found.extend(folder / name / inner for name in CONFIG_FOLDERS for inner in CONFIG_FOLDERS)
    return [absolute(str(folder)) for folder in found]


def _is_root(folder: Path) -> bool:
    if any(exists(folder / marker) for marker in ROOT_MARKERS):
        return True
    return any(exists(folder / marker) for marker in LOOSE_ROOT_MARKERS) and not exists(folder / "__init__.py")


def files_near(folders: list[Path], keep: Callable[[Path], bool]) -> list[Path] | None:
    """The files `keep` accepts in `folders` and their config folders (`configs/`...), each listing an input of the
    file's result (the result cache); None when one cannot be listed."""
    found: list[Path] = []
    for place in (place for folder in folders for place in (folder, *(folder / name for name in CONFIG_FOLDERS))):
        record(str(place))
        try:
            entries = sorted(place.iterdir()) if place.is_dir() else []
        except OSError:
            return None
        found.extend(entry for entry in entries if keep(entry))
    return found


def _shipped(script: str, folders: list[Path]) -> list[tuple[Path, int, tuple[int, int]]] | None:
    """Each DeepSpeed config file in `folders` and their config folders: its path, ZeRO stage and where the stage is
    written; None when there is none, too many, or one whose stage cannot be read."""
    candidates = files_near(folders, lambda entry: entry.is_file() and is_candidate(entry))
    if not candidates or len(candidates) > MAX_SHIPPED:
        return None
    found: list[tuple[Path, int, tuple[int, int]]] = []
    for path in candidates:
        tree = load_config_tree(path, script)
        if not isinstance(tree, Object) or not is_deepspeed_config(tree, is_config_name(path)):
            continue  # a JSON file of another tool
        stage = config_facts.zero_stage(tree)
        if stage is None:
            return None
        node = node_at(tree, "zero_optimization", "stage")
        found.append((path, stage, (node.start.line, node.start.column) if node is not None else (1, 1)))
    return found or None

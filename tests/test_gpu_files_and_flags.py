"""Split 4's shapes as fixtures, both ways, with their exact findings: a `torch.load` without a map location of
a file that holds GPU tensors (saved from the engine's state in another module, or DeepSpeed's own checkpoint
file) in a module without an engine (DSL202, fixtures/projects/gpu_saves); a torch autocast switched on by the
flag that also enables the engine's fp16 (DSL306, fixtures/precision_flags); and `deepspeed`/`torch` reaching a
module only through `from common import *` (DSL201, fixtures/projects/star_modules)."""

from __future__ import annotations

import os
from pathlib import Path

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

PREFIX = 'torch.load without map_location puts tensors back on cuda:0 on every rank; pass map_location="cpu"'


def _findings(folder: str, codes: set[str]) -> list[tuple[str, int, str, str, tuple[tuple[str, int], ...]]]:
    root = FIXTURES / folder
    files = discover([str(root)]).files
    index = index_project(files, [str(root)])
    found = []
    for result in lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index):
        assert isinstance(result, FileResult)
        for d in result.diagnostics:
            if d.code in codes:
                related = tuple((os.path.basename(r.path), r.line) for r in d.related)
                found.append((os.path.relpath(os.path.abspath(d.path), root), d.start.line, d.code, d.message, related))
    return sorted(found)


def _shown(where: str) -> str:
    return os.path.relpath(FIXTURES / "projects" / "gpu_saves" / where)


def test_loads_of_files_the_engine_wrote_from_gpu_tensors_name_the_save() -> None:
    found = _findings("projects/gpu_saves", {"DSL202"})
    assert found == [
        (
            "evaluate.py",
            9,
            "DSL202",
            f"{PREFIX} (weights.pt holds the engine's GPU tensors, saved at {_shown('trainer.py')}:12)",
            (("trainer.py", 12),),
        ),
        (
            "evaluate.py",
            11,
            "DSL202",
            f"{PREFIX} (delta.pt holds the engine's GPU tensors, saved at {_shown('trainer.py')}:17)",
            (("trainer.py", 17),),
        ),
        (
            "resume.py",
            11,
            "DSL202",
            f"{PREFIX} (get_model_state_file(): DeepSpeed's checkpoint file, saved from GPU tensors)",
            (),
        ),
        (
            "resume.py",
            15,
            "DSL202",
            f"{PREFIX} (mp_rank_00_model_states.pt: DeepSpeed's checkpoint file, saved from GPU tensors)",
            (),
        ),
    ]  # silent: the load mapped to the CPU, host.pt (saved from .cpu() copies), teacher.pt (a plain model's),
    # notes.pt (nothing known), and nothing in trainer.py, which has the engine and loads nothing


def test_an_autocast_on_the_flag_that_enables_the_engines_fp16_is_flagged() -> None:
    found = _findings("precision_flags", {"DSL306"})
    message = "the config enables fp16, and DeepSpeed turns this autocast off in engine(...); remove it"
    assert found == [
        ("amp_flag_bad.py", 23, "DSL306", message, ()),  # enabled=args.half, fp16 enabled: args.half
        ("amp_flag_bad.py", 28, "DSL306", message, ()),  # a name bound to autocast-if-args.half-else-nullcontext
    ]  # amp_flag_good.py: another flag, `not args.half`, torch_autocast on, another function's `args`: silent


def test_names_a_star_import_brings_make_the_modules_initialize_and_loads_known() -> None:
    found = _findings("projects/star_modules", {"DSL201", "DSL202"})
    assert [(path, line, code) for path, line, code, *_ in found] == [("agents/delta.py", 18, "DSL201")]
    assert found[0][3].startswith("torch.load with a CUDA map_location puts the whole checkpoint on one GPU")
    # listed/runner.py: exports.py's __all__ leaves deepspeed and torch out, so nothing there is DeepSpeed's


def test_a_relative_import_reaches_initialize_and_torch_only_from_inside_their_packages(tmp_path: Path) -> None:
    """`from . import initialize` is `deepspeed.initialize` only in a file of a folder named `deepspeed` (the
    package's name is its folders'): there the save is an engine's; the same text in another package is not."""
    from dslint.model.gpu_saves import gpu_loads
    from dslint.model.summary import SummaryStore

    save = "import torch\nfrom . import initialize\nengine, *_ = initialize(model=m)\n"
    save += 'torch.save(engine.state_dict(), "weights.pt")\n'
    load = 'import torch\nstate = torch.load("weights.pt")\n'
    for package, expected in (("deepspeed", True), ("trainer", False)):
        folder = tmp_path / package / package
        folder.mkdir(parents=True)
        files = {folder / "__init__.py": "", folder / "train.py": save, tmp_path / package / "load.py": load}
        for path, text in files.items():
            path.write_text(text)
        sources = {str(path): text.encode() for path, text in files.items()}
        loads = gpu_loads(SummaryStore(sources, Path.exists), list(sources))
        assert (str(tmp_path / package / "load.py") in loads) is expected


def test_star_imports_are_read_where_a_rule_may_touch_the_module(tmp_path: Path) -> None:
    """The names a module receives through `from m import *` are read where the lint's text test lets a rule touch
    the module (`index_project`), and everywhere when no test is given (`build_project_index`'s default)."""
    from dslint.lint.batch import index_project
    from dslint.project.index import build_project_index

    (tmp_path / "common.py").write_text("import torch\nimport deepspeed\n")
    train = "from common import *\nengine, *_ = deepspeed.initialize(model=net)\nstate = torch.load('c.pt')\n"
    (tmp_path / "train.py").write_text(train)
    (tmp_path / "report.py").write_text("from common import *\nprint(torch.__version__, json_ready)\n")
    files = discover([str(tmp_path)]).files
    read = {p: f.star_imports for p, f in index_project(files, [str(tmp_path)]).files.items() if f.star_imports}
    assert set(read) == {str(tmp_path / "train.py")} and read[str(tmp_path / "train.py")]["torch"] == "torch"
    every = build_project_index(files, [str(tmp_path)]).files
    assert {p for p, f in every.items() if f.star_imports} == {str(tmp_path / "train.py"), str(tmp_path / "report.py")}
    # only the names the module writes: report.py never writes `deepspeed`
    assert every[str(tmp_path / "report.py")].star_imports == {"torch": "torch"}

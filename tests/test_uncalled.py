"""`dslint check` drops findings in code nothing in the project calls (`dslint/lint/uncalled.py`), and keeps them
wherever something may call it: another module, a launcher, a config's `_target_`, a notebook, a decorator, a
framework's hook, a lookup by name."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main
from dslint.lint.uncalled import _code_text, _named

HELPERS = textwrap.dedent(
    """\
    import deepspeed
    import torch


    def build(net):
        engine, *_ = deepspeed.initialize(model=net, config="ds.json")
        return engine


    def restore(net, path):
        net.load_state_dict(torch.load(path, map_location="cuda"))
    """
)


def _project(root: Path, caller: str, extra: dict[str, str] | None = None, helpers: str = HELPERS) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg" / "helpers.py").write_text(helpers)
    (root / "train.py").write_text("import deepspeed\nfrom pkg.helpers import build\n\n" + caller)
    (root / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1}\n')
    for name, text in (extra or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _codes(root: Path, monkeypatch: pytest.MonkeyPatch, *paths: str) -> list[tuple[str, int]]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "-j", "1", "--exit-zero", "--output-format", "json", *(paths or (".",))]
    )
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    return sorted((item["code"], item["location"]["line"]) for item in found if item["filename"].endswith("helpers.py"))


def test_a_helper_whose_only_call_is_commented_out_loses_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, 'engine = build(object())\n# restore(engine.module, "x.pt")\n')
    assert _codes(root, monkeypatch) == []


def test_a_helper_another_module_calls_keeps_its_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(
        tmp_path, 'from pkg.helpers import restore\nengine = build(object())\nrestore(engine.module, "x")\n'
    )
    assert _codes(root, monkeypatch) == [("DSL201", 11)]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("conf/model.yaml", "loader:\n  _target_: pkg.helpers.restore\n"),  # hydra instantiates it by its path
        ("run.sh", "python -c \"from pkg.helpers import restore; restore(None, 'x.pt')\"\n"),
        ("notebook.ipynb", '{"cells": [{"cell_type": "code", "source": ["restore(net, \\"x.pt\\")"]}]}\n'),
        ("setup.cfg", "[options.entry_points]\nconsole_scripts =\n    restore = pkg.helpers:restore\n"),
    ],
)
def test_a_helper_named_outside_python_keeps_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    root = _project(tmp_path, "engine = build(object())\n", {name: text})
    assert _codes(root, monkeypatch) == [("DSL201", 11)]


def test_a_mention_that_is_data_or_prose_is_no_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caller = 'engine = build(object())\nmode = "restore"\nprint("restore.log")\n'
    root = _project(tmp_path, caller, {"README.md": "Checkpoints are restored from restore.pt.\n"})
    assert _codes(root, monkeypatch) == []


def test_a_lookup_by_name_keeps_its_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caller = 'import pkg.helpers as h\nengine = build(object())\ngetattr(h, "restore")(engine.module, "x.pt")\n'
    root = _project(tmp_path, caller)
    assert _codes(root, monkeypatch) == [("DSL201", 11)]


def test_decorated_functions_and_framework_hooks_are_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helpers = HELPERS.replace("def restore(", "@register\ndef restore(") + textwrap.dedent(
        """\


        class Module(torch.nn.Module):
            def on_load(self, path):
                self.load_state_dict(torch.load(path, map_location="cuda"))
        """
    )
    caller = "from pkg.helpers import Module\nengine = build(Module())\n"  # the framework calls the used class's hook
    root = _project(tmp_path, caller, helpers=helpers)
    assert [code for code, _ in _codes(root, monkeypatch)] == ["DSL201", "DSL201"]


def test_a_method_of_the_projects_own_class_that_nothing_calls_loses_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helpers = HELPERS + textwrap.dedent(
        """\


        class Runner:
            def resume(self, net, path):
                net.load_state_dict(torch.load(path, map_location="cuda"))

            def run(self, net):
                return build(net)
        """
    )
    caller = 'from pkg.helpers import Runner, restore\nengine = Runner().run(object())\nrestore(engine.module, "x")\n'
    root = _project(tmp_path, caller, helpers=helpers)
    assert _codes(root, monkeypatch) == [("DSL201", 11)]  # `resume` is never called; `restore` is


def test_a_function_of_the_same_name_elsewhere_is_not_a_call_of_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = "def restore(x):\n    return x\n\n\nrestore(1)\n"
    root = _project(tmp_path, "engine = build(object())\n", {"tools/other.py": other})
    assert _codes(root, monkeypatch) == []


def test_a_file_named_alone_outside_a_repository_keeps_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, "engine = build(object())\n")
    (root / ".git").rmdir()
    assert _codes(root, monkeypatch, "pkg/helpers.py") == [("DSL201", 11)]
    assert _codes(root, monkeypatch, ".") == []  # the folder named is the project


def test_string_literals_keep_only_what_may_name_a_function() -> None:
    text = _code_text(b'a = "pkg.mod:main"  # helper()\nb = "test.fasta"\nc = getattr(m, "step")\nd = "plain"\n')
    assert _named(b"main", text) and _named(b"step", text)
    assert not _named(b"helper", text) and not _named(b"plain", text) and not _named(b"test", text)


def test_fix_leaves_what_check_drops_and_fixes_what_it_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = _project(tmp_path / "dead", "engine = build(object())\n# restore(engine.module, 'x.pt')\n")
    monkeypatch.chdir(dead)
    assert CliRunner().invoke(main, ["fix", "."]).exit_code == 0
    assert (dead / "pkg" / "helpers.py").read_text() == HELPERS
    live = _project(tmp_path / "live", "from pkg.helpers import restore\nrestore(build(object()).module, 'x')\n")
    monkeypatch.chdir(live)
    CliRunner().invoke(main, ["fix", "."])
    assert 'map_location="cpu"' in (live / "pkg" / "helpers.py").read_text()


def test_the_cache_sees_a_call_written_since(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path / "p", "engine = build(object())\n")
    cache = str(tmp_path / "cache")

    def codes() -> list[str]:
        monkeypatch.chdir(root)
        found = CliRunner().invoke(main, ["check", "-j", "1", "--exit-zero", "--cache-dir", cache, "."])
        return [line.split()[1] for line in found.stdout.splitlines() if "helpers.py" in line]

    assert codes() == [] and codes() == []  # the second run is served from the cache
    (root / "tools.py").write_text("from pkg.helpers import restore\nrestore(None, 'x')\n")  # a new file calls it
    assert codes() == ["DSL201"]
    (root / "tools.py").write_text("x = 1\n")
    assert codes() == []
    (root / "train.py").write_text((root / "train.py").read_text() + "from pkg.helpers import restore\n")
    assert codes() == ["DSL201"]  # an edit of a file that was read


COPIED_TRAINER = textwrap.dedent(
    """\
    import deepspeed
    from transformers import Trainer


    class CopiedTrainer(Trainer):
        def _prepare_deepspeed(self, model):
            config = {"train_micro_batch_size_per_gpu": 1, "zero_optimisation": {"stage": 3}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            return engine
    """
)


def _codes_in(root: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[str, int]]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "--exit-zero", "--output-format", "json", "."])
    assert result.exit_code == 0, result.output
    return sorted(
        (item["code"], item["location"]["line"]) for item in json.loads(result.stdout) if item["filename"] == name
    )


def test_a_framework_subclass_in_a_module_nothing_mentions_loses_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, "engine = build(object())\n", extra={"copied_trainer.py": COPIED_TRAINER})
    assert _codes_in(root, monkeypatch, "copied_trainer.py") == []


def test_a_framework_subclass_in_an_imported_module_keeps_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = "from copied_trainer import CopiedTrainer\nengine = build(object())\nCopiedTrainer(model=engine).train()\n"
    root = _project(tmp_path, caller, extra={"copied_trainer.py": COPIED_TRAINER})
    assert _codes_in(root, monkeypatch, "copied_trainer.py") == [("DSL401", 7)]


def test_a_framework_subclass_of_a_module_that_runs_or_is_packaged_keeps_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = COPIED_TRAINER + '\n\nif __name__ == "__main__":\n    CopiedTrainer().train()\n'
    packaged = {"setup.py": "from setuptools import setup\nsetup(name='lib')\n", "lib/__init__.py": ""}
    extra = {"runs_trainer.py": runs, "lib/copied_trainer.py": COPIED_TRAINER, **packaged}
    root = _project(tmp_path, "engine = build(object())\n", extra=extra)
    assert _codes_in(root, monkeypatch, "runs_trainer.py") == [("DSL401", 7)]
    assert _codes_in(root, monkeypatch, "lib/copied_trainer.py") == [("DSL401", 7)]


def test_a_framework_subclass_nothing_names_loses_its_findings_in_a_module_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the module is imported (for another class), but nothing names this trainer: no instance of it is ever made
    unused = COPIED_TRAINER.replace("CopiedTrainer", "OfflineTrainer") + "\n\nclass UsedTrainer(Trainer):\n    pass\n"
    caller = "from copied_trainer import UsedTrainer\nengine = build(object())\nUsedTrainer(model=engine).train()\n"
    root = _project(tmp_path, caller, extra={"copied_trainer.py": unused})
    assert _codes_in(root, monkeypatch, "copied_trainer.py") == []
    named = unused + "\n\nTRAINERS = {'offline': OfflineTrainer}\n"  # a registry names it: it may be made
    root = _project(tmp_path / "named", caller, extra={"copied_trainer.py": named})
    assert _codes_in(root, monkeypatch, "copied_trainer.py") == [("DSL401", 7)]

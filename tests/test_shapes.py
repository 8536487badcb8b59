"""The shapes of test split 1's misses as fixture projects (fixtures/projects/<shape>/), each both ways: the
exact findings (file, line, code, message start) the project index gives, and the look-alikes it leaves silent."""

from __future__ import annotations

import os

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection


def _findings(name: str, codes: set[str]) -> list[tuple[str, int, str, str]]:
    project = FIXTURES / "projects" / name
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    results = lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index)
    found = []
    for result in results:
        assert isinstance(result, FileResult)
        for d in result.diagnostics:
            if d.code in codes:
                found.append((os.path.relpath(os.path.abspath(d.path), project), d.start.line, d.code, d.message))
    return sorted(found)


def test_rng_states_read_back_into_the_generator_setters_only_are_not_a_model_load() -> None:
    found = _findings("rng_states", {"DSL202"})
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("trainer.py", 22, "DSL202"),  # the warm start, loaded into a module
        ("trainer.py", 43, "DSL202"),  # the states also returned to a caller
        ("trainer.py", 57, "DSL202"),  # another object's attribute
    ]  # line 21 (`self.generators`, read only by the setters in first_step) is silent
    assert all(message.startswith("torch.load without map_location puts tensors back") for *_, message in found)


def test_a_device_every_caller_passes_down_into_a_load_is_that_device() -> None:
    found = _findings("passed_devices", {"DSL201"})
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("checkpoints/restore.py", 11, "DSL201"),  # self.device, set beside set_device, through two functions
        ("checkpoints/restore.py", 30, "DSL201"),  # a formatted "cuda:{}" from the one caller
        ("checkpoints/restore.py", 56, "DSL201"),  # torch.device(f"cuda:{rank}")
    ]  # read_on (CPU at one call), read_default (its CPU default), read_local (a string), read_rank and
    # read_shared (a subclass sets self.device to the CPU): silent
    first, second, _ = (message for *_, message in found)
    assert first.startswith("torch.load with a CUDA map_location puts the whole checkpoint on one GPU")
    assert first.endswith(
        "(every caller passes dev a CUDA device: torch.device(self.local_rank), " + _at("workers.py:19)")
    )
    assert second.endswith(
        "(every caller passes target a CUDA device: 'cuda:{}'.format(rank), " + _at("workers.py:26)")
    )


def _at(where: str, project: str = "passed_devices") -> str:
    """A fixture file as findings name it: relative to the current directory (the repository root in tests)."""
    return os.path.relpath(FIXTURES / "projects" / project / where)


def test_the_trainers_model_state_dict_written_under_a_launched_zero3_config() -> None:
    found = _findings("trainer_saves", {"DSL204"})
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("finetune_z3.py", 10, "DSL204"),  # through a dict made from it, into trainer._save(state_dict=...)
        ("finetune_z3.py", 27, "DSL204"),  # straight into torch.save
    ]  # count_weights (never written), trainer.save_model and the same script under ZeRO-2: silent
    for *_, message in found:
        assert message.startswith("ZeRO-3: trainer.model.state_dict() holds empty tensors")
        assert message.endswith(
            "(ZeRO-3 from " + _at("run.sh:2", "trainer_saves") + " -> " + _at("ds_z3.json:2)", "trainer_saves")
        )


def test_an_engine_a_base_class_stores_on_self_reaches_its_subclasses_methods() -> None:
    found = _findings("inherited_engines", {"DSL305", "DSL306", "DSL302", "DSL307"})
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("trainers/tasks.py", 15, "DSL306"),  # ClassifierTrainer.train_step, a subclass in another module
        ("trainers/tasks.py", 19, "DSL305"),
        ("trainers/tasks.py", 30, "DSL306"),  # DeeperTrainer, two levels down
        ("trainers/tasks.py", 63, "DSL307"),  # engine.module handed to a helper that runs it, trained by fit()
    ]  # SwappingTrainer (stores a plain module there later), LazyClassifier (no order to read), the reference
    # engine's module (never back-propagated), the call under no_grad and estimate() (only run under no_grad):
    # silent
    engine = "(engine from " + _at("trainers/base.py:17", "inherited_engines") + "; ZeRO-2 from "
    for *_, message in found:
        assert engine in message
    assert (
        "(model runs forward in "
        + _at("trainers/tasks.py:59: PreferenceTrainer.scores() calls model)", "inherited_engines")
        in found[-1][3]
    )


def test_a_builders_move_to_a_device_every_caller_fills_with_the_cpu_is_no_move() -> None:
    found = _findings("cpu_builders", {"DSL101", "DSL104"})
    assert [(path, line, code) for path, line, code, _ in found] == [
        ("models.py", 15, "DSL101"),  # build_policy: train_policy.py hands it its rank's GPU
    ]  # build_student(device=cpu) in train_distill.py and build_student("cpu") in evaluate.py: silent
    assert found[0][3].endswith(
        "(the model reaches deepspeed.initialize at " + _at("train_policy.py:9)", "cpu_builders")
    )

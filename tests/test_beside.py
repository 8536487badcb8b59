"""`dslint.beside.Beside`: the work runs in a forked child and its answer comes back; where the child cannot give
one (it raises, dies, or answers with what cannot be pickled) the caller computes it, so the answer is the same."""

from __future__ import annotations

import os
import threading

import pytest

from dslint.beside import Beside, Claim

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def test_the_work_runs_in_a_child_and_its_answer_comes_back() -> None:
    parent = os.getpid()
    touched: list[int] = []

    def work() -> tuple[int, list[str]]:
        touched.append(1)  # the child's own copy
        return os.getpid(), ["an", "answer"]

    pid, answer = Beside(work).result()
    assert pid != parent and answer == ["an", "answer"]
    assert touched == []


@pytest.mark.parametrize("how", ["raises", "dies", "unpicklable"])
def test_without_the_childs_answer_the_caller_computes_it(how: str) -> None:
    parent = os.getpid()
    lock = threading.Lock()

    def work() -> object:
        if os.getpid() != parent:
            if how == "raises":
                raise RuntimeError("only in the child")
            if how == "dies":
                os._exit(3)
            return lock  # a lock cannot be pickled
        return ("computed here", os.getpid())

    assert Beside(work).result() == ("computed here", parent)


def test_an_error_in_the_caller_is_the_callers() -> None:
    def work() -> None:
        raise ValueError("everywhere")

    with pytest.raises(ValueError, match="everywhere"):
        Beside(work).result()


def test_a_claim_goes_to_one_side_only() -> None:
    """The child takes it first: the caller does not get it; the caller takes it first: the child does not."""
    first = Claim()
    assert Beside(first.take).result() is True
    assert first.take() is False
    second = Claim()
    assert second.take() is True
    assert Beside(second.take).result() is False
    assert second.take() is False


def test_the_project_index_built_beside_is_the_one_built_in_one_process() -> None:
    """The launchers and the summary-only facts read in a forked child (`build_project_index(beside=True)`) give
    the index one process gives, and the files read in the child are the build's inputs all the same (the result
    cache keys the index on them)."""
    from fixture_support import FIXTURES

    from dslint.lint.files import discover
    from dslint.project.index import build_project_index
    from dslint.project.inputs import recording

    root = str(FIXTURES / "projects")
    files = discover([root]).files
    with recording() as alone_inputs:
        alone = build_project_index(files, [root])
    with recording() as beside_inputs:
        beside = build_project_index(files, [root], beside=True)
    assert alone.initialize_sites and alone.launches  # the fixtures make engines and launch them
    assert beside == alone
    assert set(beside_inputs) == set(alone_inputs)
    assert any(facts.gpu_loads or facts.cuda_parameters for facts in alone.files.values())

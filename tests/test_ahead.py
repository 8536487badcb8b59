"""`dslint.lint.ahead.Ahead`: a forked child works through the items while the caller does something else;
`stop()` gives the answers it finished. An answer the child cannot give (it raises, dies, or answers with what
cannot be pickled) is missing, never wrong, and `lint_files` computes every missing one itself: a check gives the
same results with the child as without it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from fixture_support import crash_on

from dslint.lint.ahead import Ahead
from dslint.lint.batch import FileFailure, index_project, lint_ahead, lint_files
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

ENGINE = "import deepspeed\nmodel_engine, _, _, _ = deepspeed.initialize(model=model)\nmodel_engine.cuda()\n"


def _wait_for(ahead: Ahead[int, object], seconds: float = 0.5) -> dict[int, object]:
    time.sleep(seconds)
    return ahead.stop()


def test_the_child_answers_in_its_own_process_the_deferred_items_last() -> None:
    parent = os.getpid()
    order: list[int] = []

    def work(item: int) -> tuple[int, int]:
        order.append(item)  # the child's own copy
        return item * item, os.getpid()

    answers = _wait_for(Ahead(work, list(range(10)), lambda item: item % 2 == 0))
    assert {index: answer[0] for index, answer in answers.items()} == {i: i * i for i in range(10)}
    assert all(answer[1] != parent for answer in answers.values()) and order == []


def test_stop_ends_the_child_and_keeps_only_finished_answers() -> None:
    def work(item: int) -> int:
        if item == 3:
            time.sleep(60)  # still at it when stopped: its answer is the caller's to compute
        return item

    ahead = Ahead(work, list(range(6)), lambda item: False)
    started = time.monotonic()
    answers = _wait_for(ahead)
    assert time.monotonic() - started < 10
    assert answers == {0: 0, 1: 1, 2: 2}


@pytest.mark.parametrize("how", ["raises", "dies", "unpicklable"])
def test_what_the_child_cannot_answer_is_missing(how: str) -> None:
    lock = threading.Lock()

    def work(item: int) -> object:
        if item == 2:
            if how == "raises":
                raise RuntimeError("in the child")
            if how == "dies":
                os.kill(os.getpid(), signal.SIGSEGV)
            return lock  # a lock cannot be pickled
        return item

    answers = _wait_for(Ahead(work, list(range(5)), lambda item: False))
    assert answers == {0: 0, 1: 1}


def _project(tmp_path: Path) -> list[Path]:
    paths = []
    for index in range(24):
        path = tmp_path / f"f{index:02}.py"
        path.write_text(ENGINE if index % 3 else "print('plain')\n", encoding="utf-8")
        paths.append(path)
    (tmp_path / "run.sh").write_text("deepspeed f01.py --deepspeed_config ds.json\n", encoding="utf-8")
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8, "fp16": {"enabled": true}}\n', encoding="utf-8")
    return [*paths, tmp_path / "ds.json"]


def _check(paths: list[Path], root: Path, ahead: bool) -> list[object]:
    items = [(path, RuleSelection()) for path in paths]
    started = lint_ahead(items, 2) if ahead else None
    assert (started is not None) == ahead
    project = index_project(paths, (str(root),), None, 2)
    if started is not None:
        time.sleep(1)  # the child lints meanwhile
    results = lint_files(items, 2, project=project, ahead=started)
    return [(r.path, sorted(d.sort_key for d in r.diagnostics)) if isinstance(r, FileResult) else r for r in results]


def test_a_check_gives_the_same_results_with_the_child_as_without(tmp_path: Path) -> None:
    paths = _project(tmp_path)
    assert _check(paths, tmp_path, ahead=True) == _check(paths, tmp_path, ahead=False)


def test_a_file_that_kills_the_child_is_that_files_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crash_on(monkeypatch, "f05.py")
    results = _check(_project(tmp_path), tmp_path, ahead=True)
    failures = [r for r in results if isinstance(r, FileFailure)]
    assert [(Path(f.path).name, f.message) for f in failures] == [
        ("f05.py", "internal error: dslint's parser crashed on this file (SIGSEGV)")
    ]


def test_the_child_never_reads_what_is_no_regular_file(tmp_path: Path) -> None:
    from dslint.limits import Limits
    from dslint.lint.batch import _likely_known

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)  # opened for reading, a FIFO with no writer would wait forever
    script = tmp_path / "train.py"
    script.write_text("if __name__ == '__main__':\n    main()\n", encoding="utf-8")
    assert not _likely_known((fifo, RuleSelection(), None, Limits(), None, None))
    assert _likely_known((script, RuleSelection(), None, Limits(), None, None))

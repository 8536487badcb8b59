"""DSL306 where the engine reaches a training loop through a parameter that only some calls fill with it (a loop
shared by a DeepSpeed script and a plain one): fixtures/projects/shared_train_loop."""

from __future__ import annotations

from test_generalize_shapes import _findings


def test_a_loop_some_call_hands_the_engine() -> None:
    found = [f for f in _findings("shared_train_loop") if f[2] == "DSL306"]
    # fit(): the autocast around model(...) and the GradScaler, where train_ds.py:9 passes an fp16 engine;
    # fit_either() (its autocast only in the plain arm) and score() (the engine it gets runs without fp16/bf16),
    # and every file that passes no engine: silent
    assert [(path, line) for path, line, _, _ in found] == [("loop.py", 8), ("loop.py", 11)]
    where = "shared_train_loop/train_ds.py:9 passes the engine: the config enables fp16"
    assert all(message.startswith("where ") and where in message for *_, message in found), found

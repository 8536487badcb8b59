"""Where a ZeRO-3 fact comes from when the script does not write it (issue #23, held-out misses): an accelerate
launch's DeepSpeed config (DSL207), a config a helper builds and returns, TrainingArguments created after the
load (DSL208), an accumulation count a generated config shares with the loss's divisor (DSL304). Each shape is a
fixture project under fixtures/projects/zero3_sources/, flagged and silent twins side by side."""

from __future__ import annotations

from test_generalize_shapes import _findings, _match

ACCELERATE_Z3 = "ZeRO-3 under accelerate ("


def _codes(*codes: str) -> list[tuple[str, int, str, str]]:
    return [f for f in _findings("zero3_sources") if f[2] in codes]


def test_device_map_under_an_accelerate_zero3_launch() -> None:
    """The scorer loaded with a device map and handed to `accelerator.prepare` under the ZeRO-3 YAML (its
    `deepspeed_config_file` says stage 3) is flagged; the frozen judge that never reaches prepare, and the same
    script launched with the ZeRO-2 YAML, are silent."""
    found = _codes("DSL207")
    _match(found, [("score_long_context.py", 14, "DSL207", ACCELERATE_Z3)])
    assert found[0][3].endswith("configs/accel_z3.yaml:3): from_pretrained must not get a device_map; remove it")


def test_model_handed_to_a_zero3_engine_whose_config_a_helper_returns() -> None:
    """The judge (a subclass of a transformers class) goes to PreferencePipeline, whose `initialize` gets the
    dict `frozen_config(offload=True)` returns, stage 3 by the parameter's default: flagged, naming that call.
    The scorer's engine gets a stage 2 dict and the critic's a stage the command line chooses: silent. The same
    loads after a kept HfDeepSpeedConfig: silent."""
    found = _codes("DSL208")
    _match(found, [("rlhf/run_preferences.py", 19, "DSL208", "a ZeRO-3 engine is made of this model (")])
    assert "rlhf/pipeline.py:10), but no HfDeepSpeedConfig is alive" in found[0][3]


def _stage_at_initialize(source: str, helpers: str = "") -> int | None:
    """The stage `built_stage` reads for the config of the one `deepspeed.initialize` in `train()`."""
    import ast
    import textwrap
    from pathlib import Path

    from dslint.model.summary import SummaryStore
    from dslint.project.built_configs import built_stage

    sources = {"/p/train.py": textwrap.dedent(source).encode(), "/p/helpers.py": textwrap.dedent(helpers).encode()}
    store = SummaryStore(sources, lambda path: str(path) in sources or Path(path).name == "p")
    summary = store.get("/p/train.py")
    assert summary is not None
    call = next(
        n for n in ast.walk(summary.tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "initialize"
    )
    config = next(k.value for k in call.keywords if k.arg == "config")
    found = built_stage(store, "/p/train.py", "train", config)
    return found.stage if found is not None else None


HELPERS = """
def make(stage=3, offload=False):
    section = {"stage": stage}
    return {"zero_optimization": section}

def two_ways(big):
    if big:
        return {"zero_optimization": {"stage": 3}}
    return {"zero_optimization": {"stage": 1}}
"""


def test_stage_of_a_config_built_in_code() -> None:
    def train(body: str) -> str:
        return "import deepspeed\nfrom helpers import make, two_ways\ndef train(m, args):\n" + body

    call = "    deepspeed.initialize(model=m, config=cfg)\n"
    assert _stage_at_initialize(train('    cfg = {"zero_optimization": {"stage": 3}}\n' + call)) == 3
    assert _stage_at_initialize(train('    cfg = {"train_batch_size": 8}\n' + call)) == 0
    assert _stage_at_initialize(train("    cfg = make()\n" + call), HELPERS) == 3
    assert _stage_at_initialize(train("    cfg = make(2)\n" + call), HELPERS) == 2
    assert _stage_at_initialize(train("    cfg = make(stage=1, offload=True)\n" + call), HELPERS) == 1
    # unknown: a value the command line chooses, a write after the dict is built, a dict handed to a filler,
    # helpers whose returns disagree, a section unpacked from elsewhere
    assert _stage_at_initialize(train("    cfg = make(stage=args.stage)\n" + call), HELPERS) is None
    written = '    cfg = make()\n    cfg["zero_optimization"]["stage"] = args.stage\n'
    assert _stage_at_initialize(train(written + call), HELPERS) is None
    assert _stage_at_initialize(train("    cfg = make()\n    cfg.update(args.extra)\n" + call), HELPERS) is None
    assert _stage_at_initialize(train("    cfg = make()\n    fill(cfg)\n" + call), HELPERS) is None
    assert _stage_at_initialize(train("    cfg = two_ways(args.big)\n" + call), HELPERS) is None
    assert _stage_at_initialize(train('    cfg = {**base, "zero_optimization": z}\n' + call)) is None

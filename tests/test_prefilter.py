"""The prefilter never skips a file that a rule would flag."""

from __future__ import annotations

import textwrap

from fixture_support import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from dslint.linter import lint_source
from dslint.prefilter import needs_parsing
from dslint.registry import all_rules
from dslint.rule import Invalid

STATEMENTS = [
    "import deepspeed",
    "import deepspeed as ds",
    "from deepspeed import initialize",
    "from deepspeed import initialize as init_engine",
    "from deepspeed.accelerator import get_accelerator",
    "import torch",
    "import torch as deepspeed",
    "model = Net()",
    "model.cuda()",
    "model = model.to(device).half()",
    "engine, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)",
    "engine, *_ = ds.initialize(model=model)",
    "model, *_ = initialize(args, model)",
    "engine = init_engine(model=model)[0]",
    "engine.to(device)",
    "model.module.half()",
    "x = torch.ones(3).cuda()",
    "y = torch.zeros(3, device='cuda')",
    "torch.cuda.set_device(local_rank)",
    "get_accelerator().set_device(local_rank)",
    "loss = engine(x)",
    "engine.backward(loss)",
    "loss.backward()",
    "optimizer.step()",
    "state = torch.load(path, map_location='cuda')",
    "model.load_state_dict(state)",
    "torch.save(model.state_dict(), path)",
]


def test_every_invalid_case_passes_the_prefilter() -> None:
    for rule in all_rules():
        for case in rule.invalid:
            assert isinstance(case, Invalid)
            assert needs_parsing(textwrap.dedent(case.code).encode()), f"{rule.code}: {case.code}"


def test_every_fixture_with_findings_passes_the_prefilter() -> None:
    for path in FIXTURES.rglob("*.py"):
        data = path.read_bytes()
        if lint_source(str(path), data, use_prefilter=False).diagnostics:
            assert needs_parsing(data), path


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=12))
def test_generated_scripts(lines: list[str]) -> None:
    data = ("\n".join(lines) + "\n").encode()
    unfiltered = lint_source("train.py", data, use_prefilter=False).diagnostics
    if unfiltered:
        assert needs_parsing(data)
        assert lint_source("train.py", data).diagnostics == unfiltered

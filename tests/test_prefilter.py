"""The prefilter never skips a file that a rule would flag."""

from __future__ import annotations

import textwrap

import libcst as cst
from fixture_support import FIXTURES
from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.framework.registry import all_rules
from dslint.lint.activation import certainly_untouched
from dslint.lint.prefilter import has_token_set, has_tokens, may_create_engine, may_create_inference_engine
from dslint.lint.script import lint_source
from dslint.script.collect import collect_facts

STATEMENTS = [
    "import deepspeed",
    "import deepspeed as ds",
    "from deepspeed import initialize",
    "from deepspeed import initialize as init_engine",
    "from deepspeed.accelerator import get_accelerator",
    "import torch",
    "import torch as deepspeed",
    "from deepspeed import initialize as make_engine",
    "model, *_ = make_engine(model=model)",
    "class Trainer:\n"
    "    def setup(self):\n"
    "        self.engine = deepspeed.initialize(model=self.net)[0]\n"
    "        self.engine.cuda()",
    "def broken(:\n    pass",
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
    "pipe = pipe.to('cuda')",
    "pipe = deepspeed.init_inference(pipe, mp_size=world_size)",
    "noise = torch.Generator('cuda')",
    "from transformers import AutoModelForCausalLM, TrainingArguments",
    "from transformers import TrainingArguments as TA",
    "from transformers.integrations import HfDeepSpeedConfig",
    "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto')",
    "dschf = HfDeepSpeedConfig({'zero_optimization': {'stage': 3}})",
    "HfDeepSpeedConfig(ds_config)",
    "args = TA(output_dir='out', deepspeed={'zero_optimization': {'stage': 3}})",
    "ds_config = {'zero_optimization': {'stage': 3}}",
    '"""Load with from_pretrained and a device_map only after HfDeepSpeedConfig or TrainingArguments."""',
]


def _same_with_and_without_prefilter(path: str, data: bytes) -> None:
    """The prefiltered lint gives exactly the unfiltered findings, and a file the fast skip settles
    (`certainly_untouched`, without the project index) has none."""
    unfiltered = lint_source(path, data, use_prefilter=False).diagnostics
    assert lint_source(path, data).diagnostics == unfiltered, path
    if certainly_untouched(data, None):
        assert not unfiltered, path
    # Every rule finding needs the word DeepSpeed in some case: `deepspeed` (the package, `deepspeed=` of
    # TrainingArguments) or transformers' `HfDeepSpeedConfig`, which alone turns ZeRO-3 on for
    # `from_pretrained`. DSL010 (an unused noqa comment) is read from comments.
    if any(d.code != "DSL010" for d in unfiltered):
        assert b"deepspeed" in data.lower(), path


def test_every_rule_case_gives_the_same_findings_through_the_prefilter() -> None:
    for rule in all_rules():
        for case in [*rule.valid, *rule.invalid]:
            if case.path.endswith(".py"):
                _same_with_and_without_prefilter(case.path, textwrap.dedent(case.code).encode())


def test_every_fixture_gives_the_same_findings_through_the_prefilter() -> None:
    for path in FIXTURES.rglob("*.py"):
        _same_with_and_without_prefilter(str(path), path.read_bytes())


def test_engine_probe_never_hides_an_engine() -> None:
    for path in FIXTURES.rglob("*.py"):
        data = path.read_bytes()
        module = cst.parse_module(data)
        facts = collect_facts(module)
        if facts.has_engine:
            assert may_create_engine(data), path
        if facts.inference_calls:
            assert may_create_inference_engine(data), path


@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=12))
# An HfDeepSpeedConfig whose result is dropped is DSL208 (transformers keeps only a weak reference to it, so it
# is gone at once) even in a file without `from_pretrained`: the prefilter dropped it (issue #27).
@example(
    [
        "import deepspeed",
        "from transformers.integrations import HfDeepSpeedConfig",
        "HfDeepSpeedConfig(ds_config)",
    ]
)
# The same in a file that never writes the lowercase word `deepspeed`: the finding stands (the premise was
# widened to the word in any case), and the prefilter must keep it.
@example(["from transformers.integrations import HfDeepSpeedConfig", "HfDeepSpeedConfig(ds_config)"])
# A live HfDeepSpeedConfig at stage 3 alone makes `from_pretrained(device_map=...)` raise in transformers.
@example(
    [
        "from transformers import AutoModelForCausalLM, TrainingArguments",
        "from transformers.integrations import HfDeepSpeedConfig",
        "dschf = HfDeepSpeedConfig({'zero_optimization': {'stage': 3}})",
        "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto')",
    ]
)
def test_generated_scripts(lines: list[str]) -> None:
    _same_with_and_without_prefilter("train.py", ("\n".join(lines) + "\n").encode())


def test_a_zero_source_named_only_in_a_docstring_settles_the_from_pretrained_rules() -> None:
    """DSL207/DSL208 read the stage only from what the file hands DeepSpeed (initialize, HfDeepSpeedConfig,
    TrainingArguments): a library file naming them in prose is settled without parsing, with the same findings;
    the same file calling HfDeepSpeedConfig is parsed and flagged."""
    prose = (
        '"""Under ZeRO-3, create HfDeepSpeedConfig or TrainingArguments(deepspeed=...) first."""\n'
        "import deepspeed\n"
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto')\n"
    )
    result = lint_source("load.py", prose.encode())
    assert (
        result.skipped and result.diagnostics == lint_source("load.py", prose.encode(), use_prefilter=False).diagnostics
    )
    called = (
        "from transformers import AutoModelForCausalLM\n"
        "from transformers.integrations import HfDeepSpeedConfig\n"
        "import deepspeed\n"
        "dschf = HfDeepSpeedConfig({'zero_optimization': {'stage': 3}})\n"
        "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto')\n"
    )
    found = lint_source("load.py", called.encode())
    assert not found.skipped and [d.code for d in found.diagnostics] == ["DSL207"], found.diagnostics


_TOKEN_PIECES = ["SFT", "Config", "save_", "model", "state", "deepspeed", "to", " ", "\n"]


@settings(max_examples=examples(300))
@given(
    st.lists(st.sampled_from(_TOKEN_PIECES), max_size=12).map("".join),
    st.lists(
        st.lists(st.sampled_from([b"SFTConfig", b"Config", b"save_model", b"save_state", b"save_", b"to"]), max_size=3),
        max_size=3,
    ),
)
@example("SFTConfig", [[b"SFTConfig"]])
@example("Config save_", [[b"SFTConfig"], [b"save_model"]])
@example("save_state to", [[b"save_model"], [b"save_state", b"to"]])
def test_the_token_test_answers_as_plain_substring_tests(text: str, token_sets: list[list[bytes]]) -> None:
    """The memo and the stems' early answers (`prefilter.STEMS`) change only how fast the token test is."""
    data = text.encode()
    expected = any(all(token in data for token in tokens) for tokens in token_sets)
    assert has_token_set(data, token_sets) is expected
    for tokens in token_sets:
        assert has_tokens(data, tokens) is all(token in data for token in tokens)

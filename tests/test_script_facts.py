"""Script facts: imports, initialize calls, result bindings, roles at a position, plain-PyTorch branches."""

from __future__ import annotations

import textwrap

import libcst as cst
import libcst.matchers as m
import pytest

from dslint.model.summary import summarize
from dslint.script.collect import collect_facts
from dslint.script.facts import Role, ScriptFacts


def facts_of(code: str) -> ScriptFacts:
    module = cst.parse_module(textwrap.dedent(code))
    return collect_facts(module)


def nodes_named(facts: ScriptFacts, text: str) -> list[cst.CSTNode]:
    """Every Name/Attribute/Subscript whose code is `text`, in source order."""
    found = [
        node for node in m.findall(facts.module, m.Name() | m.Attribute() | m.Subscript()) if facts.code(node) == text
    ]
    return sorted(found, key=facts.start)


def role(facts: ScriptFacts, text: str, occurrence: int = -1) -> Role | None:
    answer = facts.role_of(nodes_named(facts, text)[occurrence])
    return answer.role if answer else None


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("import deepspeed", "deepspeed.initialize"),
        ("import deepspeed as ds", "ds.initialize"),
        ("from deepspeed import initialize", "initialize"),
        ("from deepspeed import initialize as make_engine", "make_engine"),
    ],
)
def test_initialize_is_found_through_any_import_alias(imports: str, call: str) -> None:
    facts = facts_of(f"{imports}\nengine, opt, _, _ = {call}(model=net, config=cfg)\nengine.step()\nopt.step()\n")
    assert len(facts.initialize_calls) == 1
    assert role(facts, "engine") is Role.ENGINE
    assert role(facts, "opt") is Role.OPTIMIZER


def test_unrelated_initialize_is_not_deepspeed() -> None:
    facts = facts_of("from mylib import initialize\nengine = initialize(model=net)\n")
    assert facts.initialize_calls == []
    assert not facts.has_engine


def test_the_facts_read_imports_as_the_module_summary_does() -> None:
    """One reading of imports: the script facts' table is the summary's (relative imports aside, which need the
    file's package); a call written before a later import of its name resolves as the rules read it."""
    code = textwrap.dedent(
        """
        def setup(net):
            return ds.initialize(model=net, config="ds.json")

        import torch.nn as nn
        from . import helpers
        from .utils import build
        from torch.optim import *
        import deepspeed as ds
        """
    )
    facts = facts_of(code)
    summary = summarize("train.py", code.encode(), lambda: ("pkg",))
    assert summary is not None
    relative = {"helpers", "build"}
    assert {k: v for k, v in summary.imports.items() if k not in relative} == dict(facts.imports.aliases)
    assert summary.imports["build"] == "pkg.utils.build" and "build" not in facts.imports.aliases
    assert len(facts.initialize_calls) == 1


def test_import_table_resolves_submodules() -> None:
    facts = facts_of("import torch.nn as nn\nfrom torch import optim\nimport torch.distributed\n")
    assert facts.imports.aliases == {"nn": "torch.nn", "optim": "torch.optim", "torch": "torch"}


def test_positional_and_keyword_arguments() -> None:
    facts = facts_of(
        "import deepspeed\n"
        "e, o, _, s = deepspeed.initialize(args, net, adam, net.parameters(), lr_scheduler=sched, config=d)\n"
    )
    init = facts.initialize_calls[0]
    assert facts.code(init.argument("model")) == "net"
    assert facts.code(init.argument("optimizer")) == "adam"
    assert facts.code(init.argument("lr_scheduler")) == "sched"
    assert facts.code(init.config) == "d"


def test_starred_targets_count_from_both_ends() -> None:
    facts = facts_of(
        """
        import deepspeed
        engine, *rest, scheduler = deepspeed.initialize(model=net)
        engine.step(); scheduler.step(); rest
        """
    )
    assert role(facts, "engine") is Role.ENGINE
    assert role(facts, "scheduler") is Role.SCHEDULER
    assert role(facts, "rest") is None


def test_one_name_then_indexing() -> None:
    facts = facts_of(
        """
        import deepspeed
        result = deepspeed.initialize(model=net)
        engine = result[0]
        opt = result[1]
        sched = result[-1]
        engine(x); opt.step(); sched.step(); result[0].step()
        """
    )
    assert role(facts, "engine") is Role.ENGINE
    assert role(facts, "opt") is Role.OPTIMIZER
    assert role(facts, "sched") is Role.SCHEDULER
    assert role(facts, "result") is Role.INIT_RESULT
    assert role(facts, "result[0]") is Role.ENGINE


def test_direct_indexing_of_the_call() -> None:
    facts = facts_of("import deepspeed\nengine = deepspeed.initialize(model=net)[0]\nengine(x)\n")
    assert role(facts, "engine") is Role.ENGINE


def test_engine_named_model_before_and_after() -> None:
    facts = facts_of(
        """
        import deepspeed
        def main():
            model = Net()
            model.half()
            model, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)
            model(x)
            model.module.eval()
        """
    )
    # occurrences: 0 `model = Net()`, 1 `model.half()`, 2 the tuple target, 3 the keyword, 4 the argument,
    # 5 `model(x)`, 6 `model.module`
    assert role(facts, "model", 0) is None  # the binding itself holds only after its statement
    assert role(facts, "model", 1) is Role.RAW_MODEL
    assert role(facts, "model", 4) is Role.RAW_MODEL
    assert role(facts, "model", 5) is Role.ENGINE
    assert role(facts, "model.module") is Role.ENGINE_MODULE


def test_raw_model_keeps_its_role_after_initialize_under_another_name() -> None:
    facts = facts_of(
        """
        import deepspeed
        net = Net()
        net = net.to(device)
        engine, *_ = deepspeed.initialize(model=net)
        net(x)
        """
    )
    assert role(facts, "net") is Role.RAW_MODEL


def test_rebinding_ends_a_role() -> None:
    facts = facts_of(
        """
        import deepspeed
        engine, *_ = deepspeed.initialize(model=net)
        engine = make_other()
        engine(x)
        """
    )
    assert role(facts, "engine") is None


def test_parameters_are_unknown() -> None:
    facts = facts_of(
        """
        import deepspeed
        engine, *_ = deepspeed.initialize(model=net)
        def train(engine, batch):
            engine(batch)
        """
    )
    assert role(facts, "engine") is None


def test_module_global_read_in_a_function() -> None:
    facts = facts_of(
        """
        import deepspeed
        def train(batch):
            engine.backward(engine(batch))
        engine, optimizer, _, _ = deepspeed.initialize(model=net)
        """
    )
    assert role(facts, "engine", 0) is Role.ENGINE


def test_self_attributes_across_methods() -> None:
    facts = facts_of(
        """
        import deepspeed
        class Trainer:
            def __init__(self, net):
                self.model = net
            def setup(this):
                this.model, this.optimizer, _, _ = deepspeed.initialize(model=this.model)
            def step(self, batch):
                self.model(batch)
                self.optimizer.step()
        """
    )
    assert role(facts, "self.model") is Role.ENGINE
    assert role(facts, "self.optimizer") is Role.OPTIMIZER
    assert role(facts, "this.model", 1) is Role.RAW_MODEL  # the argument: still the model from __init__


def test_client_optimizer_and_scheduler() -> None:
    facts = facts_of(
        """
        import deepspeed
        opt = torch.optim.AdamW(net.parameters())
        sched = torch.optim.lr_scheduler.StepLR(opt, 10)
        engine, ds_opt, _, ds_sched = deepspeed.initialize(model=net, optimizer=opt, lr_scheduler=sched)
        opt.step(); sched.step()
        """
    )
    assert role(facts, "opt") is Role.CLIENT_OPTIMIZER
    assert role(facts, "sched") is Role.CLIENT_SCHEDULER
    assert role(facts, "ds_sched") is None  # never read


def test_plain_branches() -> None:
    facts = facts_of(
        """
        import deepspeed
        if args.deepspeed:
            engine, *_ = deepspeed.initialize(model=net)
        else:
            plain_a = 1
        if not use_ds:
            plain_b = 1
        if args.launcher == "deepspeed":
            ds_c = 1
        else:
            plain_c = 1
        if world_size > 1:
            engine, *_ = deepspeed.initialize(model=net)
        else:
            plain_d = 1
        if world_size > 1:
            ds_e = 1
        else:
            plain_e = 1
        if config["zero_optimization"]["stage"] == 3:
            neither = 1
        else:
            neither_else = 1
        """
    )
    plain = {name for name in ("plain_a", "plain_b", "plain_c", "plain_d", "plain_e")}
    for name in plain:
        assert facts.in_plain_branch(nodes_named(facts, name)[0]), name
    for name in ("engine", "ds_c", "ds_e", "neither", "neither_else"):
        assert not facts.in_plain_branch(nodes_named(facts, name)[0]), name


def test_bindings_in_the_plain_branch_do_not_hide_the_engine() -> None:
    facts = facts_of(
        """
        import deepspeed
        if args.deepspeed:
            model, optimizer, _, _ = deepspeed.initialize(model=model)
        else:
            model = model.cuda()
        model(x)
        """
    )
    assert role(facts, "model") is Role.ENGINE


def test_device_set_calls() -> None:
    facts = facts_of(
        """
        import deepspeed, torch
        from deepspeed.accelerator import get_accelerator
        def a():
            torch.cuda.set_device(0)
        def b():
            get_accelerator().set_device(1)
        """
    )
    assert len(facts.device_set_calls) == 2

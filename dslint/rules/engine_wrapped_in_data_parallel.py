"""DSL458: the DeepSpeed engine is wrapped in `DistributedDataParallel` / `DataParallel` after `initialize`."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import DATA_PARALLEL_WRAPPERS
from dslint.project.evidence import evidence
from dslint.script.facts import Role

_SCRIPT = """\
import deepspeed
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def main(args, model, loader):
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    WRAP
    for batch in loader:
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
"""


class EngineWrappedInDataParallel(ScriptRule):
    code = "DSL458"
    slug = "engine-wrapped-in-data-parallel"
    message = "the DeepSpeed engine wrapped in {wrapper}: the engine already reduces gradients; use it unwrapped"
    severity = Severity.ERROR
    required_tokens = (b"DataParallel",)  # `DistributedDataParallel` too
    docs = RuleDocs(
        what="""
            Flags `DistributedDataParallel(engine)` / `DataParallel(engine)` (torch's, or apex's) whose first
            argument (or `module=`) is the engine `deepspeed.initialize` returned, in this function, or from
            another function or module as the project model sees it (the finding names where it was created).
            The model wrapped before `initialize` is DSL214's.
        """,
        why="""
            The engine is the data-parallel wrapper: `engine.backward` reduces the gradients across the
            data-parallel group (or, under ZeRO, reduce-scatters them into the partitions its optimizer owns), and
            `engine.step` steps that optimizer. `DistributedDataParallel` around it registers its own gradient
            hooks and all-reduces every parameter a second time (a ZeRO-3 parameter is partitioned: DDP's
            broadcast at construction and its buckets see empty tensors), and training through the wrapper
            (`wrapper(batch)`, `loss.backward()`) bypasses the engine's loss scaling, accumulation and step.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
            engine = torch.nn.parallel.DistributedDataParallel(engine, device_ids=[args.local_rank])
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
        """,
    )
    valid = (
        Valid(_SCRIPT.replace("    WRAP\n", "")),
        # the DDP arm wraps a plain module (no DeepSpeed there), or another model that never reaches initialize
        Valid(_SCRIPT.replace("WRAP", "teacher = DDP(torch.nn.Linear(4, 4).cuda())")),
    )
    invalid = (
        Invalid(_SCRIPT.replace("WRAP", "engine = DDP(engine, device_ids=[args.local_rank])"), lines=(7,)),
        Invalid(_SCRIPT.replace("WRAP", "engine = torch.nn.DataParallel(module=engine)"), lines=(7,)),
    )

    def visit_Call(self, node: cst.Call) -> None:
        wrapper = DATA_PARALLEL_WRAPPERS.get(self.facts.qualified(node.func) or "")
        if wrapper is None:
            return
        wrapped = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "module"), None)
        if wrapped is None and node.args and node.args[0].keyword is None and not node.args[0].star:
            wrapped = node.args[0].value
        answer = self.facts.role_of(wrapped, at=node) if wrapped is not None else None
        if answer is None or answer.role is not Role.ENGINE:
            return
        found = evidence(self.context, answer.engine)
        self.report(node, self.message.format(wrapper=wrapper) + found.suffix, related=found.related)

"""DSL441: `p.numel()` over the engine's parameters under ZeRO-3, where each partitioned one holds an empty tensor."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.engine_config import zero_stage
from dslint.project.evidence import evidence
from dslint.script.facts import method_name
from dslint.script.gathered import GatheredBlocks
from dslint.script.loop import loop_facts
from dslint.script.parameter_loops import EngineParameterLoops

COUNT_METHODS = frozenset({"numel", "nelement"})

_SCRIPT = """
import deepspeed
def train(model, config):
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    {count}
    return engine
"""
_STAGE = '{{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {{"stage": {stage}}}}}'
_SUM = "total = sum(p.numel() for p in engine.parameters())"


def _script(count: str, stage: int) -> str:
    return _SCRIPT.replace("config=config", f"config={_STAGE.format(stage=stage)}").replace("{count}", count)


class ParameterCountUnderZero3(EngineParameterLoops, ScriptRule):
    code = "DSL441"
    slug = "parameter-count-under-zero3"
    message = "ZeRO-3 has partitioned these parameters: numel() is 0 for each of them; count p.ds_numel"
    severity = Severity.WARNING
    required_tokens = (b"deepspeed", b"numel")
    alternative_tokens = ((b"deepspeed", b"nelement"),)
    docs = RuleDocs(
        what="""
            Flags `p.numel()` (or `p.nelement()`) where `p` runs over the engine's parameters
            (`engine.parameters()`, `engine.named_parameters()`, or the model's after `deepspeed.initialize`)
            and the engine's config is ZeRO stage 3, outside a `deepspeed.zero.GatheredParameters` block. A
            file that reads `ds_numel` anywhere is left alone.
        """,
        why="""
            Under ZeRO-3 the engine partitions every parameter when it is built
            (`runtime/zero/partition_parameters.py`, DeepSpeed 0.19.8): `free_param` sets `param.data` to
            `torch.empty(0)`, and the parameter's real size is kept in `param.ds_numel`. Only the small
            parameters kept whole (`stage3_param_persistence_threshold`) still count. A parameter count, a
            FLOPs or TFLOPS figure, or a "trainable parameters" log built from `numel()` then reports a
            fraction of the model, or nothing at all, on every rank.
        """,
        example="""
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds_zero3.json")
            total = sum(p.numel() for p in engine.parameters())
        """,
        use_instead="""
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds_zero3.json")
            total = sum(getattr(p, "ds_numel", p.numel()) for p in engine.parameters())
        """,
    )
    valid = (
        Valid(_script(_SUM, 2)),
        Valid(
            _script("total = sum(p.ds_numel if hasattr(p, 'ds_numel') else p.numel() for p in engine.parameters())", 3)
        ),
        Valid(
            _script(
                "with deepspeed.zero.GatheredParameters(list(engine.parameters())):\n"
                "        total = sum(p.numel() for p in engine.parameters())",
                3,
            )
        ),
        Valid(  # counted before initialize partitions the model
            """
            import deepspeed
            def train(model):
                total = sum(p.numel() for p in model.parameters())
                config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}
                engine, _, _, _ = deepspeed.initialize(model=model, config=config)
                return engine, total
            """
        ),
    )
    invalid = (
        Invalid(_script(_SUM, 3), lines=(5,)),
        Invalid(_script("trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)", 3), lines=(5,)),
        Invalid(_script("for name, p in engine.named_parameters():\n        print(name, p.numel())", 3), lines=(6,)),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.targets = []  # the enclosing loops (`EngineParameterLoops`)
        self.serial = 0
        self.counted: set[int] = set()  # one finding a loop
        self.gathered = GatheredBlocks(self.facts, for_modification=False)  # parameters whole inside
        self.counts: list[tuple[cst.Call, Engine]] = []
        self.reads_ds_numel = False  # `p.ds_numel`, `getattr(p, "ds_numel", ...)`: the file knows the partitions

    def visit_With(self, node: cst.With) -> None:
        self.gathered.enter(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.gathered.leave(original_node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.reads_ds_numel = self.reads_ds_numel or node.attr.value == "ds_numel"

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.reads_ds_numel = self.reads_ds_numel or "ds_numel" in node.value

    def visit_Call(self, node: cst.Call) -> None:
        if self.gathered.inside or method_name(node) not in COUNT_METHODS or node.args:
            return
        assert isinstance(node.func, cst.Attribute)
        if not isinstance(node.func.value, cst.Name):
            return
        found = self.parameter_loop(node.func.value)
        if found is None or found[1] in self.counted:
            return
        self.counted.add(found[1])
        self.counts.append((node, found[0]))

    def leave_Module(self, original_node: cst.Module) -> None:
        if self.reads_ds_numel:
            return
        for call, engine in self.counts:
            if zero_stage(self.context, engine) == 3:
                shown = evidence(self.context, engine)  # the launcher and config behind the stage, when elsewhere
                self.report(call, self.message + shown.suffix, related=list(shown.related))

"""DSL308: `deepspeed.zero.Init(...)` with a config whose ZeRO stage is not 3."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model import library
from dslint.project.config_link import resolve_config, resolve_config_expression
from dslint.script.names import literally_enabled

ZERO_INIT = library.ZERO_INIT.names
CONFIG_KEYWORDS = library.ZERO_INIT.config


class ZeroInitWithoutStage3(ScriptRule):
    code = "DSL308"
    slug = "zero-init-without-stage-3"
    message = 'deepspeed.zero.Init needs ZeRO-3, but this config runs a lower stage; set "stage": 3 or drop it'
    stage_template = 'deepspeed.zero.Init needs ZeRO-3, but this config runs stage {stage}; set "stage": 3 or drop it'
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `deepspeed.zero.Init(...)` (as a context manager or a call) when the ZeRO stage of its config is
            known and is not 3. The config is the one passed as `config_dict_or_path=` (or the deprecated
            `config=`); without one, the configs of the file's `deepspeed.initialize` calls, when all are known
            and none is stage 3. A `zero.Init` with a non-literal `enabled=` (`enabled=is_zero3`) is not flagged,
            nor one under a test of the stage (`if args.zero_stage == 3:`, `if is_zero3:`).
        """,
        why="""
            `zero.Init` ("Only applicable to training with ZeRO-3", its docstring) partitions each parameter
            across the data-parallel ranks as the module is built, leaving an empty `param.data` on every rank.
            Only the ZeRO-3 engine knows how to gather such parameters: below stage 3 `deepspeed.initialize`
            treats them as ordinary tensors (`_configure_distributed_model` recognises zero.Init models only
            when `zero_optimization_partition_weights()`), and the optimizer is built over empty parameters.
            Seen with DeepSpeed 0.19.8 on the CPU: under a stage-2 config, `zero.Init` leaves `weight.data` with
            0 elements and the engine's first forward raises `RuntimeError: mat2 must be a matrix, got 1-D
            tensor`.
            A config's stage also silently falls to 0 when `zero_optimization` has no `stage`, or when it is
            `"auto"` outside the HF Trainer.
        """,
        example="""
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            with deepspeed.zero.Init(config_dict_or_path=ds_config):
                model = MyLargeModel()
        """,
        use_instead="""
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
            with deepspeed.zero.Init(config_dict_or_path=ds_config):
                model = MyLargeModel()
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            def build(args, make):
                if args.ds_stage == 3:
                    with deepspeed.zero.Init():
                        return make()
                return make()
            engine, *_ = deepspeed.initialize(model=build(args, Net), config={"zero_optimization": {"stage": 1}})
            """
        ),
        Valid(
            """
            import deepspeed
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
            with deepspeed.zero.Init(config_dict_or_path=ds_config):
                model = Net()
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """
        ),
        Valid(
            """
            import deepspeed
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            with deepspeed.zero.Init(config_dict_or_path=ds_config, enabled=args.zero_stage == 3):
                model = Net()
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """
        ),
        Valid(
            """
            import deepspeed
            with deepspeed.zero.Init():
                model = Net()
            engine, *_ = deepspeed.initialize(args=args, model=model)
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            with deepspeed.zero.Init(config_dict_or_path=ds_config):
                model = Net()
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
            """,
            lines=(4,),
        ),
        Invalid(
            """
            import deepspeed
            from deepspeed import zero
            def main():
                cfg = {"train_batch_size": 8, "zero_optimization": {"stage": "auto"}}
                with zero.Init():
                    model = Net()
                engine, *_ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
            """,
            lines=(6,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.file_stage: int | None = None
        self.file_stage_known = False

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.qualified(node.func) not in ZERO_INIT or not literally_enabled(node):
            return
        if any(_about_the_stage(guard.subject) for guard in self.facts.paths.at(node)):
            return  # `if ds_stage == 3: with zero.Init():` the script asks for ZeRO-3 itself
        config = next(
            (a.value for a in node.args if a.keyword is not None and a.keyword.value in CONFIG_KEYWORDS), None
        )
        stage = self._stage_of(node, config) if config is not None else self._stage_of_engines()
        if stage is not None and stage != 3:
            self.report(node, self.stage_template.format(stage=stage))

    def _stage_of(self, node: cst.Call, config: cst.BaseExpression) -> int | None:
        resolved = resolve_config_expression(self.context, config)
        return resolved.zero_stage if resolved is not None else None

    def _stage_of_engines(self) -> int | None:
        """The stage all of the file's engines run, when every config is known and none is stage 3."""
        if not self.file_stage_known:
            stages: set[int | None] = set()
            for init in self.facts.initialize_calls:
                resolved = resolve_config(self.context, init.engine)
                stages.add(resolved.zero_stage if resolved is not None else None)
            self.file_stage = stages.pop() if len(stages) == 1 else None
            self.file_stage_known = True
        return self.file_stage


def _about_the_stage(subject: str) -> bool:
    """A test of the ZeRO stage: `ds_stage`, `args.zero_stage`, `is_zero3`, `cfg['zero3']`."""
    lowered = subject.lower()
    return "stage" in lowered or "zero3" in lowered or "zero_3" in lowered

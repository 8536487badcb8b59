"""DSL207: `from_pretrained(..., device_map=...)` in a script that runs ZeRO-3."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.engine_config import ZeroSources
from dslint.script.hf_models import is_model_from_pretrained, is_none, keyword_value


class FromPretrainedDeviceMapZero3(ScriptRule):
    code = "DSL207"
    slug = "from-pretrained-device-map-zero3"
    message = "under ZeRO-3, from_pretrained must not get a device_map; remove it and let DeepSpeed place the model"
    zero3_message = (
        "ZeRO-3 is on: from_pretrained must not get a device_map; remove it and let DeepSpeed place the model"
    )
    severity = Severity.ERROR
    needs_engine = False
    needs_zero_source = True  # its ZeroSources are all it reads the stage from
    # Prefilter tokens (dslint.lint.prefilter): HF scripts configure DeepSpeed without calling initialize; a live
    # `HfDeepSpeedConfig` alone turns ZeRO-3 on for transformers, in a file that never writes `deepspeed`.
    required_tokens = (b"deepspeed", b"from_pretrained", b"device_map")
    alternative_tokens = ((b"HfDeepSpeedConfig", b"from_pretrained", b"device_map"),)
    docs = RuleDocs(
        what="""
            Flags `from_pretrained(..., device_map=...)` on a transformers model class in a script that hands
            DeepSpeed a ZeRO-3 config (`deepspeed.initialize`, `HfDeepSpeedConfig`,
            `TrainingArguments(deepspeed=...)`): an error when the config says stage 3, a warning that says
            "under ZeRO-3" when the config cannot be read. Silent when every config is known to use a lower
            stage, and in scripts that hand DeepSpeed no config.
        """,
        why="""
            When transformers knows that ZeRO-3 is on (a live `HfDeepSpeedConfig`, or
            `TrainingArguments(deepspeed=...)`), `from_pretrained` raises "DeepSpeed Zero-3 is not compatible
            with passing a `device_map`". In a raw script without it, accelerate places the full model on the
            GPU of each rank first, and ZeRO-3 partitions it only later: the memory ZeRO-3 was meant to save is
            spent at load time.
        """,
        example="""
            ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
        """,
        use_instead="""
            ds_config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
            dschf = HfDeepSpeedConfig(ds_config)  # keep this reference alive
            model = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
            """
        ),
        Valid(
            """
            import deepspeed
            from transformers import AutoModelForCausalLM, AutoTokenizer
            tok = AutoTokenizer.from_pretrained(name, device_map="auto")
            model = AutoModelForCausalLM.from_pretrained(name, device_map=None)
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """
        ),
        Valid(
            """
            from transformers import AutoModelForCausalLM
            from deepspeed.accelerator import get_accelerator
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            import transformers
            model = transformers.AutoModelForCausalLM.from_pretrained(name, device_map="auto")
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """,
            lines=(4,),
        ),
        Invalid(
            """
            from transformers import LlamaForCausalLM, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed=args.deepspeed)
            model = LlamaForCausalLM.from_pretrained(path, device_map={"": 0})
            """,
            lines=(4,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.sources = ZeroSources(self.context)
        self.candidates: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.sources.consider(node)
        if not is_model_from_pretrained(self.context, node):
            return
        device_map = keyword_value(node, "device_map")
        if device_map is not None and not is_none(device_map):
            self.candidates.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        stages = [source.stage for source in self.sources.sources]
        if not stages:
            return
        for node in self.candidates:
            if 3 in stages:
                self.report(node, self.zero3_message)
            elif None in stages:
                self.report(node, self.message, severity=Severity.WARNING)

"""DSL207: `from_pretrained(..., device_map=...)` in a script that runs ZeRO-3."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.engine_config import ZeroSources
from dslint.script.hf_models import is_model_from_pretrained, is_none, keyword_value
from dslint.script.model_reach import ModelReach

HF_KINDS = ("HfDeepSpeedConfig", "TrainingArguments")


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
            stage, and in scripts that hand DeepSpeed no config. When the ZeRO-3 config goes only to
            `deepspeed.initialize` (no `HfDeepSpeedConfig`, no `TrainingArguments`), only a model that reaches
            `initialize` is flagged (here, or through a builder's return or a function handing it on, wrapped or
            not, from either arm of an `if`): a frozen teacher or reference model loaded with a device map that
            never reaches the engine stays where accelerate placed it, as intended.
        """,
        why="""
            When transformers knows that ZeRO-3 is on (a live `HfDeepSpeedConfig`, or
            `TrainingArguments(deepspeed=...)`), `from_pretrained` raises "DeepSpeed Zero-3 is not compatible
            with passing a `device_map`": the test is `is_deepspeed_zero3_enabled()`, a process-wide flag, so it
            raises for every model, the teacher and the reference model too. In a raw script without it,
            accelerate places the full model on the GPU of each rank first, and ZeRO-3 partitions it only later:
            the memory ZeRO-3 was meant to save is spent at load time. A model that never reaches the engine is
            not partitioned at all, so its device map is what places it.
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
            import deepspeed
            from transformers import AutoModelForCausalLM
            teacher = AutoModelForCausalLM.from_pretrained(teacher_name, device_map={"": rank})
            student = AutoModelForCausalLM.from_pretrained(name)
            engine, *_ = deepspeed.initialize(model=student, config={"zero_optimization": {"stage": 3}})
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
        Invalid(
            """
            import deepspeed
            from peft import get_peft_model
            from transformers import AutoModelForCausalLM
            def build(name):
                model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
                model = get_peft_model(model, lora)
                return deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            """,
            lines=(6,),
        ),
        Invalid(
            """
            from transformers import AutoModelForCausalLM, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
            teacher = AutoModelForCausalLM.from_pretrained(teacher_name, device_map="auto")
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
        sources = self.sources.sources
        if not sources:
            return
        hf_stages = [source.stage for source in sources if source.kind in HF_KINDS]
        reaching: ModelReach | None = None
        for node in self.candidates:
            if 3 in hf_stages or None in hf_stages:
                stages = [source.stage for source in sources]  # transformers raises for any model
            else:
                if reaching is None:
                    reaching = ModelReach(self.facts, original_node)
                if not reaching.reaches(node):
                    continue  # a model that never reaches the engine (a teacher, a reference model)
                stages = [source.stage for source in sources if source.kind not in HF_KINDS]
            if 3 in stages:
                self.report(node, self.zero3_message)
            elif None in stages:
                self.report(node, self.message, severity=Severity.WARNING)

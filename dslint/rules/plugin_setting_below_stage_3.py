"""DSL475: a `DeepSpeedPlugin(...)` built in code with a ZeRO-3 setting (`offload_param_device`, `zero3_init_flag`)
at a lower `zero_stage`: accelerate drops it."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import DEEPSPEED_PLUGIN_CALLS


class PluginSettingBelowStage3(ScriptRule):
    code = "DSL475"
    slug = "plugin-setting-below-stage-3"
    message = "this DeepSpeedPlugin setting works only with ZeRO stage 3; at this zero_stage it is ignored"
    severity = Severity.ERROR
    needs_engine = False
    required_tokens = (b"DeepSpeedPlugin", b"zero_stage")
    call_shapes = (Shape(calls=tuple(sorted(DEEPSPEED_PLUGIN_CALLS))),)
    docs = RuleDocs(
        what="""
            Flags, in accelerate's `DeepSpeedPlugin(...)` built in code with a literal `zero_stage` below 3 and no
            DeepSpeed config file (`hf_ds_config`), an `offload_param_device` of `"cpu"` or `"nvme"` and a
            `zero3_init_flag=True`: the settings of the accelerate YAML's `deepspeed_config:` that DSL418 and DSL419
            check, given in code (where the YAML's own are then never read). Silent when the stage is not a
            literal, and when the plugin reads a config file (the file's stage decides; DSL409 checks it).
        """,
        why="""
            Without a config file, `DeepSpeedPlugin` builds the DeepSpeed config from its fields:
            `offload_param_device` becomes `zero_optimization.offload_param.device`, which only ZeRO-3 reads
            (parameters are partitioned, and so offloaded, only at stage 3): below it DeepSpeed ignores the block
            without a word and every rank keeps all its parameters on the GPU. `zero3_init_flag` makes
            `from_pretrained` build the model under `deepspeed.zero.Init`; accelerate turns it off below stage 3
            ("DeepSpeed Zero3 Init flag is only applicable for ZeRO Stage 3. Setting it to False.",
            `utils/dataclasses.py`, accelerate 0.20 to 1.x) and the model is built whole on every rank.
        """,
        example="""
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2, offload_optimizer_device="cpu", offload_param_device="cpu")
            accelerator = Accelerator(deepspeed_plugin=plugin)
        """,
        use_instead="""
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2, offload_optimizer_device="cpu")
            accelerator = Accelerator(deepspeed_plugin=plugin)
        """,
    )
    valid = (
        Valid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=3, offload_param_device="cpu", zero3_init_flag=True)
            accelerator = Accelerator(deepspeed_plugin=plugin)
            """
        ),
        Valid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2, offload_param_device="none", zero3_init_flag=False)
            accelerator = Accelerator(deepspeed_plugin=plugin)
            """
        ),
        # the stage comes from the command line: not known here
        Valid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=args.zero_stage, offload_param_device="cpu")
            accelerator = Accelerator(deepspeed_plugin=plugin)
            """
        ),
        # a config file: its own stage decides
        Valid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(hf_ds_config="ds.json", zero_stage=2, offload_param_device="cpu")
            accelerator = Accelerator(deepspeed_plugin=plugin)
            """
        ),
    )
    invalid = (
        Invalid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(
                zero_stage=2,
                offload_optimizer_device="cpu",
                offload_param_device="cpu",
                zero3_init_flag=True,
            )
            accelerator = Accelerator(deepspeed_plugin=plugin)
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            from accelerate.utils import DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=1, offload_param_device="nvme", offload_param_nvme_path="/nvme")
            """,
            lines=(3,),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.qualified(node.func) not in DEEPSPEED_PLUGIN_CALLS or any(arg.star for arg in node.args):
            return
        given = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        stage = given.get("zero_stage")
        if "hf_ds_config" in given or not isinstance(stage, cst.Integer) or int(stage.value) >= 3:
            return
        device = given.get("offload_param_device")
        shown = device.evaluated_value if isinstance(device, cst.SimpleString) else None
        if device is not None and isinstance(shown, str) and shown.lower() in ("cpu", "nvme"):
            message = f"offload_param_device={shown!r} needs ZeRO-3: at zero_stage={stage.value} DeepSpeed ignores it"
            self.report(device, message + " silently (params stay on the GPU)")
        flag = given.get("zero3_init_flag")
        if isinstance(flag, cst.Name) and flag.value == "True":
            message = f"zero3_init_flag has no effect at zero_stage={stage.value}: accelerate turns it off below"
            self.report(flag, message + " ZeRO-3, every rank builds the whole model")

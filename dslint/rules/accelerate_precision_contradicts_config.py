"""DSL474: `accelerate launch --mixed_precision X` of a script whose DeepSpeedPlugin config enables the other 16-bit
type (accelerate refuses it when the Accelerator is built)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

_SCRIPT = (
    "train.py",
    """
    from accelerate import Accelerator, DeepSpeedPlugin
    plugin = DeepSpeedPlugin(hf_ds_config="ds_fp16.json")
    accelerator = Accelerator(deepspeed_plugin=plugin)
    model, optimizer = accelerator.prepare(model, optimizer)
    """,
)
_FP16 = ("ds_fp16.json", '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n')
_AUTO = ("ds_auto.json", '{"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}\n')


class AcceleratePrecisionContradictsConfig(LaunchRule):
    code = "DSL474"
    slug = "accelerate-precision-contradicts-config"
    kind = "precision_conflict"
    message = "accelerate's mixed precision contradicts the DeepSpeed config's: Accelerator() raises a ValueError"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `accelerate launch --mixed_precision bf16` (or `fp16`; or, without the option, the
            `mixed_precision:` of the launch's `--config_file`) starting a script whose one
            `DeepSpeedPlugin(hf_ds_config=...)` reads a DeepSpeed config (a literal path, found from where the
            launch runs) that enables the other 16-bit type: `"fp16": {"enabled": true}` under `bf16`,
            `"bf16": {"enabled": true}` under `fp16`. Silent when the script's `Accelerator(...)` gives its own
            `mixed_precision` (or arguments that may carry one), when the value is `"auto"` (accelerate fills it
            from the launch), and for `fp8`.
        """,
        why="""
            The `Accelerator` takes its precision from ACCELERATE_MIXED_PRECISION, which `accelerate launch`
            sets from `--mixed_precision` (or the config file), and hands it to the plugin's
            `set_mixed_precision`, which raises `ValueError: --mixed_precision arg cannot be set to bf16 when fp16
            is set in the DeepSpeed config file` (accelerate 0.20 to 1.x, `utils/dataclasses.py`). Every process
            stops when it builds its `Accelerator`, before any training step; the launch as shipped never runs.
        """,
        example="""
            accelerate launch --mixed_precision bf16 --num_processes 8 train.py
        """,
        use_instead="""
            accelerate launch --mixed_precision fp16 --num_processes 8 train.py
        """,
    )
    valid = (
        Valid("accelerate launch --mixed_precision fp16 --num_processes 2 train.py\n", files=(_SCRIPT, _FP16)),
        # "auto": accelerate writes the launch's precision into the config
        Valid(
            "accelerate launch --mixed_precision bf16 train.py\n",
            files=(("train.py", _SCRIPT[1].replace("ds_fp16.json", "ds_auto.json")), _AUTO),
        ),
        # the script's Accelerator gives its own precision: the launch's is not read
        Valid(
            "accelerate launch --mixed_precision bf16 train.py\n",
            files=(
                ("train.py", _SCRIPT[1].replace("(deepspeed_plugin=", '(mixed_precision="fp16", deepspeed_plugin=')),
                _FP16,
            ),
        ),
    )
    invalid = (
        Invalid(
            "accelerate launch --multi_gpu --mixed_precision bf16 --num_processes 2 train.py\n",
            lines=(1,),
            files=(_SCRIPT, _FP16),
        ),
        Invalid(
            "accelerate launch --config_file acc.yaml train.py\n",
            lines=(1,),
            files=(
                _SCRIPT,
                _FP16,
                ("acc.yaml", "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"),
            ),
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        precision, other, config, script = issue.detail.split("|")
        (option,) = issue.options
        source = "--mixed_precision" if option == "--mixed_precision" else f"{option}'s mixed_precision"
        return (
            f"{source} {precision} contradicts {config}, which enables {other} and which {script}'s DeepSpeedPlugin"
            f" reads: accelerate raises a ValueError in Accelerator() and the run never starts"
        )

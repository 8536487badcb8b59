"""DSL465: `accelerate launch` given DeepSpeed settings without turning DeepSpeed on (the settings are never read)."""

from __future__ import annotations

from dataclasses import replace

from dslint.diagnostics import Diagnostic, Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.accelerate_deepspeed_off import MACHINE_DEFAULT
from dslint.project.project_index import LaunchIssue

_SCRIPT = (
    "train.py",
    """
    from accelerate import Accelerator
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(model, optimizer)
    """,
)
_PROJECT = (_SCRIPT, ("ds_zero3.json", '{"zero_optimization": {"stage": 3}}\n'))


class AccelerateDeepSpeedNeverOn(LaunchRule):
    code = "DSL465"
    slug = "accelerate-deepspeed-never-on"
    kind = "deepspeed_never_on"
    message = "accelerate launch gets DeepSpeed settings but no --use_deepspeed: DeepSpeed never runs"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags an `accelerate launch` command given DeepSpeed settings of its own (`--deepspeed_config_file`,
            `--zero_stage`, the offload devices and NVMe paths, `--zero3_init_flag`, `--zero3_save_16bit_model`,
            the DeepSpeed host options) without `--use_deepspeed`: an error when it passes `--multi_gpu` (or
            `--use_fsdp`, `--cpu`, `--tpu`) or a `--config_file` whose `distributed_type` is not `DEEPSPEED`; a
            warning when it passes no config file, so that only the machine's own default accelerate config
            (written by `accelerate config`, outside the project) could turn DeepSpeed on. Silent when the
            started script builds its own `DeepSpeedPlugin`, or the launcher writes the default config itself.
            Also an error: `--multi_gpu` (or `--use_fsdp`, `--cpu`, `--tpu`) beside a `--config_file` whose
            `distributed_type` is `DEEPSPEED`: the command line picks the launcher, and the YAML's DeepSpeed
            settings are never read (the project then reads that launch as one without DeepSpeed).
        """,
        why="""
            accelerate picks its launcher from `--use_deepspeed`, `--multi_gpu`... or, when none is given, from the
            config file's `distributed_type` (`launch.py`, `_validate_launch_command` and `launch_command`,
            accelerate 0.2x to 1.16); the DeepSpeed options only reach the processes through the DeepSpeed
            launcher's environment (`prepare_deepspeed_cmd_env`). Otherwise the run is plain DDP: no ZeRO, no
            offload, the whole model, gradients and optimizer state on every GPU, and nothing says so until the
            memory runs out.
        """,
        example="""
            accelerate launch --num_processes 8 --deepspeed_config_file ds_zero3.json train.py
        """,
        use_instead="""
            accelerate launch --use_deepspeed --num_processes 8 --deepspeed_config_file ds_zero3.json train.py
        """,
    )
    valid = (
        Valid("accelerate launch --use_deepspeed --deepspeed_config_file ds_zero3.json train.py\n", files=_PROJECT),
        Valid(
            "accelerate launch --config_file ds.yaml --deepspeed_config_file ds_zero3.json train.py\n",
            files=(*_PROJECT, ("ds.yaml", "distributed_type: DEEPSPEED\nnum_processes: 2\n")),
        ),
        # a config file that is not in the project: what it says is not known
        Valid("accelerate launch --config_file $CFG --zero_stage 2 train.py\n", files=_PROJECT),
        Valid("accelerate launch --num_processes 2 train.py\n", files=_PROJECT),
        # the script builds its own plugin
        Valid(
            "accelerate launch --deepspeed_config_file ds_zero3.json own.py\n",
            files=(
                *_PROJECT,
                (
                    "own.py",
                    """
                    from accelerate import Accelerator, DeepSpeedPlugin
                    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds_zero3.json"))
                    """,
                ),
            ),
        ),
    )
    invalid = (
        Invalid(  # the command line's backend wins over the YAML's DEEPSPEED
            "accelerate launch --config_file ds.yaml --multi_gpu train.py\n",
            lines=(1,),
            files=(*_PROJECT, ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n")),
        ),
        Invalid(
            "accelerate launch --multi_gpu --num_processes 4 \\\n  --deepspeed_config_file ds_zero3.json train.py\n",
            lines=(2,),
            files=_PROJECT,
        ),
        Invalid(
            "accelerate launch --config_file ddp.yaml --zero_stage 3 train.py\n",
            lines=(1,),
            files=(*_PROJECT, ("ddp.yaml", "distributed_type: MULTI_GPU\nnum_processes: 2\n")),
        ),
        Invalid(
            "accelerate launch --num_processes 8 --deepspeed_config_file ds_zero3.json train.py\n",
            lines=(1,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        if len(issue.options) == 2:  # the config file's DEEPSPEED, overridden by the command line's backend
            shown = issue.options[1]
            return f"{issue.detail} overrides {shown}'s DEEPSPEED: DeepSpeed never runs; drop {issue.detail}"
        (option,) = issue.options
        if issue.detail == MACHINE_DEFAULT:
            return f"{option} without --use_deepspeed: DeepSpeed runs only if this machine's accelerate config says so"
        return f"{option} is never read: {issue.detail} runs without DeepSpeed; pass --use_deepspeed instead"

    @classmethod
    def finding(cls, path: str, issue: LaunchIssue) -> Diagnostic:
        found = super().finding(path, issue)
        return replace(found, severity=Severity.WARNING) if issue.detail == MACHINE_DEFAULT else found

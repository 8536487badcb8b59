"""DSL455: a config's `activation_checkpointing` switches that nothing in the project applies."""

from __future__ import annotations

from dslint.config.facts import Origin
from dslint.config.tree import Object, Scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# The section's switches that change what activation checkpointing does (`checkpointing.configure` reads them).
SWITCHES = (
    "partition_activations",
    "cpu_checkpointing",
    "contiguous_memory_optimization",
    "synchronize_checkpoint_boundary",
    "profile",
)
_SECTION = (
    '{{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {{"stage": 2}},\n'
    '  "activation_checkpointing": {{\n    "partition_activations": {partition},\n'
    '    "cpu_checkpointing": {cpu}\n  }}\n}}\n'
)
_RUN = "deepspeed --num_gpus 2 train.py --deepspeed_config ds_config.json\n"
_ENGINE = (
    "import deepspeed\n"
    "engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())\n"
)
# a script building its config: the section on, then applied (or not) in the same script
_SCRIPT = (
    "import deepspeed\n"
    'config = {"train_micro_batch_size_per_gpu": 4, "activation_checkpointing": {"cpu_checkpointing": True}}\n'
    "engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)\n"
)
_CONFIGURED = _ENGINE + "deepspeed.checkpointing.configure(None, deepspeed_config=args.deepspeed_config)\n"


class ActivationCheckpointingNeverConfigured(ConfigRule):
    code = "DSL455"
    slug = "activation-checkpointing-never-configured"
    message = "activation_checkpointing is applied only by deepspeed.checkpointing.configure(), called nowhere here"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags the `activation_checkpointing` section of a DeepSpeed config that `deepspeed.initialize` or the
            Hugging Face Trainer (or accelerate) reads, or a launch hands to a script whose use of it is not
            followed, when it turns on one of its switches
            (`partition_activations`, `cpu_checkpointing`, `contiguous_memory_optimization`,
            `synchronize_checkpoint_boundary`, `profile`) and no Python file of the project calls
            `deepspeed.checkpointing.configure` (nor brings Megatron-DeepSpeed or GPT-NeoX, which call it
            themselves). Reported at the first switch that is on. Left alone: a config no known reader takes (a file
            linted alone), Lightning's strategy (it applies the section itself), and switches set to false.
        """,
        why="""
            The engine never reads the section: DeepSpeed 0.19.8 parses it into
            `DeepSpeedConfig.activation_checkpointing_config`, and the only code that applies it is
            `deepspeed.checkpointing.configure(mpu, deepspeed_config=...)`
            (`runtime/activation_checkpointing/checkpointing.py: _configure_using_config_file`), which sets the
            module's globals that `deepspeed.checkpointing.checkpoint` reads. A model checkpointed with
            `torch.utils.checkpoint` (the Hugging Face `gradient_checkpointing_enable()`) never looks at them
            either. So activations are neither partitioned across model-parallel ranks nor moved to the CPU, and the
            memory the config was written to save is still spent, without a word.
        """,
        example="""
            {"train_micro_batch_size_per_gpu": 4,
             "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true}}
            # train.py: deepspeed.initialize(args=args, model=model, ...) and nothing else
        """,
        use_instead="""
            # train.py, before the model runs forward, with its layers wrapped in deepspeed.checkpointing.checkpoint:
            deepspeed.checkpointing.configure(None, deepspeed_config=args.deepspeed_config)
        """,
    )
    valid = (
        Valid(_SCRIPT + "deepspeed.checkpointing.configure(None, deepspeed_config=config)\n", path="train.py"),
        Valid(_SECTION.format(partition="true", cpu="true")),  # a file alone: its reader is not known
        # the script applies the section itself; the switches are off
        Valid(_SECTION.format(partition="true", cpu="true"), files=(("run.sh", _RUN), ("train.py", _CONFIGURED))),
        Valid(_SECTION.format(partition="false", cpu="false"), files=(("run.sh", _RUN), ("train.py", _ENGINE))),
    )
    invalid = (
        Invalid(_SCRIPT, lines=(2,), path="train.py"),
        Invalid(
            _SECTION.format(partition="false", cpu="true"), lines=(6,), files=(("run.sh", _RUN), ("train.py", _ENGINE))
        ),
        # launched to a script whose use of the option is not followed: DeepSpeed's all the same, never configured
        Invalid(
            _SECTION.format(partition="true", cpu="false"),
            lines=(5,),
            files=(("run.sh", _RUN), ("train.py", "import sys\nimport trainer_lib\ntrainer_lib.run(sys.argv)\n")),
        ),
        # a Megatron script of the project applies its own configs; the launched script does not
        Invalid(
            _SECTION.format(partition="true", cpu="false"),
            lines=(5,),
            files=(("run.sh", _RUN), ("train.py", _ENGINE), ("pretrain_gpt.py", "from megatron import initialize\n")),
        ),
    )

    def check(self) -> None:
        context = self.context
        # a launched file whose reader is not followed (UNLINKED) is still DeepSpeed's, and nothing configures it
        if context.checkpointing_configured or context.origin not in (
            Origin.INITIALIZE,
            Origin.TRAINER,
            Origin.UNLINKED,
        ):
            return
        section = self.section("activation_checkpointing")
        if not isinstance(section, Object):
            return
        for entry in self.entries(section):
            if entry.key in SWITCHES and isinstance(entry.value, Scalar) and entry.value.value is True:
                self.report_key(entry)
                return

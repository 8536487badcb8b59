"""DSL479: `accelerate launch --config_file` naming a DeepSpeed config (accelerate refuses it at start-up)."""

from __future__ import annotations

import os

from dslint.diagnostics import Severity
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.accelerate_config_refused import KIND
from dslint.project.project_index import LaunchIssue

_SCRIPT = (
    "train.py",
    """
    from accelerate import Accelerator
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(model, optimizer)
    """,
)
_DEEPSPEED = (
    "configs/ds_z3.json",
    '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {"stage": 3}\n}\n',
)
_PROJECT = (_SCRIPT, _DEEPSPEED)


class DeepSpeedConfigAsAccelerateConfig(LaunchRule):
    code = "DSL479"
    slug = "deepspeed-config-as-accelerate-config"
    kind = KIND
    message = "--config_file names a DeepSpeed config: accelerate refuses it; use --deepspeed_config_file"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags an `accelerate launch` whose `--config_file` names a JSON file of the project that is a DeepSpeed
            config (recognised as the config rules recognise one: `zero_optimization`, `train_batch_size`... at its
            top level) and has no `distributed_type` of its own. The finding names the config file. A file that
            is not in the project, or not JSON (accelerate reads any other suffix as YAML), is left alone.
        """,
        why="""
            `accelerate launch` reads `--config_file` as its own config, never as DeepSpeed's
            (`commands/config/config_args.py`, accelerate 1.16: `load_config_from_file` reads a `.json` file with
            `json.load`; `ClusterConfig.process_config` raises "A `distributed_type` must be specified in the
            config file", and `from_json_file` raises on every key it does not know, `train_batch_size` and
            `zero_optimization` among them). The launch stops before any process starts, so the ZeRO settings
            of the file never run. A DeepSpeed config goes in `--deepspeed_config_file` (with `--use_deepspeed`),
            or under `deepspeed_config_file:` in the `deepspeed_config:` section of an accelerate YAML.
        """,
        example="""
            accelerate launch --config_file configs/ds_z3.json --num_processes 8 train.py
        """,
        use_instead="""
            accelerate launch --use_deepspeed --deepspeed_config_file configs/ds_z3.json --num_processes 8 train.py
        """,
    )
    valid = (
        Valid(
            "accelerate launch --use_deepspeed --deepspeed_config_file configs/ds_z3.json train.py\n", files=_PROJECT
        ),
        # an accelerate config written as JSON (accelerate reads `.json` config files too)
        Valid(
            "accelerate launch --config_file acc.json train.py\n",
            files=(*_PROJECT, ("acc.json", '{"distributed_type": "DEEPSPEED", "num_processes": 2}\n')),
        ),
        Valid(
            "accelerate launch --config_file acc.yaml train.py\n",
            files=(*_PROJECT, ("acc.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n")),
        ),
        # a JSON file that is no DeepSpeed config, and one that is not in the project: not this rule's
        Valid(
            "accelerate launch --config_file settings.json train.py\n",
            files=(*_PROJECT, ("settings.json", '{"lr": 0.1, "epochs": 3}\n')),
        ),
        Valid("accelerate launch --config_file $HOME/ds_z3.json train.py\n", files=_PROJECT),
    )
    invalid = (
        Invalid("accelerate launch --config_file configs/ds_z3.json \\\n  train.py\n", lines=(1,), files=_PROJECT),
        Invalid(
            "accelerate launch --num_processes 2 --config_file=configs/ds_z3.json train.py\n",
            lines=(1,),
            files=_PROJECT,
        ),
    )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        name = os.path.basename(issue.detail)
        return f"{name} is a DeepSpeed config, not accelerate's: accelerate stops; use --deepspeed_config_file"

"""DSL477: `Accelerator(gradient_accumulation_steps=K)` under accelerate's DeepSpeed, whose config accumulates over
another number of micro-batches."""

from __future__ import annotations

import libcst as cst

from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.accelerate_deepspeed import configured_accumulation
from dslint.project.config_edits import command_line_value, literal_value
from dslint.script.names import dotted_name

_PLUGIN = "from accelerate import Accelerator, DeepSpeedPlugin\n"
_LAUNCHED = (
    ("run.sh", "accelerate launch --config_file ds.yaml train.py\n"),
    ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"),
)


class AccelerateAccumulationOverridden(ScriptRule):
    code = "DSL477"
    slug = "accelerate-accumulation-overridden"
    message = "under DeepSpeed the config's gradient_accumulation_steps counts, not the Accelerator's"
    template = "DeepSpeed's gradient_accumulation_steps {engine} ({why}) wins over this {asked}; write the same value"
    severity = Severity.WARNING
    needs_engine = False
    required_tokens = (b"Accelerator", b"gradient_accumulation_steps")
    call_shapes = (Shape(calls=("accelerate.Accelerator",), configured=True),)
    docs = RuleDocs(
        what="""
            Flags `Accelerator(gradient_accumulation_steps=K)` (a literal, or the script's option at the value
            every launch gives it) where every way the script runs DeepSpeed through accelerate writes another
            number into the engine's config: its own `DeepSpeedPlugin(gradient_accumulation_steps=N)`, the
            `gradient_accumulation_steps` of the file its `hf_ds_config` names, or of the DeepSpeed config file
            every `accelerate launch` of it names. Silent when they agree, when a config says `"auto"` (accelerate
            fills it with K), when either value cannot be known, and without DeepSpeed.
        """,
        why="""
            DeepSpeed's engine does the accumulation: `accelerator.backward` calls `engine.backward` and
            `engine.step()`, and the engine steps the optimizer at its own boundary, every `gradient_accumulation_
            steps` micro-batches of its config. accelerate's `prepare` fills a config's `"auto"` with the
            Accelerator's number but leaves a written one as it is; since accelerate 1.8 it then logs "Gradient
            accumulation steps mismatch ... Using DeepSpeed's value" and counts with it, before that it kept counting
            its own (`sync_gradients`, the scheduler's steps) while the engine stepped at the config's. Either way
            the run accumulates over the config's number, not the one the script asks for: the effective batch and
            the schedule are not what the code says. Write `"auto"` in the config, or the same value in both places.
        """,
        example=_PLUGIN
        + """accelerator = Accelerator(
    gradient_accumulation_steps=8, deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds.json")
)  # ds.json: "gradient_accumulation_steps": 2""",
        use_instead=_PLUGIN
        + """accelerator = Accelerator(
    gradient_accumulation_steps=8, deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds.json")
)  # ds.json: "gradient_accumulation_steps": "auto\"""",
    )
    valid = (
        # the config leaves the number to accelerate
        Valid(
            _PLUGIN
            + "accelerator = Accelerator(\n"
            + '    gradient_accumulation_steps=8, deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds.json")\n)\n',
            files=(("ds.json", '{"gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}}\n'),),
        ),
        # the same number in both places
        Valid(
            _PLUGIN
            + "accelerator = Accelerator(gradient_accumulation_steps=4, "
            + "deepspeed_plugin=DeepSpeedPlugin(gradient_accumulation_steps=4, zero_stage=2))\n",
        ),
        # no DeepSpeed: accelerate accumulates itself
        Valid("from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=8)\n"),
        # a number built at run time is not compared
        Valid(
            "from accelerate import Accelerator\ndef main(steps):\n"
            "    return Accelerator(gradient_accumulation_steps=steps)\n",
            files=(*_LAUNCHED, ("ds.json", '{"gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2}}\n')),
        ),
    )
    invalid = (
        Invalid(
            _PLUGIN
            + "accelerator = Accelerator(\n"
            + '    gradient_accumulation_steps=8, deepspeed_plugin=DeepSpeedPlugin(hf_ds_config="ds.json")\n)\n',
            lines=(3,),
            files=(("ds.json", '{"gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2}}\n'),),
        ),
        # the config file every accelerate launch names; the Accelerator's number from the option's default
        Invalid(
            """import argparse
from accelerate import Accelerator
parser = argparse.ArgumentParser()
parser.add_argument("--accumulation", type=int, default=4)
args = parser.parse_args()
accelerator = Accelerator(gradient_accumulation_steps=args.accumulation)
""",
            lines=(6,),
            files=(*_LAUNCHED, ("ds.json", '{"gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2}}\n')),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        if name is None or name.rsplit(".", 1)[-1] != "Accelerator":
            return
        given = next(
            (a for a in node.args if a.keyword is not None and a.keyword.value == "gradient_accumulation_steps"), None
        )
        if given is None:
            return
        asked = literal_value(given.value)
        if asked is UNKNOWN:
            asked = command_line_value(self.context, given.value)[0]
        if not isinstance(asked, int) or isinstance(asked, bool):
            return
        found = configured_accumulation(self.context)
        if found is None or len(set(found[0])) != 1 or found[0][0] == asked:
            return
        steps, why, related = found
        self.report(given, self.template.format(engine=steps[0], why=why, asked=asked), related=related)

"""DSL476: `accelerator.clip_grad_norm_(params, max_norm)` under accelerate's DeepSpeed, whose engine clips at
another `gradient_clipping`."""

from __future__ import annotations

import libcst as cst

from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.accelerate_deepspeed import accelerate_clipping
from dslint.project.config_edits import command_line_value, literal_value
from dslint.script.engine_calls import argument
from dslint.script.hf_trainers import TrainerNames

_LOOP = """
    for batch in loader:
        loss = model(batch).sum()
        accelerator.backward(loss)
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), {max_norm})
        optimizer.step()
"""
_PLUGIN = "from accelerate import Accelerator, DeepSpeedPlugin\n"


class AccelerateClipNotApplied(ScriptRule):
    code = "DSL476"
    slug = "accelerate-clip-not-applied"
    message = "under DeepSpeed accelerator.clip_grad_norm_ clips nothing: the engine clips at its gradient_clipping"
    template = "under DeepSpeed this clips nothing: the engine clips at {engine} ({why}), not {asked}"
    severity = Severity.WARNING
    needs_engine = False
    required_tokens = (b"clip_grad_norm_",)
    call_shapes = (Shape(methods=("clip_grad_norm_",), configured=True),)
    docs = RuleDocs(
        what="""
            Flags `accelerator.clip_grad_norm_(parameters, max_norm)` (an `Accelerator` the file makes, or a name or
            attribute called `accelerator`) with a `max_norm` known to differ from the `gradient_clipping` the
            DeepSpeed engine accelerate builds will clip at, where every way the script runs DeepSpeed through
            accelerate gives that value: its own `DeepSpeedPlugin` (its `gradient_clipping=`, or the value of the
            `hf_ds_config` file it reads, whose `"auto"` accelerate fills with the plugin's value or 1.0), or the
            DeepSpeed config file of every `accelerate launch` of it (a literal value; no key: DeepSpeed's default,
            1.0 since 0.19.3, 0.0 before), or the inline DeepSpeed settings of its accelerate YAML (`gradient_clipping`
            or the launch's `--gradient_clipping`; none: 1.0). `max_norm` may be a literal or the script's option at
            the value every launch gives it. Silent when the two agree, when the value cannot be known (an `"auto"`
            in a launch's config file, which `--gradient_clipping` may fill), and without DeepSpeed.
        """,
        why="""
            Under DeepSpeed, accelerate's `clip_grad_norm_` does not clip: the engine owns the gradients (ZeRO
            partitions them) and clips them itself in `engine.step()` at the config's `gradient_clipping`, so
            accelerate only returns the engine's global norm (`engine.get_global_grad_norm()`, accelerate 1.8 and
            later; None before). The `max_norm` written in the loop is never applied: a run asking for 0.3 clips at
            1.0 (or, before DeepSpeed 0.19.3 with no key, not at all), silently. Write the value into the config
            (`"gradient_clipping": 0.3`), or pass it to the plugin (`DeepSpeedPlugin(gradient_clipping=0.3)`), which
            fills a config's `"auto"`.
        """,
        example=_PLUGIN
        + """accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
def train(model, optimizer, loader):"""
        + _LOOP.format(max_norm="0.3"),
        use_instead=_PLUGIN
        + """accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2, gradient_clipping=0.3))
def train(model, optimizer, loader):"""
        + _LOOP.format(max_norm="0.3"),
    )
    valid = (
        # the plugin's clipping is the one asked for
        Valid(
            _PLUGIN
            + """accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2, gradient_clipping=0.5))
def train(model, optimizer, loader):"""
            + _LOOP.format(max_norm="0.5")
        ),
        # the "auto" of the plugin's own config becomes 1.0: the same value
        Valid(
            _PLUGIN
            + """accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
def train(model, optimizer, loader):"""
            + _LOOP.format(max_norm="1.0")
        ),
        # no DeepSpeed: accelerate clips itself
        Valid(
            """from accelerate import Accelerator
accelerator = Accelerator()
def train(model, optimizer, loader):"""
            + _LOOP.format(max_norm="0.3")
        ),
        # a max_norm built at run time is not compared
        Valid(
            _PLUGIN
            + """accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
def train(model, optimizer, loader, clip):"""
            + _LOOP.format(max_norm="clip")
        ),
        # the launch's config file clips at the same value
        Valid(
            """from accelerate import Accelerator
accelerator = Accelerator()
def train(model, optimizer, loader):"""
            + _LOOP.format(max_norm="0.5"),
            files=(
                ("run.sh", "accelerate launch --config_file ds.yaml train.py\n"),
                ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"),
                ("ds.json", '{"gradient_clipping": 0.5, "zero_optimization": {"stage": 2}}\n'),
            ),
        ),
    )
    invalid = (
        Invalid(
            _PLUGIN
            + """accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
def train(model, optimizer, loader):"""
            + _LOOP.format(max_norm="0.3"),
            lines=(8,),
        ),
        # the launch's config file has no gradient_clipping: DeepSpeed's default 1.0 applies
        Invalid(
            """from accelerate import Accelerator
accelerator = Accelerator()
def train(model, optimizer, loader):"""
            + _LOOP.format(max_norm="0.3"),
            lines=(8,),
            files=(
                ("run.sh", "accelerate launch --config_file ds.yaml train.py\n"),
                ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"),
                ("ds.json", '{"zero_optimization": {"stage": 2}}\n'),
            ),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.names = TrainerNames(self.context)
        self.clips: list[tuple[cst.Call, float]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        self.names.consider_assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "clip_grad_norm_"):
            return
        given = argument(node, 1, "max_norm")  # clip_grad_norm_(parameters, max_norm, ...)
        if given is None:
            return
        value = literal_value(given.value)
        if value is UNKNOWN:
            value = command_line_value(self.context, given.value)[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.clips.append((node, float(value)))

    def leave_Module(self, original_node: cst.Module) -> None:
        clips = [(call, asked) for call, asked in self.clips if self.names.names_accelerator(call.func.value)]  # type: ignore[attr-defined]
        found = accelerate_clipping(self.context) if clips else None
        if found is None:
            return
        engine, why, related = found
        for call, asked in clips:
            if asked != engine:
                message = self.template.format(engine=f"{engine:g}", why=why, asked=f"{asked:g}")
                self.report(call, message, related=related)

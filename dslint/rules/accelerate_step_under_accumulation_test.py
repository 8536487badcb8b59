"""DSL311: accumulation by hand (`if (i + 1) % n == 0: optimizer.step()`) around `accelerator.backward` under
accelerate's DeepSpeed, whose engine steps on every call."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.accelerate_deepspeed import engine_accumulation
from dslint.script.accelerate_prepared import prepared
from dslint.script.facts import method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name

_PLUGIN = "from accelerate import Accelerator, DeepSpeedPlugin\n"
_LOOP = """
def train(model, optimizer, loader, accumulation):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        loss = model(batch).mean() / accumulation
        accelerator.backward(loss)
        if (step + 1) % accumulation == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
_LAUNCHED = (
    ("run.sh", "accelerate launch --config_file ds.yaml train.py\n"),
    ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"),
)


class AccelerateStepUnderAccumulationTest(ScriptRule):
    code = "DSL311"
    slug = "accelerate-step-under-accumulation-test"
    message = "under DeepSpeed accelerator.backward steps the engine every call: this test accumulates nothing"
    template = "the DeepSpeed engine steps in each accelerator.backward ({why}: accumulation 1): nothing accumulates"
    severity = Severity.WARNING
    needs_engine = False
    required_tokens = (b"backward", b"prepare", b"step")
    call_shapes = (Shape(methods=("step",), words=(b"Accelerator",), configured=True),)
    docs = RuleDocs(
        what="""
            Flags `optimizer.step()` in the body of an `if` whose test is a modulo test (`if (step + 1) %
            accumulation == 0:`, as DSL303 reads it), where `optimizer` holds what `accelerator.prepare` returned, in
            a function that calls `accelerator.backward(...)` before it, when every way the script runs DeepSpeed
            through accelerate gives the engine a `gradient_accumulation_steps` of 1: its own `DeepSpeedPlugin`
            (the keyword, or the file its `hf_ds_config` names), or the DeepSpeed config file (or the inline setting)
            of every `accelerate launch` of it; a config without the key, and `"auto"` where the script's
            `Accelerator` asks no accumulation, count as 1, as accelerate fills them. Silent without DeepSpeed
            (accelerate's own DDP accumulates as the loop says), when the engine accumulates more than one
            micro-batch, and when that number is not known.
        """,
        why="""
            Under DeepSpeed, `accelerator.backward(loss)` runs the engine's `backward` and then `engine.step()`
            (`DeepSpeedEngineWrapper.backward`: on every call before accelerate 1.8, on every call outside
            `accelerator.accumulate` since, where it also marks each call an accumulation boundary), and the
            prepared optimizer's `step()` and `zero_grad()` do nothing (`DeepSpeedOptimizerWrapper`). With the
            engine's `gradient_accumulation_steps` at 1, the weights are updated after every micro-batch whatever
            the loop tests: nothing is accumulated, and a loss divided by the intended number of micro-batches
            only shrinks every update. The accumulation belongs in the DeepSpeed config
            (`gradient_accumulation_steps`, or `"auto"` with `Accelerator(gradient_accumulation_steps=n)` and the
            loop under `with accelerator.accumulate(model):`).
        """,
        example=_PLUGIN
        + "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))\n"
        + _LOOP.replace("\ndef train", "def train"),
        use_instead=_PLUGIN
        + "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=4))\n"
        + """def train(model, optimizer, loader):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(batch).mean())
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    valid = (
        # the engine accumulates four micro-batches itself
        Valid(
            _PLUGIN
            + "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=4))"
            + _LOOP
        ),
        # no DeepSpeed: accelerate's DDP steps the optimizer where the loop says
        Valid("from accelerate import Accelerator\naccelerator = Accelerator()" + _LOOP),
        # `"auto"` filled with the Accelerator's number, which the script asks at run time: not known
        Valid(
            "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=n)" + _LOOP,
            files=(
                *_LAUNCHED,
                ("ds.json", '{"gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}}'),
            ),
        ),
        # an optimizer accelerate never prepared (a critic's, stepped by hand)
        Valid(
            _PLUGIN
            + "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))"
            + _LOOP.replace("        if (step + 1)", "        critic_loss.backward()\n        if (step + 1)").replace(
                "optimizer.step()", "critic_optimizer.step()"
            )
        ),
        # no accelerator.backward before the test: the step is not the engine's
        Valid(
            _PLUGIN
            + "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))"
            + _LOOP.replace("accelerator.backward(loss)", "loss.backward()")
        ),
    )
    invalid = (
        Invalid(
            _PLUGIN + "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))" + _LOOP, lines=(9,)
        ),
        # the config file every accelerate launch names writes no accumulation (accelerate fills 1)
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator()" + _LOOP,
            lines=(9,),
            files=(*_LAUNCHED, ("ds.json", '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}')),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.trainers = TrainerNames(self.context)
        self.backwards: list[cst.Call] = []  # `accelerator.backward(...)` calls met so far
        self.asked = False  # `engine_accumulation` asked yet (once a file, at the first step it could flag)
        self.accumulation: tuple[list[int], str, tuple[Related, ...]] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        name = method_name(node)
        if name == "backward" and isinstance(node.func, cst.Attribute):
            if self.trainers.names_accelerator(node.func.value):
                self.backwards.append(node)
            return
        if name != "step" or not isinstance(node.func, cst.Attribute) or node.args:
            return
        receiver = node.func.value
        written = dotted_name(receiver) or ""
        if "optim" not in written.rsplit(".", 1)[-1].lower() or not prepared(self.facts, self.trainers, receiver, node):
            return
        if self.loop.accumulation_test(node) is None or not self._backward_before(node):
            return
        if not self.asked:
            self.asked, self.accumulation = True, engine_accumulation(self.context)
        found = self.accumulation
        if found is None or any(steps != 1 for steps in found[0]):
            return
        _, why, related = found
        self.report(node, self.template.format(why=why), related=related)

    def _backward_before(self, node: cst.Call) -> bool:
        scope = self.facts.scope_at(node)
        start = self.facts.start(node)
        return any(self.facts.scope_at(b) is scope and self.facts.start(b) < start for b in self.backwards)

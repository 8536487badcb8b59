"""DSL104: the model is cast to half precision before it is given to `deepspeed.initialize` (split from DSL101)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.accelerate_deepspeed import accelerate_deepspeed
from dslint.project.hand_casts import engine_casts_alike
from dslint.rules.model_moved_before_initialize import ModelMovedBeforeInitialize
from dslint.script.edits import delete_line
from dslint.script.model_moves import ModelMoves, cast_dtype, prepare_sinks
from dslint.script.parameter_casts import cast_loops, casting_helpers, helper_argument, parameter_loops
from dslint.script.statement_removal import delete_statements

CAST_CALLS = ("bfloat16", "half", "to")  # every cast DSL104 reports is one of these calls, or a loop holding one
# project helpers: one casting the module it is handed to 16 bits, one casting it to fp32 (no DSL104 cast)
_CASTING = (("nets.py", "def to_half(net):\n    net.half()\n    return net\n\ndef to_full(net):\n    net.float()\n"),)


class ModelCastBeforeInitialize(ModelMovedBeforeInitialize):
    """The same walk as DSL101 (the model's calls before the `initialize` it reaches), reporting the casts."""

    code = "DSL104"
    slug = "model-cast-before-initialize"
    message = "model cast before deepspeed.initialize; remove the cast and set fp16/bf16 in the config"
    accelerate_template = (
        "model cast before accelerator.prepare; remove it: DeepSpeed runs {precision} and casts it ({where})"
    )
    helper_template = (
        "{callee}() casts the model to 16 bits ({where}) before deepspeed.initialize; set fp16/bf16 in the config"
    )
    severity = Severity.WARNING
    inference_engine = False
    # A cast before this file's initialize (an engine), or (accelerate, where a DeepSpeedPlugin or an accelerate
    # launch with DeepSpeed may be: `configured`) before `accelerator.prepare`; `float16` is in `bfloat16`.
    needs_engine = False
    alternative_tokens = ((b"prepare", b"half", b"Accelerator"), (b"prepare", b"float16", b"Accelerator"))
    call_shapes = (
        Shape(methods=CAST_CALLS, engine=True),
        Shape(methods=CAST_CALLS, words=(b"Accelerator",), configured=True),
        Shape(project_casts=True, engine=True),  # a call of a project function that casts its argument
    )
    casts = True
    docs = RuleDocs(
        what="""
            Flags `.half()`, `.bfloat16()` and `.to(..., dtype=...)` (or `.to(torch.float16)`) on the model that
            is later given to `deepspeed.initialize(model=...)`, in the same function, before that call; also a cast
            one parameter at a time (`for p in model.parameters(): p.data = p.data.half()`), in that function or
            in a function of the same module it hands the model to (`set_parameter_bf16(model)`). A call of a project
            function (any module) that casts the model it is handed to 16 bits (`to_half(model)` running
            `net.half()`), or of a method casting an attribute of its own instance (`self._prepare()` running
            `self.model.half()`), is reported at the call, naming the cast, without a fix. It used to be
            part of DSL101 (`# noqa: DSL101` and `ignore = ["DSL101"]` still cover it, through the redirect). A cast
            inside `with init_empty_weights():` (meta parameters, no data: the dtype a load fills) is not flagged,
            nor, under a DeepSpeed before 0.19.2 (which casts the whole module, buffers too), a cast to the one half
            type the config of this file's `initialize` enables: the engine would do the same.

            Under accelerate: a cast known to give 16 bits (`.half()`, `.bfloat16()`, `.to(torch.float16)`,
            `.to(device, dtype=torch.bfloat16)`, a parameter loop) on the model that `accelerator.prepare(...)`
            later receives, in a script that runs DeepSpeed through accelerate (a `DeepSpeedPlugin` it builds, or
            an `accelerate launch` whose YAML says `distributed_type: DEEPSPEED`) in fp16 or bf16: the YAML's
            `mixed_precision` (or `--mixed_precision`), `Accelerator(mixed_precision=...)`, or an `fp16`/`bf16`
            section the DeepSpeed config enables. Only the model that reaches `prepare` counts: a frozen VAE, text
            encoder or teacher cast to half and never prepared is left alone. Silent under `mixed_precision: no`
            (the cast is then the run's only precision, and removing it changes what trains), where the precision
            cannot be read, for a `dtype=` the script computes (`weight_dtype`), and under accelerate without
            DeepSpeed.
        """,
        why="""
            Casting is the engine's job: it casts the module to fp16 or bf16 when the config's `fp16` or `bf16`
            section enables them (DeepSpeedEngine `_configure_distributed_model`), and builds the loss scaler and
            the fp32 master weights to match. A model cast to half by hand under a config without `fp16` trains
            in half precision with no loss scaling and no fp32 master copy; under a config with it, the cast is
            redundant.

            accelerate hands the model to `deepspeed.initialize` itself, in `accelerator.prepare`
            (`Accelerator._prepare_deepspeed`: `deepspeed.initialize(model=model, config_params=...)`, the
            module untouched), with the config its `DeepSpeedPlugin` holds, in which `set_mixed_precision` has
            written `fp16` or `bf16` from `mixed_precision` (where the config has no such section, or says
            "auto"). The engine then casts the parameters to that type and its optimizer keeps fp32 master
            weights copied from them; cast by hand first, the master weights start from the rounded 16-bit
            values (the checkpoint's fp32 precision is gone for good), the hand cast also turns the buffers to
            16 bits, which the engine keeps in fp32 since DeepSpeed 0.19.2 (rotary `inv_freq`), and a cast to the
            other 16-bit type is cast again. Under `mixed_precision: no` the engine runs fp32 and casts nothing: a
            hand-cast model trains in half with no loss scaling (and, without ZeRO, no fp32 master copy).
        """,
        example="""
            model = Net().half()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
        """,
        use_instead="""
            model = Net()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")  # ds.json: "fp16": {"enabled": true}
        """,
        fix_safety="""
            The fix removes the cast (a lone statement is deleted; in an expression the call is dropped from its
            chain; a per-parameter cast loses its statement, and the loop goes with it when casting was all it
            did). It is unsafe: it changes the precision the model trains in unless the config enables it, and
            code between the cast and `initialize` may rely on the dtype.
        """,
    )
    valid = (
        # before 0.19.2 the engine casts the whole module to the enabled half type itself: the same cast by hand
        # changes nothing
        Valid(
            """
            import deepspeed
            model = model.half().cuda()
            engine, *_ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}, "steps": args.steps})
            """,
            deepspeed_version="0.9.2",
        ),
        # the helper casts another model (a teacher that never reaches initialize), or casts to fp32
        Valid(
            """
            import deepspeed
            from nets import to_half, to_full
            def main(args, model, teacher):
                to_full(model)
                to_half(teacher)
                engine, _, _, _ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
            """,
            files=_CASTING,
        ),
        # frozen models cast to half and never prepared (a VAE, a text encoder) stay as the script wants them
        Valid(
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(mixed_precision="bf16", deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            vae = AutoencoderKL.from_pretrained(name).to(accelerator.device, dtype=torch.bfloat16)
            text_encoder.half()
            unet, optimizer = accelerator.prepare(unet, optimizer)
            """
        ),
        # `mixed_precision: "no"`: the hand cast is the only precision the run has (a pure half run, on purpose or
        # not); removing it would change what trains, so nothing is said
        Valid(
            """
            from accelerate import Accelerator
            accelerator = Accelerator()
            model = Net().half()
            model, optimizer = accelerator.prepare(model, optimizer)
            """,
            files=(
                ("run.sh", "accelerate launch --config_file ds.yaml train.py\n"),
                ("ds.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\nmixed_precision: 'no'\n"),
            ),
        ),
        # accelerate without DeepSpeed: no engine casts anything
        Valid(
            """
            from accelerate import Accelerator
            accelerator = Accelerator()
            model = Net().half()
            model, optimizer = accelerator.prepare(model, optimizer)
            """,
            files=(
                ("run.sh", "accelerate launch --config_file ddp.yaml train.py\n"),
                ("ddp.yaml", "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"),
            ),
        ),
        Valid(
            """
            import deepspeed
            model = Net().to("cuda")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            model = Net()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            teacher = Net().half()
            """
        ),
    )
    invalid = (
        # ... but not to another type than the config enables, nor since 0.19.2 (the engine keeps buffers in fp32)
        Invalid(
            """
            import deepspeed
            model = model.half().cuda()
            engine, *_ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
            """,
            lines=(3,),
            deepspeed_version="0.9.2",
            fixed="""
            import deepspeed
            model = model.cuda()
            engine, *_ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
            """,
        ),
        Invalid(
            """
            import deepspeed
            model = model.half().cuda()
            engine, *_ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
            """,
            lines=(3,),
            fixed="""
            import deepspeed
            model = model.cuda()
            engine, *_ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
            """,
        ),
        # a project function casts the model it is handed, or a method the attribute of its own instance: reported
        # at the call, naming the cast (no fix: the function may be right for its other callers)
        Invalid(
            """
            import deepspeed
            from nets import to_half
            def main(args, model):
                to_half(model)
                engine, _, _, _ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
            class Runner:
                def __init__(self, model):
                    self.model = model
                    self._prepare()
                    self.engine, _, _, _ = deepspeed.initialize(model=self.model, config="ds.json")
                def _prepare(self):
                    self.model.half()
            """,
            lines=(5, 10),
            files=_CASTING,
        ),
        Invalid(
            """
            import deepspeed as ds
            net = Net().to(device).half()
            model_engine, *_ = ds.initialize(args=args, model=net)
            """,
            lines=(3,),
            fixed="""
            import deepspeed as ds
            net = Net().to(device)
            model_engine, *_ = ds.initialize(args=args, model=net)
            """,
        ),
        Invalid(
            """
            import deepspeed, torch
            def set_parameter_bf16(net):
                for param in net.parameters():
                    param.data = param.data.to(torch.bfloat16)
            def main(cfg):
                model = Net()
                set_parameter_bf16(model)
                for _, p in model.named_parameters():
                    p.data = p.data.half()
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
            lines=(8, 10),
            fixed="""
            import deepspeed, torch
            def set_parameter_bf16(net):
                for param in net.parameters():
                    param.data = param.data.to(torch.bfloat16)
            def main(cfg):
                model = Net()
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
        ),
        # the loop does more than cast: only the cast's statement goes
        Invalid(
            """
            import deepspeed
            def main(cfg):
                model = Net()
                for p in model.parameters():
                    p.requires_grad = True
                    p.data = p.data.half()
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            def main(cfg):
                model = Net()
                for p in model.parameters():
                    p.requires_grad = True
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def setup(self):
                    self.model = Net()
                    self.model.bfloat16()
                    self.engine, _, _, _ = deepspeed.initialize(model=self.model, config=self.cfg)
            """,
            lines=(6,),
            fixed="""
            import deepspeed
            class Trainer:
                def setup(self):
                    self.model = Net()
                    self.engine, _, _, _ = deepspeed.initialize(model=self.model, config=self.cfg)
            """,
        ),
        Invalid(
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(mixed_precision="bf16", deepspeed_plugin=DeepSpeedPlugin(zero_stage=3))
            teacher = Net().half()
            model = Net().to(accelerator.device, dtype=torch.bfloat16)
            model, optimizer = accelerator.prepare(model, optimizer)
            """,
            lines=(6,),
            fixed="""
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(mixed_precision="bf16", deepspeed_plugin=DeepSpeedPlugin(zero_stage=3))
            teacher = Net().half()
            model = Net()
            model, optimizer = accelerator.prepare(model, optimizer)
            """,
        ),
        # the DeepSpeed config the plugin carries enables fp16; a cast one parameter at a time
        Invalid(
            """
            from accelerate import Accelerator
            from accelerate.utils import DeepSpeedPlugin
            plugin = DeepSpeedPlugin(hf_ds_config={"fp16": {"enabled": True}, "zero_optimization": {"stage": 2}})
            accelerator = Accelerator(deepspeed_plugin=plugin)
            model = Net()
            for p in model.parameters():
                p.data = p.data.half()
            model = accelerator.prepare(model)
            """,
            lines=(8,),
            fixed="""
            from accelerate import Accelerator
            from accelerate.utils import DeepSpeedPlugin
            plugin = DeepSpeedPlugin(hf_ds_config={"fp16": {"enabled": True}, "zero_optimization": {"stage": 2}})
            accelerator = Accelerator(deepspeed_plugin=plugin)
            model = Net()
            model = accelerator.prepare(model)
            """,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        self.loop_casts = parameter_loops(node)
        self.cast_loops = cast_loops(node)
        self.casting_helpers = casting_helpers(node)
        # casts that reach no initialize, for `accelerator.prepare` (the model cast; None: the call's receiver)
        self.unplaced: list[tuple[cst.Call, cst.BaseExpression | None]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)  # collects `self.prepares` too
        if self._helper_moves(node):  # a project function casting the model: reported at the call
            return
        model = self.loop_casts.get(node)
        if model is None:
            model = helper_argument(node, self.casting_helpers)
        init = self.moves.initialize_of_model(node, model) if model is not None else None
        if init is None:
            if model is not None:
                self.unplaced.append((node, model))
            elif _half_cast(node, self.context.code) and self.moves.initialize_for(node) is None:
                self.unplaced.append((node, None))
            return
        if engine_casts_alike(self.context, node, init):
            return
        message = self.message
        if init.origin is not None:
            message += f" (the model reaches deepspeed.initialize at {init.origin.path}:{init.origin.line})"
        self.report(
            node,
            message,
            edits=self._loop_fix(node) if node in self.cast_loops else self._fix(node),
            applicability=Applicability.UNSAFE,
            fix_message=f"Remove `{node.func.value}(...)`" if isinstance(node.func, cst.Name) else "Remove the cast",
            related=(init.origin,) if init.origin is not None else (),
        )

    def _loop_fix(self, node: cst.Call) -> list[Edit]:
        """A per-parameter cast goes with its statement, and the loop goes when that was all it did; never
        `p.data = p.data`."""
        loop = self.cast_loops[node]
        line = self.facts.statement_of(node)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return []
        body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
        if loop.orelse is None and list(body) == [line]:
            edits = delete_statements(self.context, [loop])
            return edits if edits is not None else []
        edit = delete_line(self.context, line)
        return [edit] if edit is not None else []

    def leave_Module(self, original_node: cst.Module) -> None:
        """Casts to 16 bits of the model `accelerator.prepare` receives, in a script that runs DeepSpeed through
        accelerate in fp16 or bf16 (`project/accelerate_deepspeed.py`)."""
        if not self.unplaced:
            return
        sinks = prepare_sinks(self.facts, self.prepares, self.trainers)
        if not sinks:
            return
        run = accelerate_deepspeed(self.context)
        if run is None or run.half is not True:
            return
        moves = ModelMoves(self.facts, sinks)
        message = self.accelerate_template.format(precision=run.precision or "fp16/bf16", where=run.where)
        for node, model in self.unplaced:
            if model is not None:
                if node in self.loop_casts and not _half_cast(node, self.context.code):
                    continue  # a loop's `p.data.to(dtype=weight_dtype)`: not known to be 16 bits
                sink = moves.initialize_of_model(node, model)
            else:
                sink = moves.initialize_for(node)
            if sink is None:
                continue
            self.report(
                node,
                message,
                edits=self._loop_fix(node) if node in self.cast_loops else self._fix(node),
                applicability=Applicability.UNSAFE,
                fix_message=f"Remove `{node.func.value}(...)`"
                if isinstance(node.func, cst.Name)
                else "Remove the cast",
                related=run.related,
                start_at=node.func.attr if model is None and isinstance(node.func, cst.Attribute) else None,
            )


def _half_cast(call: cst.Call, code: Callable[[cst.CSTNode], str]) -> bool:
    """`.half()`, `.bfloat16()`, `.to(torch.float16)`, `.to(dtype=torch.bfloat16)`: a cast known to give 16 bits
    (a `dtype=` the script computes, `weight_dtype`, is not known)."""
    return cast_dtype(call, code) in ("float16", "bfloat16")

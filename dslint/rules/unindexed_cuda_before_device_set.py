"""DSL103: an un-indexed CUDA device is used before the current device is set (every rank lands on cuda:0)."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.devices import is_unindexed_cuda
from dslint.script.facts import InitializeCall, ScriptFacts, method_name
from dslint.script.inference import InferenceMoves, pending_inference
from dslint.script.model_moves import ModelMoves
from dslint.script.names import dotted_name
from dslint.script.one_rank import one_process_launches, presumed_one_process

TORCH_GENERATOR = "torch.Generator"  # torch.Generator(device="cpu"): the device is the first argument


class UnindexedCudaBeforeDeviceSet(ScriptRule):
    code = "DSL103"
    slug = "unindexed-cuda-before-device-set"
    message = "un-indexed CUDA device used before the device is set: every rank gets cuda:0; use engine.device"
    inference_message = (
        "un-indexed CUDA device used before deepspeed.init_inference (line {line}) sets it; index it by rank"
    )
    severity = Severity.WARNING
    inference_engine = True
    docs = RuleDocs(
        what="""
            In the function that calls `deepspeed.initialize`, before that call and before any
            `torch.cuda.set_device(...)` / `get_accelerator().set_device(...)`, flags uses of a CUDA device
            without an index: `.cuda()`, `.to("cuda")`, `device="cuda"`, `torch.device("cuda")`,
            `get_accelerator().device_name()`, `torch.Generator("cuda")` and names bound to them. Moves of the
            model itself are DSL101. The same holds before a tensor-parallel `deepspeed.init_inference`
            (`mp_size` not the literal 1), which sets the rank's device from LOCAL_RANK when it runs. A use on a
            path that never reaches the `initialize` call (an arm ending in `return` before it, the other arm of
            `if args.deepspeed:`) is not flagged: no engine comes on that path. Nor is a script that every launch
            the project holds starts as one process (`python train.py`, `deepspeed --num_gpus=1`): cuda:0 is then
            the only rank's own device; nor, with no launch of it, a script whose project launches nothing as
            several processes (every launch `python x.py`, or none) and whose code never reads a rank (no process
            group, rank, `LOCAL_RANK`, `WORLD_SIZE`, accelerate or Trainer).
        """,
        why="""
            `"cuda"` means the current device, and each process starts with cuda:0 as its current device.
            DeepSpeed sets it from LOCAL_RANK only inside `deepspeed.initialize` (`_set_distributed_vars`);
            `deepspeed.init_distributed()` does not. Until then, with N processes on one node, every rank puts
            these tensors on GPU 0: N copies on one card, an out-of-memory error there, or a silent
            cross-device mix later.
        """,
        example="""
            deepspeed.init_distributed()
            class_weights = torch.tensor(weights).cuda()
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
        """,
        use_instead="""
            deepspeed.init_distributed()
            get_accelerator().set_device(args.local_rank)
            class_weights = torch.tensor(weights).cuda()
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
        """,
        fix_safety="There is no automatic fix: where the tensor should live depends on the script.",
    )
    valid = (
        # the project starts the script as one process only: cuda:0 is its own device
        Valid(
            """
            import deepspeed, torch
            batch = torch.randn(4, 8).cuda()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            files=(("run.sh", "python train.py\n"), ("ds.json", '{"train_batch_size": 4}\n')),
        ),
        Valid(
            """
            import deepspeed, torch
            noise = torch.Generator("cuda").manual_seed(seed)
            pipe = deepspeed.init_inference(pipe, dtype=torch.half)
            """
        ),
        Valid(
            """
            import os
            import deepspeed, torch
            rank = int(os.getenv("LOCAL_RANK", "0"))
            other = torch.Generator(f"cuda:{rank}")
            tp = deepspeed.init_inference(tp, mp_size=world_size)
            after = torch.Generator("cuda")
            """
        ),
        Valid(
            """
            import deepspeed
            from deepspeed.accelerator import get_accelerator
            get_accelerator().set_device(args.local_rank)
            weights = torch.ones(10).cuda()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            weights = torch.ones(10).cuda()
            batch = batch.to("cuda")
            """
        ),
        Valid(
            """
            import deepspeed
            weights = torch.ones(10).cuda(args.local_rank)
            device = torch.device("cuda", args.local_rank)
            mask = torch.zeros(4, device=f"cuda:{args.local_rank}")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import torch
            weights = torch.ones(10).cuda()
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            def setup(args):
                torch.cuda.set_device(args.local_rank)
            def main(args):
                setup(args)
                weights = torch.ones(10).cuda()
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        # an arm that returns before initialize: no engine, no DeepSpeed device on that path
        Valid(
            """
            import deepspeed, torch
            def main(args):
                if args.single_gpu:
                    weights = torch.ones(10).cuda()
                    return train_plain(model, weights)
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        # a loss module without parameters or buffers: moving it allocates nothing on any GPU
        Valid(
            """
            import deepspeed
            from torch import nn
            criterion = nn.CrossEntropyLoss().cuda()
            smooth = nn.SmoothL1Loss(beta=0.5)
            smooth.to("cuda")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed, torch
            for prompt in prompts:
                noise = torch.Generator("cuda").manual_seed(seed)
                pipe = deepspeed.init_inference(pipe, mp_size=world_size)
                again = torch.Generator("cuda").manual_seed(seed)
            """,
            lines=(4,),
        ),
        Invalid(
            """
            import deepspeed
            deepspeed.init_distributed()
            criterion = nn.CrossEntropyLoss(weight=class_weights).cuda()
            head = nn.Linear(8, 2).cuda()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(4, 5),
        ),
        Invalid(
            """
            import deepspeed
            import torch
            from deepspeed.accelerator import get_accelerator
            def main():
                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                mask = torch.ones(8, device=device)
                table = torch.zeros(4, device="cuda")
                prior = prior.to(get_accelerator().device_name())
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(7, 8, 9),
        ),
        # the arm does not end before initialize: its move runs on the DeepSpeed path too
        Invalid(
            """
            import deepspeed, torch
            def main(args):
                if args.weighted:
                    weights = torch.ones(10).cuda()
                    print("weighted run")
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import deepspeed
            model = Net()
            model.cuda()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            weights = torch.ones(3)
            """,
            lines=(),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.moves = ModelMoves(self.facts)
        self.inference_moves = InferenceMoves(self.facts)
        # cuda:0 is the only rank's own device: every launch starts one process, or none exists and nothing in the
        # script reads a rank
        self.one_process = one_process_launches(self.facts) or presumed_one_process(self.facts, self.context.text)

    def visit_Call(self, node: cst.Call) -> None:
        if self.one_process:
            return
        message = None
        if self._pending_initialize(node) is None:
            inference = pending_inference(self.facts, node)
            if inference is None or self.inference_moves.inference_for(node) is not None:
                return  # no engine to come, or the model's own move before init_inference: DSL101
            message = self.inference_message.format(line=self.context.span(inference.call)[0].line)
        elif self.moves.initialize_for(node) is not None:
            return  # the model's own move: DSL101
        if _moved_module_is_empty(self.facts, node):
            return  # a parameter-free module (a plain loss): moving it allocates nothing
        if method_name(node) == "cuda" and not node.args:
            self.report(node, message)
            return
        takes_device_first = method_name(node) == "to" or self.facts.qualified(node.func) == TORCH_GENERATOR
        for index, arg in enumerate(node.args):
            is_device_argument = (arg.keyword is not None and arg.keyword.value == "device") or (
                arg.keyword is None and index == 0 and takes_device_first
            )
            if is_device_argument and is_unindexed_cuda(self.facts, arg.value, node):
                self.report(arg.value, message)

    def _pending_initialize(self, node: cst.Call) -> InitializeCall | None:
        """The initialize call of this scope that runs after `node`, if the device is not set before `node`."""
        facts = self.facts
        scope = facts.scope_at(node)
        pos = facts.start(node)
        for init in facts.initialize_calls:
            if init.scope is scope and pos < init.start and not facts.paths.exclusive(pos, init.start):
                if facts.device_set_before(scope, pos) or facts.device_set_elsewhere(scope):
                    return None
                return init
        return None


# torch.nn modules that hold no parameters and no buffers when built without a `weight` (or `pos_weight`):
# `.cuda()` / `.to("cuda")` on them moves nothing.
PARAMETER_FREE_MODULES = frozenset(
    {
        "CrossEntropyLoss",
        "NLLLoss",
        "BCELoss",
        "BCEWithLogitsLoss",
        "MSELoss",
        "L1Loss",
        "SmoothL1Loss",
        "HuberLoss",
        "KLDivLoss",
        "SoftMarginLoss",
        "MultiLabelSoftMarginLoss",
        "MultiMarginLoss",
        "MarginRankingLoss",
        "HingeEmbeddingLoss",
        "CosineEmbeddingLoss",
        "TripletMarginLoss",
        "PoissonNLLLoss",
        "GaussianNLLLoss",
        "CTCLoss",
        "MultiLabelMarginLoss",
        "ReLU",
        "GELU",
        "Sigmoid",
        "Tanh",
        "Softmax",
        "LogSoftmax",
        "Dropout",
        "Identity",
        "Flatten",
    }
)
_STATE_KEYWORDS = frozenset({"weight", "pos_weight"})


def _moved_module_is_empty(facts: ScriptFacts, node: cst.Call) -> bool:
    """`nn.CrossEntropyLoss().cuda()`, or `criterion.to("cuda")` with `criterion = nn.MSELoss()` bound before:
    the receiver is a known parameter-free torch.nn module built without a weight."""
    if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in ("cuda", "to"):
        return False
    receiver: cst.BaseExpression | None = node.func.value
    if isinstance(receiver, cst.Name):
        binding = facts.binding_at(receiver.value, facts.scope_at(receiver), facts.start(receiver))
        receiver = binding.value if binding is not None else None
    if not isinstance(receiver, cst.Call):
        return False
    name = dotted_name(receiver.func)
    if name is None or name.split(".")[-1] not in PARAMETER_FREE_MODULES:
        return False
    if name.split(".")[0] not in ("nn", "torch") and "." in name:
        return False
    return all(arg.keyword is not None and arg.keyword.value not in _STATE_KEYWORDS for arg in receiver.args)

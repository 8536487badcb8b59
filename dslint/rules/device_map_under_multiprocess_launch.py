"""DSL425: `from_pretrained(..., device_map="auto")` in a script a launcher starts as several processes a node."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.hf_models import is_model_from_pretrained, keyword_value
from dslint.script.one_rank import one_rank_conjunction, rest_on_one_rank, within_one_rank

# accelerate's device-map strategies: each spreads the model over every GPU the process sees.
SPREADING = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})

_SCRIPT = """\
import transformers

model = transformers.AutoModelForCausalLM.from_pretrained("base-model", device_map="auto")
"""


class DeviceMapUnderMultiprocessLaunch(ScriptRule):
    code = "DSL425"
    slug = "device-map-under-multiprocess-launch"
    message = 'device_map="auto" under a launch of several processes a node: each spreads a full copy over all GPUs'
    severity = Severity.ERROR
    needs_engine = False
    required_tokens = (b"from_pretrained", b"device_map")
    needs_several_processes = True
    docs = RuleDocs(
        what="""
            Flags `from_pretrained(..., device_map="auto")` (or `"balanced"`, `"balanced_low_0"`,
            `"sequential"`) on a transformers model class in a script that a launcher of the project starts as
            more than one process on a node (`deepspeed --num_gpus 2`, `--include localhost:0,1`, a hostfile's
            slots, `torchrun --nproc_per_node 4`, `accelerate launch --num_processes 4`). The finding names the
            launch. A script started only as one process (`python train.py`) is model-parallel by design and
            left alone, as is a device map given as a variable, and a load under a one-rank test (`if
            local_rank == 0:`, or after the other ranks returned): one process loads that copy.
        """,
        why="""
            A device map of this kind is accelerate's `infer_auto_device_map` over `get_max_memory()`, which
            counts every GPU the process sees (`torch.cuda.device_count()`), and the launchers start each process
            with all of the node's GPUs visible (DeepSpeed's launcher sets the same `CUDA_VISIBLE_DEVICES` list
            for every local rank). So each of the N processes places its own full copy of the model across all
            the GPUs: N copies where one per GPU was meant, before DeepSpeed moves each to its own device. The
            HF Trainer and accelerate then stop in `prepare`: "You can't train a model that has been loaded with
            `device_map='auto'` in any distributed mode".
        """,
        example="""
            # launched with: deepspeed --num_gpus 2 train.py --deepspeed ds_zero2.json
            model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")
        """,
        use_instead="""
            # let DeepSpeed (or the Trainer) place the model on each rank's own GPU
            model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
        """,
    )
    valid = (
        # one rank loads the evaluation copy
        Valid(
            _SCRIPT.replace("model = ", "if args.local_rank == 0:\n    model = "),
            files=(("run.sh", "deepspeed --num_gpus 2 train.py\n"),),
        ),
        Valid(_SCRIPT, files=(("run.sh", "python train.py\n"),)),
        Valid(
            _SCRIPT.replace('device_map="auto"', "device_map={'': local_rank}"),
            files=(("run.sh", "deepspeed --num_gpus 2 train.py\n"),),
        ),
    )
    invalid = (Invalid(_SCRIPT, lines=(3,), files=(("run.sh", "deepspeed --num_gpus 2 train.py\n"),)),)  # the keyword

    def visit_Module(self, node: cst.Module) -> None:
        self.regions: list[cst.CSTNode] = []  # bodies that run on one rank only
        self.rests: list[tuple[cst.CSTNode, cst.CSTNode]] = []  # statements after the other ranks left
        self.found: list[tuple[cst.Call, cst.Arg, str, tuple[Related, ...]]] = []

    def visit_If(self, node: cst.If) -> None:
        if one_rank_conjunction(node.test, self.facts):
            self.regions.append(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        rest = rest_on_one_rank(node, self.facts)
        if rest is not None:
            self.rests.append(rest)

    def leave_Module(self, original_node: cst.Module) -> None:
        for call, argument, message, related in self.found:
            if not within_one_rank(self.facts, call, self.regions, self.rests):  # one process loads it there
                self.report(argument, message, related=related)

    def visit_Call(self, node: cst.Call) -> None:
        project = self.facts.project
        if project is None or not project.launches or not is_model_from_pretrained(self.context, node):
            return
        value = keyword_value(node, "device_map")
        if not isinstance(value, cst.SimpleString) or value.evaluated_value not in SPREADING:
            return
        several = [launch for launch in project.launches if (launch.ranks_per_node or 0) > 1]
        if not several:
            return
        first = several[0]
        where = first.launch
        others = f" and {len(several) - 1} more launch(es)" if len(several) > 1 else ""
        message = (
            f"device_map={value.value} under {first.ranks_per_node} processes a node: each spreads a full copy over "
            f"all GPUs; drop device_map ({first.world_source}: {where.path}:{where.line}{others})"
        )
        related = tuple(Related(s.launch.path, s.launch.line, s.launch.column, s.world_source) for s in several)
        argument = next(a for a in node.args if a.keyword is not None and a.keyword.value == "device_map")
        self.found.append((node, argument, message, related))

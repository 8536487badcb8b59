"""DSL214: a model wrapped in DistributedDataParallel / DataParallel (torch's or apex's) on every path to
`deepspeed.initialize`: the engine then wraps the wrapper."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model import library
from dslint.script.facts import Pos, iter_call_chain
from dslint.script.model_moves import excluded, model_lineage
from dslint.script.model_reach import ModelReach, model_sinks

WRAPPERS = library.DATA_PARALLEL_WRAPPERS


class WrappedModelGivenToInitialize(ScriptRule):
    code = "DSL214"
    slug = "wrapped-model-given-to-initialize"
    message = "the model is wrapped in DistributedDataParallel before deepspeed.initialize; pass it unwrapped"
    data_parallel_message = "the model is wrapped in DataParallel before deepspeed.initialize; pass it unwrapped"
    severity = Severity.ERROR
    required_tokens = (b"DataParallel",)
    docs = RuleDocs(
        what="""
            Flags a `DistributedDataParallel(model)` / `DataParallel(model)` (torch's, or apex's
            `apex.parallel.DistributedDataParallel`) whose result is the model `deepspeed.initialize` receives
            whenever the wrap runs: passed directly (`initialize(model=DDP(model))`), bound in the block of
            `initialize`, in a block enclosing it, or under a condition inside that block (`if gpus > 1: model =
            DataParallel(model)`, then `initialize`), then maybe wrapped or moved again; also returned by a
            builder whose result reaches `initialize` in another function or module. Silent when the wrap and
            `initialize` each sit under a condition of their own (`if args.ddp: model = DDP(model)` beside `if
            args.deepspeed: initialize(...)`, perhaps exclusive), for a wrap in the other branch of `if
            args.deepspeed: ... else: ...`, and when the model handed on is the wrapper's `.module`.
        """,
        why="""
            `deepspeed.initialize` keeps whatever it is given as `engine.module` and does the data parallelism
            itself: it moves the module to the rank's device, broadcasts the weights and reduces the gradients
            (`allreduce_gradients`, ZeRO's reduce hooks). DistributedDataParallel has registered its own
            autograd hooks, which all-reduce every gradient again in each backward, on every micro-step, since
            it knows nothing of the engine's accumulation (the communication doubles; ZeRO-3 partitions the
            parameters under DDP's buckets). `engine.module` is the DDP object, so its state dict, and every
            checkpoint the engine writes, carries the `module.` prefix (measured on the CPU with DeepSpeed
            0.19.8: checkpoint keys `module.0.weight`, ..., and `load_state_dict` into the plain model fails with
            "Missing key(s)"). DataParallel is worse: its forward checks that the parameters sit on
            `device_ids[0]` (cuda:0 by default), while the engine has moved them to `cuda:<local_rank>`, so every
            rank but rank 0 raises at the first forward (torch's `DataParallel.forward`), and rank 0 replicates
            the model across every visible GPU.
        """,
        example="""
            model = DistributedDataParallel(model, device_ids=[local_rank])
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            from torch.nn.parallel import DistributedDataParallel as DDP
            def main(args, model):
                if args.deepspeed:
                    engine, *_ = deepspeed.initialize(model=model, config=args.ds_config)
                else:
                    model = DDP(model, device_ids=[args.local_rank])
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            def main(args, model):
                if args.ddp:
                    model = torch.nn.parallel.DistributedDataParallel(model)
                if args.deepspeed:
                    engine, *_ = deepspeed.initialize(model=model, config=args.ds_config)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            wrapped = torch.nn.DataParallel(model)
            engine, *_ = deepspeed.initialize(model=wrapped.module, config="ds.json")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            from torch.nn.parallel import DistributedDataParallel as DDP
            def main(args, model):
                model = DDP(model.cuda(args.local_rank), device_ids=[args.local_rank])
                model = model.train()
                engine, optimizer, _, _ = deepspeed.initialize(model=model, config=args.ds_config)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import deepspeed
            from torch import nn
            engine, *_ = deepspeed.initialize(model=nn.DataParallel(net), config="ds.json")
            """,
            lines=(4,),
        ),
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        facts = self.facts
        reach: ModelReach | None = None
        reported: set[cst.Call] = set()
        for sink in model_sinks(facts):
            if sink.model is None:
                continue
            candidates = list(iter_call_chain(sink.model))
            lineage = model_lineage(facts, sink)
            if lineage:
                reach = reach or ModelReach(facts, original_node)
            for binding in lineage:
                if binding.value is None or binding.statement is None:
                    continue
                assert reach is not None
                block = reach.block_of.get(binding.statement)
                if block is None or not self._on_the_way(reach, block, sink.start):
                    break  # a wrap under another condition than initialize's may be the other path
                candidates.extend(iter_call_chain(binding.value))
            for call in candidates:
                name = WRAPPERS.get(facts.qualified(call.func) or "")
                if name is None or call in reported or facts.in_plain_branch(call) or excluded(facts, sink, call):
                    continue
                reported.add(call)
                message = self.data_parallel_message if name == "DataParallel" else self.message
                if name.startswith("apex"):
                    message = message.replace("in DistributedDataParallel", "in apex's DistributedDataParallel")
                where = ""
                if sink.origin is not None:  # initialize is in another function or module
                    where = f" (the model reaches deepspeed.initialize at {sink.origin.path}:{sink.origin.line})"
                related = (sink.origin,) if sink.origin is not None else ()
                self.report(call, message + where, related=related)

    def _on_the_way(self, reach: ModelReach, block: cst.CSTNode, position: Pos) -> bool:
        """Whether a binding in `block` reaches the sink at `position` whenever it runs: `block` encloses the
        sink (the wrap is on every path to it), or the block holding the sink encloses `block` (`if gpus > 1:
        model = DataParallel(model)`, then initialize unconditionally). Not when each sits under a condition of
        its own (`if args.ddp: ...` and `if args.deepspeed: initialize(...)`: perhaps exclusive)."""
        sink_block = self._innermost(reach, position)
        return self._encloses(block, sink_block) or self._encloses(sink_block, block)

    def _innermost(self, reach: ModelReach, position: Pos) -> cst.CSTNode:
        facts = self.facts
        best: cst.CSTNode = self.context.module
        for block in set(reach.block_of.values()):
            if isinstance(block, cst.Module) or not facts.start(block) <= position < facts.end(block):
                continue
            if isinstance(best, cst.Module) or facts.start(best) < facts.start(block):
                best = block
        return best

    def _encloses(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        if isinstance(outer, cst.Module):
            return True
        if isinstance(inner, cst.Module):
            return False
        facts = self.facts
        return facts.start(outer) <= facts.start(inner) and facts.end(inner) <= facts.end(outer)

"""DSL201: `torch.load(..., map_location=<a CUDA device>)` in a DeepSpeed script."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.bindings import ScopeKind
from dslint.project.config_edits import module_index
from dslint.script.devices import is_cuda_device
from dslint.script.names import dotted_name
from dslint.script.torch_load import (
    cpu_map_location_edit,
    is_torch_load,
    map_location_argument,
    passed_cuda_device,
)

# A function building the engine, and a caller whose load may run on its path (see `_no_engine_on_its_paths`).
_PRETRAIN = """
import deepspeed
import torch
def pretrain(model, args):
    engine, *_ = deepspeed.initialize(model=model, config="ds.json")
    return engine
def main(model, args):
"""
_RESUMED = (
    _PRETRAIN
    + "    if args.resume:\n        model.load_state_dict(torch.load(args.ckpt, map_location={location}))\n"
    + "    model = pretrain(model, args)\n"
)


class TorchLoadToCuda(ScriptRule):
    code = "DSL201"
    slug = "torch-load-to-cuda"
    message = 'torch.load with a CUDA map_location puts the whole checkpoint on one GPU; use map_location="cpu"'
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            In a script that calls `deepspeed.initialize`, flags `torch.load(...)` whose `map_location` (keyword
            or second positional argument) is `"cuda"`, `"cuda:N"`, an f-string starting with `cuda:`,
            `"cuda:{}".format(...)` or `"cuda:%d" % ...`, `torch.device("cuda", ...)`, `torch.device(N)` with an
            integer index (a literal, or a name bound to `int(...)`), `get_accelerator().device_name()` (with or
            without an index), or a name bound to one of these (the device reader `dslint.script.devices`, which
            DSL101 and DSL103 share). With the project index, also a parameter that every caller in the project
            fills with such a device, through any number of functions that pass their own parameter on, or from
            `self.device` that the class sets to one (`torch.device(self.local_rank)` beside
            `torch.cuda.set_device(self.local_rank)`). Not a load in a function that builds no engine and reaches
            the file's functions that do only on paths the load never takes (`if args.skip_pretrain:` loads,
            `else:` pretrains): no process running it has an engine.
        """,
        why="""
            The whole checkpoint lands on a GPU: after `initialize` on the rank's current device, before it on
            cuda:0 for every rank. Measured (ZeRO-2, a 2.5 GiB fp32 checkpoint): peak allocated memory of the
            load phase 6.25 GiB with `map_location="cuda"` against 3.75 GiB with `"cpu"` or
            `engine.load_checkpoint`. `load_state_dict` copies CPU tensors into the parameters wherever they
            live, so loading to the CPU costs nothing in correctness.
        """,
        example="""
            state = torch.load(args.weights, map_location="cuda")
        """,
        use_instead="""
            state = torch.load(args.weights, map_location="cpu")
        """,
        fix_safety="""
            The fix replaces the value by `"cpu"`. It is safe for weights that are copied into a model; code
            that uses the loaded tensors directly on the GPU must move them itself.
        """,
    )
    valid = (
        # the engine is built only on the other arm: no process running the load has one
        Valid(
            _PRETRAIN
            + "    if args.skip_pretrain:\n"
            + '        model.load_state_dict(torch.load(args.ckpt, map_location=f"cuda:{args.local_rank}"))\n'
            + "    else:\n        model = pretrain(model, args)\n"
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            state = torch.load(path, map_location="cpu")
            other = torch.load(path, "cpu")
            """
        ),
        Valid(
            """
            import torch
            state = torch.load(path, map_location="cuda")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            if args.deepspeed:
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            else:
                state = torch.load(path, map_location="cuda")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            state = torch.load(path, map_location=lambda storage, loc: storage)
            where = "cpu:{}".format(rank)
            other = torch.load(path, map_location=where)
            named = torch.load(path, map_location=torch.device(args.device))
            """
        ),
    )
    invalid = (
        # the load's path builds the engine too
        Invalid(_RESUMED.format(location='"cuda"'), lines=(9,), fixed=_RESUMED.format(location='"cpu"')),
        Invalid(
            """
            import os
            import deepspeed, torch
            where = "cuda:{}".format(args.gpu)
            a = torch.load(path, map_location=where)
            rank = int(os.environ["LOCAL_RANK"])
            b = torch.load(path, map_location=torch.device(rank))
            c = torch.load(path, map_location="cuda:%d" % rank)
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(5, 7, 8),
            fixed="""
            import os
            import deepspeed, torch
            where = "cuda:{}".format(args.gpu)
            a = torch.load(path, map_location="cpu")
            rank = int(os.environ["LOCAL_RANK"])
            b = torch.load(path, map_location="cpu")
            c = torch.load(path, map_location="cpu")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            state = torch.load(path, map_location="cuda")
            here = torch.load(path, map_location=deepspeed.get_accelerator().device_name())
            """,
            lines=(5, 6),
            fixed="""
            import deepspeed
            import torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            state = torch.load(path, map_location="cpu")
            here = torch.load(path, map_location="cpu")
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch as th
            device = th.device("cuda", args.local_rank)
            sd = th.load(args.ckpt, device)
            other = th.load(args.ckpt, map_location=f"cuda:{args.local_rank}", weights_only=True)
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(5, 6),
            fixed="""
            import deepspeed
            import torch as th
            device = th.device("cuda", args.local_rank)
            sd = th.load(args.ckpt, "cpu")
            other = th.load(args.ckpt, map_location="cpu", weights_only=True)
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_torch_load(self.facts, node):
            return
        argument = map_location_argument(node)
        if argument is None:
            return
        passed = None
        if not is_cuda_device(self.facts, argument.value, node):
            passed = passed_cuda_device(self.facts, argument.value, node)
            if passed is None:
                return
        if self._no_engine_on_its_paths(node):
            return
        edit = cpu_map_location_edit(self.context, node)
        self.report(
            argument.value,
            self.message + (f" ({passed.message}, {passed.path}:{passed.line})" if passed is not None else ""),
            related=(passed,) if passed is not None else (),
            edits=[edit] if edit is not None else [],
            applicability=Applicability.SAFE,
            fix_message='Load to the CPU: map_location="cpu"',
        )

    def _no_engine_on_its_paths(self, load: cst.Call) -> bool:
        """The load sits in a function that builds no engine itself and reaches the file's functions that do only
        on paths the load's never takes (`if args.skip_pretrain: ... torch.load(...)` / `else: pretrain()`),
        where the module's own code builds none and none of those functions calls the load's: no process running
        the load has an engine."""
        facts = self.facts
        scope = facts.scope_at(load)
        if scope.kind is not ScopeKind.FUNCTION or not facts.initialize_calls:
            return False
        builders: set[str] = set()
        for init in facts.initialize_calls:
            holder = facts.scope_at(init.call)
            if holder is scope or holder.kind is not ScopeKind.FUNCTION:
                return False
            builders.add(holder.node.name.value)
        own = scope.node.name.value
        reached = False
        for call in module_index(self.context.module).calls:
            name = dotted_name(call.func)
            if name is None:
                continue
            name = name.rpartition(".")[2]  # `self.pretrain()` calls the method `pretrain`
            if name == own and facts.scope_at(call).kind is ScopeKind.FUNCTION:
                caller = facts.scope_at(call).node.name.value
                if caller in builders:
                    return False  # a function building an engine runs the load's function
            if name in builders and facts.scope_at(call) is scope:
                if not facts.paths.exclusive(call, load):
                    return False
                reached = True
        return reached

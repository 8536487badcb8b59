"""DSL202: `torch.load(...)` without `map_location` in a DeepSpeed script."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_access import config_path
from dslint.project.shipped_archives import holds_no_cuda_tensors
from dslint.script.one_rank import SEVERAL_PROCESSES
from dslint.script.own_saves import loads_own_cpu_save
from dslint.script.path_values import path_value
from dslint.script.torch_load import (
    cpu_map_location_edit,
    has_star_arguments,
    is_torch_load,
    loads_data_state,
    map_location_argument,
    only_restores_rng_state,
)


class TorchLoadWithoutMapLocation(ScriptRule):
    code = "DSL202"
    slug = "torch-load-without-map-location"
    message = 'torch.load without map_location puts tensors back on cuda:0 on every rank; pass map_location="cpu"'
    severity = Severity.WARNING
    runs_on_gpu_loads = True  # also in a module without an engine, on loads of files saved from GPU tensors
    docs = RuleDocs(
        what="""
            In a script that calls `deepspeed.initialize`, flags `torch.load(...)` calls that give no
            `map_location` (neither by keyword nor as the second positional argument), or give `None`. Calls
            with `*args` or `**kwargs` are not flagged: they may carry one. Nor is a load whose result only goes
            to random-generator setters (`torch.cuda.set_rng_state(states["cuda"])`, `random.setstate(...)`):
            generator states are saved as CPU tensors, so they come back on the CPU. The same holds for
            `self.states = torch.load(...)` when every read of `self.states` in the module's methods goes to such
            setters (or only tests it: `is None`, `if`, `not`). Nor is a load of a file the same function
            wrote earlier with `torch.save` (the same path, f-string values aside, directly or through
            `open(...)`) from a dict it filled only with tensors moved to the CPU (`.cpu()`, `.to("cpu")`), alone
            or in a tuple with plain attributes: such a file holds no GPU tensor to go back to. Nor is a load
            of a sampler's, data loader's, LR scheduler's or GradScaler's own state (bound to a name like
            `sampler_state_dict`, or handed straight to `train_sampler.load_state_dict(...)`,
            `lr_scheduler.load_state_dict(...)`): epochs, offsets, seeds and scales, no GPU tensor. Nor is
            a load of a file every `torch.save` of the project writing its name fills with CPU data only
            (`.item()`, `.cpu()`, numbers, a dict or attribute filled with them: `model/cpu_saves.py`), matched by
            the file name; nor of a `torch.save` archive the project ships, named by a written path, whose pickle
            (read, never run) names no CUDA location (`project/shipped_archives.py`).
            With the project index, also in a module without an engine (an evaluation or resume helper, a
            Trainer or Lightning script), a load without `map_location` of a file known to hold GPU tensors:
            one the project writes with `torch.save` from an engine's state in another module
            (`engine.module.state_dict()`, or a dict filled from `engine.module.named_parameters()`), matched by
            the file name its path ends with (a constant, an `os.path.join(...)`, an f-string), or DeepSpeed's
            own checkpoint file (`*model_states.pt`, `*optim_states.pt`, `zero_to_fp32.get_model_state_file`).
            The finding names the save. Not in a program of its own run as one process (every launch of it starts
            one; or none is known, and its code shows no process group, rank or launcher environment, accelerate
            or Trainer): the tensors go back to the one GPU it uses.
        """,
        why="""
            Without `map_location`, torch restores every tensor to the device recorded when it was saved, which
            for a checkpoint written during training is usually cuda:0. Every rank then loads the whole
            checkpoint onto GPU 0 (N copies on one card with N processes), before DeepSpeed has sharded
            anything.
        """,
        example="""
            state = torch.load("pretrained.pt")
        """,
        use_instead="""
            state = torch.load("pretrained.pt", map_location="cpu")
        """,
        fix_safety="""
            The fix adds `map_location="cpu"`. It is safe for weights that are copied into a model (the usual
            case); code that uses loaded tensors directly must move them to `engine.device` itself.
        """,
    )
    valid = (
        Valid(  # an LR scheduler's and a GradScaler's states hold numbers only
            """
            import deepspeed
            import torch
            engine, optimizer, _, lr_scheduler = deepspeed.initialize(model=model, config="ds.json")
            lr_scheduler.load_state_dict(torch.load("ckpt/scheduler.pt"))
            scaler.load_state_dict(torch.load("ckpt/scaler.pt"))
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            a = torch.load(path, map_location="cpu")
            b = torch.load(path, "cpu")
            c = torch.load(path, **load_kwargs)
            """
        ),
        Valid(
            """
            import torch
            from deepspeed.accelerator import get_accelerator
            state = torch.load(path)
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            state = pickle.load(handle)
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            def resume(args, build_loader, train_sampler):
                sampler_state_dict = torch.load(args.sampler_state_path, weights_only=False)
                train_sampler.load_state_dict(torch.load(args.sampler_file))
                return build_loader(sampler_state_dict=sampler_state_dict)
            """
        ),
        Valid(
            """
            import random
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            def restore_generators(path):
                saved = torch.load(path)
                random.setstate(saved["python"])
                torch.cuda.set_rng_state(saved["cuda"])
            """
        ),
        Valid(
            """
            import random
            import deepspeed, torch
            class Trainer:
                def __init__(self, model, config):
                    self.engine, *_ = deepspeed.initialize(model=model, config=config)
                    self.states = None
                def resume(self, path):
                    self.states = torch.load(path)
                def first_step(self):
                    if self.states is not None:
                        random.setstate(self.states["python"])
                        torch.set_rng_state(self.states["cpu"])
            """
        ),
        Valid(
            """
            import os
            import torch, deepspeed
            from collections import OrderedDict
            def gather(engine, folder, rank, world):
                shard = OrderedDict()
                for name, p in engine.module.named_parameters():
                    shard[name] = (p.data.detach().cpu(), p.numel_before)
                with open(os.path.join(folder, f"part-{rank}.pt"), "wb") as f:
                    torch.save(shard, f)
                for other in range(1, world):
                    with open(os.path.join(folder, f"part-{other}.pt"), "rb") as f:
                        parts = torch.load(f)
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            def resume(args, diffusion):
                sampler = torch.load(args.sampler_path)
                diffusion.load_state_dict(torch.load(args.sampler_weights))
            """,
            lines=(5, 6),
            fixed="""
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            def resume(args, diffusion):
                sampler = torch.load(args.sampler_path, map_location="cpu")
                diffusion.load_state_dict(torch.load(args.sampler_weights, map_location="cpu"))
            """,
        ),
        Invalid(
            """
            import os
            import torch, deepspeed
            def gather(engine, folder, rank, world):
                shard = {}
                for name, p in engine.module.named_parameters():
                    shard[name] = (p.data.detach(), p.numel_before)
                with open(os.path.join(folder, f"part-{rank}.pt"), "wb") as f:
                    torch.save(shard, f)
                with open(os.path.join(folder, f"part-{world}.pt"), "rb") as f:
                    parts = torch.load(f)
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(11,),
            fixed="""
            import os
            import torch, deepspeed
            def gather(engine, folder, rank, world):
                shard = {}
                for name, p in engine.module.named_parameters():
                    shard[name] = (p.data.detach(), p.numel_before)
                with open(os.path.join(folder, f"part-{rank}.pt"), "wb") as f:
                    torch.save(shard, f)
                with open(os.path.join(folder, f"part-{world}.pt"), "rb") as f:
                    parts = torch.load(f, map_location="cpu")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            state = torch.load("pretrained.pt")
            model.load_state_dict(torch.load("init.pt", map_location=None))
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            saved = torch.load("mixed.pt")
            torch.set_rng_state(saved["cpu"])
            engine.module.load_state_dict(saved["weights"])
            """,
            lines=(4, 5, 7),
            fixed="""
            import deepspeed
            import torch
            state = torch.load("pretrained.pt", map_location="cpu")
            model.load_state_dict(torch.load("init.pt", map_location="cpu"))
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            saved = torch.load("mixed.pt", map_location="cpu")
            torch.set_rng_state(saved["cpu"])
            engine.module.load_state_dict(saved["weights"])
            """,
        ),
        Invalid(
            """
            from torch import load
            import deepspeed
            def resume(path):
                return load(
                    path,
                    weights_only=True,
                )
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(5,),
            fixed="""
            from torch import load
            import deepspeed
            def resume(path):
                return load(
                    path,
                    weights_only=True, map_location="cpu",
                )
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_torch_load(self.facts, node) or has_star_arguments(node) or not node.args:
            return
        given = map_location_argument(node)
        if given is not None and not (isinstance(given.value, cst.Name) and given.value.value == "None"):
            return
        if only_restores_rng_state(self.facts, node) or loads_own_cpu_save(self.facts, node):
            return
        project = self.facts.project
        if project is not None and self.context.span(node)[0].line in project.cpu_loads:
            return  # every save of the project writing that file saves CPU data only
        if loads_data_state(self.facts, node) or self._ships_cpu_archive(node):
            return
        edit = cpu_map_location_edit(self.context, node)
        saved = self._gpu_file(node)
        if saved is not None and not self.facts.has_engine and self._one_process():
            return  # one process: the file's tensors go back to the GPU it runs on, where the model is
        if saved is not None:  # a file the project's engine (or DeepSpeed's checkpoint) wrote from GPU tensors
            what, where = saved
            self.report(
                node,
                f"{self.message} ({what})",
                related=(where,) if where is not None else (),
                edits=[edit] if edit is not None else [],
                applicability=Applicability.SAFE,
                fix_message='Load to the CPU: add map_location="cpu"',
            )
            return
        if not self.facts.has_engine:
            return  # reached only for a module the index names for another load (`gpu_loads`)
        origin = self._engine_origin(node)
        self.report(
            node,
            self.message + (f" ({origin.message}, {origin.path}:{origin.line})" if origin is not None else ""),
            related=(origin,) if origin is not None else (),
            edits=[edit] if edit is not None else [],
            applicability=Applicability.SAFE,
            fix_message='Load to the CPU: add map_location="cpu"',
        )

    def _ships_cpu_archive(self, node: cst.Call) -> bool:
        """The load reads, by a written path, a `torch.save` archive the project ships that holds no CUDA tensor
        (`shipped_archives`)."""
        written = path_value(self.facts, node.args[0].value, self.context.path)
        return written is not None and holds_no_cuda_tensors(str(config_path(self.context.path, written)))

    def _one_process(self) -> bool:
        """The module is a script run as one process: its code shows no sign of several (a process group, a
        rank, a launcher's environment, accelerate, a Trainer), and every launch of it starts one or, with none
        known, it is a program of its own (`if __name__ == "__main__":`). A helper module runs in its importers'."""
        text = self.context.text
        if any(sign in text for sign in SEVERAL_PROCESSES):
            return False  # Lightning's and accelerate's Trainers start their processes themselves
        project = self.facts.project
        launches = project.launches if project is not None else ()
        if launches:
            return all(launch.ranks == 1 for launch in launches)
        return "__main__" in text

    def _gpu_file(self, node: cst.Call) -> tuple[str, Related | None] | None:
        """What the project index knows of the file this load reads: written from GPU tensors, and where."""
        project = self.facts.project
        if project is None or not project.gpu_loads:
            return None
        return project.gpu_loads.get(self.context.span(node)[0].line)

    def _engine_origin(self, node: cst.Call) -> Related | None:
        """In a module that creates no engine itself (a helper module), the call that passes the engine in:
        the enclosing function's engine parameter, else any of the module's."""
        facts = self.facts
        project = facts.project
        if facts.initialize_calls or project is None or not project.parameters:
            return None
        function = facts.qualname(facts.scope_at(node))
        own = project.parameters.get(function, {}) if function is not None else {}
        for parameters in (own, *project.parameters.values()):
            for fact in parameters.values():
                return fact.origin
        return None

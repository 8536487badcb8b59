"""DSL209: `engine.load_state_dict(model_state_dict)`: the engine's own keys carry the `module.` prefix."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from dslint.diagnostics import Applicability, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.facts import BindingKind, Role, method_name
from dslint.script.names import dotted_name
from dslint.script.state_dict_loads import Rewrite, StateDictLoads


class LoadStateDictIntoEngine(ScriptRule):
    code = "DSL209"
    slug = "load-state-dict-into-engine"
    message = "the engine's state-dict keys carry a `module.` prefix, so this load fails; load into the model"
    severity = Severity.ERROR
    fixable = True
    docs = RuleDocs(
        what="""
            Flags `engine.load_state_dict(...)` on the engine object that `deepspeed.initialize` returns,
            including the common spelling that rebinds the model's own name to the engine
            (`model, optimizer, _, _ = deepspeed.initialize(model=model, ...)` then
            `model.load_state_dict(state_dict)`). Not flagged: a state dict that comes from an engine's own
            `state_dict()`, whose keys carry the prefix too, or a dict the script fills with keys it prefixes
            itself (`renamed["module." + key] = value`), or any load in a script that also takes the engine's own
            `state_dict()` elsewhere (it saves what it loads back, with the same keys: `save({"model":
            engine.state_dict()}, path)` ... `engine.load_state_dict(torch.load(path)["model"])`).
            `engine.module.load_state_dict(...)` and loads into
            the model given to `initialize` are DSL203's.
        """,
        why="""
            `DeepSpeedEngine` is an `nn.Module` that holds the model as its submodule `module`, so its own
            `state_dict()` keys are the model's keys with `module.` in front. A model's state dict (an HF
            `pytorch_model.bin`, a `torch.save(model.state_dict())` file, the `"module"` entry of a DeepSpeed
            checkpoint) has none of them: `load_state_dict` raises `Missing key(s) in state_dict:
            "module.model.embed_tokens.weight", ...` (measured with a 940M-parameter Llama at ZeRO-2 and ZeRO-3,
            and on the CPU at ZeRO-2 in fp32; the cause does not depend on the stage). With `strict=False` it
            raises nothing and loads nothing. Even a load that matched would be undone by the next
            `engine.step()` wherever the optimizer keeps its own fp32 copy of the weights (DSL203).
        """,
        example="""
            model = build_model()
            model, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
            state_dict = torch.load(args.ckpt, map_location="cpu")
            model.load_state_dict(state_dict)
        """,
        use_instead="""
            model = build_model()
            state_dict = torch.load(args.ckpt, map_location="cpu")
            model.load_state_dict(state_dict)
            model, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
        """,
        fix_safety="""
            The fixes are DSL203's, and unsafe for the same reasons (code between `initialize` and the load
            may rely on the old weights; a missing checkpoint now raises). A file in a DeepSpeed checkpoint
            directory is read with `engine.load_checkpoint(dir, tag=tag, load_module_only=True,
            load_optimizer_states=False)` with its result checked. Otherwise the `torch.load` and the
            `load_state_dict` move before `initialize`, into the model given to it (before that line, a name
            that `initialize` rebinds still holds the model), with `map_location="cpu"`; a load under
            `if args.resume:` keeps its `if`. No fix is offered when the loaded dict is used elsewhere, when
            the load is in another function than `initialize` or inside a loop, or when the moved code would
            read names bound after `initialize`.
        """,
    )
    valid = (
        # the `else` of `hasattr(engine, "module")` never runs for an engine
        Valid(
            """
            import deepspeed
            import torch
            def resume(args, net, path):
                engine, *_ = deepspeed.initialize(args=args, model=net)
                state = torch.load(path, map_location="cpu")
                if hasattr(engine, "module"):
                    engine.module.load_state_dict(state)
                else:
                    engine.load_state_dict(state)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            engine, optimizer, _, _ = deepspeed.initialize(model=build_model(), config=cfg)
            if args.resume:
                engine.load_state_dict(torch.load(args.ckpt, map_location="cpu")["model"])
            train(engine)
            torch.save({"model": engine.state_dict()}, args.ckpt)
            """
        ),
        Valid(
            """
            import deepspeed, torch
            model.load_state_dict(torch.load("w.pt", map_location="cpu"))
            model, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            snapshot = engine.state_dict()
            engine.load_state_dict(snapshot)
            optimizer.load_state_dict(state)
            """
        ),
        Valid(
            """
            import deepspeed
            def restore(model, path):
                model.load_state_dict(torch.load(path, map_location="cpu"))
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            best = torch.load("best.bin", map_location="cpu")
            renamed = {}
            for key, value in best.items():
                renamed["module." + key] = value
            engine.load_state_dict(renamed, strict=False)
            """
        ),
        Valid(  # the prefix added through a name of its own
            """
            import deepspeed
            import torch
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            best = torch.load("best.bin", map_location="cpu")
            renamed = {}
            for key, value in best.items():
                new_key = "module." + key
                renamed[new_key] = value
            engine.load_state_dict(renamed)
            """
        ),
        Valid(  # the prefix added by a comprehension, into a checkpoint's entry
            """
            import deepspeed
            import torch
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            ckpt = torch.load("best.bin", map_location="cpu")
            ckpt["model"] = {f"module.{k}": v for k, v in ckpt["model"].items()}
            engine.load_state_dict(ckpt["model"])
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            import torch
            model = build_model()
            model, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
            state_dict = torch.load(args.ckpt, map_location="cuda")
            model.load_state_dict(state_dict)
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            import torch
            model = build_model()
            state_dict = torch.load(args.ckpt, map_location="cpu")
            model.load_state_dict(state_dict)
            model, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            class Trainer:
                def __init__(self, args, cfg):
                    self.model = build_model()
                    self.model = deepspeed.initialize(model=self.model, config=cfg)[0]
                    if args.resume:  # from a plain torch.save file
                        self.model.load_state_dict(torch.load(args.resume), strict=False)
                def reload(self, path):
                    self.model.load_state_dict(torch.load(path, map_location="cpu"))
            """,
            lines=(9, 11),
            fixed="""
            import deepspeed
            import torch
            class Trainer:
                def __init__(self, args, cfg):
                    self.model = build_model()
                    if args.resume:  # from a plain torch.save file
                        self.model.load_state_dict(torch.load(args.resume, map_location="cpu"), strict=False)
                    self.model = deepspeed.initialize(model=self.model, config=cfg)[0]
                def reload(self, path):
                    self.model.load_state_dict(torch.load(path, map_location="cpu"))
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            def main(args):
                model, *_ = deepspeed.initialize(model=Net(), config=args.ds_config)
                for path in args.checkpoints:
                    model.load_state_dict(torch.load(path, map_location="cpu"))
                    evaluate(model)
            """,
            lines=(7,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.blocks: dict[cst.CSTNode, cst.CSTNode] = {line: node for line in node.body}
        self.pending: list[cst.Call] = []
        # `engine.state_dict()` calls: a script that saves the engine's own state dict (its keys carry `module.`)
        # may load that file back into the engine
        self.engine_states: list[cst.Call] = []

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for line in node.body:
            self.blocks[line] = node

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) == "state_dict" and not node.args and isinstance(node.func, cst.Attribute):
            answer = self.facts.role_of(node.func.value, at=node)
            if answer is not None and answer.role is Role.ENGINE:
                self.engine_states.append(node)
        if method_name(node) != "load_state_dict" or not node.args:
            return
        assert isinstance(node.func, cst.Attribute)
        facts = self.facts
        answer = facts.role_of(node.func.value, at=node)
        if answer is None or answer.role is not Role.ENGINE:
            return
        init = answer.init  # None for an engine from elsewhere, which is made before this code runs
        if init is not None and facts.scope_at(node) is init.scope and facts.start(node) < init.end:
            return
        if self._engine_state_dict(node.args[0].value, node):
            return
        if self._without_module(node):
            return  # `if hasattr(engine, "module"): ... else: engine.load_state_dict(...)`: never runs for an engine
        self.pending.append(node)

    def _without_module(self, node: cst.Call) -> bool:
        """The load runs only where its receiver has no `module` attribute, which an engine always has."""
        assert isinstance(node.func, cst.Attribute)
        receiver = dotted_name(node.func.value)
        wanted = f"hasattr({receiver}, 'module')"
        return receiver is not None and any(
            guard.subject == wanted and not guard.truth for guard in self.facts.paths.at(node)
        )

    def leave_Module(self, original_node: cst.Module) -> None:
        loads = StateDictLoads(self.context, self.blocks)
        for node in self.pending:
            if any(state is not node.args[0].value for state in self.engine_states):
                continue  # the script saves the engine's own state dict: what it loads back has the same keys
            rewrite = self._rewrite(loads, node)
            self.report(
                node,
                edits=rewrite.edits if rewrite else (),
                applicability=Applicability.UNSAFE,
                fix_message=rewrite.message if rewrite else "",
            )

    def _engine_state_dict(self, value: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """`engine.state_dict()`, or a name bound to it in the same scope: keys with the `module.` prefix."""
        facts = self.facts
        if isinstance(value, (cst.Name, cst.Subscript)) and _prefixed_keys(
            facts.scope_at(at).node, facts.code(value), facts.code
        ):
            return True
        if isinstance(value, cst.Name):
            binding = facts.binding_at(value.value, facts.scope_at(at), facts.start(at))
            if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
                return False
            value = binding.value
        if not (isinstance(value, cst.Call) and method_name(value) == "state_dict"):
            return False
        assert isinstance(value.func, cst.Attribute)
        answer = facts.role_of(value.func.value, at=value)
        return answer is not None and answer.role is Role.ENGINE

    def _rewrite(self, loads: StateDictLoads, node: cst.Call) -> Rewrite | None:
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        state = loads.loaded_state(node)
        if answer is None or state is None:
            return None
        return loads.to_load_checkpoint(node, answer, state) or loads.before_initialize(node, answer, state)


class _PrefixedKeys(cst.CSTVisitor):
    """The state dict `name` (a name, or a subscript such as `ckpt["model"]`, by its code) filled in one scope
    with keys that carry the engine's `module.` prefix: `name["module." + key] = value`, `name[f"module.{key}"]
    = value`, `name[new_key] = value` after `new_key = "module." + key`, or `name = {"module." + k: v for ...}`."""

    def __init__(self, name: str, code: Callable[[cst.CSTNode], str]) -> None:
        super().__init__()
        self.name = name
        self.code = code
        self.found = False
        self.prefixed_names: set[str] = set()  # `new_key = "module." + key`
        self.key_names: set[str] = set()  # `name[new_key] = ...`

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            written = target.target
            if isinstance(written, cst.Name) and _prefixed(node.value):
                self.prefixed_names.add(written.value)
            if self.code(written) == self.name and isinstance(node.value, cst.DictComp) and _prefixed(node.value.key):
                self.found = True
            if not (
                isinstance(written, cst.Subscript)
                and self.code(written.value) == self.name
                and len(written.slice) == 1
                and isinstance(written.slice[0].slice, cst.Index)
            ):
                continue
            key = written.slice[0].slice.value
            if _prefixed(key):
                self.found = True
            elif isinstance(key, cst.Name):
                self.key_names.add(key.value)


def _prefixed(key: cst.BaseExpression) -> bool:
    """`"module." + key`, or `f"module.{key}"`."""
    if isinstance(key, cst.BinaryOperation) and isinstance(key.operator, cst.Add):
        key = key.left
    if isinstance(key, cst.SimpleString):
        return key.evaluated_value == "module."
    if isinstance(key, cst.FormattedString) and key.parts:
        first = key.parts[0]
        return isinstance(first, cst.FormattedStringText) and first.value.startswith("module.")
    return False


def _prefixed_keys(scope: cst.CSTNode, name: str, code: Callable[[cst.CSTNode], str]) -> bool:
    """Whether `name` is filled, in this scope, with keys that carry the engine's `module.` prefix."""
    finder = _PrefixedKeys(name, code)
    scope.visit(finder)
    finder.found = finder.found or bool(finder.key_names & finder.prefixed_names)
    return finder.found

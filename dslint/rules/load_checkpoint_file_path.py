"""DSL206: `engine.load_checkpoint(...)` is given a file (`.pt`, `.pth`, `.bin`, `.safetensors`)."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.checkpoint_paths import checkpoint_location
from dslint.script.engine_calls import argument, is_engine_method_call

FILE_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors")
OS_PATH_JOIN = "os.path.join"


class LoadCheckpointFilePath(ScriptRule):
    code = "DSL206"
    slug = "load-checkpoint-file-path"
    message = "engine.load_checkpoint reads a checkpoint directory, not a file; pass the directory"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `engine.load_checkpoint(path, ...)` where `path` is a file name ending in `.pt`, `.pth`,
            `.bin` or `.safetensors`: a string, an f-string, `os.path.join(...)` or `Path(...) / ...` whose
            last part ends so (also `dir + "/model.pt"`), or a name bound to one of them.
        """,
        why="""
            `load_checkpoint` treats its first argument as a directory: it reads `{dir}/latest` for the tag
            and then `{dir}/{tag}/mp_rank_00_model_states.pt` (or the `zero_pp_rank_*` files of ZeRO-3). Given
            a file, it finds no `latest`, logs a warning and returns `(None, None)`, and training starts from
            the initial weights. It cannot read a plain `torch.save` file or an HF `pytorch_model.bin` at all.
        """,
        example="""
            engine.load_checkpoint("checkpoints/global_step100/mp_rank_00_model_states.pt")
        """,
        use_instead="""
            load_path, _ = engine.load_checkpoint("checkpoints", tag="global_step100")
        """,
        fix_safety="""
            When the file is DeepSpeed's own model-states file inside a checkpoint directory, an unsafe fix
            passes the directory and the tag instead (`load_checkpoint(dir, tag=tag, ...)`): unsafe because it
            changes which files are read (the optimizer states too, unless `load_module_only=True`). For other
            files there is no fix.
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint("checkpoints", tag="global_step100")
            load_path, _ = engine.load_checkpoint(args.output_dir)
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            weights = os.path.join(args.out, "pytorch_model.bin")
            load_path, _ = engine.load_checkpoint(weights)
            load_path, _ = engine.load_checkpoint(load_dir=f"{args.out}/model.safetensors", load_module_only=True)
            """,
            lines=(6, 7),
        ),
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint("ckpt/global_step10/mp_rank_00_model_states.pt")
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint("ckpt", tag="global_step10")
            """,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_engine_method_call(self.facts, node, "load_checkpoint"):
            return
        path = argument(node, 0, "load_dir")
        if path is None or not self._is_file(path.value, node, depth=0):
            return
        self.report(
            path.value,
            edits=self._fix(node, path),
            applicability=Applicability.UNSAFE,
            fix_message="Pass the checkpoint directory and its tag",
        )

    def _fix(self, node: cst.Call, path: cst.Arg) -> list[Edit]:
        if path.keyword is not None or argument(node, 1, "tag") is not None:
            return []
        location = checkpoint_location(self.context, path.value, node)
        if location is None:
            return []
        start, end = self.context.span(path.value)
        return [Edit(start, end, f"{location.directory}, tag={location.tag}")]

    def _is_file(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            value = expr.evaluated_value
            return isinstance(value, str) and value.endswith(FILE_SUFFIXES)
        if isinstance(expr, cst.FormattedString):
            last = expr.parts[-1] if expr.parts else None
            return isinstance(last, cst.FormattedStringText) and last.value.endswith(FILE_SUFFIXES)
        if isinstance(expr, cst.Call) and self.facts.qualified(expr.func) == OS_PATH_JOIN and expr.args:
            return self._is_file(expr.args[-1].value, at, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.Add)):
            return self._is_file(expr.right, at, depth + 1)
        assigned = self.facts.assigned_value(expr, at)
        return assigned is not None and self._is_file(assigned, assigned, depth + 1)

"""DSL205: the `(load_path, client_state)` result of `engine.load_checkpoint(...)` is ignored."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.checked_load import checked_load_edit
from dslint.script.engine_calls import is_engine_method_call


class LoadCheckpointResultIgnored(ScriptRule):
    code = "DSL205"
    slug = "load-checkpoint-result-ignored"
    message = "engine.load_checkpoint returns (None, None) when it finds no checkpoint; check its load_path"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags `engine.load_checkpoint(...)` used as a statement of its own, its result thrown away.
            Also `_, _ = engine.load_checkpoint(...)` (bound only to throwaway names; no rewrite offered).
            (`_, client_state = engine.load_checkpoint(...)` is not flagged: a script that then reads
            `client_state[...]` fails loudly on the `None`.)
        """,
        why="""
            `load_checkpoint` returns `(load_path, client_state)`. When no tag is given and the directory has
            no `latest` file (a wrong path, a checkpoint written with `save_latest=False`, a plain file), it
            logs a warning and returns `(None, None)` (runtime/engine.py `load_checkpoint`): training then
            starts from scratch, and nothing stops it.
        """,
        example="""
            engine.load_checkpoint(args.load_dir)
        """,
        use_instead="""
            load_path, client_state = engine.load_checkpoint(args.load_dir)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.load_dir}")
        """,
        fix_safety="""
            The fix (for the statement form) binds the result and raises `FileNotFoundError` when `load_path`
            is None. It is unsafe: a script that means "resume if there is something to resume" must keep
            going instead; write that branch by hand.
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, client_state = engine.load_checkpoint(args.load_dir)
            if load_path is None:
                print("starting from scratch")
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            other.load_checkpoint(args.load_dir)
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            engine.load_checkpoint(args.load_dir, tag=args.tag)
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint(args.load_dir, tag=args.tag)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.load_dir}")
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def resume(self, path):
                    if path:
                        self.engine.load_checkpoint(path + "/ckpt")
                    _, state = self.engine.load_checkpoint(path)  # not flagged
                    _, _ = self.engine.load_checkpoint(path)
                def setup(self):
                    self.engine, _, _, _ = deepspeed.initialize(model=self.net, config=self.cfg)
            """,
            lines=(6, 8),
            fixed="""
            import deepspeed
            class Trainer:
                def resume(self, path):
                    if path:
                        load_path, _ = self.engine.load_checkpoint(path + "/ckpt")
                        if load_path is None:
                            raise FileNotFoundError("no DeepSpeed checkpoint to load")
                    _, state = self.engine.load_checkpoint(path)  # not flagged
                    _, _ = self.engine.load_checkpoint(path)
                def setup(self):
                    self.engine, _, _, _ = deepspeed.initialize(model=self.net, config=self.cfg)
            """,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_engine_method_call(self.facts, node, "load_checkpoint"):
            return
        line = self.facts.lone_expression_statement(node)
        if line is None:
            if self._discarded_into_underscores(node):
                self.report(node)  # `_, _ = engine.load_checkpoint(...)`: no rewrite offered
            return
        self.report(
            node,
            edits=self._fix(node, line),
            applicability=Applicability.UNSAFE,
            fix_message="Check the result: raise when load_path is None",
        )

    def _discarded_into_underscores(self, node: cst.Call) -> bool:
        """`_, _ = engine.load_checkpoint(...)` or `_ = ...`: the result is bound only to throwaway names."""
        statement = self.facts.small_statement_of_call.get(node)
        if not isinstance(statement, cst.Assign) or statement.value is not node:
            return False
        names: list[cst.BaseExpression] = []
        for target in statement.targets:
            value = target.target
            if isinstance(value, (cst.Tuple, cst.List)):
                names.extend(element.value for element in value.elements)
            else:
                names.append(value)
        return bool(names) and all(isinstance(n, cst.Name) and n.value == "_" for n in names)

    def _fix(self, node: cst.Call, line: cst.SimpleStatementLine) -> list[Edit]:
        first = node.args[0] if node.args else None
        directory = self.context.code(first.value) if first is not None and not first.star else ""
        return [checked_load_edit(self.context, line, self.context.code(node), directory)]

"""DSL466: `engine.load_checkpoint(dir)` without a tag in a script whose every save passes `save_latest=False`."""

from __future__ import annotations

import re

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.engine_calls import is_engine_method_call
from dslint.script.hf_models import is_none, keyword_value

# the script writes a `latest` file of its own (`open(os.path.join(d, "latest"), "w")`, `Path(...).write_text`)
_WRITES_LATEST = re.compile(rb"""["']latest["'][^\n]*(?:["'][wa]\+?["']|write_text)""")


class LoadWithoutLatestFile(ScriptRule):
    code = "DSL466"
    slug = "load-without-latest-file"
    message = "load_checkpoint without a tag reads a `latest` file that no save here writes; pass the tag"
    severity = Severity.ERROR
    required_tokens = (b"deepspeed", b"initialize", b"load_checkpoint", b"save_latest")
    docs = RuleDocs(
        what="""
            Flags `engine.load_checkpoint(dir)` called without a tag (none, or `tag=None`) in a script whose every
            `engine.save_checkpoint(...)` passes `save_latest=False` (at least one does), and that writes no
            `latest` file of its own.
        """,
        why="""
            Without a tag, `load_checkpoint` reads the tag from the `latest` file in the folder (DeepSpeed 0.19.8,
            `DeepSpeedEngine.load_checkpoint`); `save_checkpoint(..., save_latest=False)` never writes that file.
            With no `latest` file the load logs a warning and returns `(None, None)` without loading anything:
            every resume starts training from scratch, and a script that ignores the result never says so.
        """,
        example="""
            engine.save_checkpoint(args.ckpt_dir, tag=f"step_{step}", save_latest=False)
            ...
            engine.load_checkpoint(args.ckpt_dir)
        """,
        use_instead="""
            engine.save_checkpoint(args.ckpt_dir, tag=f"step_{step}", save_latest=False)
            ...
            engine.load_checkpoint(args.ckpt_dir, tag=args.resume_tag)
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            engine.save_checkpoint("ckpt", tag="last", save_latest=False)
            engine.load_checkpoint("ckpt", tag="last")
            """
        ),
        # one save writes the `latest` file
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            engine.save_checkpoint("ckpt", tag="best", save_latest=False)
            engine.save_checkpoint("ckpt")
            engine.load_checkpoint("ckpt")
            """
        ),
        # the script writes the file itself
        Valid(
            """
            import os
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            engine.save_checkpoint("ckpt", tag="s1", save_latest=False)
            with open(os.path.join("ckpt", "latest"), "w") as handle:
                handle.write("s1")
            engine.load_checkpoint("ckpt")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            def save(engine, folder, step):
                engine.save_checkpoint(folder, tag=f"step_{step}", save_latest=False)
            def resume(folder):
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
                path, _ = engine.load_checkpoint(folder, tag=None)
                return engine
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            save(engine, "ckpt", 1)
            """,
            lines=(7,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loads: list[cst.Call] = []
        self.saves: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if is_engine_method_call(self.facts, node, "load_checkpoint"):
            self.loads.append(node)
        elif is_engine_method_call(self.facts, node, "save_checkpoint"):
            self.saves.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.loads or not self.saves or not all(_no_latest(save) for save in self.saves):
            return
        if _WRITES_LATEST.search(self.context.text.encode("utf-8", "replace")) is not None:
            return
        for load in self.loads:
            if _tag(load) is None:
                self.report(load)


def _no_latest(save: cst.Call) -> bool:
    """`save_latest=False` written (by keyword, or fourth positional)."""
    value = keyword_value(save, "save_latest")
    if value is None:
        positional = [arg for arg in save.args if arg.keyword is None]
        value = positional[3].value if len(positional) > 3 and not any(a.star for a in positional[:4]) else None
    return isinstance(value, cst.Name) and value.value == "False"


def _tag(load: cst.Call) -> cst.BaseExpression | None:
    """The tag a load is given (by keyword or second positional), None for none or `None`."""
    value = keyword_value(load, "tag")
    if value is None:
        positional = [arg for arg in load.args if arg.keyword is None]
        if any(arg.star for arg in load.args):
            return cst.Name("unknown")  # `*args`/`**kwargs`: a tag may be among them
        value = positional[1].value if len(positional) > 1 else None
    return None if value is None or is_none(value) else value

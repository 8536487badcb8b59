"""DSL447: a keyword that `deepspeed.initialize`, `engine.save_checkpoint` or `engine.load_checkpoint` does not take."""

from __future__ import annotations

import difflib

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Kind
from dslint.model.library import ACCEPTED_KEYWORDS
from dslint.project.config_access import vendored_package
from dslint.script.facts import Role

# What the keyword was most likely meant for, where no accepted keyword is close to it.
_WHERE_INSTEAD = {
    "lr": "set it in the config's optimizer params",
    "learning_rate": "set it in the config's optimizer params",
    "scheduler": "pass lr_scheduler=",
    "deepspeed_config": "pass config=",
    "config_dict": "pass config=",
    "parameters": "pass model_parameters=",
    "client_sd": "pass client_state=",
}

_SCRIPT = """\
import deepspeed

engine, optimizer, _, _ = deepspeed.initialize(
    model=model, model_parameters=model.parameters(), config="ds.json", {keyword}
)
engine.save_checkpoint("ckpt", tag="last", client_state={{"step": step}})
"""


class KeywordRefusedByDeepspeed(ScriptRule):
    code = "DSL447"
    slug = "keyword-refused-by-deepspeed"
    message = "DeepSpeed's call takes no such keyword: a TypeError stops the script here"
    severity = Severity.ERROR
    required_tokens = (b"deepspeed",)
    docs = RuleDocs(
        what="""
            Flags a keyword argument that the DeepSpeed call does not take: `deepspeed.initialize(...)` (and a
            name it is bound to, `ds_init = deepspeed.initialize`), and the engine's `save_checkpoint` and
            `load_checkpoint`. The keywords accepted are those of DeepSpeed 0.19.8's signatures, which no
            earlier release exceeded (`initialize`: `args`, `model`, `optimizer`, `model_parameters`,
            `training_data`, `lr_scheduler`, `distributed_port`, `mpu`, `dist_init_required`, `collate_fn`,
            `config`, `mesh_param`, `config_params`). The message names the nearest accepted keyword, or where
            the value belongs (`lr=`: the config's optimizer params). Left alone: a script that may import a
            DeepSpeed of the project's own (a `deepspeed/__init__.py` in its folder or one above it, within the
            project: a modified DeepSpeed shipped in the repository takes keywords of its own).
        """,
        why="""
            None of these functions takes `**kwargs` (`deepspeed/__init__.py: initialize`, `runtime/engine.py:
            save_checkpoint, load_checkpoint`): Python raises `TypeError: ... got an unexpected keyword argument`
            at the call, so the script stops before training starts, or at its first checkpoint, hours in.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json", lr=args.lr)
            engine.save_checkpoint(out_dir, client_sd={"step": step})
        """,
        use_instead="""
            # ds.json: "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            engine.save_checkpoint(out_dir, client_state={"step": step})
        """,
    )
    valid = (
        Valid(_SCRIPT.format(keyword="training_data=dataset")),
        Valid(_SCRIPT.format(keyword="**extra")),
        # a function of the project's own that happens to be called initialize
        Valid("from setup import initialize\nengine = initialize(model=model, lr=1e-4)\n"),
        # save_checkpoint of something that is not the engine (a Lightning trainer)
        Valid("import deepspeed\ntrainer.save_checkpoint('last.ckpt', weights_only=True)\n"),
    )
    invalid = (
        Invalid(_SCRIPT.format(keyword="lr=args.lr"), lines=(4,)),
        Invalid(_SCRIPT.format(keyword="dist_init=True"), lines=(4,)),
        Invalid(_SCRIPT.format(keyword="mpu=mpu").replace("client_state=", "client_sd="), lines=(6,)),
        Invalid(
            "import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config=cfg)\n"
            "engine.load_checkpoint(path, load_optimizer=False)\n",
            lines=(3,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.vendored: bool | None = None  # looked for at the first keyword to report (`_vendored`)

    def visit_Call(self, node: cst.Call) -> None:
        name = self._entry(node)
        if name is None:
            return
        accepted = ACCEPTED_KEYWORDS[name]
        for argument in node.args:
            keyword = argument.keyword
            if keyword is None or keyword.value in accepted:
                continue
            if self._vendored():
                return
            close = difflib.get_close_matches(keyword.value, sorted(accepted), n=1, cutoff=0.6)
            hint = _WHERE_INSTEAD.get(keyword.value) or (f"did you mean {close[0]}=?" if close else "")
            shown = "deepspeed.initialize" if name == "initialize" else f"engine.{name}"
            message = f"{shown}() takes no keyword {keyword.value!r} (a TypeError here)"
            self.report(keyword, f"{message}; {hint}" if hint else message)

    def _vendored(self) -> bool:
        """A DeepSpeed of the project's own (modified, shipped in the repository) that the script may import: its
        signatures are its own. Looked for once a file, on the file system, only where a keyword would be reported."""
        if self.vendored is None:
            self.vendored = bool(self.context.path) and vendored_package(self.context.path, "deepspeed") is not None
        return self.vendored

    def _entry(self, call: cst.Call) -> str | None:
        """Which accepted-keyword entry `call` is: this file's `initialize` (or a name bound to it), an engine's
        `save_checkpoint`/`load_checkpoint`; else None."""
        init = self.facts.initialize_call_for(call)
        if init is not None:
            return "initialize" if init.engine.kind is Kind.TRAINING else None
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("save_checkpoint", "load_checkpoint"):
            return None
        answer = self.facts.role_of(func.value, call)
        return func.attr.value if answer is not None and answer.role is Role.ENGINE else None

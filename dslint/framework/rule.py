"""The rule framework: what every rule declares, and the base classes script rules build on.

A rule is one module in `dslint.rules`. It declares its code, slug, severity, a default message, its docs and
its own valid/invalid cases; `tests/test_rule_cases.py` runs the cases of every registered rule, so a rule
without cases cannot exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Related, Severity
from dslint.framework.catalog import Needs, Shape
from dslint.framework.rule_base import CODE_PATTERN, FAMILIES, SLUG_PATTERN, Invalid, Rule, RuleDocs, Valid, family_of

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext

# `Rule` and what it declares live in `dslint.framework.rule_base` (no libcst); the rules import them from here
__all__ = [
    "CODE_PATTERN",
    "FAMILIES",
    "SLUG_PATTERN",
    "Invalid",
    "Rule",
    "RuleDocs",
    "ScriptRule",
    "Valid",
    "family_of",
]


class ScriptRule(Rule, cst.BatchableCSTVisitor):
    """A rule over a Python script. All script rules of a file run in ONE batched traversal.

    Rules read the shared, precomputed facts (`self.facts`) rather than re-deriving them, and report with
    `self.report(node, ...)`. A script rule only runs on files that create a DeepSpeed engine unless it sets
    `needs_engine = False`.
    """

    needs_engine: ClassVar[bool] = True
    # Also runs on files whose only engine is the inference engine of `deepspeed.init_inference(...)`.
    inference_engine: ClassVar[bool] = False
    # Byte strings a file must contain for this rule to possibly fire (see dslint.lint.prefilter).
    required_tokens: ClassVar[tuple[bytes, ...]] = (b"deepspeed", b"initialize")
    # Other sets of byte strings, all of any one of which does as well (`Needs.alternatives`).
    alternative_tokens: ClassVar[tuple[tuple[bytes, ...], ...]] = ()
    # Fires only where the file hands DeepSpeed a ZeRO config itself (`project.engine_config.ZeroSources`): a
    # call of `deepspeed.initialize`, an `HfDeepSpeedConfig` or a `*TrainingArguments` in its code; the
    # prefilter settles other files without parsing them (`lint.activation`).
    needs_zero_source: ClassVar[bool] = False
    # Fires only where a launch of the project starts the script as several processes a node.
    needs_several_processes: ClassVar[bool] = False
    # Also runs where the project index finds a `torch.load` of a file holding GPU tensors (`Needs.gpu_loads`).
    runs_on_gpu_loads: ClassVar[bool] = False
    # The calls at which the rule can report (`catalog.Shape`), tested on CPython's tree before libcst parses.
    call_shapes: ClassVar[tuple[Shape, ...]] = ()
    # Fires only where a DeepSpeed config may reach a Hugging Face reader of the file (`Needs.hf_configured`).
    needs_hf_config: ClassVar[bool] = False
    # Also runs where some call passes the engine to a parameter of the file's functions (`Needs.partly_engine`).
    runs_on_partly_engine: ClassVar[bool] = False
    # Token sets with any of which the rule also runs where no engine is in sight (`Needs.without_engine`).
    runs_without_engine_on: ClassVar[tuple[tuple[bytes, ...], ...]] = ()
    # Also runs where the project index finds a call returning a plain DataLoader (`Needs.returned_loaders`).
    runs_on_returned_loaders: ClassVar[bool] = False
    # Also runs where the project index finds a call of a project function loading a pretrained model
    # (`Needs.pretrained_loads`).
    runs_on_pretrained_loads: ClassVar[bool] = False
    # Also runs where the project index finds a call handing an object to a project function that torch-saves its
    # `state_dict()` (`Needs.state_saving_helpers`).
    runs_on_state_saving_helpers: ClassVar[bool] = False

    @classmethod
    def needs(cls) -> Needs:
        """The declarations above as data, which `dslint.lint.activation` evaluates (and the catalog keeps)."""
        return Needs(
            cls.required_tokens,
            cls.needs_engine,
            cls.inference_engine,
            cls.needs_zero_source,
            cls.alternative_tokens,
            cls.needs_several_processes,
            cls.runs_on_gpu_loads,
            cls.call_shapes,
            cls.needs_hf_config,
            cls.runs_on_partly_engine,
            cls.runs_without_engine_on,
            cls.runs_on_returned_loaders,
            cls.runs_on_pretrained_loads,
            cls.runs_on_state_saving_helpers,
        )

    def __init__(self, context: ScriptContext) -> None:
        super().__init__()
        self.context = context
        self.facts = context.facts

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        edits: Sequence[Edit] = (),
        applicability: Applicability = Applicability.SAFE,
        fix_message: str = "",
        severity: Severity | None = None,
        imports: Sequence[str] = (),
        related: Sequence[Related] = (),
        start_at: cst.CSTNode | None = None,
        about: cst.Call | None = None,
    ) -> None:
        """Report `node`; an empty `edits` means no fix. Nodes in a plain-PyTorch branch are never reported.
        `start_at`: the part of `node` the finding points at when it sits on a later line than `node` starts
        (the method name of a call chained onto a constructor spread over several lines: `Net(\n...\n).cuda()`).
        `about`: the engine's method call the finding is about when `node` is not it (the division before
        `engine.backward(loss)`): where that engine comes from is named as for a reported call.

        `severity` overrides the rule's own for this finding (a rule may be sure of an error in one case and
        only warn in another, e.g. when the ZeRO stage cannot be read). `imports` are statements the fix's code
        needs (`"import os"`); the fixer adds the missing ones once."""
        if self.facts.in_plain_branch(node):
            return
        fix = Fix(tuple(edits), applicability, fix_message, tuple(imports)) if edits else None
        message = message or self.message
        if not related and self.facts.project is not None:
            origin = self._elsewhere(about or node)
            if origin is not None:  # the engine (or what initialize returned) comes from another function/module
                message, related = f"{message} ({origin.message}, {origin.path}:{origin.line})", (origin,)
        start, end = self.context.span(node)
        if start_at is not None:
            start = max(start, self.context.span(start_at)[0], key=lambda location: location.line)
        found = Diagnostic(
            code=self.code,
            slug=self.slug,
            message=message,
            severity=severity or self.severity,
            path=self.context.path,
            start=start,
            end=end,
            fix=fix,
            related=tuple(related),
        )
        diagnostics = self.context.diagnostics
        same = next((i for i, d in enumerate(diagnostics) if d == found), None)
        if same is None:
            diagnostics.append(found)
        elif related:  # the same finding from another fact (another launch): one finding naming every place
            earlier = diagnostics[same]
            merged = tuple(dict.fromkeys((*earlier.related, *found.related)))
            diagnostics[same] = Diagnostic(**{**earlier.__dict__, "related": merged})

    def _elsewhere(self, node: cst.CSTNode) -> Related | None:
        """Where the engine (or scheduler, optimizer) a reported method call acts on was created or passed in,
        when that is in another function or module."""
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return None
        answer = self.facts.role_of(node.func.value, at=node)
        return answer.engine.site if answer is not None else None

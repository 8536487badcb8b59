"""DSL002: the file is valid Python but nested too deeply for dslint's parser."""

from __future__ import annotations

from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.framework.driver_rules import ScriptTooDeep
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

_HEADER = "import deepspeed\nengine, *_ = deepspeed.initialize(model=model)\n"


class NestedTooDeeply(ScriptTooDeep):
    code = "DSL002"
    slug = "nested-too-deeply"
    message = "not checked"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Reports a Python file that dslint would analyse and that CPython compiles, but whose syntax tree is
            deeper than `max-nesting` (default 150 levels; each operator of an `and`/`or` chain counts as one).
            dslint's parser (libcst) crashes on such files, so it does not parse them: none of its rules ran.
        """,
        why="""
            Generated code (an `and` chain of thousands of terms, a deeply nested literal) would otherwise crash
            the whole run. The other files are still checked, and this finding makes sure the gap is not silent.
            Raise `max-nesting` in `[tool.dslint]` to check the file anyway, or exclude it.
        """,
        example="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model)
            ready = a0 and a1 and a2 and ...  # 5,000 terms
        """,
        use_instead="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model)
            ready = all(conditions)
        """,
    )
    valid = (
        Valid(_HEADER + "ready = " + " and ".join(["a"] * 100) + "\n"),
        Valid("ready = " + " and ".join(["a"] * 1000) + "\n"),  # no engine, no config: not dslint's file
    )
    invalid = (
        Invalid(_HEADER + "ready = " + " and ".join(["a"] * 1000) + "\n", lines=(3,)),
        Invalid(_HEADER + "x = " + "-" * 400 + "1\n", lines=(3,)),
    )

    @classmethod
    def from_refusal(cls, path: str, line: int, message: str) -> Diagnostic:
        return cls.diagnostic(path, Location(max(line, 1), 1), message=f"{cls.message}: {message}")

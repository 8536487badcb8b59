"""DSL001: the file cannot be parsed."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.rule import Invalid, Rule, RuleDocs, Valid


class SyntaxErrorRule(Rule):
    code = "DSL001"
    slug = "syntax-error"
    message = "cannot parse this file"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="Reports a Python file that mentions DeepSpeed but cannot be parsed, with the position of the error.",
        why="""
            A file that does not parse cannot be checked: none of dslint's rules ran on it. The other files are
            still checked, and this finding makes sure the gap is not silent.
        """,
        example="""
            import deepspeed
            def main(:
                ...
        """,
        use_instead="""
            import deepspeed
            def main():
                ...
        """,
    )
    valid = (Valid("import deepspeed\nx = 1\n"),)
    invalid = (
        Invalid("import deepspeed\ndef main(:\n    pass\n", lines=(2,)),
        Invalid("import deepspeed\nx = (1,\n", lines=(2,)),
    )

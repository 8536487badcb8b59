"""DSL001: the file cannot be parsed."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, Rule, RuleDocs, Valid


class SyntaxErrorRule(Rule):
    code = "DSL001"
    slug = "syntax-error"
    message = "cannot parse this file"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Reports a Python file that dslint would analyse (it calls `initialize` with DeepSpeed imported, or
            passes a config to `*TrainingArguments(deepspeed=...)`) but that cannot be parsed, with the
            position of the error. Files that never mention DeepSpeed are not dslint's to judge.
        """,
        why="""
            A file that does not parse cannot be checked: none of dslint's rules ran on it. The other files are
            still checked, and this finding makes sure the gap is not silent.
        """,
        example="""
            import deepspeed
            def main(:
                engine, *_ = deepspeed.initialize(model=model, config="ds_config.json")
        """,
        use_instead="""
            import deepspeed
            def main():
                engine, *_ = deepspeed.initialize(model=model, config="ds_config.json")
        """,
    )
    valid = (
        Valid("import deepspeed\nengine, *_ = deepspeed.initialize(model=model)\n"),
        Valid("import deepspeed\ndef main(:\n    pass\n"),  # no engine, no config: not dslint's file
    )
    invalid = (
        Invalid("import deepspeed\ndef main(:\n    engine = deepspeed.initialize(model=m)\n", lines=(2,)),
        Invalid("import deepspeed\nx = (1,\nengine = deepspeed.initialize(model=m)\n", lines=(2,)),
        Invalid("from transformers import TrainingArguments\nargs = TrainingArguments(deepspeed=\n", lines=(2,)),
    )

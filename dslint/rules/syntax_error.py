"""DSL001: the file cannot be parsed."""

from __future__ import annotations

import ast

import libcst as cst

from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.framework.driver_rules import ScriptSyntaxError
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class SyntaxErrorRule(ScriptSyntaxError):
    code = "DSL001"
    slug = "syntax-error"
    message = "cannot parse this file"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Reports a Python file (or a notebook's code) that dslint would analyse but that cannot be parsed,
            with the position of the error: one on which a rule could run (its words: `initialize` with DeepSpeed
            imported, a config passed to `*TrainingArguments(deepspeed=...)`...) and that mentions DeepSpeed, or
            that a launch of the project starts. Files that never mention DeepSpeed (a plain PyTorch notebook,
            a template) are not dslint's to judge.
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

    @classmethod
    def from_error(cls, path: str, data: bytes, error: Exception) -> Diagnostic:
        """One finding for a file that cannot be parsed; CPython's position and message are the clearer ones."""
        line, column, message = 1, 1, str(error).splitlines()[0] if str(error) else type(error).__name__
        try:
            ast.parse(data, filename=path)
        except SyntaxError as syntax:
            line, column = syntax.lineno or 1, syntax.offset or 1
            message = syntax.msg
        except (ValueError, UnicodeDecodeError) as other:
            message = str(other)
        except (RecursionError, MemoryError):
            pass  # CPython gives up on the nesting: `error` (from dslint.lint.parse_guard) says so
        else:
            if isinstance(error, cst.ParserSyntaxError):
                line, column = error.raw_line, error.raw_column + 1
                message = error.message.splitlines()[0]
        start = Location(max(line, 1), max(column, 1))
        return cls.diagnostic(path, start, message=f"{cls.message}: {message}")

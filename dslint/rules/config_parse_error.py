"""DSL400: a DeepSpeed config file that cannot be parsed."""

from __future__ import annotations

from dslint.config.tree import ParseError
from dslint.diagnostics import Diagnostic, Location, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.driver_rules import ConfigSyntaxError
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class ConfigParseError(ConfigRule, ConfigSyntaxError):
    code = "DSL400"
    slug = "config-parse-error"
    message = "cannot parse this DeepSpeed config"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Reports a DeepSpeed config file (named like one, or named by a script) that is not valid JSON or
            HJSON, with the line and column of the first error; and a config a shell launcher writes itself (a
            heredoc `cat <<EOF > ds.json`, a one-line `echo '{...}' > ds.json`) that the program reading it
            cannot parse: Lightning's `DeepSpeedStrategy` (the file in `PL_DEEPSPEED_CONFIG_PATH` under a
            DeepSpeed strategy) and the Hugging Face integrations (`--deepspeed ds.json`) read it with the strict
            `json.load`, which refuses a trailing comma; reported in the launcher, on the line json.load stops at.
            A config file that a launch hands to one of those readers, or that a script names for them
            (`TrainingArguments(deepspeed="ds.json")`, `DeepSpeedPlugin(hf_ds_config="ds.json")`), is read as
            `json.load` reads it too (a comment or a trailing comma stops it), and the finding names the launch
            or the keyword.
        """,
        why="""
            DeepSpeed reads config files with `hjson.load`; a file it cannot parse stops the run at start-up,
            usually after the job has waited in a queue. None of the other config checks could run on it. hjson
            accepts trailing commas and comments, `json.load` does not: Lightning (`_load_config`) and
            `HfDeepSpeedConfig` read the path with `json.load` and hand DeepSpeed a dict, so a text that DeepSpeed
            alone would take stops their run; a written config that DeepSpeed reads by path is not reported.
        """,
        example="""
            {
              "train_batch_size": 32,,
              "fp16": {"enabled": true}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "fp16": {"enabled": true}
            }
        """,
    )
    valid = (Valid('{"train_batch_size": 8}\n'),)
    invalid = (
        Invalid('{\n  "train_batch_size": 8,,\n  "fp16": {"enabled": true}\n}\n', lines=(2,)),
        Invalid('{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true\n', lines=(4,)),
    )

    def check(self) -> None:
        """Parse errors are reported by the config linter, which calls `report_parse_error`."""

    @classmethod
    def from_error(cls, path: str, error: ParseError) -> Diagnostic:
        at = Location(max(error.line, 1), max(error.column, 1))
        return cls.diagnostic(path, at, message=f"{cls.message}: {error.message}")

    @classmethod
    def not_read(cls, path: str, reason: ParseError) -> Diagnostic:
        at = Location(max(reason.line, 1), max(reason.column, 1))
        message = f"DeepSpeed config {reason.message}; dslint checks nothing in it"
        return cls.diagnostic(path, at, message=message, severity=Severity.WARNING)

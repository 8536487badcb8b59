"""Configs a shell launcher writes itself (heredoc, one-line `echo`), parsed as their reader parses them
(`project/written_configs.py`): fixtures/projects/written_configs, both ways."""

from __future__ import annotations

import os
from pathlib import Path

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.launcher import launcher_results
from dslint.project.missing_configs import missing_config
from dslint.project.written_configs import strict_error, written_configs
from dslint.selection import RuleSelection

PROJECT = FIXTURES / "projects" / "written_configs"


def _findings(selection: RuleSelection | None = None) -> list[tuple[str, int, int, str, str]]:
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    chosen = selection or RuleSelection()
    results = launcher_results(index.launch_issues, lambda _: chosen, lambda p: Path(p).read_text("utf-8"))
    return sorted(
        (os.path.relpath(d.path, PROJECT), d.start.line, d.start.column, d.code, d.message)
        for r in results
        for d in r.diagnostics
    )


def test_configs_a_strict_reader_cannot_parse_are_reported_where_the_launcher_writes_them() -> None:
    found = _findings()
    assert [(path, line, column, code) for path, line, column, code, _ in found] == [
        ("flagged/sft_echo.sh", 2, 77, "DSL400"),
        ("flagged/sft_heredoc.sh", 7, 4, "DSL400"),
        ("flagged/summarize_stage2.sh", 12, 4, "DSL400"),
    ]
    messages = {path: message for path, _, _, _, message in found}
    assert messages["flagged/summarize_stage2.sh"] == (
        "cannot parse this DeepSpeed config: Lightning's DeepSpeedStrategy reads $cfg with json.load: "
        "a trailing comma before '}'"
    )
    assert messages["flagged/sft_echo.sh"].startswith(
        "cannot parse this DeepSpeed config: the Hugging Face integration reads sft_ds.json with json.load: "
        "a trailing comma"
    )
    assert messages["flagged/sft_heredoc.sh"].endswith("reads $CONFIG with json.load: Expecting ',' delimiter")
    # the silent twins: a DDP strategy (the variable is never read), DeepSpeed's own hjson reader, an unknown
    # value on the failing line, a valid text; and none of the written files is "missing" (DSL423)
    assert not any(path.startswith("silent/") for path, *_ in found)


def test_the_finding_follows_the_selection_of_dsl400() -> None:
    assert _findings(RuleSelection(ignore=frozenset({"DSL400"}))) == []


def test_heredoc_text_is_what_bash_writes() -> None:
    text = 'N=8\nS=$1\ncat <<EOF > "${OUT}"\n{"a": $N,\n "b": ${S}}\nEOF\n'
    (config,) = written_configs(text)
    assert config.target == "$OUT"
    assert [written for _, _, written, _ in config.lines] == ['{"a": 8,', ' "b": 0}']
    assert [unknown for *_, unknown in config.lines] == [False, True]
    assert strict_error(config) is None
    # a quoted delimiter writes `$N` as it is: not JSON, reported where json.load stops
    (quoted,) = written_configs("cat > x.json <<'EOF'\n{\"a\": $N}\nEOF\n")
    assert strict_error(quoted) == (2, 7, "Expecting value")
    # no closing delimiter, or a text that is not an object or array: nothing is read
    assert written_configs('cat > x.json <<EOF\n{"a": 1,}\n') == []
    assert written_configs("cat > notes.txt <<EOF\nhello\nEOF\n") == []


def test_a_config_the_launcher_writes_is_not_missing() -> None:
    """None: the launcher may make the file; a tuple (the project's files of that name, none here): missing."""
    launcher = 'CFG=gen.json\ncat > "$CFG" <<EOF\n{}\nEOF\ndeepspeed t.py --deepspeed_config gen.json\n'
    assert missing_config("gen.json", {}, "run.sh", launcher, dict) is None
    assert missing_config("gen.json", {}, "run.sh", "deepspeed t.py --deepspeed_config gen.json\n", dict) == ()


def test_a_config_file_a_launch_hands_to_a_strict_reader_is_parsed_as_json_load_parses_it() -> None:
    """configs/ds_sft_commented.json goes to the HF Trainer (`--deepspeed`, flagged/sft_file.sh): its comment
    stops json.load. configs/ds_pretrain_commented.json goes to DeepSpeed itself (`--deepspeed_config` to a script
    calling initialize, silent/pretrain_file.sh): hjson reads its comment and trailing comma."""
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    configs = [f for f in files if f.suffix == ".json"]
    results = lint_files([(f, RuleSelection()) for f in configs], jobs=1, project=index)
    found = [
        (os.path.relpath(d.path, PROJECT), d.start.line, d.start.column, d.code, d)
        for r in results
        for d in r.diagnostics
    ]
    assert [entry[:4] for entry in found] == [("configs/ds_sft_commented.json", 3, 3, "DSL400")]
    finding = found[0][4]
    assert finding.message == (
        "cannot parse this DeepSpeed config: the Hugging Face integration reads it with json.load "
        "(fixtures/projects/written_configs/flagged/sft_file.sh:2): a comment"
    )
    assert [(Path(r.path).name, r.line) for r in finding.related] == [("sft_file.sh", 2)]


def test_a_config_a_script_names_for_the_hf_trainer_is_parsed_as_json_load_parses_it() -> None:
    """`TrainingArguments(deepspeed="ds_trainer.json")` hands the file to transformers' json.load: its comment is
    an error there, named at the keyword. ds_engine.json goes to `deepspeed.initialize` (hjson): silent."""
    project = PROJECT.parent / "literal_readers"
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    results = lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index)
    found = [d for r in results for d in r.diagnostics]
    assert [(os.path.relpath(d.path, project), d.start.line, d.code) for d in found] == [
        ("ds_trainer.json", 2, "DSL400")
    ]
    assert found[0].message.endswith(
        "reads it with json.load (fixtures/projects/literal_readers/finetune.py:6): a comment"
    )
    assert [(Path(r.path).name, r.line, r.column) for r in found[0].related] == [("finetune.py", 6, 48)]

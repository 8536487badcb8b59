"""Config fixes (DSL401, DSL402, DSL403, DSL405): the fixture pairs in fixtures/config_fix, the edits' limits, and
`dslint fix` on configs agreeing with `dslint check` (findings, counts, exit status)."""

from __future__ import annotations

import codecs
import json
import shutil
import stat
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES

from dslint.cli import main
from dslint.config.facts import Origin
from dslint.config.key_edits import remove_entry, rename_key, single_close_match
from dslint.config.tree import Object, parse_text
from dslint.fix.config import config_check, fix_config_source, lint_config_text
from dslint.fix.loop import fix_source
from dslint.lint.file import lint_text

PAIRS = sorted((FIXTURES / "config_fix").rglob("*.in.*"))


def _expected(path: Path) -> Path:
    return path.with_name(path.name.replace(".in.", ".out."))


def _origin(path: Path) -> Origin:
    """fixtures/config_fix/initialize/: configs a script hands to deepspeed.initialize; file/: read by nobody known."""
    return Origin.INITIALIZE if path.parent.name == "initialize" else Origin.FILE


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_config_fix_pair(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    origin = _origin(path)
    outcome = fix_config_source(str(path), text, unsafe=True, origin=origin, known_config=True)
    assert outcome.error is None
    assert outcome.applied, "a fix pair must exercise at least one fix"
    assert outcome.text == _expected(path).read_text(encoding="utf-8")
    assert isinstance(parse_text(outcome.text), Object)  # a config fix re-parses
    if path.suffix == ".json":
        json.loads(outcome.text)  # strict JSON stays strict JSON
    again = fix_config_source(str(path), outcome.text, unsafe=True, origin=origin, known_config=True)
    assert again.text == outcome.text and not again.applied, "fixing twice must change nothing"
    remaining = lint_config_text(str(path), outcome.text, origin=origin, known_config=True)
    fixed = {(d.code, d.message) for d in outcome.applied}
    assert not fixed & {(d.code, d.message) for d in remaining}


def test_unsafe_config_fixes_need_the_flag() -> None:
    text = '{\n  "train_batch_size": 8,\n  "zero_optimisation": {"stage": 3},\n  "amp": {"enabled": false}\n}\n'
    outcome = fix_config_source("ds_config.json", text, known_config=True)
    assert [d.code for d in outcome.applied] == ["DSL402"]  # the disabled block: safe
    assert outcome.text == '{\n  "train_batch_size": 8,\n  "zero_optimisation": {"stage": 3}\n}\n'
    unsafe = fix_config_source("ds_config.json", text, unsafe=True, known_config=True)
    assert '"zero_optimization": {"stage": 3}' in unsafe.text


def test_rename_is_refused_when_the_right_key_is_already_there() -> None:
    text = '{"train_batch_size": 8, "zero_optimization": {"stage": 1}, "zero_optimisation": {"stage": 3}}'
    found = lint_config_text("ds_config.json", text, origin=Origin.FILE, known_config=True)
    assert [(d.code, d.fix) for d in found] == [("DSL401", None)]
    alone = '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "prefetch_bucket_sz": 50000000}}'
    found = lint_config_text("ds_config.json", alone, origin=Origin.FILE, known_config=True)
    assert [(d.code, d.fix is not None) for d in found] == [("DSL403", True)]
    both = (
        '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 50000000,'
        ' "prefetch_bucket_sz": 2}}'
    )
    found = lint_config_text("ds_config.json", both, origin=Origin.FILE, known_config=True)
    assert [(d.code, d.fix) for d in found] == [("DSL403", None)]  # the field is there under its other name


def test_only_one_close_match_gets_a_rename() -> None:
    assert single_close_match("zero_optimisation", ["zero_optimization", "train_batch_size"]) == "zero_optimization"
    assert single_close_match("Train-Batch-Size", ["train_batch_size"]) == "train_batch_size"
    spellings = ["stage3_max_live_parameters", "max_live_parameters", "max_reuse_distance"]
    assert single_close_match("max_live_parameter", spellings) is None  # two spellings, and by default two keys
    one_setting = {"stage3_max_live_parameters": "max_live_parameters"}
    found = single_close_match("max_live_parameter", spellings, lambda s: one_setting.get(s, s))
    assert found == "max_live_parameters"  # ... of one setting: the closest spelling
    assert single_close_match("bucket_2", ["bucket_1", "bucket_3"]) is None  # two as close: no guess
    assert single_close_match("unrelated", ["fp16"]) is None


def test_a_misspelt_key_that_appears_twice_gets_no_fix() -> None:
    text = '{"train_batch_size": 8, "fp_16": {"enabled": false}, "fp_16": {"enabled": true}}'
    found = lint_config_text("ds_config.json", text, origin=Origin.FILE, known_config=True)
    assert [(d.code, d.fix) for d in found if d.code == "DSL401"] == [("DSL401", None)]  # DSL414: the duplicate


def test_auto_gets_a_fix_only_where_a_value_can_be_derived() -> None:
    def fixes(config: dict[str, object], origin: Origin = Origin.INITIALIZE) -> list[str]:
        text = json.dumps(config, indent=2)
        found = lint_config_text("ds_config.json", text, origin=origin, known_config=True)
        return [d.fix.message for d in found if d.code == "DSL405" and d.fix is not None]

    derived = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 2}
    assert len(fixes(derived)) == 1
    assert fixes(derived, Origin.FILE) == []  # the reader is unknown: no fix
    assert fixes({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}) == []
    assert fixes({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4}) == []
    assert fixes({"train_batch_size": 8, "zero_optimization": {"stage": "auto"}}) == []
    assert fixes({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": "auto"}}}) == []


def test_removal_keeps_comments_on_other_lines_and_strict_json() -> None:
    text = '{\n  "a": 1, // one\n  // about b\n  "b": 2,\n  "c": 3  # last\n}\n'
    tree = parse_text(text)
    assert isinstance(tree, Object)
    last = tree.entries[2]
    from dslint.fix.edits import apply_edits

    edits = remove_entry(text, tree, last)
    assert edits is not None
    assert apply_edits(text, edits) == '{\n  "a": 1, // one\n  // about b\n  "b": 2\n}\n'
    middle = remove_entry(text, tree, tree.entries[1])
    assert middle is not None
    assert apply_edits(text, middle) == '{\n  "a": 1, // one\n  // about b\n  "c": 3  # last\n}\n'
    inline = '{"a": 1, "b": 2, "c": 3}'
    tree = parse_text(inline)
    assert isinstance(tree, Object)
    for index, expected in enumerate(['{"b": 2, "c": 3}', '{"a": 1, "c": 3}', '{"a": 1, "b": 2}']):
        edits = remove_entry(inline, tree, tree.entries[index])
        assert edits is not None and apply_edits(inline, edits) == expected
    commented = '{"a": 1, /* keep */ "b": 2}'
    tree = parse_text(commented)
    assert isinstance(tree, Object)
    assert remove_entry(commented, tree, tree.entries[1]) is None  # would delete the comment: no fix


def test_hjson_without_quotes_has_no_exact_positions_and_gets_no_fix() -> None:
    text = "{\n  # hjson\n  train_batch_size: 8\n  zero_optimisation: {stage: 2}\n}\n"
    found = lint_config_text("ds_config.hjson", text, origin=Origin.FILE, known_config=True)
    assert [d.code for d in found] == ["DSL401"] and found[0].fix is None
    tree = parse_text(text)
    assert isinstance(tree, Object)
    assert rename_key(text, tree.entries[1], "zero_optimization") is None


def test_a_config_check_refuses_what_does_not_parse_and_lost_strictness() -> None:
    check = config_check('{"a": 1}')
    assert check('{"a": 1}') is None
    assert check('{"a": 1,}') == "the result is no longer strict JSON"
    assert check('{"a": 1') is not None
    assert config_check('{"a": 1,}')('{"a": 1,}') is None  # was not strict: the reader's grammar is enough


def test_a_dict_literal_is_fixed_in_the_script_and_a_config_file_only_on_its_own(tmp_path: Path) -> None:
    literal = (
        "import deepspeed\n"
        'engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8, "zero_optimisation": {}})\n'
    )
    outcome = fix_source(str(tmp_path / "train.py"), literal, unsafe=True)
    assert '"zero_optimization": {}' in outcome.text
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8, "zero_optimisation": {}}', encoding="utf-8")
    script = 'import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    found = lint_text(str(tmp_path / "train.py"), script)
    assert [(d.code, d.fix) for d in found] == [("DSL401", None)]  # in ds.json: not the script's to edit
    assert fix_source(str(tmp_path / "train.py"), script, unsafe=True).text == script


def test_the_fixer_does_not_print_the_users_syntax_warnings() -> None:
    script = (
        "import deepspeed\nimport torch\n"
        'pattern = "\\d+"\n'
        'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
        'state = torch.load("w.pt")\n'
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = fix_source("train.py", script)
    assert outcome.applied
    # Python 3.11 warns of "\d" with a DeprecationWarning, 3.12 with a SyntaxWarning: the compile check shows none
    assert not [w for w in caught if w.filename == "<fixed>"]


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_fix_on_a_folder_with_only_a_broken_config_agrees_with_check(tmp_path: Path) -> None:
    (tmp_path / "ds_config.json").write_text('{\n  "train_batch_size": 8,,\n}\n', encoding="utf-8")
    check_code, check_out, _ = _cli("check", str(tmp_path))
    fix_code, fix_out, fix_err = _cli("fix", str(tmp_path))
    assert check_code == fix_code == 1
    assert fix_out == check_out  # the same DSL400 line
    assert "No findings remain" not in fix_err and "1 finding remains" in fix_err


def test_fix_reports_config_findings_as_check_does(tmp_path: Path) -> None:
    for path in PAIRS:
        if path.parent.name == "initialize":
            shutil.copy(path, tmp_path / "ds_config.json")
        else:
            shutil.copy(path, tmp_path / path.name.replace(".in.", "_ds_config."))
    (tmp_path / "train.py").write_text(
        "import deepspeed\n"
        'engine, *_ = deepspeed.initialize(model=model, config="ds_config.json")\n'
        "engine.load_checkpoint(args.load_dir)\n",
        encoding="utf-8",
    )
    _, diff_out, _ = _cli("fix", "--unsafe-fixes", "--diff", str(tmp_path))
    assert '-  "train_batch_size": "auto",' in diff_out and '+  "zero_optimization": {' in diff_out
    code, out, err = _cli("fix", "--unsafe-fixes", str(tmp_path))
    check_code, check_out, check_err = _cli("check", str(tmp_path))
    remaining = [line for line in out.splitlines() if ": fixed " not in line]
    assert remaining == check_out.splitlines()
    assert code == check_code == 1  # what has no fix remains (amp enabled, lr "auto", ...)
    count = len(remaining)
    assert f"{count} findings remain." in err and f"Found {count} findings" in check_err
    assert "ds_config.json: fixed DSL405" in out  # read by initialize: the batch key is derived
    expected = _expected(FIXTURES / "config_fix" / "initialize" / "auto_batch.in.json")
    assert (tmp_path / "ds_config.json").read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")
    again_code, again_out, _ = _cli("fix", "--unsafe-fixes", str(tmp_path))
    assert again_code == 1 and ": fixed " not in again_out  # idempotent


def test_fix_of_a_script_fixes_the_config_it_names(tmp_path: Path) -> None:
    config = tmp_path / "ds.json"
    config.write_text('{\n  "train_batch_size": 8,\n  "fp_16": {"enabled": true}\n}\n', encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text('import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config="ds.json")\n')
    code, out, _ = _cli("fix", "--unsafe-fixes", str(script))
    assert code == 0, out
    assert config.read_text(encoding="utf-8") == '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true}\n}\n'


def test_config_write_keeps_bom_crlf_and_mode(tmp_path: Path) -> None:
    config = tmp_path / "ds_config.json"
    text = '{\r\n  "train_batch_size": 8,\r\n  "amp": {"enabled": false}\r\n}\r\n'
    config.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    config.chmod(0o640)
    code, out, err = _cli("fix", str(tmp_path))
    assert code == 0, out + err
    assert config.read_bytes() == codecs.BOM_UTF8 + b'{\r\n  "train_batch_size": 8\r\n}\r\n'
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds_config.json"]

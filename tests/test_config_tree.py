"""The positioned JSON/HJSON reader: positions of keys, what DeepSpeed's hjson also accepts, one clean error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.config.tree import UNKNOWN, Object, ParseError, Scalar, node_at, parse_text, to_python
from dslint.diagnostics import Location
from dslint.lint.config import lint_config_source


def test_key_positions_are_line_and_column_of_the_quote() -> None:
    root = parse_text('{\n  "a": 1,\n  "zero_optimization": {\n      "stage": 3\n  }\n}\n')
    assert isinstance(root, Object)
    zero = root.entry("zero_optimization")
    assert zero is not None and zero.key_start == Location(3, 3)
    assert isinstance(zero.value, Object)
    stage = zero.value.entry("stage")
    assert stage is not None and stage.key_start == Location(4, 7)
    assert isinstance(stage.value, Scalar) and stage.value.start == Location(4, 16)


def test_duplicates_are_kept_and_the_last_one_counts() -> None:
    root = parse_text('{"a": 1, "a": 2}')
    assert isinstance(root, Object)
    assert [e.key for e in root.entries] == ["a", "a"]
    assert to_python(root) == {"a": 2}


def test_hjson_leniencies_deepspeed_accepts() -> None:
    text = '// comment\n{\n  # another\n  "a": 1\n  "b": [1, 2,],\n  /* block */ "c": {"d": true,},\n}\n'
    assert to_python(parse_text(text)) == {"a": 1, "b": [1, 2], "c": {"d": True}}


def test_template_placeholders_are_unknown() -> None:
    root = parse_text('{"train_batch_size": CONFIG_BATCH_SIZE, "fp16": {"enabled": CONFIG_FP16_ENABLED}}')
    assert node_at(root, "train_batch_size") is not None
    assert to_python(root) == {"train_batch_size": UNKNOWN, "fp16": {"enabled": UNKNOWN}}


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{\n  "a": 1,,\n}', 2, 10),
        ('{\n  "a": [1, 2\n}', 3, 1),
        ('{"a": "unterminated\n}', 1, 20),
        ('{"a": 1} trailing', 1, 10),
    ],
)
def test_malformed_text_gives_one_error_with_position(text: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as error:
        parse_text(text)
    assert (error.value.line, error.value.column) == (line, column)


def test_a_malformed_file_gets_one_finding_never_a_traceback() -> None:
    found = lint_config_source("ds_config.json", b'{\n  "train_batch_size": 8,,\n}', known_config=True).diagnostics
    assert [(d.code, d.start.line) for d in found] == [("DSL400", 2)]
    assert lint_config_source("ds_config.json", b"\xff\xfe\x00", known_config=True).diagnostics[0].code == "DSL400"


def test_a_json_that_is_not_a_deepspeed_config_is_never_reported() -> None:
    assert lint_config_source("package.json", b'{"name": "x", "fp16": true}').diagnostics == []
    assert lint_config_source("results.json", b"{ not json").diagnostics == []
    assert lint_config_source("ds_config.json", b'{"train_batch_size": "x", "zero_optimisation": {}}').diagnostics


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(300))
@given(JSON_VALUES, st.sampled_from([None, 1, 2]))
def test_reads_what_json_dumps_writes(value: object, indent: int | None) -> None:
    assert to_python(parse_text(json.dumps(value, indent=indent))) == value


@settings(max_examples=examples(300))
@given(st.text(max_size=40))
def test_never_crashes_on_arbitrary_text(text: str) -> None:
    lint_config_source("ds_config.json", text.encode("utf-8", "surrogatepass"), known_config=True)

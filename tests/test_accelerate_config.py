"""accelerate config files (YAML with `distributed_type: DEEPSPEED`): the YAML reader against PyYAML, the files
dslint reads, and the findings of fixtures/projects/accelerate_deepspeed, each case both ways."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from fixture_support import FIXTURES

from dslint.config.accelerate import read_accelerate_config
from dslint.config.tree import UNKNOWN, ParseError, to_python
from dslint.config.yaml_subset import parse_yaml_subset
from dslint.lint.file import lint_file
from dslint.lint.file_kinds import not_analysed
from dslint.lint.files import discover

PROJECT = FIXTURES / "projects" / "accelerate_deepspeed"
CONFIGS = PROJECT / "configs"

SHAPES = [
    "a: 1\nb: 2.5\nc: true\nd: null\ne: ~\nf: 'quoted: yes'\ng: \"x\"\nh: off\ni: plain text here\n",
    "outer:\n  inner:\n    deep: 3\n  other: []\nempty: {}\nafter: 1\n",
    "list:\n- a\n- 'b'\n- 3\nnext: x  # a comment\n",
    "list:\n  - one\n  - two\nlast: -1\n",
    "---\n# comment\nkey: value # trailing\nurl: http://host:8080/path\n",
    "gpu_ids: all\nmain_process_ip: null\nmain_process_port: 29500\nrdzv_backend: static\nnumber: 1.0e+3\n",
]


def _same(mine: object, reference: object) -> bool:
    if mine is UNKNOWN:
        return True
    if isinstance(mine, dict) and isinstance(reference, dict):
        return mine.keys() == reference.keys() and all(_same(mine[k], reference[k]) for k in mine)
    if isinstance(mine, list) and isinstance(reference, list):
        return len(mine) == len(reference) and all(_same(a, b) for a, b in zip(mine, reference, strict=True))
    return mine == reference and type(mine) is type(reference)


@pytest.mark.parametrize("text", [*SHAPES, *(p.read_text(encoding="utf-8") for p in sorted(CONFIGS.glob("*.yaml")))])
def test_the_reader_reads_what_pyyaml_reads(text: str) -> None:
    assert _same(to_python(parse_yaml_subset(text)), yaml.safe_load(text))


def test_the_reader_keeps_positions_and_leaves_what_it_does_not_read_unknown() -> None:
    root = parse_yaml_subset("top: 1\nsection:\n  nested_key: 'v'\nblock: |\n  text\nflow: {a: 1}\n")
    section = root.get("section")
    entry = section.entry("nested_key")  # type: ignore[union-attr]
    assert (entry.key_start.line, entry.key_start.column, entry.key_end.column) == (3, 3, 13)
    assert to_python(root)["block"] is UNKNOWN and to_python(root)["flow"] is UNKNOWN


def test_a_line_outside_the_subset_is_a_parse_error_with_its_position() -> None:
    with pytest.raises(ParseError) as raised:
        parse_yaml_subset("distributed_type: DEEPSPEED\nnum_processes: 2\n- stray\n")
    assert (raised.value.line, raised.value.column) == (3, 1)


def test_only_deepspeed_runs_are_accelerate_deepspeed_configs() -> None:
    assert read_accelerate_config("distributed_type: MULTI_GPU\ndeepspeed_config:\n  zero_stage: 3\n") is None
    config = read_accelerate_config("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: '3'\n")
    assert config is not None and config.stage() == 3
    assert read_accelerate_config("distributed_type: DEEPSPEED\n").stage() == 2  # type: ignore[union-attr]


# Each flagged file, and its silent twin: (file, [(line, column, code, message start)]).
CASES = [
    (
        "stage3_misspelt.yaml",
        [(7, 3, "DSL417", "`zero_stge` is ignored by accelerate launch: did you mean `zero_stage`?")],
    ),
    ("stage3_spelt.yaml", []),
    ("offload_params_stage2.yaml", [(5, 3, "DSL418", "offload_param_device: cpu needs ZeRO stage 3; at ")]),
    ("offload_params_stage3.yaml", []),
    (
        "init_flag_stage1.yaml",
        [(4, 3, "DSL419", "zero3_init_flag has no effect at stage 1: accelerate sets it to False")],
    ),
    ("init_flag_stage1_off.yaml", []),
    ("init_flag_with_file.yaml", []),
    ("multi_gpu.yaml", []),
    ("silenced.yaml", []),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[name for name, _ in CASES])
def test_fixture_findings_both_ways(name: str, expected: list[tuple[int, int, str, str]]) -> None:
    path = CONFIGS / name
    result = lint_file(str(path), path.read_bytes())
    found = [(d.start.line, d.start.column, d.code, d.message) for d in result.diagnostics]
    assert [(line, column, code) for line, column, code, _ in found] == [(a, b, c) for a, b, c, _ in expected]
    for (*_, message), (*_, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message


def test_the_misspelt_stage_says_what_accelerate_runs_instead() -> None:
    path = CONFIGS / "stage3_misspelt.yaml"
    (finding,) = lint_file(str(path), path.read_bytes()).diagnostics
    assert finding.message.endswith("did you mean `zero_stage`? (ZeRO runs at stage 2)")


def test_a_stage_written_in_the_file_is_named_as_related() -> None:
    path = CONFIGS / "init_flag_stage1.yaml"
    (finding,) = lint_file(str(path), path.read_bytes()).diagnostics
    assert [(r.line, r.column, r.message) for r in finding.related] == [(3, 3, "zero_stage: 1")]


def test_yaml_outside_the_subset_is_skipped_not_crashed(tmp_path: Path) -> None:
    path = tmp_path / "accelerate.yaml"
    data = b"distributed_type: DEEPSPEED\ndeepspeed_config:\n\tzero_stge: 3\n"
    result = lint_file(str(path), data)
    assert result.skipped and result.diagnostics == []


def test_which_yaml_files_dslint_reads(tmp_path: Path) -> None:
    deepspeed = tmp_path / "ds.yaml"
    deepspeed.write_text("distributed_type: DEEPSPEED\n", encoding="utf-8")
    other = tmp_path / "ddp.yml"
    other.write_text("distributed_type: MULTI_GPU\n", encoding="utf-8")
    hydra = tmp_path / "train.yaml"
    hydra.write_text(textwrap.dedent("model: llama\nlr: 1e-4\n"), encoding="utf-8")
    assert not_analysed(deepspeed) is None
    assert not_analysed(other) is not None and not_analysed(hydra) is not None
    assert sorted(p.name for p in discover([str(tmp_path)]).files) == ["ds.yaml"]


def _project_findings() -> dict[str, list[tuple[int, str, str]]]:
    from dslint.lint.batch import index_project, lint_files
    from dslint.selection import RuleSelection

    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    found: dict[str, list[tuple[int, str, str]]] = {}
    for result in lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index):
        found[Path(result.path).name] = [(d.start.line, d.code, d.message) for d in result.diagnostics]  # type: ignore[union-attr]
    return found


def test_get_state_dict_without_the_16bit_save_flag_both_ways() -> None:
    """export.py runs with configs/stage3_no_save.yaml (ZeRO-3, no zero3_save_16bit_model): get_state_dict raises;
    train.py runs with configs/stage3_spelt.yaml (zero3_save_16bit_model: true): its save_model is fine."""
    found = _project_findings()
    ((line, code, message),) = found["export.py"]
    assert (line, code) == (13, "DSL210")
    assert message.startswith("under ZeRO-3, accelerator.get_state_dict raises without the 16-bit gather")
    assert message.endswith("stage3_no_save.yaml:7 zero_stage: 3)")
    assert found["train.py"] == []

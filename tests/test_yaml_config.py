"""DeepSpeed configs in YAML files (`dslint.config.yaml_config`, `lint_yaml_config_source`) and configs built by
a helper that reaches initialize through a parameter (`project.config_builders`, `builder_dicts.built_trees`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dslint.config.tree import UNKNOWN, Object, ParseError, Scalar
from dslint.config.yaml_config import is_yaml_config_candidate, read_yaml_config
from dslint.lint.config import lint_yaml_config_source
from dslint.lint.file import lint_file
from dslint.project.config_builders import config_builders
from dslint.project.config_readers import opened_configs
from dslint.project.project_index import ConfigReading

SECTION = textwrap.dedent(
    """\
    args:
      name: run-a
      train_data: [ "a", "b" ]
    deepspeed:
      train_micro_batch_size_per_gpu: 2
      zero_optimization:
        stage: 2
        reduce_bucket_size: 5e8
      fp16:
        enabled: true
      hysteresis: 2
    """
)


def _codes(result_diagnostics: list) -> list[tuple[str, int, int]]:
    return [(d.code, d.start.line, d.start.column) for d in result_diagnostics]


def test_the_deepspeed_section_of_a_project_yaml_is_the_config_with_its_positions() -> None:
    config = read_yaml_config(Path("configs/sft.yaml"), SECTION)
    assert config is not None and config.section == "deepspeed" and not config.json_text
    entry = config.tree.entry("hysteresis")
    assert entry is not None and (entry.key_start.line, entry.key_start.column) == (11, 3)
    bucket = config.tree.get("zero_optimization")
    assert isinstance(bucket, Object)
    value = bucket.get("reduce_bucket_size")
    assert isinstance(value, Scalar) and value.value is UNKNOWN  # a string to yaml.safe_load, a number to OmegaConf


def test_a_misplaced_top_level_key_of_the_section_is_flagged_at_its_line_without_a_fix() -> None:
    result = lint_yaml_config_source("configs/sft.yaml", SECTION.encode())
    assert _codes(result.diagnostics) == [("DSL401", 11, 3)]
    assert all(d.fix is None for d in result.diagnostics)  # the fixes write JSON: never into YAML


def test_lint_file_routes_a_yaml_config_and_its_noqa_comment_is_read() -> None:
    text = SECTION.replace("hysteresis: 2", "hysteresis: 2  # noqa: DSL401")
    result = lint_file("configs/sft.yaml", text.encode())
    assert result.diagnostics == [] and result.suppressed == 1


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # an application config: a `train_batch_size` key and its own `deepspeed:` switches
        ("app.yaml", "server:\n  port: 80\ntrain_batch_size: 32\ndeepspeed:\n  enabled: true\n  stage: 2\n"),
        # named like a DeepSpeed config, but mostly another tool's keys
        ("ds_app.yaml", "train_batch_size: 8\nmodel: a\ndata: b\nlr: 0.1\nepochs: 3\n"),
        # DeepSpeed-like keys in a file nothing names and not named like a config
        ("sweep.yml", "train_micro_batch_size_per_gpu: 2\nzero_optimization:\n  stage: 2\n  overlap_comms: true\n"),
    ],
)
def test_yaml_files_that_are_not_deepspeed_configs_get_nothing(name: str, text: str) -> None:
    assert read_yaml_config(Path(name), text) is None
    result = lint_yaml_config_source(name, text.encode())
    assert result.skipped and result.diagnostics == []


def test_a_yaml_file_code_hands_to_initialize_is_a_config_whatever_its_name() -> None:
    text = "train_micro_batch_size_per_gpu: 2\nzero_optimization:\n  stage: 2\n  overlap_comms: true\n"
    result = lint_yaml_config_source("sweep.yml", text.encode(), reading=ConfigReading("initialize"))
    assert _codes(result.diagnostics) == [("DSL403", 4, 3)]


def test_json_text_in_a_yaml_file_is_read_as_json_and_keeps_its_duplicates() -> None:
    text = '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {"stage": 3, "stage": 2}\n}\n'
    config = read_yaml_config(Path("zero3.yaml"), text)
    assert config is not None and config.json_text
    result = lint_yaml_config_source("zero3.yaml", text.encode())
    assert _codes(result.diagnostics) == [("DSL414", 3, 37)]


def test_yaml_beyond_the_subset_is_one_warning_at_its_line_and_column_in_a_config_named_file() -> None:
    text = "train_micro_batch_size_per_gpu: 4\nzero_optimization:\n  stage: 2\n? [complex, key]\n: 1\n"
    with pytest.raises(ParseError) as raised:
        read_yaml_config(Path("ds_config.yaml"), text)
    assert (raised.value.line, raised.value.column) == (4, 1)
    result = lint_yaml_config_source("ds_config.yaml", text.encode())
    assert [(d.code, d.start.line, d.start.column, d.severity.value) for d in result.diagnostics] == [
        ("DSL400", 4, 1, "warning")
    ]
    assert "not read" in result.diagnostics[0].message
    assert lint_yaml_config_source("notes.yaml", text.encode()).diagnostics == []  # not named, not known: silent


def test_the_walk_peeks_for_a_deepspeed_key_written_as_a_mapping_key() -> None:
    assert is_yaml_config_candidate(b"deepspeed:\n  zero_optimization:\n    stage: 2\n")
    assert is_yaml_config_candidate(b'{"train_batch_size": 8}')
    assert not is_yaml_config_candidate(b"# set train_batch_size: 8 on the command line\nmodel: a\n")


def test_yaml_and_omegaconf_loads_handed_to_initialize_name_their_file() -> None:
    script = textwrap.dedent(
        """\
        import deepspeed, yaml
        from omegaconf import OmegaConf

        def a(model):
            cfg = yaml.safe_load(open("ds_a.yaml"))
            cfg["train_batch_size"] = 8
            deepspeed.initialize(model=model, config=cfg)

        def b(model):
            cfg = OmegaConf.to_container(OmegaConf.load("ds_b.yaml"))
            deepspeed.initialize(model=model, config=cfg)

        def c(model):
            cfg = OmegaConf.load("ds_c.yaml")  # a DictConfig, not the dict initialize takes
            deepspeed.initialize(model=model, config=cfg)

        def d(model):
            sweep = yaml.safe_load(open("sweep.yaml"))
            log(sweep)
        """
    )
    assert opened_configs(script.encode()) == {"ds_a.yaml": frozenset({"train_batch_size"}), "ds_b.yaml": frozenset()}


def test_a_builder_reaching_initialize_through_a_parameter_of_a_same_module_function() -> None:
    train = textwrap.dedent(
        """\
        import deepspeed
        from cfg import make_config, make_other

        def start(model, ds_config):
            return deepspeed.initialize(model=model, config_params=ds_config)

        def main(model, args):
            ds_config = make_config(args)
            start(model, ds_config)
            other = make_other(args)
            start(model, ds_config=other)
        """
    )
    cfg = "def make_config(args):\n    return {}\n\ndef make_other(args):\n    return {}\n"
    found = config_builders({"/p/train.py": train.encode(), "/p/cfg.py": cfg.encode()})
    assert sorted((b.name, b.path, b.line) for b in found) == [
        ("make_config", "/p/cfg.py", 5),
        ("make_other", "/p/cfg.py", 5),
    ]


def test_builders_picked_from_a_module_level_table() -> None:
    """`ds_config = BUILDERS[args.stage](args)`: each plain function of the table may build the config; a table
    holding anything else (a lambda) is not followed."""
    train = textwrap.dedent(
        """\
        import deepspeed

        def zero2(args):
            return {"zero_optimization": {"stage": 2}}

        def zero3(args):
            return {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}

        BUILDERS = {"2": zero2, "3": zero3}
        MIXED = {"2": zero2, "3": lambda args: {}}

        def main(model, args):
            ds_config = BUILDERS[args.stage](args)
            deepspeed.initialize(model=model, config=ds_config)

        def other(model, args):
            mixed = MIXED[args.stage](args)
            deepspeed.initialize(model=model, config=mixed)
        """
    )
    found = config_builders({"/p/train.py": train.encode()})
    assert sorted((b.name, b.line) for b in found) == [("zero2", 14), ("zero3", 14)]


def test_a_parameter_of_a_method_is_not_followed() -> None:
    train = textwrap.dedent(
        """\
        import deepspeed
        from cfg import make_config

        class Runner:
            def start(self, ds_config):
                return deepspeed.initialize(model=self.model, config=ds_config)

        def start(model, ds_config):
            pass

        def main(args):
            ds_config = make_config(args)
            start(None, ds_config)
        """
    )
    cfg = "def make_config(args):\n    return {}\n"
    assert config_builders({"/p/train.py": train.encode(), "/p/cfg.py": cfg.encode()}) == []


def test_another_tools_argument_file_in_json_style_is_not_a_deepspeed_config() -> None:
    """GPT-NeoX's `.yml` files: JSON-style text with DeepSpeed's keys among many of the tool's own."""
    own = ",\n".join(f'  "option_{i}": {i}' for i in range(8))
    text = (
        "# a model setup\n{\n"
        + own
        + ',\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {"stage": 1}\n}\n'
    )
    assert read_yaml_config(Path("125M.yml"), text) is None
    assert lint_yaml_config_source("125M.yml", text.encode()).diagnostics == []

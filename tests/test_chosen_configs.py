"""Configs a launched script picks by a path in its own code (`project/chosen_configs.py`): the launch's world
size applies to them (DSL407), fixtures/projects/chosen_configs both ways."""

from __future__ import annotations

import os
from pathlib import Path

from fixture_support import FIXTURES

from dslint.diagnostics import Diagnostic
from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.launcher import launcher_results
from dslint.lint.result import one_per_place
from dslint.project.chosen_configs import chosen_configs
from dslint.selection import RuleSelection

PROJECT = FIXTURES / "projects" / "chosen_configs"


def _findings(project: Path) -> list[Diagnostic]:
    """Every finding of a `dslint check` of the folder, with its project index."""
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    results = lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index)
    results += launcher_results(index.launch_issues, lambda _: RuleSelection(), lambda p: Path(p).read_text("utf-8"))
    return [d for r in results for d in r.diagnostics]


def test_the_world_size_of_a_launch_reaches_the_config_its_script_picks() -> None:
    """Each config holds on some number of GPUs, so the launch whose world size it fails has the finding (at its
    line, naming the config's batch values), not the config, which the project's other launches may use right."""
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    results = lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index)
    results += launcher_results(index.launch_issues, lambda _: RuleSelection(), lambda p: Path(p).read_text("utf-8"))
    found = sorted(
        (os.path.relpath(d.path, PROJECT), d.start.line, d.code, d.message, d.related)
        for r in results
        for d in r.diagnostics
    )
    assert [(path, line, code) for path, line, code, _, _ in found] == [
        ("ds/setup_lean.json", 3, "DSL457"),  # setups.py's table entry the launch picks, whose optimizer it replaces
        ("scripts/finetune_two.sh", 3, "DSL407"),
        ("scripts/stage2_one_gpu.sh", 4, "DSL407"),
    ]
    messages = {path: (message, related) for path, _, _, message, related in found}
    message, related = messages["scripts/stage2_one_gpu.sh"]
    assert message == (
        "this launch starts 1 rank(s) (--include localhost:3; train.py opens ds/stage_2.json (--stage 2)) with "
        "stage_2.json (train 4, micro 2, accumulation 1): train != micro x accumulation x GPUs; DeepSpeed stops"
    )
    assert [(os.path.basename(r.path), r.line, r.column) for r in related] == [("stage_2.json", 2, 3)]
    assert "(--nproc_per_node 2; finetune.py opens ds/finetune.json)" in messages["scripts/finetune_two.sh"][0]
    # stage_1.json (the option's default, 4 = 2 x 1 x 2 on two GPUs) and the two configs evaluate.py chooses
    # between at run time (each 4 = 1 x 1 x 4 on some machine) are silent: the list above is all


def test_values_no_world_size_satisfies_stay_the_configs_finding(tmp_path: Path) -> None:
    """32 with micro batch 3 holds on no number of GPUs: the config's own mistake, reported in the file alone,
    whatever launches pass it."""
    (tmp_path / "ds.json").write_text('{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 3\n}\n')
    (tmp_path / "train.py").write_text(
        "import argparse, deepspeed\np = argparse.ArgumentParser()\ndeepspeed.add_config_arguments(p)\n"
        "args = p.parse_args()\nengine, *_ = deepspeed.initialize(args=args, model=model)\n"
    )
    (tmp_path / "run.sh").write_text("deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n")
    files = discover([str(tmp_path)]).files
    index = index_project(files, [str(tmp_path)])
    results = lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index)
    results += launcher_results(index.launch_issues, lambda _: RuleSelection(), lambda p: Path(p).read_text("utf-8"))
    # as `dslint check` reports them: the config's own finding and the script's reading of it, once
    own = [d for r in results for d in r.diagnostics if d.path == r.path]
    found = one_per_place(own, [d for r in results for d in r.diagnostics if d.path != r.path])
    assert [(os.path.basename(d.path), d.start.line, d.code) for d in found if d.code == "DSL407"] == [
        ("ds.json", 2, "DSL407")
    ]


def _picked(source: str, options: dict[str, str | None], files: dict[str, bytes]) -> list[str]:
    found = chosen_configs(source.encode(), "t.py", options, lambda p: p if p in files else None, files.get)
    return [f"{c.path} | {c.how}" for c in found]


def test_what_the_script_picks() -> None:
    config = b'{"train_batch_size": 8}'
    files = {"c/s_1.json": config, "c/s_2.json": config, "c/one.json": config, "notes.json": b"{}"}
    script = (
        "import deepspeed, argparse\np = argparse.ArgumentParser()\np.add_argument('--s', default=1)\n"
        "a = vars(p.parse_args())\npath = f'c/s_{a[\"s\"]}.json'\n"
    )
    assert _picked(script, {}, files) == ["c/s_1.json | t.py opens c/s_1.json (--s 1)"]
    assert _picked(script, {"s": "2"}, files) == ["c/s_2.json | t.py opens c/s_2.json (--s 2)"]
    assert _picked(script, {"s": "\x00unknown"}, files) == []  # set at run time
    assert _picked(script.replace(", default=1", ""), {}, files) == []  # no default, not given
    # one literal config path; two are ambiguous; a JSON that is no DeepSpeed config is not one
    assert _picked("import deepspeed\nx = 'c/one.json'\ny = 'notes.json'\n", {}, files) == [
        "c/one.json | t.py opens c/one.json"
    ]
    assert _picked("import deepspeed\nx = 'c/one.json'\ny = 'c/s_1.json'\n", {}, files) == []
    # a script that does not touch DeepSpeed picks nothing
    assert _picked("x = 'c/one.json'\n", {}, files) == []


def test_a_helper_call_handed_to_initialize_is_a_config_builder() -> None:
    """fixtures/projects/built_offload: `config=offload_config(4)` (the helper's call itself, no name between):
    its dict's keys are checked where the helper writes them, naming the initialize that receives it; the
    ZeRO-3 twin is silent."""
    project = FIXTURES / "projects" / "built_offload"
    found = [(os.path.relpath(d.path, project), d.start.line, d.code, d.message) for d in _findings(project)]
    assert found == [
        (
            "train_offload.py",
            12,
            "DSL409",
            "offload_param needs ZeRO stage 3; at stage 2 DeepSpeed ignores it (use offload_optimizer) "
            "(offload_config() returns the config initialize receives, "
            "fixtures/projects/built_offload/train_offload.py:20)",
        )
    ]


def test_a_builders_dict_the_caller_edits_is_still_its_config(tmp_path: Path) -> None:
    """`if ds_config is None: ds_config = get_ds_config()`, then nested item writes into it before initialize:
    the writes fill the dict (they bind nothing), so the builder's dict is still the config initialize gets."""
    (tmp_path / "settings.py").write_text(
        "def get_ds_config():\n"
        "    return {\n"
        '        "train_batch_size": 16,\n'
        '        "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}},\n'
        '        "wandb": {"enabled": True, "project": "p", "name": "run"},\n'
        "    }\n"
    )
    (tmp_path / "train.py").write_text(
        "import deepspeed\n"
        "from settings import get_ds_config\n"
        "def train(model, ds_config=None):\n"
        "    if ds_config is None:\n"
        "        ds_config = get_ds_config()\n"
        '    ds_config["scheduler"]["params"]["warmup_num_steps"] = 100\n'
        "    engine, *_ = deepspeed.initialize(model=model, config=ds_config)\n"
    )
    found = [(os.path.basename(d.path), d.start.line, d.code) for d in _findings(tmp_path)]
    assert found == [("settings.py", 5, "DSL403")]


def test_a_config_the_launcher_writes_itself_takes_no_world_size_from_it(tmp_path: Path) -> None:
    """`cat <<EOF > $DS_CONFIG` before the launch: the committed file's batch numbers are not what that launch runs,
    so its 4 processes say nothing of them; a launch passing the committed file as it is still does."""
    (tmp_path / "train.py").write_text(
        "import argparse, deepspeed\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--local_rank', type=int, default=-1)\n"
        "parser = deepspeed.add_config_arguments(parser)\n"
        "args = parser.parse_args()\n"
        "engine, *_ = deepspeed.initialize(args=args, model=model)\n"
    )
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 6, "train_micro_batch_size_per_gpu": 1}\n')
    writes = (
        "DS_CONFIG=ds_config.json\n"
        "cat <<EOT > $DS_CONFIG\n"
        '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4}\n'
        "EOT\n"
        "deepspeed --num_gpus 4 train.py --deepspeed --deepspeed_config $DS_CONFIG\n"
    )

    def batch_findings() -> list[str]:
        return [d.code for d in _findings(tmp_path) if d.code == "DSL407"]

    (tmp_path / "run.sh").write_text(writes)
    assert batch_findings() == []
    (tmp_path / "run.sh").write_text(writes.replace("cat <<EOT > $DS_CONFIG", "cat <<EOT > /tmp/other.json"))
    assert batch_findings() == ["DSL407"]


def test_a_builders_writes_on_exclusive_paths_are_each_their_own_config(tmp_path: Path) -> None:
    """`if precision == "fp16": cfg["fp16"] = ... elif precision == "bf16": cfg["bf16"] = ...`: one precision per
    run, so no config has both; written one after the other, both are on."""
    builder = (
        "def get_ds_config(precision):\n"
        '    cfg = {"train_batch_size": 8}\n'
        '    if precision == "fp16":\n'
        '        cfg["fp16"] = {"enabled": True}\n'
        '    elif precision == "bf16":\n'
        '        cfg["bf16"] = {"enabled": True}\n'
        "    return cfg\n"
    )
    (tmp_path / "train.py").write_text(
        "import deepspeed\nfrom ds_utils import get_ds_config\n"
        "engine, *_ = deepspeed.initialize(model=model, config=get_ds_config(args.precision))\n"
    )

    def codes() -> list[str]:
        return [d.code for d in _findings(tmp_path)]

    (tmp_path / "ds_utils.py").write_text(builder)
    assert codes() == []
    (tmp_path / "ds_utils.py").write_text(builder.replace('    elif precision == "bf16":\n', "    if True:\n"))
    assert codes() == ["DSL408"]


def test_a_section_key_picked_per_branch_gives_one_config_per_branch(tmp_path: Path) -> None:
    """`data_type: dtype_config`, each bound per precision branch (the DeepSpeed-Chat builder): each branch's
    section is checked as written, at its own lines; a key bound twice on one path, or a value written into
    later, leaves the section unknown (silent)."""
    builder = (
        "def get_train_ds_config(dtype):\n"
        '    if dtype == "fp16":\n'
        '        data_type = "fp16"\n'
        '        dtype_config = {"enabled": True, "loss_scale_windows": 100}\n'
        '    elif dtype == "bf16":\n'
        '        data_type = "bfloat16"\n'
        '        dtype_config = {"enabled": True}\n'
        '    return {"train_micro_batch_size_per_gpu": 2, data_type: dtype_config}\n'
    )
    (tmp_path / "train.py").write_text(
        "import deepspeed\nfrom ds_utils import get_train_ds_config\n"
        "engine, *_ = deepspeed.initialize(model=model, config=get_train_ds_config(args.dtype))\n"
    )

    def found() -> list[tuple[str, int, str]]:
        return sorted((os.path.basename(d.path), d.start.line, d.code) for d in _findings(tmp_path))

    (tmp_path / "ds_utils.py").write_text(builder)
    assert found() == [("ds_utils.py", 4, "DSL403")]
    bound_first = builder.replace('    if dtype == "fp16":\n', '    data_type = "fp16"\n    if dtype == "fp16":\n')
    (tmp_path / "ds_utils.py").write_text(bound_first)
    assert found() == []
    later_write = builder.replace("    return", '    dtype_config["x"] = 1\n    return')
    (tmp_path / "ds_utils.py").write_text(later_write)
    assert found() == []
    (tmp_path / "ds_utils.py").write_text(builder.replace('"loss_scale_windows"', '"loss_scale_window"'))
    assert found() == []
    misspelt_bf16 = builder.replace('{"enabled": True}\n', '{"enable": True}\n')  # the "bfloat16" section's
    (tmp_path / "ds_utils.py").write_text(misspelt_bf16.replace("loss_scale_windows", "loss_scale_window"))
    assert found() == [("ds_utils.py", 7, "DSL403")]


def test_a_picked_config_is_read_without_the_launchs_world_size(tmp_path: Path) -> None:
    """`deepspeed train.py --stage 1` (no GPU count: the world size is not known) with `f"ds/stage_{args.stage}.json"`
    in train.py: stage_1.json is read all the same, so a section nothing applies is reported (DSL455); stage_2.json,
    which no launch picks, and a config nothing names stay unread."""
    (tmp_path / "ds").mkdir()
    section = '"activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true}'
    for name in ("stage_1.json", "stage_2.json", "spare.json"):
        (tmp_path / "ds" / name).write_text(f'{{"train_batch_size": 8, {section}}}\n')
    (tmp_path / "train.py").write_text(
        "import argparse\nimport deepspeed\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--stage', type=int, default=1)\n"
        "args = parser.parse_args()\n"
        "engine, *_ = deepspeed.initialize(model=net, config=f'ds/stage_{args.stage}.json')\n"
    )
    (tmp_path / "run.sh").write_text("deepspeed --master_port 29500 train.py --stage 1\n")
    found = {(os.path.basename(d.path), d.code) for d in _findings(tmp_path) if d.code == "DSL455"}
    assert found == {("stage_1.json", "DSL455")}

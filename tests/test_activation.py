"""Every skip of `dslint.lint.activation` is safe: a rule that reports on a script when nothing is filtered is
kept at each level (the text, CPython's tree, the facts), config findings only come where `configs` says a config
can be, and a file `certainly_untouched` settles has no finding at all. Checked, rule by rule, on every rule's
cases, every fixture and generated scripts (derandomized)."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from fixture_support import FIXTURES
from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.framework.catalog import SCRIPT_NEEDS
from dslint.framework.registry import all_rules
from dslint.framework.rule import Invalid, Rule, ScriptRule, Valid
from dslint.lint.activation import can_fire, certainly_untouched, in_code, in_facts, in_text
from dslint.lint.batch import index_project
from dslint.lint.parse_guard import code_facts
from dslint.lint.script import lint_source
from dslint.project.index import single_file_facts
from dslint.project.project_index import ProjectIndex
from dslint.script.collect import collect_facts

SCRIPT_RULES = {rule.code: rule for rule in all_rules() if issubclass(rule, ScriptRule)}
DRIVER_CODES = ("DSL001", "DSL002", "DSL010")  # reported by the driver, not by a traversal


def _cases(rule: type[Rule]) -> list[Valid | Invalid]:
    return [*rule.valid, *rule.invalid]


CASES = [
    pytest.param(case.path, textwrap.dedent(case.code).encode(), id=f"{rule.code}-{i}")
    for rule in all_rules()
    for i, case in enumerate(_cases(rule))
    if case.path and case.path.endswith(".py")
]
FIXTURE_SCRIPTS = [
    pytest.param(str(path), path.read_bytes(), id=str(path.relative_to(FIXTURES))) for path in FIXTURES.rglob("*.py")
]


def _check_every_level(path: str, data: bytes) -> None:
    project = single_file_facts(path, data)
    found = lint_source(path, data, use_prefilter=False, project=project).diagnostics
    if certainly_untouched(data, project):
        assert found == [], f"settled as untouched, yet: {[d.concise() for d in found]}"
    if certainly_untouched(data, None):  # without what the file alone tells the index (a load of a GPU file)
        alone = lint_source(path, data, use_prefilter=False).diagnostics
        assert alone == [], f"settled as untouched, yet: {[d.concise() for d in alone]}"
    codes = {d.code for d in found if d.path == path and d.code in SCRIPT_RULES}
    configs = [d for d in found if d.path != path or not (d.code in SCRIPT_RULES or d.code in DRIVER_CODES)]
    levels = [("text", in_text(data, project))]
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None:
        levels.append(("code", in_code(code_facts(tree), project)))
        with contextlib.suppress(cst.ParserSyntaxError, RecursionError):
            levels.append(("facts", in_facts(collect_facts(cst.parse_module(data), project))))
    for level, evidence in levels:
        for code in codes:
            assert can_fire(SCRIPT_NEEDS[code], evidence), f"{code} reports but the {level} level drops it"
        if configs:
            assert evidence.configs, f"config findings, but the {level} level drops the config rules"
    # and the driver, prefilter and all, reports the same
    assert lint_source(path, data, project=project).diagnostics == found


@pytest.mark.parametrize(("path", "data"), CASES)
def test_rule_cases(path: str, data: bytes) -> None:
    _check_every_level(path, data)


@pytest.mark.parametrize(("path", "data"), FIXTURE_SCRIPTS)
def test_fixtures(path: str, data: bytes) -> None:
    _check_every_level(path, data)


STATEMENTS = [
    "import deepspeed",
    "import deepspeed as ds",
    "from deepspeed import initialize as make",
    "import torch",
    "model = Net().cuda()",
    "model = model.to(device).half()",
    "engine, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)",
    "engine, *_ = ds.initialize(model=model)",
    "engine = make(model=model)[0]",
    "engine.to(device)",
    "loss.backward()",
    "optimizer.step()",
    "state = torch.load(path, map_location='cuda')",
    "model.load_state_dict(state)",
    "pipe = deepspeed.init_inference(pipe, mp_size=world_size)",
    "pipe = pipe.to('cuda')",
    "from transformers import AutoModelForCausalLM, TrainingArguments",
    "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto')",
    "from transformers.integrations import HfDeepSpeedConfig",
    "dschf = HfDeepSpeedConfig(ds_config)",
    "args = TrainingArguments(output_dir='out', deepspeed={'zero_optimization': {'stage': 3}})",
    "ds_config = {'zero_optimization': {'stage': 3}, 'zero_optimisation': {}}",
    "# deepspeed.initialize(model=model) in a comment",
    '"""deepspeed.initialize and from_pretrained(device_map=...) in a docstring"""',
    "x = 1  # noqa: DSL101",
    "def broken(:\n    pass",
    # the calls some rules report at (`Needs.shapes`), inside and outside a one-rank block
    "if args.local_rank == 0:\n    engine.save_checkpoint('out')",
    "engine.save_checkpoint('out')",
    "if accelerator.is_main_process:\n    accelerator.save_state('out')",
    "if rank == 0:\n    engine.save_16bit_model('out')",
    "torch.save(engine.module.state_dict(), 'model.pt')",
    "with args.main_process_first():\n    out = model.generate(x)",
    "if dist.get_rank() == 0:\n    out = model.generate(x)",
    "from transformers import Trainer",
    "trainer = Trainer(model=model, args=args)",
    "trainer.save_model('out')",
]


@settings(max_examples=examples(200))
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=10))
@example(["import deepspeed", "x = 1  # noqa: DSL101"])
@example(["import deepspeed", "args = TrainingArguments(output_dir='out', deepspeed={'zero_optimization': {}})"])
def test_generated_scripts(lines: list[str]) -> None:
    _check_every_level("train.py", ("\n".join(lines) + "\n").encode())


# Issue #27: DSL208 reports an unkept HfDeepSpeedConfig(...) in a file without `from_pretrained` (and without the
# lowercase word `deepspeed`); DSL207 reads a live one there. Each level keeps the rule (`Needs.alternatives`).
@pytest.mark.parametrize(
    "lines",
    [
        ["import deepspeed", "from transformers.integrations import HfDeepSpeedConfig", "HfDeepSpeedConfig(ds_config)"],
        ["from transformers.integrations import HfDeepSpeedConfig", "HfDeepSpeedConfig(ds_config)"],
        [
            "from transformers import AutoModelForCausalLM",
            "from transformers.integrations import HfDeepSpeedConfig",
            "dschf = HfDeepSpeedConfig({'zero_optimization': {'stage': 3}})",
            "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto')",
        ],
    ],
)
def test_issue_27_examples(lines: list[str]) -> None:
    data = ("\n".join(lines) + "\n").encode()
    _check_every_level("train.py", data)
    assert lint_source("train.py", data).diagnostics, "the finding is kept"


# The rules' call shapes (`Needs.shapes`) settle files whose words let a rule through but whose code has no call it
# could report at: a mention in a string, a save outside any one-rank block, an engine method in a file without one.
def test_call_shapes_settle_files_without_the_call() -> None:
    data = textwrap.dedent(
        """
        import torch
        from deepspeed import comm
        from transformers import Trainer  # no config reaches it: no `deepspeed=`, no launch

        def initialize(engine, rank, trainer: Trainer, accelerator):
            if rank == 0:
                trainer.save_model("out")
                accelerator.save_state("out")
            torch.save(trainer.model.state_dict(), "model.pt")
            state = engine.state_dict()  # no torch.save, and no engine here
            if rank == 0:
                print("save_checkpoint, save_16bit_model and generate")
            engine.save_checkpoint("out")  # on every rank
            engine.save_16bit_model("out")
            out = engine.generate(x)
            torch.save(state, "model.pt")
        """
    ).encode()
    project = single_file_facts("train.py", data)
    evidence = in_code(code_facts(ast.parse(data)), project)
    for code in ("DSL204", "DSL210", "DSL426", "DSL428"):
        assert can_fire(SCRIPT_NEEDS[code], in_text(data, project)), f"{code}: its words are in the text"
        assert not can_fire(SCRIPT_NEEDS[code], evidence), f"{code}: no call of its shape, yet kept"
    assert lint_source("train.py", data, project=project).parsed is False
    _check_every_level("train.py", data)


def test_a_rank_variable_read_but_never_assigned_settles_the_file() -> None:
    """DSL433 reports only at an assignment to `environ["RANK"]` (or `LOCAL_RANK`, `WORLD_SIZE`): a script that
    reads them, under a launch of several processes, is not parsed for it; one that assigns one is."""
    reads = b'import os\nrank = int(os.environ["RANK"])\nworld = os.environ.get("WORLD_SIZE", "1")\n'
    writes = reads + b'os.environ["LOCAL_RANK"] = "0"\n'
    project = single_file_facts("train.py", reads)
    several = dataclasses.replace(in_text(reads, project), several_processes=True)
    assert can_fire(SCRIPT_NEEDS["DSL433"], several)
    for data, fires in ((reads, False), (writes, True)):
        evidence = dataclasses.replace(in_code(code_facts(ast.parse(data)), project), several_processes=True)
        assert can_fire(SCRIPT_NEEDS["DSL433"], evidence) is fires


def test_arguments_read_from_a_command_line_file_reach_no_known_config(tmp_path: Path) -> None:
    """An example script parsing its arguments from the JSON file its command line names (`sys.argv[1]`) hands its
    Trainer no config dslint can read: the Trainer rules (DSL435, DSL454) do not parse it for that; a script
    naming its arguments file, or one a launch gives `--deepspeed`, is parsed."""
    script = """
        import os, sys
        from transformers import HfArgumentParser, TrainingArguments
        parser = HfArgumentParser((TrainingArguments,))
        if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
            (training_args,) = parser.parse_json_file(json_file={path})
        else:
            (training_args,) = parser.parse_args_into_dataclasses()
        """
    cases = (("os.path.abspath(sys.argv[1])", False), ('os.path.abspath("train_args.json")', True), ("ARGS", True))
    for path, fires in cases:
        data = textwrap.dedent(script.format(path=path)).encode()
        evidence = in_code(code_facts(ast.parse(data)), single_file_facts("train.py", data))
        for code in ("DSL435", "DSL454"):
            assert can_fire(SCRIPT_NEEDS[code], evidence) is fires, (code, path)
    script_path = tmp_path / "train.py"
    script_path.write_text(textwrap.dedent(script.format(path="os.path.abspath(sys.argv[1])")))
    (tmp_path / "run.sh").write_text("deepspeed train.py --deepspeed ds.json\n")
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2}\n')
    facts = index_project([script_path], [str(tmp_path)]).facts_for(script_path)
    evidence = in_code(code_facts(ast.parse(script_path.read_bytes())), facts)
    assert can_fire(SCRIPT_NEEDS["DSL435"], evidence), "a launch gives its Trainer a config"


PROJECTS = sorted(project for project in (FIXTURES / "projects").iterdir() if project.is_dir())
PROJECT_SCRIPTS = [(project, path) for project in PROJECTS for path in sorted(project.rglob("*.py"))]


@pytest.fixture(scope="module")
def project_indexes() -> dict[Path, ProjectIndex]:
    return {}


@pytest.mark.parametrize(("project", "path"), PROJECT_SCRIPTS, ids=lambda p: p.name)
def test_project_fixtures(project: Path, path: Path, project_indexes: dict[Path, ProjectIndex]) -> None:
    """With what the project index knows (an engine from another module, a helper reaching `save_state`): every
    rule that reports is kept at the code level, and the driver's skips change nothing."""
    if project not in project_indexes:
        project_indexes[project] = index_project(sorted(project.rglob("*.py")), [str(project)])
    facts = project_indexes[project].facts_for(path)
    data = path.read_bytes()
    found = lint_source(str(path), data, use_prefilter=False, project=facts).diagnostics
    assert lint_source(str(path), data, project=facts).diagnostics == found
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return
    evidence = in_code(code_facts(tree, facts.star_imports if facts is not None else None), facts)
    for code in {d.code for d in found if d.path == str(path) and d.code in SCRIPT_RULES}:
        assert can_fire(SCRIPT_NEEDS[code], evidence), f"{code} reports but the code level drops it"

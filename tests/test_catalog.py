"""The rule catalog (dslint/framework/catalog.py) says what the registry says: every code, and each script
rule's needs (the start-up path selects rules and prefilters files from it without importing them)."""

from __future__ import annotations

import textwrap

import pytest

from dslint.diagnostics import Related
from dslint.framework.catalog import (
    CODES,
    CONFIG_CODES,
    CONFIG_RULE_MODULES,
    LAUNCH_RULE_MODULES,
    SCRIPT_NEEDS,
    SYNTAX_ERROR_CODE,
    TOO_DEEP_CODE,
)
from dslint.framework.config_rule import ConfigRule
from dslint.framework.driver_rules import ScriptSyntaxError, ScriptTooDeep
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.registry import all_rules, implementation
from dslint.framework.rule import Invalid, ScriptRule
from dslint.lint.activation import certainly_untouched
from dslint.lint.prefilter import INFERENCE_TOKENS, has_tokens
from dslint.script.project_facts import LaunchedConfig, ParameterFact, ProjectFacts


def test_the_catalog_lists_every_rule_code() -> None:
    codes = tuple(rule.code for rule in all_rules())
    assert codes == CODES, f"update dslint/framework/catalog.py: CODES = {codes!r}"


def test_the_catalog_has_each_script_rules_needs() -> None:
    needs = {r.code: r.needs() for r in all_rules() if issubclass(r, ScriptRule)}
    assert needs == SCRIPT_NEEDS, f"update dslint/framework/catalog.py: SCRIPT_NEEDS = {needs!r}"


def test_the_catalog_names_each_config_rules_module_in_the_registrys_order() -> None:
    """The script driver selects config rules by these codes before it imports any rule, and a config file's lint
    imports only these modules."""
    modules = {r.code: r.__module__.rpartition(".")[2] for r in all_rules() if issubclass(r, ConfigRule)}
    assert modules == CONFIG_RULE_MODULES, f"update dslint/framework/catalog.py: CONFIG_RULE_MODULES = {modules!r}"
    assert tuple(r.code for r in all_rules() if issubclass(r, ConfigRule)) == CONFIG_CODES


def test_the_catalog_names_the_script_drivers_findings() -> None:
    assert implementation(ScriptSyntaxError).code == SYNTAX_ERROR_CODE
    assert implementation(ScriptTooDeep).code == TOO_DEEP_CODE


def test_the_catalog_names_each_launch_rules_module() -> None:
    """A run's launch findings import only the modules the catalog names for the launch rules."""
    modules = {r.code: r.__module__.rpartition(".")[2] for r in all_rules() if issubclass(r, LaunchRule)}
    assert modules == LAUNCH_RULE_MODULES, f"update dslint/framework/catalog.py: LAUNCH_RULE_MODULES = {modules!r}"


def test_every_script_rule_needs_some_token() -> None:
    """A script rule without required tokens would make every file worth parsing; the fast skip in
    dslint.lint.activation (`certainly_untouched`) assumes each script traversal rule names its tokens."""
    rules = [rule for rule in all_rules() if issubclass(rule, ScriptRule)]
    assert rules
    for rule in rules:
        assert rule.required_tokens, f"{rule.code} names no required_tokens"


SCRIPT_INVALID = [
    pytest.param(rule, case, id=f"{rule.code}-invalid-{i}")
    for rule in all_rules()
    if issubclass(rule, ScriptRule)
    for i, case in enumerate(rule.invalid)
]


@pytest.mark.parametrize(("rule", "case"), SCRIPT_INVALID)
def test_tokens_are_in_every_file_the_rule_fires_on(rule: type[ScriptRule], case: Invalid) -> None:
    """The tokens are a necessary condition: each of the rule's own invalid cases holds them, and the file-level
    skip never settles one of them as untouched (a rule whose tokens were wrong would lose these findings). The
    inference-engine rules hold either their tokens or init_inference's."""
    data = textwrap.dedent(case.code).encode()
    # one of its sets of tokens (`Needs.alternatives`) is all there
    missing = min(([t for t in tokens if t not in data] for tokens in rule.needs().token_sets()), key=len)
    # a rule that also reads the inference engine runs wherever init_inference may be called, tokens or not
    inference = rule.inference_engine and has_tokens(data, INFERENCE_TOKENS)
    # or one of its alternative token sets (a Hugging Face Trainer script never writes `initialize`)
    alternative = any(all(token in data for token in tokens) for tokens in rule.alternative_tokens)
    # or, for a rule that runs on a loop some call hands the engine's optimizer (`runs_on_partly_engine`), a case
    # whose other files hold that call: the project's facts say so, and the skip must not settle the file
    partly = rule.runs_on_partly_engine and bool(case.files) and b"initialize" not in data
    # or, for a rule that runs on a call returning a plain DataLoader from another module (`runs_on_returned_loaders`),
    # a case whose other files hold that function
    remote = rule.runs_on_returned_loaders and bool(case.files) and b"DataLoader" not in data
    # or, for a rule that runs on a call of a project function loading a pretrained model (`runs_on_pretrained_loads`),
    # a case whose other files hold that function
    loaded = rule.runs_on_pretrained_loads and bool(case.files) and b"from_pretrained" not in data
    assert not missing or inference or alternative or partly or remote or loaded, (
        f"{rule.code} fires on a file without {missing!r}"
    )
    # a rule that needs a launch of several processes a node gets it from the project (its case's launcher)
    several = LaunchedConfig(Related("run.sh", 1, 1, "launch"), None, None, ranks_per_node=2, ranks=2)
    project = ProjectFacts(parameters={}, returns={}, launches=(several,)) if rule.needs().several_processes else None
    if partly:
        passed = ParameterFact("optimizer", Related("ds_train.py", 4, 1, "call"))
        project = ProjectFacts(parameters={}, returns={}, partly_engine={"train": {"optimizer": passed}})
    if remote:
        returned = ((0, Related("data.py", 4, 13, "get_loaders() returns a DataLoader without a sampler")),)
        project = ProjectFacts(parameters={}, returns={}, launches=(several,), returned_loaders={(6, 32): returned})
    if loaded:
        load = Related("zoo.py", 4, 13, "load_pair() loads the model with from_pretrained")
        project = ProjectFacts(parameters={}, returns={}, pretrained_loads={(5, 22): load})
    assert not certainly_untouched(data, project)

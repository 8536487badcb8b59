"""Which rules can fire on a script: one evaluator of what each rule needs (`Needs`, declared by the rule as data:
tokens, an engine, the inference engine, a ZeRO source, a launch of several processes a node), answered at each
level as the driver learns more.

- `in_text`: the file's bytes and what the project index knows (`ProjectFacts`). Nothing is parsed; an engine is
  possible where the text can call `deepspeed.initialize` (`prefilter.may_create_engine`) or the index brings one.
  A rule that declares the calls it reports at (`Needs.shapes`) needs one whose engine, words and called names
  (a method's name, a dotted call's last part) the text can hold: a library's source names `initialize` and
  `rank` everywhere, but seldom with an engine and a `save_checkpoint` under a rank test.
  `certainly_untouched` asks it for every rule of the catalog, without importing a rule (or libcst).
- `in_code`: CPython's tree (`parse_guard.CodeFacts`): the tokens must be among the code's words, not only in
  comments or docstrings; an engine needs a call that can be `deepspeed.initialize`; a rule that declares the
  calls it reports at (`Needs.shapes`: `X.save_checkpoint(...)` in a one-rank block) needs one of them.
- `in_facts`: the script facts libcst computed: whether the file has an engine, an inference engine.

Each level only narrows the one before (it knows more, and never less), and a rule is kept where `can_fire` says
so: its tokens are present (an engine the index brings stands in for the engine tokens `deepspeed` and
`initialize`), a ZeRO source is there if it needs one, and an engine is there if it needs one; a rule that also
reads the inference engine is kept wherever `init_inference` may be called. Config rules run together: where an
engine, a `*TrainingArguments`, a config a launcher passes or a dict a reader receives may be (`configs`).
tests/test_activation.py checks every skip against the unfiltered driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from dslint.framework.catalog import SCRIPT_NEEDS, Needs, Shape
from dslint.lint.prefilter import (
    ENGINE_TOKENS,
    TRAINER_CONFIG_TOKENS,
    has_token_set,
    has_tokens,
    may_create_engine,
    may_create_inference_engine,
)
from dslint.model.library import TRL_TRAINING_ARGUMENTS
from dslint.script.project_facts import TRAINER_YAML, ProjectFacts

if TYPE_CHECKING:
    from dslint.lint.parse_guard import CodeFacts
    from dslint.script.facts import ScriptFacts


@dataclass(frozen=True)
class Evidence:
    """What one level knows about a script."""

    words: bytes | None  # where the tokens are looked for; None: settled by an earlier level
    engine: bool  # a training engine may be here (this file's initialize, or one the project index brings)
    received: bool  # the project index brings an engine: it stands in for the engine tokens
    inference: bool  # a `deepspeed.init_inference` call may be here
    zero_source: bool  # the file may hand DeepSpeed a ZeRO config itself
    configs: bool  # a config may reach DeepSpeed through this file (the config rules run)
    # a launch of the project starts the script as several processes a node, or one a GPU (`one_per_gpu`)
    several_processes: bool = True
    gpu_loads: bool = False  # the project index finds a load of a file holding GPU tensors here
    calls: CodeFacts | None = None  # the code's calls, for the rules' shapes (`Needs.shapes`); None: not read yet
    project_saves: bool = False  # calls of this file the project index says reach a save (save_state, torch.save...)
    project_moves: bool = False  # the project index marks calls of this file whose argument the callee moves
    project_casts: bool = False  # the project index marks calls of this file whose argument the callee casts
    hf_configured: bool = True  # a DeepSpeed config may reach a Hugging Face reader of the file (`Shape.configured`)
    partly_engine: bool = False  # some call passes the engine to a parameter of the file's functions, others not
    returned_loaders: bool = False  # the project index finds a call here returning a plain DataLoader
    pretrained_loads: bool = False  # the project index finds a call here of a project function loading a model
    # the project index finds a call here handing an object to a project function that torch-saves its state_dict
    state_saving_helpers: bool = False


def can_fire(needs: Needs, evidence: Evidence) -> bool:
    if needs.gpu_loads and evidence.gpu_loads:
        return True
    if needs.partly_engine and evidence.partly_engine:
        return True
    if needs.returned_loaders and evidence.returned_loaders:
        return True
    if needs.without_engine and (evidence.words is None or has_token_set(evidence.words, needs.without_engine)):
        # at the facts level (no words) only rules an earlier level kept are asked; the rule's calls still count
        return not needs.shapes or any(_has_shape(s, evidence) for s in needs.shapes)
    inference = needs.inference_engine and evidence.inference
    tokens = (
        evidence.words is None
        or (needs.pretrained_loads and evidence.pretrained_loads)
        or (needs.state_saving_helpers and evidence.state_saving_helpers)
        or has_token_set(evidence.words, needs.token_sets())
        or (
            # an engine the project index brings stands in for the engine tokens; the rule's other tokens stay
            evidence.received
            and needs.tokens[: len(ENGINE_TOKENS)] == ENGINE_TOKENS
            and has_tokens(evidence.words, needs.tokens[len(ENGINE_TOKENS) :])
        )
    )
    return (
        (tokens or inference)
        and (evidence.zero_source or not needs.zero_source)
        and (evidence.engine or not needs.engine or inference)
        and (evidence.several_processes or not needs.several_processes)
        and (evidence.hf_configured or not needs.hf_configured)
        and (not needs.shapes or any(_has_shape(s, evidence) for s in needs.shapes))
    )


def _has_shape(shape: Shape, evidence: Evidence) -> bool:
    """Whether the code holds a call of `shape` (`Needs.shapes`), as far as CPython's tree shows."""
    calls = evidence.calls
    if calls is None and evidence.words is None:  # the facts level asks only rules the code level kept
        return True
    if (shape.engine and not evidence.engine) or (shape.configured and not evidence.hf_configured):
        return False
    if evidence.words is not None and not has_tokens(evidence.words, shape.words):
        return False
    if shape.project_saves:
        return evidence.project_saves
    if shape.project_moves:
        return evidence.project_moves
    if shape.project_casts:
        return evidence.project_casts
    if calls is None:  # the text level: the shape's engine, its words and the names it calls must be there
        return _names_in(shape, evidence.words)
    methods = calls.one_rank_methods if shape.one_rank else calls.methods
    return (
        any(method in methods for method in shape.methods)
        or any(call in calls.calls for call in shape.calls)
        or any(name in calls.stored for name in shape.stored)
        or any(key in calls.stored_keys for key in shape.stored_keys)
    )


def _names_in(shape: Shape, text: bytes | None) -> bool:
    """Whether `text` holds a name the shape's calls need: a method's name, the last part of a call's dotted name
    (an import may alias the call, never without naming it), an attribute or a key it stores to."""
    if text is None:
        return True
    names = (*shape.methods, *(call.rsplit(".", 1)[-1] for call in shape.calls), *shape.stored, *shape.stored_keys)
    return any(name.encode() in text for name in names)


class _Rule(Protocol):
    @classmethod
    def needs(cls) -> Needs: ...


R = TypeVar("R", bound=_Rule)
C = TypeVar("C")


def active(
    evidence: Evidence, rules: Iterable[type[R]], configs: Sequence[type[C]]
) -> tuple[list[type[R]], list[type[C]]]:
    """The script rules that can fire given `evidence`, and the config rules unless no config can be here."""
    return [rule for rule in rules if can_fire(rule.needs(), evidence)], list(configs) if evidence.configs else []


def active_codes(evidence: Evidence, codes: Iterable[str], config_codes: Sequence[str]) -> tuple[list[str], list[str]]:
    """`active` over the catalog's codes (`SCRIPT_NEEDS`): the same answer, without importing a rule (or libcst)."""
    return [code for code in codes if can_fire(SCRIPT_NEEDS[code], evidence)], list(
        config_codes
    ) if evidence.configs else []


def _project(project: ProjectFacts | None) -> tuple[bool, bool]:
    """(the index brings an engine, a config reaches DeepSpeed from elsewhere: a launcher, a reader of a dict
    this file returns, a launch of the file this one json.dumps a dict into)"""
    if project is None:
        return False, False
    launched = any(launch.config_path for launch in project.launches)
    return project.receives_engine, launched or bool(project.config_builders) or bool(project.dumped_configs)


def _names_zero_source(words: bytes) -> bool:
    """`HfDeepSpeedConfig`, a `*TrainingArguments` with its `deepspeed=` keyword or a dict splatted into it, or
    accelerate's `DeepSpeedPlugin`
    may be among `words` (an `Accelerator` runs DeepSpeed only under an `accelerate launch` or the setup shipped
    near a script no launcher starts: `_zero_from_project`)."""
    return (
        has_tokens(words, (b"HfDeepSpeedConfig",))
        or has_tokens(words, (b"DeepSpeedPlugin",))
        or has_tokens(words, (b"TrainingArguments", b"deepspeed"))
        or any(has_tokens(words, (name.encode(), b"deepspeed")) for name in sorted(TRL_TRAINING_ARGUMENTS))
        # a dict splatted into them (`SFTConfig(**settings)`) may bring the config (`settings_entries`)
        or (b"**" in words and any(name.encode() in words for name in ("TrainingArguments", *TRL_TRAINING_ARGUMENTS)))
    )


def _zero_from_project(project: ProjectFacts | None) -> bool:
    """The project index gives the script a ZeRO config: `accelerate launch` starts it with a DeepSpeed config
    (its YAML's stage or config file), a launch gives it a config file for its Trainer (`--deepspeed ds.json`, a
    YAML naming one), or a model of it goes to an initialize elsewhere whose config is known."""
    if project is None:
        return False
    if any(
        launch.option == "accelerate" or (launch.option in ("deepspeed", TRAINER_YAML) and launch.config_path)
        for launch in project.launches
    ):
        return True
    if project.accelerate_shipped:  # no launcher: the accelerate setup shipped near the script runs it
        return True
    return any(entry[3] is not None for entries in project.model_sinks.values() for entry in entries)


def _several_processes(project: ProjectFacts | None) -> bool:
    return project is not None and any(launch.several_a_node for launch in project.launches)


def in_text(data: bytes, project: ProjectFacts | None) -> Evidence:
    received, configured = _project(project)
    saves, moves, casts = _project_calls(project)
    engine = received or may_create_engine(data)
    return Evidence(
        words=data,
        engine=engine,
        received=received,
        inference=may_create_inference_engine(data),
        zero_source=True,  # read only from the code
        configs=engine or configured or has_tokens(data, TRAINER_CONFIG_TOKENS),
        several_processes=_several_processes(project),
        gpu_loads=project is not None and bool(project.gpu_loads),
        partly_engine=project is not None and bool(project.partly_engine),
        returned_loaders=project is not None and bool(project.returned_loaders),
        pretrained_loads=project is not None and bool(project.pretrained_loads),
        state_saving_helpers=project is not None and bool(project.state_saving_helpers),
        project_saves=saves,
        project_moves=moves,
        project_casts=casts,
    )


def _project_calls(project: ProjectFacts | None) -> tuple[bool, bool, bool]:
    """What the project index says of the file's calls (the same at every level): calls reaching a save, calls
    whose argument the callee moves, calls whose argument it casts."""
    if project is None:
        return False, False, False
    saves = (
        project.state_saving_calls
        or project.engine_saving_calls
        or project.trainer_gathering_calls
        or project.dict_saving_calls
        or project.state_saving_helpers
    )
    return bool(saves), bool(project.moving_calls), bool(project.casting_calls)


def in_code(code: CodeFacts, project: ProjectFacts | None) -> Evidence:
    received, configured = _project(project)
    saves, moves, casts = _project_calls(project)
    engine = received or code.calls_initialize
    return Evidence(
        words=code.words,
        engine=engine,
        received=received,
        inference=code.calls_inference,
        zero_source=code.calls_initialize
        or _names_zero_source(code.words)
        or _zero_from_project(project)
        or (project is None and has_tokens(code.words, (b"Accelerator",))),  # no index: the rule looks on disk
        configs=engine or configured or has_tokens(code.words, TRAINER_CONFIG_TOKENS),
        several_processes=_several_processes(project),
        gpu_loads=project is not None and bool(project.gpu_loads),
        partly_engine=project is not None and bool(project.partly_engine),
        returned_loaders=project is not None and bool(project.returned_loaders),
        pretrained_loads=project is not None and bool(project.pretrained_loads),
        state_saving_helpers=project is not None and bool(project.state_saving_helpers),
        calls=code,
        project_saves=saves,
        project_moves=moves,
        project_casts=casts,
        hf_configured=_hf_configured(code, project),
    )


def _hf_configured(code: CodeFacts, project: ProjectFacts | None) -> bool:
    """A DeepSpeed config may reach a Hugging Face reader of the file: a call's `deepspeed=` (`*TrainingArguments`)
    or `hf_ds_config=` (`DeepSpeedPlugin`), a `DeepSpeedPlugin` the script builds, a launch giving the script
    `--deepspeed CONFIG` (or a launch of a script calling its parser) or starting it with `accelerate launch`
    (`project.config_link.trainer_configs`, `training_arguments_configs`, `accelerate_runs`)."""
    if {"deepspeed", "hf_ds_config"} & (code.keywords | code.stored_keys) or b"DeepSpeedPlugin" in code.words:
        return True
    if code.arguments_file:
        return True  # training arguments from a file the script names, which may name a DeepSpeed config
    launches = (*project.launches, *project.parser_launches) if project is not None else ()
    return any(
        launch.option == "accelerate" or (launch.option in ("deepspeed", TRAINER_YAML) and launch.config_path)
        for launch in launches
    )


def in_facts(facts: ScriptFacts) -> Evidence:
    return Evidence(
        words=None,
        engine=facts.has_engine,
        received=False,
        inference=bool(facts.inference_calls),
        zero_source=True,
        configs=True,  # the configs the script builds or points at decide (dslint.project.script_configs)
        gpu_loads=facts.project is not None and bool(facts.project.gpu_loads),
        partly_engine=facts.project is not None and bool(facts.project.partly_engine),
        returned_loaders=facts.project is not None and bool(facts.project.returned_loaders),
    )


def certainly_untouched(data: bytes, project: ProjectFacts | None) -> bool:
    """True when nothing can be reported on the script `data` whatever the selection: no rule of the catalog can
    fire on its text and no config can be here (so DSL001/DSL002 do not apply either, see `dslint.lint.script`),
    and it has no noqa comment (DSL010). The same answer as the driver's first skip with every rule selected."""
    if b"noqa" in data.lower():  # any case, as the comments are read; a case-blind pattern scans many times slower
        return False
    evidence = in_text(data, project)
    return not evidence.configs and not any(can_fire(needs, evidence) for needs in SCRIPT_NEEDS.values())

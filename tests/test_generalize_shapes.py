"""Shapes of issue #23 ("Generalize"), each a fixture project under fixtures/projects/ both ways: the exact
findings (path, line, code, message start) over the whole project, with its index; everything else silent."""

from __future__ import annotations

import os

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.settings import SettingsResolver


def _findings(name: str) -> list[tuple[str, int, str, str]]:
    project = FIXTURES / "projects" / name
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    resolver = SettingsResolver()  # each file judged against the DeepSpeed its project pins, as `dslint check`
    results = lint_files([(f, resolver.for_path(f).selection_for(f)) for f in files], jobs=1, project=index)
    found: set[tuple[str, int, str, str]] = set()  # a config is also checked with the script that reads it
    for result in results:
        assert isinstance(result, FileResult), result
        for d in result.diagnostics:
            found.add((os.path.relpath(os.path.abspath(d.path), project), d.start.line, d.code, d.message))
    return sorted(found)


def _match(found: list[tuple[str, int, str, str]], expected: list[tuple[str, int, str, str]]) -> None:
    assert [(p, line, code) for p, line, code, _ in found] == sorted((p, line, code) for p, line, code, _ in expected)
    for (path, line, code, message), (_, _, _, start) in zip(found, sorted(expected), strict=True):
        assert message.startswith(start), (path, line, code, message)


def test_precision_device_map_and_overwritten_auto() -> None:
    """DSL207 only on the model initialize receives (a teacher and a reference model loaded with a device map
    stay silent), on every model once HfDeepSpeedConfig is alive; DSL405 only on the "auto" values the script
    leaves (dict literal, a file opened by a literal path, a launched file), nested writes and updates too."""
    zero3 = "ZeRO-3 is on: from_pretrained must not get a device_map"
    _match(
        _findings("precision"),
        [
            ("configs/opened.json", 3, "DSL405", 'write a value for `gradient_clipping`, not "auto"'),
            ("distill.py", 12, "DSL207", zero3),
            ("distill.py", 23, "DSL208", "build_student() (fixtures/projects/precision/distill.py:14) builds"),
            ("hf_teacher.py", 12, "DSL207", zero3),
            ("literal_auto.py", 9, "DSL405", 'write a value for `gradient_accumulation_steps`, not "auto"'),
        ],
    )


def test_a_teacher_that_never_reaches_initialize_gets_no_hf_deepspeed_config_advice() -> None:
    """The teacher and the reference model (distill.py:20, 22) never reach the engine: no advice on them; the
    student that a helper builds and initialize receives is advised at the helper's call (distill.py:23)."""
    found = [f[:2] for f in _findings("precision") if f[2] == "DSL208"]
    assert found == [("distill.py", 23)]


def test_loads_into_partitioned_parameters_and_before_the_returned_optimizer_steps() -> None:
    """DSL203 on a load into a model built inside zero.Init (inside the block and after it, not when gathered),
    and on a load after initialize followed by `optimizer.step()` of the optimizer initialize returned (not at
    stage 0 in fp32, not after the last step); DSL302 says the optimizer step itself is wrong beside the engine."""
    partitioned = "load_state_dict into a zero.Init model fails (parameters are empty)"
    stepped = "load_state_dict after deepspeed.initialize is undone by the next optimizer.step()"
    own_step = "optimizer stepped beside the engine; call engine.step()"
    no_optimizer = "ZeRO stage 2 needs an optimizer"  # the fixture's ZeRO-2 dict names none, nor does the call
    _match(
        _findings("loads"),
        [
            ("partitioned.py", 13, "DSL203", partitioned),
            ("partitioned.py", 20, "DSL203", partitioned),
            ("stepped.py", 11, "DSL452", no_optimizer),
            ("stepped.py", 12, "DSL203", stepped),
            ("stepped.py", 15, "DSL302", own_step),
            ("stepped.py", 27, "DSL452", no_optimizer),
            ("stepped.py", 23, "DSL302", own_step),
            ("stepped.py", 30, "DSL302", own_step),
        ],
    )


def test_a_model_wrapped_for_data_parallelism_before_initialize() -> None:
    """DSL214 on a DDP wrap on the way to initialize, a conditional DataParallel wrap in a builder whose result
    reaches initialize (naming where), apex's DDP; silent for DDP as the alternative to DeepSpeed, for two
    flags that may be exclusive, and for the wrapper's `.module` handed on."""
    ddp = "the model is wrapped in DistributedDataParallel before deepspeed.initialize; pass it unwrapped"
    found = _findings("wrappers")
    _match(
        found,
        [
            ("ddp_first.py", 19, "DSL214", ddp),
            ("nets.py", 17, "DSL214", "the model is wrapped in DataParallel before deepspeed.initialize"),
            ("nets.py", 24, "DSL214", "the model is wrapped in apex's DistributedDataParallel"),
        ],
    )
    assert "multi_gpu.py:10)" in found[1][3] and "multi_gpu.py:12)" in found[2][3]


def test_a_key_an_old_pinned_release_ignores_is_a_finding() -> None:
    """The same misspelt `"bf16": {"enable": true}` under a project pinning deepspeed==0.9.2 (bf16 read as a
    plain dict: ignored silently, DSL420 naming the release) and under one pinning 0.19.8 (DSL403); the fp16
    keys the old release reads stay silent."""
    _match(
        _findings("old_pins"),
        [
            ("current/ds_bf16.json", 3, "DSL403", "`bf16` has no key `enable`; DeepSpeed stops at start-up"),
            ("current/train.py", 13, "DSL452", "ZeRO stage 2 needs an optimizer"),
            (
                "legacy/ds_bf16.json",
                3,
                "DSL420",
                "`bf16.enable` is ignored silently by DeepSpeed 0.9.2 (judged by 0.10.0's schema): did you mean",
            ),
            ("legacy/train.py", 13, "DSL452", "ZeRO stage 2 needs an optimizer"),
        ],
    )


def test_a_plain_save_that_a_stage_3_branch_after_its_call_overwrites_stays_silent() -> None:
    """DeepSpeed-Chat's shape: a helper saves state_dict() (export.py:11) on rank 0, and the caller then writes
    the gathered weights under `if args.zero_stage == 3:` (finetune.py:22): the author handles stage 3, silent.
    The same plain save with nothing after its call (snapshot.py, from pretrain.py) is reported."""
    found = [f for f in _findings("stage_handled_saves") if f[2] == "DSL204"]
    _match(
        found,
        [("snapshot.py", 7, "DSL204", "under ZeRO-3, torch.save of state_dict() writes empty tensors")],
    )
    assert "pretrain.py:18" in found[0][3]


def test_a_trainer_config_named_in_the_yaml_a_launch_passes() -> None:
    """`--train_config configs/finetune.yaml` whose `train:` section names a ZeRO-3 config, splatted into
    `TrainingArguments(**config["train"])`: the model loaded before it is not partitioned (finetune.py:16). Silent
    when the arguments come first (finetune_ordered.py) or the YAML names a ZeRO-2 config (finetune_small.py)."""
    _match(
        _findings("trainer_yaml"),
        [("finetune.py", 16, "DSL208", "ZeRO-3 is on, but no live HfDeepSpeedConfig exists yet")],
    )


def test_clips_and_casts_under_deepspeed_through_accelerate() -> None:
    """accelerate runs DeepSpeed from the launch's YAML: torch's clip after `accelerator.backward` (which already
    ran engine.step()) is DSL305 at any precision (train.py, pure_half.py), and a 16-bit cast of the model
    `accelerator.prepare` receives is DSL104 when the run is fp16/bf16 (train.py; finetune.py's parameter loop,
    fp16 from `--mixed_precision` over the YAML's 'no'). Silent: the frozen teacher and encoder never prepared,
    `accelerator.clip_grad_norm_`, the cast under `mixed_precision: 'no'` (pure_half.py), and the same loop under
    a MULTI_GPU YAML whose leftover `deepspeed_config` block accelerate never reads (train_ddp.py)."""
    clip = "accelerator.backward runs engine.step(), which clips: set gradient_clipping instead"
    cast = "model cast before accelerator.prepare; remove it: DeepSpeed runs"
    _match(
        _findings("accelerate_precision"),
        [
            ("finetune.py", 25, "DSL104", f"{cast} fp16 and casts it"),
            ("pure_half.py", 17, "DSL305", clip),
            ("train.py", 21, "DSL104", f"{cast} bf16 and casts it"),
            ("train.py", 30, "DSL305", clip),
        ],
    )
    found = {(path, line): message for path, line, _, message in _findings("accelerate_precision")}
    assert found[("finetune.py", 25)].endswith("accelerate_precision/configs/zero3_file.yaml:4)")
    assert found[("train.py", 30)].endswith("accelerate_precision/configs/zero2_bf16.yaml:6)")


def test_a_move_serving_the_plain_arms_of_a_helper_that_initializes_under_a_test() -> None:
    """optimizers.build() calls initialize only for `name == "onebit"` beside a plain AdamW arm: the move before
    it (train.py) places the model for the plain path, silent. wrap() always initializes: the move before it
    (train_engine.py:15) is the engine's job, reported with the helper's initialize; so is a move before always(),
    whose test is of a flag it sets to True itself (train_always.py:10)."""
    _match(
        _findings("conditional_engine"),
        [
            ("train_always.py", 10, "DSL101", "model moved to a device before deepspeed.initialize"),
            ("train_engine.py", 15, "DSL101", "model moved to a device before deepspeed.initialize"),
        ],
    )


def test_trl_configs_are_the_trainers_arguments() -> None:
    """TRL's SFTConfig and DPOConfig subclass TrainingArguments: a model loaded before `SFTConfig(deepspeed=<a
    ZeRO-3 file>)` is not partitioned (sft.py:8); loaded after the DPOConfig, silent (dpo.py); the file's "auto"
    values are the Trainer's to fill (no DSL405)."""
    _match(
        _findings("trl_configs"),
        [("sft.py", 8, "DSL208", "ZeRO-3 is on, but no live HfDeepSpeedConfig exists yet")],
    )


def test_a_move_before_accelerator_prepare_under_deepspeed() -> None:
    """accelerate launches train.py with a DEEPSPEED YAML: the student's `.cuda()` before `accelerator.prepare`
    is the engine's job (train.py:10); the frozen teacher, never prepared, keeps its move; the same script under a
    MULTI_GPU YAML (train_ddp.py) is silent."""
    _match(
        _findings("accelerate_moves"),
        [("train.py", 10, "DSL101", "model moved to a device before accelerator.prepare; remove the move")],
    )


def test_a_key_the_script_writes_into_a_loaded_config_is_reported_in_the_script() -> None:
    """train.py loads ds_config.json and writes a misspelt ZeRO key into it: the finding is at the script's line
    (train.py:11), not at that line number in the JSON file."""
    _match(
        _findings("written_keys"),
        [("train.py", 11, "DSL403", "`zero_optimization` has no key `overlap_com`")],
    )


def test_an_absolute_config_path_of_another_machine() -> None:
    """`deepspeed="/home/someone/work/finetune/configs/zero3.json"`: the project's configs/zero3.json, found by the
    path's tail, is the config (train.py:7, ZeRO-3); a path of the user's cluster that the project does not hold
    (cluster.py) is neither read nor reported."""
    _match(
        _findings("foreign_paths"),
        [("train.py", 7, "DSL208", "ZeRO-3 is on, but no live HfDeepSpeedConfig exists yet")],
    )


def test_initialize_held_as_a_value_and_called_later() -> None:
    """`ds_init = deepspeed.initialize`, returned beside the options and handed to main(), which calls it: the
    loop main() hands the engine to divides by the accumulation steps (loops.py:8); so does fit_steps(), whose
    engine fit() makes with the `make_engine` every caller gives deepspeed.initialize (loops.py:19), and the move
    before that call is the engine's job (pretrain.py:15). fit_any()'s `make_engine` is the project's own builder
    at one call: unknown, and its move and fit_either() stay silent."""
    divides = "model.backward(loss) already divides by gradient_accumulation_steps"
    _match(
        _findings("initialize_value"),
        [
            ("loops.py", 8, "DSL304", divides),
            ("loops.py", 19, "DSL304", divides),
            ("pretrain.py", 15, "DSL101", "model moved to a device before deepspeed.initialize"),
        ],
    )


def test_a_call_of_initialize_held_as_a_value_names_where_the_value_was_taken() -> None:
    project = FIXTURES / "projects" / "initialize_value"
    index = index_project(discover([str(project)]).files, [str(project)])
    facts = index.facts_for(project / "finetune.py")
    assert facts is not None
    ((position, taken),) = facts.initialize_aliases.items()
    assert position == (28, 34) and not facts.returns
    assert (taken.line, taken.message) == (19, "ds_init holds deepspeed.initialize, taken here")
    assert taken.path.endswith("finetune.py")


def test_a_relative_config_path_of_a_script_run_from_the_repository_root() -> None:
    """finetuning/train.py names "ds_z3.json", which the project keeps at its root, not beside the script: Python
    reads it from the working directory, the root, so the Trainer runs ZeRO-3 (train.py:9). A file of that name
    beside the script is the one read (near.py: stage 2, silent); a name the project holds nowhere is unknown
    (missing.py, silent)."""
    _match(
        _findings("root_relative_configs"),
        [("finetuning/train.py", 9, "DSL210", "under ZeRO-3, trainer.save_model writes no usable weights")],
    )


def test_a_launch_command_a_python_script_runs() -> None:
    """launch.py builds `deepspeed --num_gpus={args.num_gpus} train.py --deepspeed_config={args.config}` from its
    parser's defaults and runs it with subprocess: ds_two.json's batch (8 = 8 x 1) cannot hold on its 2 GPUs
    (the launch named at launch.py:16); launch_one.py's `os.system` runs the same numbers on one GPU: silent."""
    _match(
        _findings("python_launchers"),
        [("ds_two.json", 2, "DSL407", "batch sizes train 8, micro 8, accumulation 1")],
    )


def test_a_move_before_an_initialize_under_a_test_every_launch_settles_or_a_raise_guards() -> None:
    """fit.py moves the model, then initializes under `if args.use_engine:` (DDP otherwise): every launch passes
    --use_engine, so the DDP arm never runs and the move is the engine's job; blend.py, launched both ways, stays
    silent, and so does probe.py, launched with --use_engine by run.sh but named by README.md for a run the index
    reads no command of; ema.py too, where a launch passes --ema and `if args.ema:` copies the moved model first.
    nets.py: a move before `if not config: raise` (no path goes on without DeepSpeed) is reported; the same move
    before `if not config: return model` (the caller uses the moved model) is not."""
    message = "model moved to a device before deepspeed.initialize; remove the move"
    _match(_findings("settled_moves"), [("fit.py", 18, "DSL101", message), ("nets.py", 22, "DSL101", message)])


def test_a_move_before_a_trainer_whose_config_is_given_but_unread_and_a_move_of_the_base_peft_wraps() -> None:
    """The Trainer's `deepspeed=` is an option argparse requires (lora_train.py, the launch's file not in the
    checkout) or a path written for another machine (written.py): DeepSpeed runs, the move is its job; an optional
    `--deepspeed` no launch gives (optional.py) stays silent. The base model moved before `get_peft_model` wraps it
    is the model handed on (lora_train.py, distill.py's student); the teacher, wrapped but never handed on, keeps
    its move."""
    trainer = "model moved to a device before the HF Trainer; remove the move: DeepSpeed places it (config: "
    expected = [
        ("distill.py", 8, "DSL101", "model moved to a device before deepspeed.initialize; remove the move"),
        ("lora_train.py", 17, "DSL101", trainer + "--deepspeed, required)"),
        ("written.py", 5, "DSL101", trainer + "/home/someone/ds_zero2.json)"),
    ]
    _match(_findings("unread_trainer_configs"), expected)


def test_moves_in_overriding_builders_in_an_if_arm_and_in_a_method_of_the_same_instance() -> None:
    """trainers.py: `setup` hands `self.build()` to initialize and subclasses override `build`: each override's
    move (ScorerTrainer.build) and the builder the base hands on (nets.make_net, its move in one arm of an `if`)
    are reported; `reference` never reaches initialize, and make_head binds again on every path after its move.
    pipelines.py: `super().place(device)` moves `self.net` two classes up before initialize under a run-once
    latch; under a real switch (`self.use_engine`) the move serves the DDP arm. nets.Tower moves itself in its
    constructor and TowerTrainer.build returns one: reported; nets.Probe, never handed on, is not. make_net's
    `.half()` in another arm is a cast (DSL104); the same cast under `with init_empty_weights():` sets the dtype
    of meta parameters a load fills, no weights: silent."""
    message = "model moved to a device before deepspeed.initialize; remove the move: the engine places it"
    expected = [
        ("nets.py", 9, "DSL101", message),
        ("nets.py", 15, "DSL104", "model cast before deepspeed.initialize"),
        ("nets.py", 42, "DSL101", message),
        ("pipelines.py", 26, "DSL101", "TorchPipeline.place() moves the model to a GPU ("),
        ("trainers.py", 26, "DSL101", message),
    ]
    _match(_findings("inherited_moves"), expected)


def test_the_arm_a_later_read_needs_decides_what_the_loop_gets() -> None:
    """initialize under `if args.deepspeed:` and the engine read after it on every path (train.py): the loop in
    another module gets initialize's optimizer (loops.py). Silent where the engine is read only under a later `if`
    (train_either.py) or bound before the `if` (train_bound_before.py): those paths go on with the plain one."""
    source = "optimizer from fixtures/projects/required_arms/train.py:22 passed to train_epoch()"
    found = _findings("required_arms")
    _match(
        found,
        [
            ("loops.py", 6, "DSL309", "the engine zeroes the gradients in engine.step()"),
            ("loops.py", 9, "DSL302", "optimizer stepped beside the engine"),
        ],
    )
    assert all(source in message for *_, message in found)


def test_a_method_saving_the_engine_held_in_an_attribute_called_on_one_rank() -> None:
    """trainer.py: `self.save_checkpoint(...)` under `if self.local_rank == 0:` reaches `self.engine.save_checkpoint`
    (the method is named like the engine's own save, its receiver is not the engine): reported at the call, with
    the save it reaches. every_rank.py: the save runs on every rank, only a report is rank 0's (silent)."""
    _match(
        _findings("engine_attribute_saves"),
        [("trainer.py", 19, "DSL428", "save_checkpoint on one rank hangs: every rank must call it, and this call")],
    )

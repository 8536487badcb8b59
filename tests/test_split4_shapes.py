"""Facts that live in another function or module (issue #23, split 4's studied misses), each a fixture project
under fixtures/projects/<name>/ with flagged and silent twins side by side."""

from __future__ import annotations

from test_generalize_shapes import _findings, _match


def test_model_built_by_a_helper_before_zero3_training_arguments() -> None:
    """DSL208: a project helper (another module's, through a further helper; or this module's) returns the model
    `from_pretrained` builds, called before `TrainingArguments(deepspeed=<stage 3>)`: flagged at the call, naming
    where the model is loaded. Silent: the arguments first, a stage 2 config, a helper returning only a tokenizer,
    an HfDeepSpeedConfig kept alive before the call."""
    found = [f for f in _findings("helper_loads") if f[2] == "DSL208"]
    where = "fixtures/projects/helper_loads"
    _match(
        found,
        [
            ("tune_args_late.py", 9, "DSL208", f"causal_lm() ({where}/lm_zoo/building.py:7) "),
            ("tune_local_loader.py", 14, "DSL208", f"restore() ({where}/tune_local_loader.py:9) "),
        ],
    )
    assert all("builds the model before the ZeRO-3 TrainingArguments exist: create them first" in f[3] for f in found)
    # a config file given to the arguments is named as where ZeRO-3 comes from (a dict of the script is not)
    messages = {f[0]: f[3] for f in found}
    assert messages["tune_args_late.py"].endswith("helper_loads/ds_stage3.json:4)")
    assert messages["tune_local_loader.py"].endswith("create them first")


def test_helper_load_names_the_load_as_related_location() -> None:
    from test_generalize_shapes import FIXTURES, FileResult, SettingsResolver, discover, index_project, lint_files

    project = FIXTURES / "projects" / "helper_loads"
    files = [f for f in discover([str(project)]).files if str(f).endswith("tune_args_late.py")]
    index = index_project(discover([str(project)]).files, [str(project)])
    resolver = SettingsResolver()
    results = lint_files([(f, resolver.for_path(f).selection_for(f)) for f in files], jobs=1, project=index)
    assert isinstance(results[0], FileResult)
    (finding,) = [d for d in results[0].diagnostics if d.code == "DSL208"]
    load, config = finding.related
    assert (load.path, load.line, load.message) == (
        "fixtures/projects/helper_loads/lm_zoo/building.py",
        7,
        "causal_lm() loads the model with from_pretrained",
    )
    assert (config.path, config.line, config.message) == (
        "fixtures/projects/helper_loads/ds_stage3.json",
        4,
        "zero_optimization.stage",
    )


def test_model_the_trainer_trained_saved_under_zero3() -> None:
    """DSL204: after `trainer.train()` under a ZeRO-3 launch (srun's own options before `deepspeed`), the model
    handed to the Trainer (a PEFT adapter, or a wrapper of it bound later) saved with `save_pretrained` or its
    `state_dict()` written: flagged, naming the launcher and the config. Silent: the Trainer's own save, a save
    before training, a model loaded again after training, the same script under ZeRO-2."""
    found = [f for f in _findings("trainer_model_saves") if f[2] == "DSL204"]
    trained = "ZeRO-3: the model the Trainer trained holds empty parameters; save it with trainer.save_model(dir)"
    _match(
        found,
        [("adapter_saved_raw.py", 13, "DSL204", trained), ("compiled_state_saved.py", 14, "DSL204", trained)],
    )
    assert "(ZeRO-3 from fixtures/projects/trainer_model_saves/scripts/slurm_z3.sh:3 -> " in found[0][3]


def test_wrapper_options_before_the_launcher() -> None:
    """`srun`/`mpirun` options (`--nodes=2`, `-N 2`, `-np 4`, `--bind-to none`) are skipped to the launcher; a
    flag followed by the launcher word keeps it (`--pty python`); a wrapper whose options cannot be told apart
    from the command is left unread."""
    from dslint.project.launchers import parse_shell

    text = (
        "srun --nodes=2 --gpus-per-node=8 deepspeed train.py --deepspeed z3.json\n"
        "srun -N 2 --pty python train.py\n"
        "mpirun -np 4 --bind-to none python train.py\n"
        "srun --nodes 2 ./wrapper.sh train.py\n"
    )
    found = [(line.line, line.tool, line.script) for line in parse_shell("run.sh", text)]
    assert found == [(1, "deepspeed", "train.py"), (2, "python", "train.py"), (3, "python", "train.py")]


def test_model_moved_before_a_strategy_method_that_runs_initialize() -> None:
    """DSL101: `strategy.distribute(model=network)` where `strategy` holds an instance of a project class (made
    directly, or by a factory each of whose returns makes one) whose method hands the model to initialize: a move
    before it is flagged, naming that initialize. Silent: a strategy class whose method never creates an engine,
    and a move of another module (a frozen teacher)."""
    found = [f for f in _findings("backend_helpers") if f[2] == "DSL101"]
    moved = "model moved to a device before deepspeed.initialize; remove the move: the engine places it"
    _match(found, [("fit_factory_strategy.py", 11, "DSL101", moved), ("fit_zero_strategy.py", 8, "DSL101", moved)])
    assert all(f[3].endswith("(the model reaches deepspeed.initialize at " + STRATEGIES + ":12)") for f in found)


STRATEGIES = "fixtures/projects/backend_helpers/parallel/strategies.py"


def test_auto_values_of_a_file_an_imported_module_hands_to_initialize() -> None:
    """DSL405: the launched script never uses `--deepspeed_config` itself; a learner class of a package it imports
    opens `self.options.deepspeed_config`, fills the batch keys and hands the dict to initialize. The "auto"
    values it leaves are flagged, naming that module; the batch keys it writes are not. A script whose imports
    read no config leaves its file's reader unknown: silent. A module that hands initialize `args=` and no config
    reads `--deepspeed_config` too (DeepSpeed reads it from the args): args_read.json, naming that module."""
    found = [f for f in _findings("imported_readers") if f[2] == "DSL405"]
    where = " (initialize reads it: fixtures/projects/imported_readers/learners/sequential.py:14)"
    _match(
        found,
        [
            ("configs/args_read.json", 3, "DSL405", "write a value for `zero_optimization.allgather_bucket_size`"),
            ("configs/continual.json", 6, "DSL405", "write a value for `zero_optimization.offload_optimizer.device`"),
            ("configs/continual.json", 7, "DSL405", "write a value for `zero_optimization.reduce_bucket_size`"),
        ],
    )
    continual = [f for f in found if f[0] == "configs/continual.json"]
    assert all(f[3].endswith('not "auto": DeepSpeed uses the default' + where) for f in continual)
    (args_read,) = [f for f in found if f[0] == "configs/args_read.json"]
    assert args_read[3].endswith("(initialize reads it: fixtures/projects/imported_readers/learners/direct.py:9)")

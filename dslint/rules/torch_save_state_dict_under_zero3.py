"""DSL204: `torch.save(<model>.state_dict(), ...)` after `deepspeed.initialize` when ZeRO-3 is or may be on."""

from __future__ import annotations

import functools
import os

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.accelerate_deepspeed import accelerate_zero3
from dslint.project.config_link import resolve_config, trainer_configs
from dslint.project.engine_config import zero_stage
from dslint.project.evidence import config_evidence, evidence
from dslint.project.shipped_configs import ships_only_lower_stages
from dslint.script.facts import Role
from dslint.script.gathered import GatheredBlocks
from dslint.script.hf_trainers import TrainerNames
from dslint.script.model_moves import handed_argument
from dslint.script.project_facts import MovedArgument
from dslint.script.saved_states import saved_state_dict_calls
from dslint.script.stage_guard import StageGuards
from dslint.script.trainer_saves import prepared_models_saved, trainer_models_saved, trainer_state_dicts_saved

TORCH_SAVE = "torch.save"
TARGETS = (Role.ENGINE, Role.ENGINE_MODULE, Role.RAW_MODEL)


_FROM_COMMAND_LINE = """\
import deepspeed
import torch

def main(args):
    model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=net)
    state = model_engine.state_dict()
    torch.save(state, args.out)
"""
_STAGE = '{{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {{"stage": {stage}}}}}'
# A training function of src/train.py handed the engine by its caller; the config path is read from a settings file,
# and the README launches the script without a config option.
_OWN_SETTINGS = """\
import json
import deepspeed
import torch
def save_portable(engine, path):
    torch.save(engine.module.state_dict(), path)
def main(settings):
    with open(settings.ds_config) as handle:
        config = json.load(handle)
    engine, _, _, _ = deepspeed.initialize(model=net, config=config)
    save_portable(engine, "final.pt")
"""
_README = ("README.md", "```bash\ndeepspeed --num_gpus=1 src/train.py --settings settings.yaml\n```\n")
_REQUIREMENTS = ("requirements.txt", "deepspeed\ntorch\n")


_PREPARED = """
    import torch
    from accelerate import Accelerator
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(model, optimizer)
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained("out")
    torch.save(accelerator.unwrap_model(model).state_dict(), "model.pt")
    unwrapped.save_pretrained("out", state_dict=accelerator.get_state_dict(model))
"""


def _plugin(stage: int) -> str:
    """_PREPARED with the script's own DeepSpeedPlugin at `stage` (its Accelerator line replaced)."""
    own = f"accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage={stage}))"
    return _PREPARED.replace("accelerator = Accelerator()", own).replace(
        "from accelerate import Accelerator", "from accelerate import Accelerator, DeepSpeedPlugin"
    )


def _accelerate_launch(stage: int) -> tuple[tuple[str, str], ...]:
    """An `accelerate launch` of train.py with a DeepSpeed YAML at `stage`."""
    yaml = f"distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: {stage}\nnum_processes: 2\n"
    return (("run.sh", "accelerate launch --config_file ds.yaml train.py\n"), ("ds.yaml", yaml))


# A config a project helper builds from the script's --zero_stage option: its stage per launch.
_STAGE_HELPER = (
    "ds_utils.py",
    "def make_config(stage):\n"
    '    return {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": stage}}\n',
)
_STAGED_SCRIPT = """
import argparse
import deepspeed
import torch
from ds_utils import make_config
def train(engine, loader, out):
    for batch in loader:
        engine.backward(engine(batch))
        engine.step()
    torch.save(engine.module.state_dict(), out)
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zero_stage", type=int, default=0)
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    config = make_config(stage=args.zero_stage)
    engine, _, loader, _ = deepspeed.initialize(model=build(), config=config, training_data=data())
    train(engine, loader, "model.pt")
main()
"""
_LOWER_LAUNCHES = "deepspeed --num_gpus 2 train.py --zero_stage 2\ndeepspeed --num_gpus 1 train.py\n"


class TorchSaveStateDictUnderZero3(ScriptRule):
    code = "DSL204"
    slug = "torch-save-state-dict-under-zero3"
    message = "under ZeRO-3, torch.save of state_dict() writes empty tensors; use engine.save_checkpoint(dir)"
    zero3_message = "ZeRO-3 is on: torch.save of state_dict() writes empty tensors; use engine.save_checkpoint(dir)"
    helper_message = "ZeRO-3 is on: this call saves state_dict() ({where}), empty tensors; use engine.save_checkpoint"
    trainer_message = (
        "ZeRO-3: trainer.model.state_dict() holds empty tensors; save with trainer.save_model and the gather"
    )
    trained_model_message = (
        "ZeRO-3: the model the Trainer trained holds empty parameters; save it with trainer.save_model(dir)"
    )
    prepared_message = "ZeRO-3: this saves empty tensors; pass state_dict=accelerator.get_state_dict(model)"
    severity = Severity.ERROR
    needs_engine = False  # the Hugging Face Trainer creates its engine inside `train()`
    # every finding is a `state_dict()` call (of an engine's model, or of a Trainer's)
    required_tokens = (b"deepspeed", b"initialize", b"state_dict")
    alternative_tokens = (
        (b"Trainer", b"state_dict"),
        (b"Trainer", b"save_pretrained"),
        (b"unwrap_model", b"state_dict"),
        (b"unwrap_model", b"save_pretrained"),
    )
    # a `torch.save` of an engine's model state (where an engine may be), or a Trainer's model saved with
    # `X.state_dict()` / `X.save_pretrained()` (where a config may reach the Trainer: `trainer_configs`)
    # the engine (or its model) handed to a project function that torch-saves its state_dict()
    runs_on_state_saving_helpers = True
    call_shapes = (
        Shape(calls=(TORCH_SAVE,), engine=True),
        # `x.state_dict()`, or `x`, handed to a project function that saves it
        Shape(project_saves=True, engine=True),
        Shape(methods=("state_dict", "save_pretrained"), words=(b"Trainer",), configured=True),
        Shape(methods=("state_dict", "save_pretrained"), words=(b"unwrap_model",), configured=True),
    )
    docs = RuleDocs(
        what="""
            Flags `torch.save(X.state_dict(), ...)` (also inside a dict or list, or through a name bound to it) after
            `deepspeed.initialize`, where X is the engine, `engine.module` or the model given to `initialize`, when the
            config enables ZeRO-3 (an error) or its stage is not known (a warning that says "under ZeRO-3": a config
            from the command line, launches that disagree, a stage from an option). A config the script loads itself
            from a path built at run time, with nothing of it known, is no evidence of a stage: silent; so is a config
            no launch of the script hands it (none is known, or none gives a config: the script finds its own, from an
            option's default or a settings file) when every DeepSpeed config the project ships near the script (its
            folder and the two above it, up to the project's root, with their `configs/`...) is below stage 3. Not
            flagged inside `with deepspeed.zero.GatheredParameters(...)`, where the parameters are whole, nor when the
            config is known to use a lower stage, nor under an `if` that tests the stage (`if zero_stage != 3:`, either
            arm): the author handles ZeRO-3 there. The engine may come from another function or module
            (`save_hf_format(engine, ...)`), as the project index follows it; and `X.state_dict()` handed to a project
            function (any module) that writes that parameter with `torch.save` is flagged at the call, naming the save;
            so is the engine (or its model) itself handed to a project function that torch-saves its `state_dict()` (its
            `.module`, unwrapped or not, in a dict, or handed on to a function saving what it gets), when the engine is
            known to run ZeRO-3 and the function is not judged on its own (other modules hand it other engines or
            models: it may be right for them). Also flags, as an error, a Hugging Face Trainer's
            `trainer.model.state_dict()` whose result (or a dict made from it) is written in the same function
            (`torch.save`, `trainer._save(dir, state_dict=...)`, `save_pretrained(dir, state_dict=...)`) when a launcher
            starts the script with a `--deepspeed` config known to be ZeRO-3; with an unknown or lower stage it stays
            silent. Likewise the model handed to the Trainer (`Trainer(model=model)`, either arm of `model=a if c else
            b`, the model a function of the file that trains its parameter is called with, a wrapper of that name bound
            later: `model = torch.compile(model)`, the base model `model = model.merge_and_unload()` returns with the
            same parameters, or the Trainer's own `trainer.model`) saved after `trainer.train()` in the same function,
            with `model.save_pretrained(dir)` (no `state_dict=`; a PEFT adapter too) or its `state_dict()` written to
            disk; such a Trainer launched by `accelerate launch` with a ZeRO-3 DeepSpeed YAML (and no config of its
            own) too, one such launch being enough, as one `--deepspeed` ZeRO-3 config is. And the model accelerate
            prepared, unwrapped (`accelerator.unwrap_model(model)`, or a name bound to it) and saved with
            `save_pretrained(dir)` without `state_dict=`, or its `state_dict()` written to disk, when every way the
            script runs DeepSpeed through accelerate is ZeRO-3 (its `DeepSpeedPlugin(zero_stage=3)`, every
            `accelerate launch` YAML): `state_dict=accelerator.get_state_dict(model)` gathers the 16-bit weights.
        """,
        why="""
            Under ZeRO-3 every parameter is partitioned across ranks and `param.data` is an empty tensor on
            each of them (runtime/zero/partition_parameters.py `free_param`). `state_dict()` then returns
            those empty tensors, and the saved file holds no weights: loading it later fails with size
            mismatches or, with `strict=False`, silently loads nothing.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_zero3.json")
            ...
            torch.save(engine.module.state_dict(), "model.pt")
        """,
        use_instead="""
            engine.save_checkpoint("checkpoints")  # resumable; zero_to_fp32.py consolidates it later
            # or one consolidated 16-bit file (config: "stage3_gather_16bit_weights_on_model_save": true;
            # without it save_16bit_model writes nothing and returns False):
            engine.save_16bit_model("export", "pytorch_model.bin")
        """,
        fix_safety="There is no automatic fix: which of the three ways fits depends on what the file is for.",
    )
    valid = (
        # every launch gives the helper's stage option a value below 3 (or leaves its default, 0)
        Valid(_STAGED_SCRIPT, files=(_STAGE_HELPER, ("run.sh", _LOWER_LAUNCHES))),
        # the plain state_dict only on the side a DeepSpeed flag rules out (a conditional expression)
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 3}})
            trainer = Trainer(model=model, args=args)
            trainer.train()
            gathered = trainer.model_wrapped._zero3_consolidated_16bit_state_dict
            weights = gathered() if trainer.is_deepspeed_enabled else trainer.model.state_dict()
            trainer._save("out", state_dict=weights)
            """
        ),
        # below ZeRO-3 the unwrapped model holds whole parameters
        Valid(_PREPARED, files=_accelerate_launch(2)),
        # the config comes from the command line, and every config shipped beside the script is ZeRO-2
        Valid(
            _FROM_COMMAND_LINE,
            files=(("ds_config.json", _STAGE.format(stage=2)), ("configs/ds_seq2seq.json", _STAGE.format(stage=1))),
        ),
        Valid(_plugin(2)),
        # the launch gives the script no config (it reads the path from its settings), and the one config the
        # project ships, in the folder above the script's, is ZeRO-0
        Valid(
            _OWN_SETTINGS,
            path="src/train.py",
            files=(_README, _REQUIREMENTS, ("configs/ds_config.json", _STAGE.format(stage=0))),
        ),
        # ... and a config from the command line that the project's launch does not give: the same
        Valid(
            _FROM_COMMAND_LINE,
            path="src/train.py",
            files=(_README, _REQUIREMENTS, ("configs/ds_config.json", _STAGE.format(stage=1))),
        ),
        # the script loads its own config from a path built at run time: nothing says which stage it chose
        Valid(
            """
            import json
            import deepspeed
            import torch
            def main(args):
                with open(args.ds_config) as handle:
                    config = json.load(handle)
                model_engine, optimizer, _, _ = deepspeed.initialize(model=net, config=config)
                torch.save(model_engine.module.state_dict(), args.out)
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
            torch.save(engine.module.state_dict(), "model.pt")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            with deepspeed.zero.GatheredParameters(list(engine.module.parameters())):
                torch.save(engine.module.state_dict(), "model.pt")
            torch.save(optimizer.state_dict(), "optim.pt")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if args.zero_stage != 3:
                torch.save(engine.module.state_dict(), "model.pt")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            torch.save(model.state_dict(), "init.pt")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import torch
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 2}})
            trainer = Trainer(model=model, args=args)
            trainer.train()
            torch.save(trainer.model.state_dict(), "model.pt")
            """
        ),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            def main(model):
                args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 3}})
                trainer = Trainer(model=model, args=args)
                model.save_pretrained("init")
                trainer.train()
                trainer.save_model(args.output_dir)
            """
        ),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            def main(model):
                args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 2}})
                trainer = Trainer(model=model, args=args)
                trainer.train()
                model.save_pretrained(args.output_dir)
                trainer.model.save_pretrained(args.output_dir)
            """
        ),
    )
    invalid = (
        # one launch gives it 3
        Invalid(
            _STAGED_SCRIPT,
            lines=(10,),
            files=(_STAGE_HELPER, ("run.sh", _LOWER_LAUNCHES + "deepspeed --num_gpus 2 train.py --zero_stage 3\n")),
        ),
        # the state dict handed to a project function that writes it with torch.save
        Invalid(
            "import deepspeed\nfrom savers import write\n"
            'engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})\n'
            'write(engine.state_dict(), "model.pt")\n',
            lines=(4,),
            files=(("savers.py", "import torch\ndef write(state, path):\n    torch.save(state, path)\n"),),
        ),
        # under accelerate's ZeRO-3 the unwrapped model's parameters are partitioned: the save with
        # `state_dict=accelerator.get_state_dict(model)` (line 9) gathers them
        Invalid(_PREPARED, lines=(7, 8), files=_accelerate_launch(3)),
        Invalid(_plugin(3), lines=(7, 8)),
        # a Trainer that `accelerate launch` starts with a ZeRO-3 YAML takes up its DeepSpeed plugin
        Invalid(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=data)
            trainer.train()
            model.save_pretrained("out")
            """,
            lines=(6,),
            files=_accelerate_launch(3),
        ),
        # a Trainer class of the script that keeps transformers' saving (no save_model/_save of its own)
        Invalid(
            """
            from trl import SFTTrainer
            from transformers import TrainingArguments
            class NoShuffleTrainer(SFTTrainer):
                def _get_train_sampler(self, *args):
                    return None
            def main(model):
                args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 3}})
                trainer = NoShuffleTrainer(model=model, args=args)
                trainer.train()
                model.save_pretrained(args.output_dir)
            """,
            lines=(11,),
        ),
        Invalid(
            """
            from peft import get_peft_model
            from transformers import Trainer, TrainingArguments
            def main(base, lora):
                args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 3}})
                model = get_peft_model(base, lora)
                trainer = Trainer(model=model, args=args)
                trainer.train()
                model.save_pretrained(args.output_dir)
            """,
            lines=(9,),
        ),
        Invalid(
            """
            import torch
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 3}})
            trainer = Trainer(model=model, args=args)
            trainer.train()
            weights = trainer.model.state_dict()
            torch.save({k: v.cpu() for k, v in weights.items()}, "model.pt")
            """,
            lines=(7,),
        ),
        # the Trainer's own `trainer.model` (a PEFT adapter too) saved after training
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            def main(model):
                args = TrainingArguments("out", deepspeed={"zero_optimization": {"stage": 3}})
                trainer = Trainer(model=model, args=args)
                trainer.train()
                if trainer.args.process_index == 0:
                    trainer.model.save_pretrained(args.output_dir, safe_serialization=True)
            """,
            lines=(8,),
        ),
        Invalid(
            """
            import deepspeed
            import torch
            model = Net()
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 3}})
            torch.save(engine.module.state_dict(), "model.pt")
            torch.save({"model": model.state_dict(), "step": step}, "ckpt.pt")
            """,
            lines=(6, 7),
        ),
        # the config comes from the command line (`--deepspeed_config`), no launch found: a warning
        Invalid(
            """
            import deepspeed
            import torch
            def main(args):
                model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=net)
                state = model_engine.state_dict()
                torch.save(state, args.out)
            """,
            lines=(7,),
        ),
        # a launch gives the script no config and the one config the project ships is ZeRO-3
        Invalid(
            _FROM_COMMAND_LINE,
            lines=(7,),
            path="src/train.py",
            files=(_README, _REQUIREMENTS, ("configs/ds_config.json", _STAGE.format(stage=3))),
        ),
        # ... also when a config shipped beside the script is ZeRO-3
        Invalid(
            _FROM_COMMAND_LINE,
            lines=(7,),
            files=(("ds_config.json", _STAGE.format(stage=2)), ("configs/ds_zero3.json", _STAGE.format(stage=3))),
        ),
        # the stage comes from an option: the config is read, but for its stage (a warning)
        Invalid(
            """
            import deepspeed
            import torch
            def main(args):
                config = {"train_batch_size": 8, "zero_optimization": {"stage": args.zero_stage}}
                model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=net, config=config)
                state = model_engine.state_dict()
                torch.save(state, args.out)
            """,
            lines=(8,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.gathered = GatheredBlocks(self.facts, for_modification=False)
        self.stage_guards = StageGuards()
        self.trainer_saves = set(trainer_state_dicts_saved(self.facts, node))
        self.trained_saves = set(trainer_models_saved(self.facts))
        self.trainers = TrainerNames(self.context)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        """The model accelerate prepared, unwrapped and saved without a gathered state dict, where every way the
        script runs DeepSpeed through accelerate is ZeRO-3."""
        saves = prepared_models_saved(self.facts, self.trainers.names_accelerator)
        zero3 = accelerate_zero3(self.context) if saves else None
        if zero3 is None:
            return
        where, related = zero3
        for call in saves:
            self.report(call, f"{self.prepared_message} (from {where})", related=related)

    def visit_If(self, node: cst.If) -> None:
        self.stage_guards.enter(node)

    def leave_If(self, original_node: cst.If) -> None:
        self.stage_guards.leave()

    def visit_With(self, node: cst.With) -> None:
        self.gathered.enter(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.gathered.leave(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.gathered.inside or self.stage_guards.inside:
            return
        if node in self.trainer_saves:
            self._trainer_model_state(node)
            return
        if node in self.trained_saves:
            self._trainer_model_state(node, self.trained_model_message)
            return
        project = self.facts.project
        handed, argument = handed_argument(self.facts, node, project.dict_saving_calls if project is not None else {})
        saver = self._state_saving_helper(node) if handed is None or argument is None else None
        if handed is not None and argument is not None:
            engine = self._saved_model_state(argument, node)  # `save_process(engine.state_dict(), path)`
        elif saver is not None:
            handed, engine = saver  # `save_model(engine, path)`: the helper saves the state_dict() of what it gets
            if zero_stage(self.context, engine) != 3:
                return  # right for this caller, or not known to be wrong: the helper's own finding, if any, says
        elif self.facts.qualified(node.func) != TORCH_SAVE or not node.args:
            return
        else:
            saved = node.args[0]
            if saved.star or (saved.keyword is not None and saved.keyword.value != "obj"):
                return
            engine = self._saved_model_state(saved.value, node)
        if engine is None or engine.caller_tests_stage:
            return  # the caller handles stage 3 after this save (a gathering save under `if zero_stage == 3`)
        stage = zero_stage(self.context, engine)
        found = evidence(self.context, engine)
        helper = (handed.where,) if handed is not None else ()
        if stage == 3 and saver is not None and handed is not None:
            where = f"{handed.where.path}:{handed.where.line}"
            self.report(node, self.helper_message.format(where=where) + found.suffix, related=(*found.related, *helper))
        elif stage == 3:
            self.report(node, self.zero3_message + found.suffix, related=(*found.related, *helper))
        elif stage is None and not self._reads_own_config(engine) and not self._ships_only_lower_stages(engine):
            self.report(node, self.message + found.suffix, severity=Severity.WARNING, related=(*found.related, *helper))

    def _ships_only_lower_stages(self, engine: Engine) -> bool:
        """No launch of the script hands it a config (none is known, or they give none: the script finds its
        config itself), and every DeepSpeed config the project ships near the script runs below stage 3
        (`shipped_configs.shipped_stages`): no sign of ZeRO-3."""
        created_here = engine.created is not None and os.path.abspath(engine.created[0]) == os.path.abspath(
            self.context.path
        )
        if engine.elsewhere and not created_here:
            return False  # another script's engine: its launches are not this file's
        return self._lower_stages_shipped

    @functools.cached_property
    def _lower_stages_shipped(self) -> bool:
        """Asked once per file, at its first save of unknown stage."""
        return ships_only_lower_stages(self.context)

    def _reads_own_config(self, engine: Engine) -> bool:
        """This file's `initialize` is handed a config the function builds itself (`config=cfg`, `cfg` bound there)
        that cannot be read at all (a JSON load of a path built at run time): the script chose its stage, and
        nothing says which. A config from the command line (`args=args`, `config=args.ds_config`) stays a
        warning, as does one read but for its stage (launches that disagree, a stage from an option)."""
        if engine.elsewhere or resolve_config(self.context, engine) is not None:
            return False
        init = next((i for i in self.facts.initialize_calls if i.engine is engine), None)
        if init is None:
            return False
        given = [
            a.value for a in init.call.args if a.keyword is not None and a.keyword.value in ("config", "config_params")
        ]
        # a name this function binds (`config = json.load(handle)`), not a path the command line gives (`args.ds`)
        return any(isinstance(value, cst.Name) and self.facts.local_binding(value) is not None for value in given)

    def _trainer_model_state(self, node: cst.Call, message: str | None = None) -> None:
        """`trainer.model.state_dict()` written to disk, in a script the launchers start with a ZeRO-3 config
        for its Trainer (`--deepspeed ds_z3.json`, or `accelerate launch` with a ZeRO-3 YAML, whose plugin the
        Trainer's arguments take up): only a config known to be stage 3 is reported."""
        configs = trainer_configs(self.context)
        stage3 = [config for config in configs if config.zero_stage == 3]
        if stage3:
            found = config_evidence(stage3, files=True)
            self.report(node, (message or self.trainer_message) + found.suffix, related=found.related)
            return
        zero3 = accelerate_zero3(self.context, any_launch=True) if not configs else None
        if zero3 is not None:
            where, related = zero3
            self.report(node, f"{message or self.trainer_message} (ZeRO-3 from {where})", related=related)

    def _state_saving_helper(self, node: cst.Call) -> tuple[MovedArgument, Engine] | None:
        """A call handing the engine (or its model) to a project function that torch-saves its `state_dict()`
        (`ProjectFacts.state_saving_helpers`), with that engine."""
        saving = self.facts.project.state_saving_helpers if self.facts.project is not None else {}
        handed, argument = handed_argument(self.facts, node, saving) if saving else (None, None)
        engine = self._saved_model_state(argument, node, whole=True) if argument is not None else None
        return (handed, engine) if handed is not None and engine is not None else None

    def _saved_model_state(self, value: cst.BaseExpression, at: cst.Call, whole: bool = False) -> Engine | None:
        """The engine whose model's `state_dict()` `value` is or holds; `whole`: `value` is the object itself, whose
        `state_dict()` a helper saves."""
        facts = self.facts
        holders = [(value, at)] if whole else []
        for call in saved_state_dict_calls(facts, value, at) if not whole else ():
            assert isinstance(call.func, cst.Attribute)
            holders.append((call.func.value, call))
        for holder, call in holders:
            answer = facts.role_of(holder, at=call)
            if answer is None or answer.role not in TARGETS:
                continue
            init = answer.init
            same_scope = init is not None and facts.scope_at(call) is init.scope
            if init is not None and same_scope and facts.start(call) < init.end:
                continue
            if answer.role is Role.RAW_MODEL and not same_scope:
                continue
            return answer.engine
        return None

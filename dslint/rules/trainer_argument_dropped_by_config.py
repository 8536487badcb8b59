"""DSL460: a Trainer argument the DeepSpeed config has no key for is dropped (the engine or its optimizer decides)."""

from __future__ import annotations

import os

import libcst as cst

from dslint.config.tree import UNKNOWN
from dslint.config.versions import CLIPPING_BY_DEFAULT_SINCE
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import TRL_TRAINING_ARGUMENTS
from dslint.project.config_edits import command_line_value, literal_value
from dslint.project.config_link import resolve_config_expression
from dslint.project.resolved_configs import ResolvedConfig
from dslint.project.splatted_arguments import call_argument, known_arguments, trainer_config_expression
from dslint.project.trainer_launches import argument_parsers
from dslint.project.trainer_matches import accelerate_trainer_configs, launched_trainer_configs
from dslint.script.context import ScriptContext
from dslint.script.hf_models import is_training_arguments

_OPTIMIZER = '{"train_micro_batch_size_per_gpu": "auto", "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}\n'
_FILLED = (
    '{"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto",\n'
    ' "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}}}\n'
)
_PARSING = """\
from transformers import HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
Trainer(model=build(), args=args).train()
"""

# TrainingArguments' optimizer settings that transformers copies into the config's `optimizer.params` key of
# that name only where it says "auto" (`HfTrainerDeepSpeedConfig.trainer_config_process`).
_OPTION_DEFAULT = """
import argparse
from transformers import TrainingArguments
parser = argparse.ArgumentParser()
parser.add_argument("--max_grad_norm", type=float, default=0.5)
opts = parser.parse_args()
args = TrainingArguments(output_dir="out", max_grad_norm=opts.max_grad_norm, deepspeed="ds.json")
"""
_OPTIMIZER_PARAMETERS = {
    "weight_decay": "weight_decay",
    "adam_epsilon": "eps",
    "adam_beta1": "betas",
    "adam_beta2": "betas",
}
_ARGUMENTS = ("max_grad_norm", "gradient_accumulation_steps", "optim", *_OPTIMIZER_PARAMETERS)

# The Trainer's `optim` values that name torch's AdamW algorithm (decoupled weight decay, full-precision states):
# the same algorithm as a config section of type AdamW, or Adam with `adam_w_mode` on (its default).
_ADAMW_OPTIMS = frozenset({"adamw_torch", "adamw_torch_fused", "adamw_hf", "adamw_apex_fused", "adamw_torch_npu_fused"})


def _section_is_adamw(optimizer: dict[str, object]) -> bool:
    """Whether DeepSpeed builds an AdamW (decoupled weight decay) from the config's optimizer section
    (`_configure_basic_optimizer`: type AdamW, or Adam unless `adam_w_mode` is false)."""
    kind = str(optimizer.get("type", "")).lower()
    params = optimizer.get("params")
    mode = params.get("adam_w_mode", True) if isinstance(params, dict) else True
    return kind == "adamw" or (kind == "adam" and mode is not False)


def _built_default(optimizer: dict[str, object], key: str) -> float | None:
    """The `weight_decay` or `eps` of the optimizer DeepSpeed 0.19.8 builds from a section whose `params` lack it:
    FusedAdam, DeepSpeedCPUAdam and FusedLamb take 0 and 1e-8, torch's AdamW (`torch_adam`) a weight decay of
    0.01, torch's Adam 0; None for another type (not judged)."""
    kind = str(optimizer.get("type", "")).lower()
    params = optimizer.get("params")
    torch_adam = isinstance(params, dict) and params.get("torch_adam") is True
    if kind not in ("adam", "adamw", "lamb"):
        return None
    if key == "eps":
        return 1e-8
    if key in _BETAS:  # the Adam family's and Lamb's (0.9, 0.999)
        return _BETAS[key]
    return 0.01 if torch_adam and _section_is_adamw(optimizer) else 0.0


# the default of each beta of the optimizers DeepSpeed builds, by the Trainer argument's position in `betas`
_BETAS = {"adam_beta1": 0.9, "adam_beta2": 0.999}


class TrainerArgumentDroppedByConfig(ScriptRule):
    code = "DSL460"
    slug = "trainer-argument-dropped-by-config"
    message = "the DeepSpeed config has no key for this Trainer argument, so the argument is dropped"
    severity = Severity.WARNING
    needs_engine = False
    required_tokens = (b"TrainingArguments", b"deepspeed")
    # (an accelerate launch's config reaches arguments that name none: no `deepspeed` in the script's text then)
    alternative_tokens = (
        (b"HfArgumentParser",),
        (b"TrainingArguments",),
        *((name.encode(),) for name in sorted(TRL_TRAINING_ARGUMENTS)),
    )
    needs_hf_config = True
    docs = RuleDocs(
        what="""
            Flags a Trainer argument written beside a DeepSpeed config that has no key for it, in
            `TrainingArguments(..., deepspeed=...)` (also `Seq2SeqTrainingArguments` and TRL's trainer
            configs), or in a launch that passes it beside `--deepspeed ds.json` (at the script's
            `HfArgumentParser`, naming the launch), or in a dict splatted into the call (`**settings`, a dict
            display or `dict(...)` the scope binds, with the keys written into it before the call; a key
            written only under a condition is not known), or in arguments naming no config of their own under an
            `accelerate launch` whose YAML runs DeepSpeed with a config file (the Trainer then takes that
            one): `max_grad_norm` when the config has no `gradient_clipping` and the value differs from the
            engine's default (1.0 since DeepSpeed 0.19.3, 0.0 before); `optim` when the config has an
            `optimizer` section of another algorithm (`adafactor`, 8-bit or paged AdamW, `sgd`...;
            `adamw_torch` beside an `AdamW` section is the same optimizer); `weight_decay` and
            `adam_epsilon` when the config's `Adam`, `AdamW` or `Lamb` section has no `weight_decay` or
            `eps` in its `params` and the value differs from what the optimizer DeepSpeed builds takes
            without it (0 and 1e-8; a weight decay of 0.01 for torch's AdamW, `torch_adam`), and
            `adam_beta1`/`adam_beta2` when it has no `betas` and the value is not the default (0.9, 0.999);
            `gradient_accumulation_steps` above 1 when the config has no such key and no total batch
            (`train_batch_size` absent or `"auto"`); where the project runs DeepSpeed before 0.19.3, a call
            writing no `max_grad_norm` too (the Trainer's default 1.0). The script's own option
            (`args.max_grad_norm`, its parser's literal default) counts with the value every launch of the
            script gives it (naming them); other values built at run time, and a config that cannot be read
            (or whole), are not judged; a key written with another value is DSL435's finding, a missing `lr`
            DSL459's.
        """,
        why="""
            The Trainer hands its arguments to DeepSpeed only through the config: it fills the keys that say
            `"auto"` and compares those written (transformers' `HfTrainerDeepSpeedConfig.fill_match`); a key that
            is absent is neither. Without `gradient_clipping`, the engine clips at its own default and the
            Trainer's clipping call only reads the norm (accelerate's `clip_grad_norm_` under DeepSpeed). With an
            `optimizer` section, `deepspeed_optim_sched` hands the Trainer a `DummyOptim` and DeepSpeed builds the
            section's optimizer: `optim` is never read, and a parameter the section's `params` lack takes the
            optimizer's own default. Without `gradient_accumulation_steps`, accelerate's `DeepSpeedPlugin` writes
            1 into the config and prefers it to the Trainer's (a warning at most), and accelerate's engine
            wrapper calls `engine.step()` after every backward: the optimizer steps on every micro-batch, the
            larger batch never forms. Nothing else is logged; the run trains with other settings than it asked for.
        """,
        example="""
            # ds.json: {"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}, ...}
            args = TrainingArguments(output_dir="out", weight_decay=0.1, max_grad_norm=0.3, deepspeed="ds.json")
        """,
        use_instead="""
            # ds.json: {"gradient_clipping": "auto",
            #           "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}}, ...}
            args = TrainingArguments(output_dir="out", weight_decay=0.1, max_grad_norm=0.3, deepspeed="ds.json")
        """,
    )
    valid = (
        # a key written into the splatted dict only under a condition: its value is not known
        Valid(
            """
            import sys
            from transformers import TrainingArguments
            settings = dict(output_dir="out", deepspeed="ds.json")
            if len(sys.argv) > 2:
                settings["weight_decay"] = 0.05
            args = TrainingArguments(**settings)
            """,
            files=(("ds.json", _OPTIMIZER),),
        ),
        # a dict the script does not build: its keys are not known
        Valid(
            """
            from transformers import TrainingArguments
            def build(settings):
                return TrainingArguments(deepspeed="ds.json", **settings)
            """,
            files=(("ds.json", _OPTIMIZER),),
        ),
        # the config's "auto" keys take the arguments
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", weight_decay=0.1, max_grad_norm=0.3, deepspeed="ds.json")
            """,
            files=(("ds.json", _FILLED),),
        ),
        # no optimizer section: the Trainer builds its own optimizer from the arguments; the engine's default
        # clipping (1.0 since 0.19.3) is the value asked for
        Valid(
            """
            from transformers import TrainingArguments
            ds = {"train_micro_batch_size_per_gpu": "auto"}
            args = TrainingArguments(output_dir="out", optim="adamw_bnb_8bit", weight_decay=0.1, max_grad_norm=1.0,
                                     deepspeed=ds)
            """
        ),
        # torch's AdamW asked for beside an AdamW section: the same optimizer; a weight decay of 0 is what the
        # FusedAdam DeepSpeed builds takes without one
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", optim="adamw_torch", weight_decay=0.0, deepspeed="ds.json")
            """,
            files=(("ds.json", _OPTIMIZER),),
        ),
        # accumulation the config receives ("auto"), or settles with a written total batch (DSL407's arithmetic)
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", gradient_accumulation_steps=8, deepspeed="ds.json")
            """,
            files=(("ds.json", '{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}\n'),),
        ),
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", gradient_accumulation_steps=8, deepspeed="ds.json")
            """,
            files=(("ds.json", '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"}\n'),),
        ),
        # launches that give the option other values: which one runs is not known
        Valid(
            _OPTION_DEFAULT,
            files=(
                ("run.sh", "deepspeed train.py\ndeepspeed train.py --max_grad_norm 1.0\n"),
                ("ds.json", '{"train_micro_batch_size_per_gpu": "auto"}\n'),
            ),
        ),
        # values read at run time are not judged
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", weight_decay=opts.wd, deepspeed="ds.json")
            """,
            files=(("ds.json", _OPTIMIZER),),
        ),
    )
    invalid = (
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", optim="adafactor", weight_decay=0.1, max_grad_norm=0.3,
                                     deepspeed="ds.json")
            """,
            lines=(3, 3, 3),
            files=(("ds.json", _OPTIMIZER),),
        ),
        # the keywords in a dict splatted into the call, one written into it before the call
        Invalid(
            """
            from transformers import TrainingArguments
            settings = {
                "output_dir": "out",
                "weight_decay": 0.05,
                "deepspeed": "ds.json",
            }
            settings["max_grad_norm"] = 0.5
            args = TrainingArguments(**settings)
            """,
            lines=(5, 8),
            files=(("ds.json", _OPTIMIZER),),
        ),
        # before 0.19.3 the engine does not clip by default: the Trainer's default asks for 1.0, an explicit one too
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", max_grad_norm=1.0, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", '{"train_micro_batch_size_per_gpu": "auto"}\n'),),
            deepspeed_version="0.14.4",
        ),
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", learning_rate=1e-5, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", '{"train_micro_batch_size_per_gpu": "auto"}\n'),),
            deepspeed_version="0.14.4",
        ),
        # the script's own option, at its default under every launch of the script
        Invalid(
            _OPTION_DEFAULT,
            lines=(7,),
            files=(("run.sh", "deepspeed train.py\n"), ("ds.json", '{"train_micro_batch_size_per_gpu": "auto"}\n')),
        ),
        # arguments naming no config, under an accelerate launch whose YAML runs DeepSpeed with a config file
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", max_grad_norm=0.3)
            """,
            lines=(3,),
            files=(
                ("run.sh", "accelerate launch --config_file acc.yaml train.py\n"),
                (
                    "acc.yaml",
                    "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
                    "num_processes: 2\n",
                ),
                ("ds.json", '{"train_micro_batch_size_per_gpu": "auto"}\n'),
            ),
        ),
        # no betas in the optimizer's params: DeepSpeed builds it with (0.9, 0.999), not the Trainer's 0.95
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", adam_beta2=0.95, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", _OPTIMIZER),),
        ),
        # no accumulation key: accelerate sets 1 and the engine steps the optimizer on every micro-batch
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", gradient_accumulation_steps=8, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", '{"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto"}\n'),),
        ),
        # torch's AdamW (`torch_adam`) decays by 0.01 unless told: the Trainer's 0 is dropped
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", weight_decay=0.0, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", _OPTIMIZER.replace('"lr": "auto"', '"lr": "auto", "torch_adam": true')),),
        ),
        Invalid(
            _PARSING,
            lines=(3,),
            files=(
                ("run.sh", "deepspeed train.py --output_dir out --weight_decay 0.05 --deepspeed ds.json\n"),
                ("ds.json", _OPTIMIZER),
            ),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        expression = trainer_config_expression(self.context, node)
        passed = known_arguments(self.context, node) if expression is None else None
        accelerated = (
            expression is None
            and is_training_arguments(self.context, node)
            and passed is not None
            and "deepspeed" not in passed
        )
        if expression is None and not accelerated:
            return
        given: dict[str, tuple[cst.BaseExpression, object, tuple[Related, ...]]] = {}
        for name in _ARGUMENTS:
            written = call_argument(self.context, node, name)
            if written is not None:
                given[name] = (written, *_argument(self.context, written))
        default = ""
        if "max_grad_norm" not in given and self.context.deepspeed_version < CLIPPING_BY_DEFAULT_SINCE:
            passed = passed if expression is None else known_arguments(self.context, node)
            if passed is not None and "max_grad_norm" not in passed:  # the Trainer's own 1.0, dropped the same way
                given["max_grad_norm"], default = (node, 1.0, ()), " (the Trainer's default)"
        if not given:
            return
        if expression is not None:
            config = resolve_config_expression(self.context, expression)
            if config is not None:
                for name, (at, value, via) in given.items():
                    self._check(at, name, value, config, default if at is node else "", via)
            return
        for launch, launched in accelerate_trainer_configs(self.context):  # the accelerate launch's config
            for name, (at, value, via) in given.items():
                where = f"{default if at is node else ''} under accelerate launch"
                self._check(at, name, value, launched, where, (launch.launch, *via))

    def leave_Module(self, original_node: cst.Module) -> None:
        parser = next(argument_parsers(original_node), None)
        if parser is None:
            return
        for launch, config in launched_trainer_configs(self.context):
            for name in _ARGUMENTS:
                written = launch.options.get(name)
                value = _number(written) if name != "optim" else written
                self._check(parser, name, value, config, " from the launch", (launch.launch,))

    def _check(
        self,
        node: cst.CSTNode,
        name: str,
        value: object,
        config: ResolvedConfig,
        where: str,
        related: tuple[Related, ...] = (),
    ) -> None:
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return
        file = os.path.basename(str(config.path)) if config.path is not None else "the config dict"
        optimizer = config.values.get("optimizer")
        opaque = config.tree is not None and config.tree.opaque  # keys dslint cannot read may be there
        if name == "max_grad_norm":
            default = 1.0 if not self.context.deepspeed_version < CLIPPING_BY_DEFAULT_SINCE else 0.0
            if "gradient_clipping" in config.values or opaque or not isinstance(value, (int, float)):
                return
            if value == default:
                return
            text = f"max_grad_norm={value}{where} is dropped: {file} has no gradient_clipping (the engine clips at"
            text += f' {default}); set it to "auto"'
        elif name == "gradient_accumulation_steps":
            if "gradient_accumulation_steps" in config.values or opaque or not isinstance(value, (int, float)):
                return
            if value == 1 or config.values.get("train_batch_size", "auto") != "auto":
                return  # a written total batch settles the accumulation with the micro batch (DSL407's arithmetic)
            text = f"gradient_accumulation_steps={value:g}{where} is dropped: {file} has no such key, so the engine"
            text += ' steps every micro-batch; set it to "auto"'
        elif not isinstance(optimizer, dict):
            return
        elif name == "optim":
            if value in _ADAMW_OPTIMS and _section_is_adamw(optimizer):
                return  # the section builds the algorithm asked for
            text = f"optim={value!r}{where} is not used: the optimizer section of {file} builds the optimizer"
        else:
            params = optimizer.get("params")
            key = _OPTIMIZER_PARAMETERS[name]
            if (isinstance(params, dict) and key in params) or not isinstance(value, (int, float)):
                return
            built = _built_default(optimizer, name if key == "betas" else key)
            if value == built or built is None:
                return  # the optimizer DeepSpeed builds takes that value anyway, or its default is not known
            text = f'{name}={value}{where} is dropped: the optimizer of {file} has no {key}; set it to "auto"'
        self.report(node, text, related=related)


def _argument(context: ScriptContext, value: cst.BaseExpression) -> tuple[object, tuple[Related, ...]]:
    """A Trainer keyword's value: a literal, or `args.opt` of the script's own parser with a literal default when
    every launch of the script agrees on it (`command_line_value`, naming those launches); else UNKNOWN."""
    literal = literal_value(value)
    return (literal, ()) if literal is not UNKNOWN else command_line_value(context, value)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None

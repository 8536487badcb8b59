"""DSL435: a DeepSpeed config given to the Hugging Face Trainer contradicts its TrainingArguments."""

from __future__ import annotations

import os

import libcst as cst

from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import TRAINER_BATCH_FILL_ONLY, TRL_TRAINING_ARGUMENTS
from dslint.project.config_edits import command_line_value, literal_value
from dslint.project.config_link import resolve_config_expression
from dslint.project.inputs import shown_path
from dslint.project.resolved_configs import ResolvedConfig
from dslint.project.splatted_arguments import known_arguments, trainer_config_expression
from dslint.project.trainer_launches import argument_parsers
from dslint.project.trainer_matches import (
    MATCHED_FIELDS,
    Mismatch,
    accelerate_trainer_configs,
    launch_arguments,
    launched_trainer_configs,
    mismatches,
)
from dslint.script.context import ScriptContext
from dslint.script.hf_models import TRAINING_ARGUMENTS, hf_class_name, is_training_arguments
from dslint.script.names import dotted_name

_FP16_FILE = '{"fp16": {"enabled": true}, "train_micro_batch_size_per_gpu": "auto"}\n'
_AUTO_FILE = '{"fp16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto"}\n'
_PARSING = """\
from transformers import HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
Trainer(model=build(), args=args).train()
"""
_PARSING_DATA = """\
from dataclasses import dataclass
from transformers import HfArgumentParser, Trainer, TrainingArguments

@dataclass
class DataTrainingArguments:
    train_file: str = "train.json"

data, args = HfArgumentParser((DataTrainingArguments, TrainingArguments)).parse_args_into_dataclasses()
Trainer(model=build(), args=args).train()
"""
_PARSING_OWN = _PARSING_DATA.replace(
    "class DataTrainingArguments:\n", "class DataTrainingArguments(TrainingArguments):\n    fp16: bool = True\n"
)
# a class of the script deriving from transformers' own, adding fields of its own: transformers' defaults hold
_PARSING_SUBCLASS = """\
from dataclasses import dataclass
import transformers
from transformers import HfArgumentParser, Trainer

@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = 512

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
Trainer(model=build(), args=args).train()
"""


_SCHEDULE = (
    '{{"scheduler": {{"type": "WarmupDecayLR", '
    '"params": {{"warmup_num_steps": {warmup}, "total_num_steps": {total}}}}}}}\n'
)


class TrainerConfigMismatch(ScriptRule):
    code = "DSL435"
    slug = "trainer-config-mismatch"
    message = "the Hugging Face Trainer refuses this DeepSpeed config: a value contradicts the TrainingArguments"
    severity = Severity.ERROR
    needs_engine = False
    required_tokens = (b"TrainingArguments", b"deepspeed")
    # a Trainer's arguments parsed from a launch, or one of TRL's trainer configs (their names: `Config` alone is in
    # every DeepSpeed module)
    alternative_tokens = (
        (b"HfArgumentParser",),
        (b"TrainingArguments",),  # under an accelerate launch whose YAML names the config: no `deepspeed` here
        *((name.encode(),) for name in sorted(TRL_TRAINING_ARGUMENTS)),
    )
    # the config comes from the call's `deepspeed=` or from a launch's `--deepspeed CONFIG`
    needs_hf_config = True
    docs = RuleDocs(
        what="""
            Flags a `TrainingArguments(deepspeed=...)` (also `Seq2SeqTrainingArguments` and TRL's trainer
            configs) whose DeepSpeed config, a file or a dict the script writes, sets a key that the Trainer
            compares with its arguments to another value: `train_micro_batch_size_per_gpu` (with
            `per_device_train_batch_size`), `gradient_accumulation_steps`, `gradient_clipping`
            (`max_grad_norm`), the optimizer's `lr`, `betas`, `eps`, `weight_decay`, the scheduler's
            `warmup_max_lr` (`learning_rate`), `fp16.enabled` (`fp16`/`fp16_full_eval`) and `bf16.enabled`
            (`bf16`/ `bf16_full_eval`); and, compared when `train()` builds the engine, the scheduler's
            `total_num_steps` (the optimizer steps: `max_steps`, or without it a count of the data that a
            written number matches only by chance) and `warmup_num_steps` (`warmup_steps`, or the share
            `warmup_ratio` of a known total; 0 when neither is given). It also flags, at the script's
            `HfArgumentParser`, a launch that passes `--deepspeed ds.json` with options contradicting that
            file (`--bf16` beside `"fp16": {"enabled": true}`), naming the launch; and arguments that name no
            config under an `accelerate launch` whose YAML runs DeepSpeed with a config file (the Trainer
            compares that one). The
            arguments' values are the literal keywords or options; a field not given counts with
            transformers' default only for transformers' own classes, and for a class of the script deriving
            from one that redefines no compared field and has no `__post_init__` of its own. A value built
            at run time, a splatted mapping, another fp16 backend (`half_precision_backend`) or
            `auto_find_batch_size`: not compared.
        """,
        why="""
            transformers reads the config when the TrainingArguments are made
            (`HfTrainerDeepSpeedConfig.trainer_config_process`, `fill_match`): a value `"auto"` is filled with
            the arguments' value, any other value must equal it. Each difference is recorded, and when the
            Trainer builds the engine (`trainer_config_finalize`) it raises "Please correct the following
            DeepSpeed config values that mismatch TrainingArguments values", after the model is loaded and the
            data prepared. Write `"auto"` for the key (the Trainer then fills it), or give the same value on
            both sides.
        """,
        example="""
            # ds.json: {"fp16": {"enabled": true}, "train_micro_batch_size_per_gpu": 4}
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, deepspeed="ds.json")
        """,
        use_instead="""
            # ds.json: {"fp16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto"}
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, fp16=True, deepspeed="ds.json")
        """,
    )
    valid = (
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", fp16=True, deepspeed="ds.json")
            """,
            files=(("ds.json", _FP16_FILE),),
        ),
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", bf16=True, deepspeed="ds.json")
            """,
            files=(("ds.json", _AUTO_FILE),),
        ),
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", **options, deepspeed="ds.json")
            """,
            files=(("ds.json", _FP16_FILE),),
        ),
        Valid(
            """
            from transformers import TrainingArguments
            ds = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0}
            args = TrainingArguments(
                output_dir="out", per_device_train_batch_size=4, gradient_accumulation_steps=2, deepspeed=ds
            )
            """
        ),
        Valid(
            """
            from trl import SFTConfig
            args = SFTConfig(output_dir="out", deepspeed="ds.json")
            """,
            files=(("ds.json", _FP16_FILE),),
        ),
        Valid(_PARSING, files=(("run.sh", "deepspeed train.py --fp16 --deepspeed ds.json\n"), ("ds.json", _FP16_FILE))),
        Valid(
            _PARSING,
            files=(("run.sh", "deepspeed train.py --fp16 $FP16 --deepspeed ds.json\n"), ("ds.json", _FP16_FILE)),
        ),
        # more options may come (`"$@"`), or the command is a sketch (an elided path): an absent --fp16 is unknown
        Valid(_PARSING, files=(("run.sh", 'deepspeed train.py --deepspeed ds.json "$@"\n'), ("ds.json", _FP16_FILE))),
        Valid(
            _PARSING,
            files=(
                ("run.sh", "deepspeed train.py --output_dir /scratch/.../out --deepspeed ds.json\n"),
                ("ds.json", _FP16_FILE),
            ),
        ),
        Valid(
            _PARSING_OWN,
            files=(("run.sh", "deepspeed train.py --deepspeed ds.json\n"), ("ds.json", _FP16_FILE)),
        ),
        Valid(  # the schedule's steps: "auto", the given max_steps and warmup_steps, a ratio of a counted total
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", max_steps=500, warmup_steps=50, deepspeed="ds.json")
            ratio = TrainingArguments(output_dir="out", warmup_ratio=0.1, deepspeed="ratio.json")
            counted = TrainingArguments(output_dir="out", warmup_steps=50, deepspeed="auto.json")
            """,
            files=(
                ("ds.json", _SCHEDULE.format(warmup=50, total=500)),
                ("ratio.json", _SCHEDULE.format(warmup=40, total='"auto"')),
                ("auto.json", _SCHEDULE.format(warmup='"auto"', total='"auto"')),
            ),
        ),
        Valid(  # a __post_init__ of its own may set any field
            _PARSING_SUBCLASS.replace(
                "    model_max_length: int = 512\n",
                "    model_max_length: int = 512\n\n    def __post_init__(self):\n        self.fp16 = True\n"
                "        super().__post_init__()\n",
            ),
            files=(("run.sh", "deepspeed train.py --deepspeed ds.json\n"), ("ds.json", _FP16_FILE)),
        ),
    )
    invalid = (
        # a written total the Trainer counts from the data; a warmup where no warmup is asked for (0); the share
        # of a known total
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed="ds.json")
            warm = TrainingArguments(output_dir="out", deepspeed="warm.json")
            share = TrainingArguments(output_dir="out", max_steps=1000, warmup_ratio=0.1, deepspeed="share.json")
            """,
            lines=(3, 4, 5),
            files=(
                ("ds.json", _SCHEDULE.format(warmup='"auto"', total=1000)),
                ("warm.json", _SCHEDULE.format(warmup=100, total='"auto"')),
                ("share.json", _SCHEDULE.format(warmup=10, total=1000)),
            ),
        ),
        # arguments that name no config, under an accelerate launch whose YAML runs DeepSpeed with a config file
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", learning_rate=5e-5)
            """,
            lines=(3,),
            files=(
                ("run.sh", "accelerate launch --config_file acc.yaml train.py\n"),
                (
                    "acc.yaml",
                    "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
                    "num_processes: 2\n",
                ),
                ("ds.json", '{"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}\n'),
            ),
        ),
        # a TRL config leaves `auto_find_batch_size` off as transformers does: the batch sizes are compared
        Invalid(
            """
            from trl import SFTConfig
            args = SFTConfig(output_dir="out", per_device_train_batch_size=4, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", '{"train_micro_batch_size_per_gpu": 2}\n'),),
        ),
        Invalid(
            _PARSING_SUBCLASS,
            lines=(9,),
            files=(("run.sh", "deepspeed train.py --deepspeed ds.json\n"), ("ds.json", _FP16_FILE)),
        ),
        Invalid(
            _PARSING_DATA,
            lines=(8,),
            files=(("run.sh", "deepspeed train.py --deepspeed ds.json\n"), ("ds.json", _FP16_FILE)),
        ),
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", _FP16_FILE),),
        ),
        Invalid(
            """
            from transformers import Seq2SeqTrainingArguments
            args = Seq2SeqTrainingArguments(output_dir="out", fp16=True, bf16=False, deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", '{"bf16": {"enabled": true}, "fp16": {"enabled": false}}\n'),),
        ),
        Invalid(
            """
            from transformers import TrainingArguments
            ds = {"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW", "params": {"lr": 3e-5}}}
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, deepspeed=ds)
            """,
            lines=(4,),
        ),
        Invalid(
            _PARSING,
            lines=(3,),
            files=(
                ("run.sh", "deepspeed train.py --bf16 --deepspeed ds.json\n"),
                ("ds.json", _FP16_FILE),
            ),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        expression = trainer_config_expression(self.context, node)
        if expression is not None:
            config = resolve_config_expression(self.context, expression)
            if config is not None:
                self._check_call(node, config, "", ())
        elif is_training_arguments(self.context, node) and not _may_pass_deepspeed(self.context, node):
            for launch, launched in accelerate_trainer_configs(self.context):  # the accelerate launch's config
                self._check_call(node, launched, " under accelerate launch", (launch.launch,))

    def _check_call(self, node: cst.Call, config: ResolvedConfig, where: str, related: tuple[Related, ...]) -> None:
        arguments: dict[str, object] = {}
        # the keywords, with the dicts splatted into the call; None: `**options` or positional fields not known
        # (any field may be set)
        passed = known_arguments(self.context, node, positional=1)  # `output_dir` may come first
        for name, written in (passed or {}).items():
            if name in MATCHED_FIELDS:
                value = literal_value(written)
                if value is UNKNOWN:  # the script's own option at the value every launch gives it
                    value = command_line_value(self.context, written)[0]
                arguments[name] = value
        if passed is None:  # the keywords written, as before
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in MATCHED_FIELDS:
                    value = literal_value(arg.value)
                    if value is UNKNOWN:
                        value = command_line_value(self.context, arg.value)[0]
                    arguments[arg.keyword.value] = value
        defaults = passed is not None and self._keeps_defaults(self.context.module, node.func)
        if not defaults and passed is not None and _trl_config(node.func):
            arguments.setdefault(TRAINER_BATCH_FILL_ONLY, False)  # no TRL config changes transformers' default
        found = mismatches(config, arguments, defaults)
        if found:
            given = next((m.given for m in found if m.given is not None), None)
            at = (passed or {}).get(given) if given is not None else None
            if at is None and given is not None:
                at = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == given), None)
            self._report(at if at is not None else node.func, found, config, where, related)

    def leave_Module(self, original_node: cst.Module) -> None:
        parser = self._parser(original_node)
        if parser is None:
            return
        call, defaults = parser
        for launch, config in launched_trainer_configs(self.context):
            # an option the launch may give beyond those written (`"$@"`, `...`) has no default to compare
            found = mismatches(config, launch_arguments(launch.options), defaults and not launch.options_open)
            if found:
                where = f" from {os.path.basename(launch.launch.path)}:{launch.launch.line}"
                self._report(call, found, config, where, (launch.launch,))

    def _parser(self, module: cst.Module) -> tuple[cst.Call, bool] | None:
        """The script's `HfArgumentParser(...)` call, and whether every TrainingArguments class it is given is
        transformers' own (its defaults are then known)."""
        for call in argument_parsers(module):
            if not call.args:
                continue
            first = call.args[0].value
            classes = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
            own = any(self._keeps_defaults(module, c) for c in classes)
            foreign = any(self._may_change_defaults(module, c) for c in classes)
            return call, own and not foreign
        return None

    def _keeps_defaults(self, module: cst.Module, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A TrainingArguments class whose compared fields have transformers' defaults: transformers' own, or a
        class of this module deriving from one that redefines none of them (no field of `MATCHED_FIELDS`, no
        `__post_init__` of its own: `class TrainingArguments(transformers.TrainingArguments)` adding fields)."""
        if hf_class_name(self.context, node) in TRAINING_ARGUMENTS:
            return True
        found = self._local_class(module, node)
        if found is None or depth > 4 or not found.bases:
            return False
        return not _redefines_fields(found) and all(
            self._keeps_defaults(module, b.value, depth + 1) for b in found.bases
        )

    def _may_change_defaults(self, module: cst.Module, node: cst.BaseExpression) -> bool:
        """A class handed to the parser that may redefine TrainingArguments' fields: one of this module deriving
        from a `*TrainingArguments` that `_keeps_defaults` does not vouch for, or one imported under such a name
        (`DataTrainingArguments`, a plain dataclass of this module, cannot)."""
        if hf_class_name(self.context, node) is not None or self._keeps_defaults(module, node):
            return False
        name = dotted_name(node)
        if name is None:
            return True
        found = self._local_class(module, node)
        if found is not None:
            return any(
                (base := dotted_name(b.value)) is None or base.endswith("TrainingArguments") for b in found.bases
            )
        return name.endswith("TrainingArguments")

    @staticmethod
    def _local_class(module: cst.Module, node: cst.BaseExpression) -> cst.ClassDef | None:
        name = dotted_name(node)
        return next((s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == name), None)

    def _report(
        self,
        node: cst.CSTNode,
        found: list[Mismatch],
        config: ResolvedConfig,
        where: str,
        related: tuple[Related, ...] = (),
    ) -> None:
        name = os.path.basename(str(config.path)) if config.path is not None else "the config dict"
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        message = f'the HF Trainer refuses {name}{where}: {found[0].describe()}{more}; write "auto"'
        places = list(related)
        for mismatch in found:  # each value where it is written: the config file, or the dict the script writes
            start = mismatch.node.start if mismatch.node is not None else None
            if config.path is not None or start is not None:
                line, column = (start.line, start.column) if start is not None else (1, 1)
                written = shown_path(str(config.path)) if config.path is not None else self.context.path
                places.append(Related(written, line, column, mismatch.key))
        self.report(node, message, related=places)


def _redefines_fields(found: cst.ClassDef) -> bool:
    """Whether a class body writes a compared TrainingArguments field, or a `__post_init__` that may."""
    for statement in found.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__post_init__":
            return True
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for part in small:
            targets = [part.target] if isinstance(part, cst.AnnAssign) else []
            targets += [t.target for t in part.targets] if isinstance(part, cst.Assign) else []
            if any(isinstance(t, cst.Name) and t.value in MATCHED_FIELDS for t in targets):
                return True
    return False


def _may_pass_deepspeed(context: ScriptContext, call: cst.Call) -> bool:
    """The call is given a `deepspeed` keyword, or a splatted dict that holds one or is not known."""
    if any(arg.keyword is not None and arg.keyword.value == "deepspeed" for arg in call.args):
        return True
    passed = known_arguments(context, call, positional=len(call.args))
    return passed is None or "deepspeed" in passed


def _trl_config(func: cst.BaseExpression) -> bool:
    name = dotted_name(func) or ""
    return name.rsplit(".", 1)[-1] in TRL_TRAINING_ARGUMENTS

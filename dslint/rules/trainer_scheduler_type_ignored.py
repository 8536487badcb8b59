"""DSL454: the Hugging Face Trainer's `lr_scheduler_type` is ignored because its DeepSpeed config has a scheduler."""

from __future__ import annotations

import os

import libcst as cst

from dslint.config.tree import node_at
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import TRAINER_SCHEDULE_EQUIVALENTS
from dslint.project.config_edits import fire_given_text, literal_value
from dslint.project.config_link import resolve_config_expression
from dslint.project.inputs import shown_path
from dslint.project.resolved_configs import ResolvedConfig
from dslint.project.splatted_arguments import call_argument, trainer_config_expression
from dslint.project.trainer_launches import argument_parsers
from dslint.project.trainer_matches import launched_trainer_configs

_WARMUP_DECAY = (
    '{"train_micro_batch_size_per_gpu": "auto",\n'
    ' "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": "auto", "total_num_steps": "auto"}}}\n'
)
_WARMUP = '{"train_micro_batch_size_per_gpu": "auto", "scheduler": {"type": "WarmupLR"}}\n'
_NO_SCHEDULER = '{"train_micro_batch_size_per_gpu": "auto"}\n'
# a Python Fire script: each parameter of the function it runs is a `--name` option
_FIRE = """\
import fire
from transformers import Trainer, TrainingArguments

def train(lr_scheduler_type: str = "cosine", ds_config: str = "ds.json"):
    args = TrainingArguments(output_dir="out", lr_scheduler_type=lr_scheduler_type, deepspeed=ds_config)
    Trainer(model=build(), args=args).train()

if __name__ == "__main__":
    fire.Fire(train)
"""
_PARSING = """\
from transformers import HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
Trainer(model=build(), args=args).train()
"""


class TrainerSchedulerTypeIgnored(ScriptRule):
    code = "DSL454"
    slug = "trainer-scheduler-type-ignored"
    message = "the DeepSpeed config's scheduler replaces the Trainer's lr_scheduler_type"
    severity = Severity.WARNING
    needs_engine = False
    required_tokens = (b"lr_scheduler_type", b"deepspeed")
    alternative_tokens = ((b"HfArgumentParser",), (b"Parser", b"TrainingArguments"))
    needs_hf_config = True
    docs = RuleDocs(
        what="""
            Flags a `TrainingArguments(lr_scheduler_type=..., deepspeed=...)` (also `Seq2SeqTrainingArguments` and
            TRL's trainer configs) whose DeepSpeed config, a file or a dict the script writes, has a `scheduler`
            section of another shape than the type asked for: `linear` is DeepSpeed's `WarmupDecayLR`, `cosine`
            its `WarmupCosineLR`, `constant_with_warmup` and `constant` its `WarmupLR`; any other type has no
            DeepSpeed twin. It also flags, at the script's `HfArgumentParser`, a launch that passes
            `--lr_scheduler_type` beside `--deepspeed ds.json` with such a section, naming every such launch. A type
            built at run time, or a scheduler section whose type is not a literal, is not compared; a type left
            to its default is no choice and is not flagged. A parameter of the function Python Fire runs is the
            option of its name: flagged when every launch of the script gives it, with one value.
        """,
        why="""
            When the config has a `scheduler` section, transformers does not build the scheduler the arguments
            ask for: `deepspeed_optim_sched` hands the Trainer a `DummyScheduler`, and DeepSpeed builds the
            config's schedule instead (its `"auto"` parameters filled from the warm-up and step counts). Nothing
            is logged: a run asked to decay on a cosine keeps a constant rate after warm-up under `WarmupLR`, or
            decays linearly under `WarmupDecayLR`. Remove the config's `scheduler` section to let the Trainer
            build the schedule its arguments name, or make the two agree.
        """,
        example="""
            # ds.json: {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}, ...}
            args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed="ds.json")
        """,
        use_instead="""
            # ds.json: no "scheduler" section: the Trainer builds the cosine schedule
            args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed="ds.json")
        """,
    )
    valid = (
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed="ds.json")
            """,
            files=(("ds.json", _NO_SCHEDULER),),
        ),
        # the config's schedule is the one asked for
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", lr_scheduler_type="linear", deepspeed="ds.json")
            """,
            files=(("ds.json", _WARMUP_DECAY),),
        ),
        # no type asked for: the default is no choice
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed="ds.json")
            """,
            files=(("ds.json", _WARMUP),),
        ),
        Valid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", lr_scheduler_type=opts.schedule, deepspeed="ds.json")
            """,
            files=(("ds.json", _WARMUP),),
        ),
        Valid(
            _PARSING,
            files=(
                ("run.sh", "deepspeed train.py --lr_scheduler_type cosine --deepspeed ds.json\n"),
                ("ds.json", _NO_SCHEDULER),
            ),
        ),
        # a Fire parameter the launch leaves to its default: no choice made
        Valid(
            _FIRE,
            files=(("run.sh", "deepspeed train.py --ds_config ds.json\n"), ("ds.json", _WARMUP_DECAY)),
        ),
    )
    invalid = (
        Invalid(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", _WARMUP),),
        ),
        # the config's path built from the script's own location
        Invalid(
            """
            from pathlib import Path
            from transformers import TrainingArguments
            CONFIG = Path(__file__).resolve().parent / "configs" / "ds.json"
            args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed=str(CONFIG))
            """,
            lines=(5,),
            files=(("configs/ds.json", _WARMUP),),
        ),
        Invalid(
            """
            from trl import SFTConfig
            ds = {"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": "auto"}}}
            args = SFTConfig(output_dir="out", lr_scheduler_type="constant_with_warmup", deepspeed=ds)
            """,
            lines=(4,),
        ),
        # a Fire parameter every launch gives
        Invalid(
            _FIRE,
            lines=(5,),
            files=(
                ("run.sh", "deepspeed train.py --lr_scheduler_type cosine --ds_config ds.json\n"),
                ("ds.json", _WARMUP_DECAY),
            ),
        ),
        Invalid(
            _PARSING,
            lines=(3,),
            files=(
                ("run.sh", "deepspeed train.py --lr_scheduler_type cosine --deepspeed ds.json\n"),
                ("ds.json", _WARMUP_DECAY),
            ),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        expression = trainer_config_expression(self.context, node)
        asked = call_argument(self.context, node, "lr_scheduler_type") if expression is not None else None
        if asked is None or expression is None:
            return
        wanted = _schedule_name(literal_value(asked))
        where = ""
        related: tuple[Related, ...] = ()
        if wanted is None and isinstance(asked, cst.Name):  # a Fire parameter every launch gives (`--name cosine`)
            given, related = fire_given_text(self.context, asked)
            wanted, where = _schedule_name(given), " from the launch" if len(related) == 1 else " from the launches"
        config = resolve_config_expression(self.context, expression)
        if wanted is not None and config is not None:
            self._check(asked, wanted, config, where, related)

    def leave_Module(self, original_node: cst.Module) -> None:
        parser = next(argument_parsers(original_node), None)
        if parser is None:
            return
        # launches asking the same type beside the same config make one finding, naming each launch
        launches: dict[tuple[str, object], tuple[ResolvedConfig, list[Related]]] = {}
        for launch, config in launched_trainer_configs(self.context):
            wanted = _schedule_name(launch.options.get("lr_scheduler_type"))
            if wanted is not None:
                _, places = launches.setdefault((wanted, config.path), (config, []))
                places.extend((launch.launch, launch.option_evidence("lr_scheduler_type")))
        for (wanted, _), (config, places) in launches.items():
            where = " from the launch" if len(places) <= 2 else f" from {len(places) // 2} launches"
            self._check(parser, wanted, config, where, tuple(dict.fromkeys(places)))

    def _check(
        self,
        node: cst.CSTNode,
        wanted: str,
        config: ResolvedConfig,
        where: str,
        related: tuple[Related, ...] = (),
    ) -> None:
        kind = config.get("scheduler", "type")
        if not isinstance(kind, str) or TRAINER_SCHEDULE_EQUIVALENTS.get(wanted) == kind:
            return
        name = os.path.basename(str(config.path)) if config.path is not None else "the config dict"
        message = f"{kind} of {name} runs, not lr_scheduler_type={wanted!r}{where}; drop its scheduler section"
        places = list(related)
        at = node_at(config.tree, "scheduler", "type") if config.tree is not None else None
        if config.path is not None and at is not None and at.start is not None:
            places.append(Related(shown_path(str(config.path)), at.start.line, at.start.column, "scheduler.type"))
        self.report(node, message, related=places)


def _schedule_name(value: object) -> str | None:
    """`"cosine"`, `SchedulerType.COSINE` or `"SchedulerType.COSINE"` as transformers' name of the schedule."""
    if not isinstance(value, str) or not value:
        return None
    return value.rsplit(".", 1)[-1].lower()

"""DSL407: batch values that cannot satisfy train = micro x accumulation x world size."""

from __future__ import annotations

from typing import Any

from dslint.config.batch import holds, some_world_size_holds
from dslint.config.facts import batch_values, is_auto
from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Related, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.project_index import LaunchIssue

# A launch case's project: a script handing its --deepspeed_config to initialize, and a config right on one GPU.
_PROJECT = (
    (
        "train.py",
        "import argparse, deepspeed\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--local_rank', type=int)\n"
        "deepspeed.add_config_arguments(p)\n"
        "args = p.parse_args()\n"
        "engine, *_ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())\n",
    ),
    ("ds.json", '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 32}\n'),
)


class UnsatisfiableBatchSize(ConfigRule, LaunchRule):
    """A config file's batch values are checked in the file; a launch whose world size they fail, while another
    world size would hold, is reported at the launch (`project/launch_batches.py`)."""

    code = "DSL407"
    slug = "unsatisfiable-batch-size"
    message = "train_batch_size must equal micro batch x gradient accumulation x world size; DeepSpeed stops"
    severity = Severity.ERROR
    kind = "unsatisfiable_batch"
    case_path = "ds_config.json"
    docs = RuleDocs(
        what="""
            Flags batch values that DeepSpeed's batch assertion rejects for every possible world size (for
            example `train_batch_size` 32 with micro batch 3), or for the world size when it is known: given
            with `--world-size`, or read from each launcher that passes the config (`deepspeed --num_gpus`,
            `--num_nodes`, a hostfile's slots, `--include`, `CUDA_VISIBLE_DEVICES`, `torchrun
            --nproc_per_node`, `accelerate launch --num_processes`), or from each launch of a script that
            picks the config by a path in its code (`f"ds/stage_{args.stage}.json"` read with the launch's
            `--stage`, or the one literal config path the script writes); and batch values that are not
            positive; and a fixed `train_batch_size` that no `"auto"` micro batch or accumulation filled in
            (by the Hugging Face Trainer or accelerate) can satisfy (`train_batch_size` 4 with accumulation 16).
            When the values hold for some number of GPUs but not for a launch's, the finding is at that
            launch's line (a shell script, a Makefile, a README's command), naming the config's batch values: the
            same file may be right for the project's other launches; not at a launch that an earlier refusal
            stops (DSL443, DSL444, DSL427, DSL450, DSL434: it never reaches the batch check). Values that hold for
            no world size, and
            launches written in a notebook or a Python file, are reported in the config. Not when the scripts
            that load the file set one of the three values in code before `initialize`
            (`cfg["train_batch_size"] = micro * world * accumulation`).
        """,
        why="""
            DeepSpeed fills in the batch value that is missing and then asserts
            `train_batch_size == train_micro_batch_size_per_gpu * gradient_accumulation_steps * world_size`
            (`runtime/config.py: _batch_assertion`), and that each is greater than 0. When the numbers cannot
            hold on any number of GPUs the run stops at start-up on every rank.
        """,
        example="""
            {
              "train_batch_size": 32,
              "train_micro_batch_size_per_gpu": 3
            }
        """,
        use_instead="""
            {
              "train_micro_batch_size_per_gpu": 4,
              "gradient_accumulation_steps": 2
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}\n',
        ),
        # "auto" values (the Trainer fills them): some filling holds
        Valid(
            '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 16}\n'
        ),
        Valid(
            '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}\n'
        ),
        Valid('{"train_batch_size": 48, "train_micro_batch_size_per_gpu": 4}\n'),
        Valid("deepspeed --num_gpus 1 train.py --deepspeed_config ds.json\n", path="run.sh", files=_PROJECT),
        Valid("CUDA_VISIBLE_DEVICES=0 deepspeed train.py --deepspeed_config ds.json\n", path="run.sh", files=_PROJECT),
    )
    invalid = (
        # no micro batch the Trainer fills in makes 4 a multiple of 16 x GPUs
        Invalid(
            '{\n  "gradient_accumulation_steps": 16,\n  "train_batch_size": 4,\n'
            '  "train_micro_batch_size_per_gpu": "auto"\n}\n',
            lines=(3,),
        ),
        Invalid(
            '{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 3\n}\n',
            lines=(2,),
        ),
        Invalid(
            '{\n  "train_batch_size": 30,\n  "train_micro_batch_size_per_gpu": 4,\n'
            '  "gradient_accumulation_steps": 2\n}\n',
            lines=(2,),
        ),
        Invalid('{\n  "train_micro_batch_size_per_gpu": 0\n}\n', lines=(2,)),
        Invalid(
            "deepspeed --num_gpus 1 train.py --deepspeed_config ds.json\n"
            "deepspeed --num_gpus 2 train.py \\\n    --deepspeed_config ds.json\n",
            lines=(2,),
            path="run.sh",
            files=_PROJECT,
        ),
    )

    def check(self) -> None:
        train, micro, accum = batch_values(self.root)
        values: tuple[Any, ...] = (train, micro, accum)
        if self.root.opaque:
            return
        if any(v is UNKNOWN for v in values):
            self._filled_values(train, micro, accum)
            return
        if train is None and micro is None:
            return  # DSL406
        if self.context.replaced_keys & {
            "train_batch_size",
            "train_micro_batch_size_per_gpu",
            "gradient_accumulation_steps",
        }:
            return  # the scripts reading the file set a batch value in code before initialize
        world = self.context.world_size
        related: tuple[Related, ...] = ()
        if world is not None:
            ok = bool(holds(train, micro, accum, world))
            detail = f"with world size {world}"
        elif self.context.launch_world_sizes:
            failing = [w for w in self.context.launch_world_sizes if not holds(train, micro, accum, w.ranks)]
            if self.context.batch_at_launches and some_world_size_holds(train, micro, accum):
                failing = [w for w in failing if not w.at_launcher]  # the launch's finding (`message_for`)
            ok = not failing
            if failing:
                first = failing[0]
                others = f" and {len(failing) - 1} more launch(es)" if len(failing) > 1 else ""
                detail = (
                    f"with world size {first.ranks} ({first.source}: {first.launch.path}:{first.launch.line}{others})"
                )
                related = tuple(w.launch for w in failing)
        else:
            ok = some_world_size_holds(train, micro, accum)
            detail = "for any number of GPUs"
        if ok:
            return
        anchor = self.root.entry("train_batch_size") or self.root.entry("train_micro_batch_size_per_gpu")
        assert anchor is not None
        shown = ", ".join(
            f"{name} {value}"
            for name, value in zip(
                ("train", "micro", "accumulation"),  # train_batch_size, train_micro_batch_size_per_gpu, ...
                values,
                strict=True,
            )
            if value is not None
        )
        self.report_key(
            anchor,
            f"batch sizes {shown}: train != micro x accumulation x GPUs {detail}",
            related=related,
        )

    def _filled_values(self, train: Any, micro: Any, accum: Any) -> None:
        """A fixed `train_batch_size` beside an `"auto"` micro batch or accumulation (the Hugging Face Trainer or
        accelerate fills them with positive whole numbers): no filling can hold when the train batch is not a
        multiple of the other fixed value (`train_batch_size` 4 with `gradient_accumulation_steps` 16)."""
        names = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
        nodes = [self.root.get(name) for name in names]
        if not isinstance(train, int) or isinstance(train, bool) or train <= 0:
            return
        fixed = [v for v in (micro, accum) if v is not UNKNOWN]
        filled = [n for n, v in zip(nodes[1:], (micro, accum), strict=True) if v is UNKNOWN]
        if not filled or not all(n is not None and is_auto(n) for n in filled):
            return  # a value that is neither a number nor "auto" (a script's expression): not known
        if any(not isinstance(v, int) or isinstance(v, bool) or v <= 0 for v in fixed if v is not None):
            return
        product = 1
        for value in fixed:
            product *= value if value is not None else 1
        if train % product == 0:
            return  # the "auto" value and the world size can make it hold
        anchor = self.root.entry("train_batch_size")
        assert anchor is not None
        shown = ", ".join(
            f"{label} {value}"
            for label, value in zip(("train", "micro", "accumulation"), (train, micro, accum), strict=True)
            if value is not None and value is not UNKNOWN
        )
        self.report_key(
            anchor,
            f'batch sizes {shown}: train != micro x accumulation x GPUs, whatever fills "auto" and however many GPUs',
        )

    @classmethod
    def message_for(cls, issue: LaunchIssue) -> str:
        return f"this launch starts {issue.detail}: train != micro x accumulation x GPUs; DeepSpeed stops"

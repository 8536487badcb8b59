"""DSL407: batch values that cannot satisfy train = micro x accumulation x world size."""

from __future__ import annotations

import math
from typing import Any

from dslint.config.facts import batch_values
from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Related, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule import Invalid, RuleDocs, Valid

MAX_WORLD_SIZE = 1 << 16


Number = int | float


def derive(
    train: Number | None, micro: Number | None, accum: Number | None, world: int
) -> tuple[Number, Number, Number] | None:
    """DeepSpeed's `_set_batch_related_parameters` for one world size; None when neither batch value is given."""
    if train is not None and micro is not None and accum is not None:
        return train, micro, accum
    if train is not None and micro is not None:
        return train, micro, train // micro // world if micro else 0
    if train is not None and accum is not None:
        return train, (train // world // accum if accum else 0), accum
    if micro is not None and accum is not None:
        return micro * accum * world, micro, accum
    if train is not None:
        return train, train // world, 1
    if micro is not None:
        return micro * world, micro, 1
    return None


def holds(train: Number | None, micro: Number | None, accum: Number | None, world: int) -> bool | None:
    """Whether DeepSpeed's `_batch_assertion` passes for this world size (None: no batch value given)."""
    derived = derive(train, micro, accum, world)
    if derived is None:
        return None
    t, m, a = derived
    return t > 0 and m > 0 and a > 0 and t == m * a * world


def some_world_size_holds(train: Number | None, micro: Number | None, accum: Number | None) -> bool:
    limit = (
        min(MAX_WORLD_SIZE, max(int(train), 1))
        if train is not None and (isinstance(train, int) or math.isfinite(train))
        else 1
    )
    return any(holds(train, micro, accum, world) for world in range(1, limit + 1))


class UnsatisfiableBatchSize(ConfigRule):
    code = "DSL407"
    slug = "unsatisfiable-batch-size"
    message = "train_batch_size must equal micro batch x gradient accumulation x world size; DeepSpeed stops"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags batch values that DeepSpeed's batch assertion rejects for every possible world size (for
            example `train_batch_size` 32 with micro batch 3), or for the world size when it is known: given
            with `--world-size`, or read from each launcher that passes the config (`deepspeed --num_gpus`,
            `--num_nodes`, a hostfile's slots, `--include`, `CUDA_VISIBLE_DEVICES`, `torchrun
            --nproc_per_node`, `accelerate launch --num_processes`), or from each launch of a script that
            picks the config by a path in its code (`f"ds/stage_{args.stage}.json"` read with the launch's
            `--stage`, or the one literal config path the script writes), where the finding names the launch; and
            batch values that are not positive. Not when the scripts that load the file set one of the three
            values in code before `initialize` (`cfg["train_batch_size"] = micro * world * accumulation`).
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
        Valid('{"train_batch_size": 48, "train_micro_batch_size_per_gpu": 4}\n'),
    )
    invalid = (
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
    )

    def check(self) -> None:
        train, micro, accum = batch_values(self.root)
        values: tuple[Any, ...] = (train, micro, accum)
        if any(v is UNKNOWN for v in values) or self.root.opaque:
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

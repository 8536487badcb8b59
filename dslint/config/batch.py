"""DeepSpeed's batch arithmetic: the value it derives when one of train, micro and accumulation is missing, and
its assertion `train_batch_size == micro batch x accumulation x world size` (`runtime/config.py`:
`_set_batch_related_parameters`, `_batch_assertion`), for DSL407 in a config file and at a launch."""

from __future__ import annotations

import math

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

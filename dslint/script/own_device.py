"""A move of the model to the rank's own GPU before a DeepSpeed engine that keeps every parameter whole.

`deepspeed.initialize` moves the module to the rank's device itself (`runtime/engine.py`
`_configure_distributed_model`: `self.module.to(self.device)`, the device `LOCAL_RANK` names). A move made before it
to that same device (`cuda:{local_rank}`, `accelerator.device`, the Trainer's `training_args.device`, `.cuda()` after
`torch.cuda.set_device(local_rank)`) lands where the engine would put the module; under a config known to run
ZeRO stage 0, 1 or 2 every rank holds the whole model on its GPU anyway, so the move is redundant, not a mistake
that costs memory. Under ZeRO-3 (parameters partitioned), a stage that cannot be read, or a move to the un-indexed
device before any device is set (cuda:0 on every rank) in a script that may run as several processes, the move
stays a finding.
"""

from __future__ import annotations

import libcst as cst

from dslint.model.values import CPU, CURRENT_CUDA, Device, DeviceIndex
from dslint.script.devices import device_index, devices_of
from dslint.script.facts import ScriptFacts, method_name
from dslint.script.inference import device_set_before
from dslint.script.names import dotted_name
from dslint.script.one_rank import one_process_launches

# `<arguments>.device` of a Hugging Face TrainingArguments: the rank's own GPU (`_setup_devices` sets it from
# LOCAL_RANK)
_TRAINING_ARGUMENT_NAMES = frozenset({"training_args", "train_args", "training_arguments"})
_OWN = Device(True, DeviceIndex.LOCAL_RANK)


def moves_to_own_device(facts: ScriptFacts, call: cst.Call) -> bool:
    """`call` (`.cuda(...)` or `.to(...)`) moves to the rank's own GPU on every path."""
    name = method_name(call)
    if name == "cuda":
        if not call.args:
            return _current_is_own(facts, call)
        target: cst.BaseExpression = call.args[0].value
    elif name == "to":
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
        if given is None and call.args and call.args[0].keyword is None:
            given = call.args[0].value
        if given is None:
            return False
        target = given
    else:
        return False
    if _names_own_device(target):
        return True
    found = devices_of(facts, target, call)
    if not found:  # a bare index (`.to(local_rank)`, `.cuda(args.local_rank)`): a CUDA device of that index
        return device_index(facts, target, call) is DeviceIndex.LOCAL_RANK
    # in a script every launch of which starts one process, the CPU on another path (`"cuda" if
    # torch.cuda.is_available() else "cpu"`) is where DeepSpeed's accelerator puts the module there too (a script no
    # launch of the project starts is not presumed to run alone: the deepspeed launcher on every GPU runs such one)
    return all(
        device == _OWN
        or (device == CURRENT_CUDA and _current_is_own(facts, call))
        or (device == CPU and one_process_launches(facts))
        for device in found
    )


def _names_own_device(expr: cst.BaseExpression) -> bool:
    """`accelerator.device`, `self.accelerator.device`, `training_args.device`, `trainer.args.device`."""
    if not (isinstance(expr, cst.Attribute) and expr.attr.value == "device"):
        return False
    owner = dotted_name(expr.value)
    if owner is None:
        return False
    last = owner.rpartition(".")[2]
    return last == "accelerator" or last in _TRAINING_ARGUMENT_NAMES or owner.endswith("trainer.args")


def _current_is_own(facts: ScriptFacts, call: cst.Call) -> bool:
    """The current device is set (`torch.cuda.set_device(...)`) before `call`: the un-indexed device is then the
    rank's own; or every launch of the script starts one process, whose GPU is cuda:0, the current device."""
    return device_set_before(facts, facts.scope_at(call), facts.start(call)) or one_process_launches(facts)

"""`deepspeed.init_inference(...)`: the inference engine, where it puts its module, and when it sets the device.

What DeepSpeed 0.19.8 does (`deepspeed/inference/engine.py`, `InferenceEngine.__init__`):
- with tensor parallelism (`tensor_parallel.tp_size`, or the deprecated `mp_size`, above 1) the first engine of a
  process sets the current device from LOCAL_RANK (`_create_model_parallel_group`), then splits the module, and
  only then moves the module to the current device;
- with `tp_size` 1 (the default) no device is set: the module goes to the current device, cuda:0 unless the
  script set one;
- `keep_module_on_host=True` leaves the module where it is.

So a model moved to the un-indexed `"cuda"` before a tensor-parallel `init_inference` lands on cuda:0 in every
rank, whole, before the engine moves its share to the rank's own device; and the engine returned has already
placed its module, so moving it again does nothing useful. With one GPU (`mp_size` absent or 1) neither matters,
and nothing here answers for it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import libcst as cst

from dslint.model.engine import Engine, Kind, Origin
from dslint.script.facts import Pos, Scope, ScriptFacts
from dslint.script.hf_models import keyword_value
from dslint.script.model_moves import ModelMoves, ModelSink, moves_to_unindexed_cuda


@dataclass(eq=False)
class InferenceCall:
    call: cst.Call
    scope: Scope
    start: Pos
    end: Pos
    model: cst.BaseExpression | None  # init_inference(model, config=None, **kwargs): first positional or model=
    splits: bool  # tensor parallelism may be above 1: the engine sets the rank's device
    places_module: bool  # the engine moves its module to the current device (no keep_module_on_host, no config)
    engine: Engine = field(default_factory=lambda: Engine(Origin.CALL, Kind.INFERENCE), repr=False)


def _is_one(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Integer) and value.evaluated_value == 1


def _splits(call: cst.Call) -> bool:
    """`mp_size=` or `tensor_parallel={"tp_size": ...}` given and not the literal 1 (a run-time world size counts:
    with one process it is 1 and nothing depends on the answer)."""
    mp_size = keyword_value(call, "mp_size")
    if mp_size is not None and not _is_one(mp_size):
        return True
    tensor_parallel = keyword_value(call, "tensor_parallel")
    if isinstance(tensor_parallel, cst.Dict):
        for element in tensor_parallel.elements:
            if (
                isinstance(element, cst.DictElement)
                and isinstance(element.key, cst.SimpleString)
                and element.key.evaluated_value == "tp_size"
            ):
                return not _is_one(element.value)
    return False


def _places_module(call: cst.Call) -> bool:
    if any(a.star for a in call.args) or keyword_value(call, "config") is not None:
        return False  # a config dict or file may say keep_module_on_host
    keep = keyword_value(call, "keep_module_on_host")
    return keep is None or (isinstance(keep, cst.Name) and keep.value == "False")


def _model(call: cst.Call) -> cst.BaseExpression | None:
    given = keyword_value(call, "model")
    if given is not None:
        return given
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


_CACHE: weakref.WeakKeyDictionary[ScriptFacts, list[InferenceCall]] = weakref.WeakKeyDictionary()


def inference_calls(facts: ScriptFacts) -> list[InferenceCall]:
    """Every `deepspeed.init_inference(...)` of the file, in source order."""
    found = _CACHE.get(facts)
    if found is None:
        found = [
            InferenceCall(
                call,
                facts.scope_at(call),
                facts.start(call),
                facts.end(call),
                _model(call),
                _splits(call),
                _places_module(call),
            )
            for call in facts.inference_calls
        ]
        _CACHE[facts] = found
    return found


def inference_engine(facts: ScriptFacts, expr: cst.BaseExpression, at: cst.CSTNode) -> InferenceCall | None:
    """The init_inference call whose engine `expr` holds at `at` (`model = deepspeed.init_inference(model)`)."""
    if not facts.inference_calls:
        return None
    value = facts.assigned_value(expr, at)
    if not isinstance(value, cst.Call):
        return None
    return next((found for found in inference_calls(facts) if found.call is value), None)


def device_set_before(facts: ScriptFacts, scope: Scope, pos: Pos) -> bool:
    """Whether the current device is set before `pos` in `scope`: explicitly, by initialize, or by a
    tensor-parallel init_inference that has returned."""
    if facts.device_set_before(scope, pos) or facts.device_set_elsewhere(scope):
        return True
    return any(found.splits and found.scope is scope and found.end <= pos for found in inference_calls(facts))


def pending_inference(facts: ScriptFacts, node: cst.CSTNode) -> InferenceCall | None:
    """The tensor-parallel init_inference of this scope that runs after `node`, with no device set before
    `node`: until it runs, the un-indexed CUDA device is cuda:0 in every rank."""
    if not facts.inference_calls:
        return None
    scope = facts.scope_at(node)
    pos = facts.start(node)
    for found in inference_calls(facts):
        if found.splits and found.scope is scope and pos < found.start:
            return None if device_set_before(facts, scope, pos) else found
    return None


class InferenceMoves:
    """Moves of a model to the un-indexed CUDA device before a tensor-parallel init_inference receives it, with
    no device set before the move."""

    def __init__(self, facts: ScriptFacts) -> None:
        self.facts = facts
        self._targets = [found for found in inference_calls(facts) if found.splits and found.places_module]
        sinks = [
            ModelSink(found.model, found.scope, found.start, None, found.call)
            for found in self._targets
            if found.model is not None
        ]
        self._moves = ModelMoves(facts, sinks) if sinks else None

    def inference_for(self, call: cst.Call) -> InferenceCall | None:
        if self._moves is None or not moves_to_unindexed_cuda(self.facts, call):
            return None
        sink = self._moves.initialize_for(call)
        if sink is None or device_set_before(self.facts, self.facts.scope_at(call), self.facts.start(call)):
            return None
        return next((found for found in self._targets if found.call is sink.call), None)

"""Typed abstract values: what a name, an attribute or a returned expression holds, as the fixpoint sees it.

- `Results`: initialize's result tuple (or a helper's tuple or list of its items), with the role of each item (None for
  an item that is not one of initialize's results) and the call that made it (`InitSite`);
- `Keyed`: a dict of those results under constant string keys;
- `Item`: one of those results alone: the engine, `engine.module`, the optimizer, the dataloader or the
  scheduler initialize returns (`library.RESULT_ORDER`, `library.ENGINE_MODULE`), with its origin;
- `Maybe`: an `Item` on some paths only (`if use_ds: model, *_ = deepspeed.initialize(...)`);
- `Param`: the value of a parameter of the function being read, maybe unwrapped with `.module`, with the project
  class its annotation names;
- `Returned`: what a project function returns when nothing more is known of it (a model builder's model);
- `Either`: a name that paths bound differently, some of them to a project function's return and the others to a
  parameter or to such returns (`model = build_a()` in one arm, `build_b()` in the other; or the parameter kept):
  each option may be the value, nothing is asserted of the value itself;
- `NONE`: the constant None (an attribute set to None before its real value);
- `LibraryFunction`: a library's callable held as a value (`ds_init = deepspeed.initialize`): a call of it is a call
  of the library's function (`ds_init(args=args, model=model)` creates an engine);
- `Packed`: a tuple or list holding such a value beside others (`return parser.parse_args(), ds_init`);
- `Device`: a device an expression names (the CPU; CUDA's current device, un-indexed; a CUDA device indexed by a
  constant, the local rank, the global rank, or something else), read by `dslint.script.devices`.
The engine itself, with its origin, is `dslint.model.engine.Engine`. An unknown value is None. Values are frozen
and compare by content, so paths that agree merge.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, field

from dslint.model.conditions import Guard
from dslint.model.library import ENGINE, ENGINE_MODULE


@dataclass(frozen=True)
class InitSite:
    """A `deepspeed.initialize(...)` call: where an engine comes from."""

    path: str
    line: int
    column: int
    qualname: str  # the function holding it ("" at module level)
    config: ast.expr | None  # `config=`/`config_params=`, or None
    has_args: bool  # `args=` given (DeepSpeed then reads args.deepspeed_config)
    guards: tuple[Guard, ...] = ()  # what holds on the path to the call in its function (`model/conditions.py`)


@dataclass(frozen=True)
class Results:
    roles: tuple[str | None, ...]
    origin: InitSite


@dataclass(frozen=True)
class Keyed:
    """A dict of initialize's results under constant string keys (`{"engine": engine, "optimizer": opt}`)."""

    keys: tuple[str, ...]
    roles: tuple[str | None, ...]
    origin: InitSite

    def item(self, key: str) -> Item | None:
        if key not in self.keys:
            return None
        role = self.roles[self.keys.index(key)]
        return Item(role, self.origin) if role is not None else None


@dataclass(frozen=True)
class Item:
    role: str | None
    origin: InitSite


@dataclass(frozen=True)
class Maybe:
    item: Item


@dataclass(frozen=True)
class Param:
    """A parameter's value; `instance_of`: the project class its annotation names (`engine: RLHFEngine`), whose
    instance it then holds (what its attributes and methods are), which does not change what it is."""

    name: str
    unwrapped: bool = False
    instance_of: tuple[str, str] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Returned:
    """What a project function returns when nothing more is known of it; `via`: the functions that hand it on
    unchanged on the way (`def get_model(): m = build_net(); m.cuda(); return m`), which do not change what
    the value is (they are not compared) but are builders of it too."""

    path: str
    qualname: str
    via: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def builders(self) -> list[tuple[str, str]]:
        return [(self.path, self.qualname), *self.via]


@dataclass(frozen=True)
class Either:
    """The options of a name after paths that bound it differently, each a project function's return or a parameter
    (at least one a return): any of them may be what the name holds. Only the model's way to initialize reads it
    (each builder's return may be the model handed to it); everything else reads it as unknown."""

    options: tuple[Returned | Param, ...]


@dataclass(frozen=True)
class NoneConstant:
    pass


NONE = NoneConstant()


@dataclass(frozen=True)
class LibraryFunction:
    """A library's callable as a value, by its qualified name (`library.LibraryCall.name`), and where the value
    was taken (path, line: `ds_init = deepspeed.initialize`), which does not change what it is."""

    name: str
    taken: tuple[str, int] = field(default=("", 0), compare=False)


@dataclass(frozen=True)
class Packed:
    """A tuple or list of values, none of them initialize's results, at least one a `LibraryFunction`."""

    elements: tuple[Value, ...]


class DeviceIndex(enum.Enum):
    """How a CUDA device is chosen."""

    CURRENT = "the current device"  # "cuda", torch.device("cuda"), get_accelerator().device_name(): cuda:0 until set
    CONSTANT = "a constant index"  # "cuda:1", torch.device("cuda", 0), torch.device(0)
    LOCAL_RANK = "the local rank"  # LOCAL_RANK, args.local_rank: the process's own GPU on its node
    GLOBAL_RANK = "the global rank"  # dist.get_rank(), rank: past the first node, no GPU of that index
    OTHER = "another index"  # an index of unknown origin


@dataclass(frozen=True)
class Device:
    """A device an expression names: the CPU (`index` None), or a CUDA device chosen as `index` says
    (`number`: the constant index)."""

    cuda: bool
    index: DeviceIndex | None = None
    number: int | None = None


CPU = Device(False)
CURRENT_CUDA = Device(True, DeviceIndex.CURRENT)
Value = Results | Keyed | Item | Maybe | Param | Returned | Either | NoneConstant | LibraryFunction | Packed | None


def is_engine_held(value: Value) -> bool:
    """Initialize's results, on every path or on some."""
    return isinstance(value, (Results, Keyed, Item, Maybe))


def merge(seen: list[Value]) -> Value:
    """The value after paths that disagree: `Maybe(item)` when one path binds an item of initialize's result and
    the others keep something that is not one (the plain model, the client scheduler, unknown). Only a callee
    that uses its parameter as the engine turns it into a fact (`fixpoint.ProjectModel.engine_parameters`)."""
    if seen and all(v == seen[0] for v in seen):
        return seen[0]
    functions = {v for v in seen if isinstance(v, LibraryFunction)}
    if len(functions) == 1 and all(v in functions or v == NONE for v in seen):
        # `ds_init = deepspeed.initialize` on one path, None on the other: a call of it runs on the first only
        return functions.pop()
    if any(isinstance(v, Maybe) for v in seen):
        # a name that held initialize's result on some paths, rebound on others: which paths ran initialize
        # is no longer the question this `if` decides
        return None
    found = {v for v in seen if isinstance(v, (Results, Item))}
    if not found:
        return _either(seen)
    if len(found) != 1:
        return None
    (result,) = found
    return Maybe(result) if isinstance(result, Item) else None


def _either(seen: list[Value]) -> Value:
    """Paths that hold no initialize result: the project functions' returns and parameters they bind, as
    options, when one at least is a return; anything else on a path (a constant, an unknown value) is no option."""
    options: list[Returned | Param] = []
    for value in seen:
        for option in value.options if isinstance(value, Either) else (value,):
            if isinstance(option, (Returned, Param)) and option not in options:
                options.append(option)
    if not any(isinstance(option, Returned) for option in options):
        return None
    return Either(tuple(options))


def options(value: Value) -> tuple[Value, ...]:
    """What a value may be: an `Either`'s options, or the value itself."""
    return value.options if isinstance(value, Either) else (value,)


def instance_class(value: Value) -> tuple[str, str] | None:
    """The project class (module path, qualname) whose instance a value holds: a constructor's result
    (`RLHFEngine(...)`), or a parameter annotated with the class."""
    if isinstance(value, Returned) and value.qualname.endswith(".__init__"):
        return (value.path, value.qualname[: -len(".__init__")])
    return value.instance_of if isinstance(value, Param) else None


def base(value: Value) -> object:
    """What two arms of `x.module if ... else x` must share: the value, `.module` unwrapping aside."""
    if isinstance(value, Param):
        return ("param", value.name)
    if isinstance(value, Item):
        return ("item", ENGINE if value.role == ENGINE_MODULE else value.role, value.origin)
    return value


def unwrapped(value: Value) -> Value:
    """`value.module`: the engine's module; a parameter marked unwrapped; anything else unknown."""
    if isinstance(value, Param):
        return Param(value.name, True)
    if isinstance(value, Item) and value.role in (ENGINE, ENGINE_MODULE):
        return Item(ENGINE_MODULE, value.origin)
    return None


def roles_of(value: Value) -> tuple[str | None, ...]:
    """The roles of a whole result tuple (empty for anything else)."""
    return value.roles if isinstance(value, Results) else ()


def items(value: Value, count: int) -> list[Value]:
    """The values of `a, b, c = value`."""
    if isinstance(value, Results) and len(value.roles) == count:
        return [Item(role, value.origin) if role is not None else None for role in value.roles]
    if isinstance(value, Packed) and len(value.elements) == count:
        return list(value.elements)
    return [None] * count


def holds_library_function(value: Value) -> bool:
    """A library's callable, alone or in a tuple."""
    if isinstance(value, Packed):
        return any(isinstance(element, LibraryFunction) for element in value.elements)
    return isinstance(value, LibraryFunction)

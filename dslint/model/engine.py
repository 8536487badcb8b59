"""The engine as a typed value: which kind it is, where it comes from, what is known of its config.

Rules ask the script facts "is this expression the engine here, and from where" (`ScriptFacts.role_of`) and get
an `Engine`: created by a `deepspeed.initialize(...)` (or `deepspeed.init_inference(...)`) call of the file
itself (`Origin.CALL`: the script facts then also hold that call, an `InitializeCall`), or brought by the project
model from another function or module: a parameter every caller passes it in (`Origin.CALLER`), a helper's return
(`Origin.RETURN`), an attribute of a project class's instance (`Origin.ATTRIBUTE`). An engine from elsewhere
carries `site` (the call that passes it, or the initialize call that creates it: what a finding names as its
related location), `created` (the creating initialize call) and `config` (what the project knows of the config it
runs with, with the chain of where that was read).

Engines compare by identity: one value per creating call of the file, one per project fact that brings one here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from dslint.diagnostics import Related


class Origin(enum.Enum):
    CALL = "this call"  # a deepspeed.initialize / init_inference call of this file
    CALLER = "a caller"  # a parameter that every call of its function passes an engine in
    RETURN = "a return"  # the return value of a helper that calls initialize (a tuple, a list, a dict, one item)
    ATTRIBUTE = "an attribute"  # an attribute of a project class's instance (`pair.policy`, `self.engine`)


class Kind(enum.Enum):
    TRAINING = "deepspeed.initialize"
    INFERENCE = "deepspeed.init_inference"


@dataclass(frozen=True)
class EngineConfig:
    """What is known of the config an engine created elsewhere runs with: its ZeRO stage, the chain of where
    that was read (the launcher line, the option naming the file, the config path written in the call), the file."""

    zero_stage: int | None
    evidence: tuple[Related, ...] = ()
    config_path: str | None = None


@dataclass(frozen=True, eq=False)
class Engine:
    origin: Origin
    kind: Kind = Kind.TRAINING
    site: Related | None = None  # elsewhere: where it comes from (None for this file's call)
    created: tuple[str, int, int] | None = None  # elsewhere: the creating call (path, line, column), when known
    config: EngineConfig | None = None  # elsewhere: its config, when the project knows it
    # from a caller: the call that passes it is followed by an `if` testing the ZeRO stage (the author handles
    # stage 3 after it: DeepSpeed-Chat's plain save, then a gathering save under `if zero_stage == 3`)
    caller_tests_stage: bool = False

    @property
    def elsewhere(self) -> bool:
        """Created in another function or module (no call of this file creates it)."""
        return self.origin is not Origin.CALL

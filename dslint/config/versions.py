"""DeepSpeed release numbers, the releases dslint has a config schema for, and which schema judges a version.

Also the releases where DeepSpeed's behaviour moved that rules speak of (their messages follow the project's
version). Which version a project runs is read by `dslint.project.deepspeed_version`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from dslint.config.schema import Schema, load_release_schema, schema_releases


@functools.total_ordering
@dataclass(frozen=True)
class Version:
    """A DeepSpeed release number: major.minor.patch (a missing part is 0; local and pre-release tags dropped)."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> Version | None:
        match = re.fullmatch(
            r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.\*)?(?:[.-]?(?:a|b|rc|dev|post)\d*)*(\+\S*)?\s*", text
        )
        if match is None:
            return None
        return cls(int(match[1]), int(match[2] or 0), int(match[3] or 0))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return (self.major, self.minor, self.patch) < (other.major, other.minor, other.patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


@functools.cache
def known_releases() -> tuple[Version, ...]:
    """The releases dslint has a config schema for, oldest first."""
    return tuple(sorted(v for v in (Version.parse(name) for name in schema_releases()) if v is not None))


def newest_known() -> Version:
    return known_releases()[-1]


# -- the release whose schema judges a version --------------------------------------------------------------------


def schema_release(version: Version) -> Version:
    """The known release whose config schema stands for `version`: the newest known release of the same minor
    that is not newer than it, else the oldest of that minor (0.18.0 is judged by 0.18.2, the first known), else
    the nearest known release (older than all: the oldest; newer than all: the newest)."""
    releases = known_releases()
    same_minor = [r for r in releases if (r.major, r.minor) == (version.major, version.minor)]
    if same_minor:
        not_newer = [r for r in same_minor if not version < r]
        return not_newer[-1] if not_newer else same_minor[0]
    older = [r for r in releases if r < version]
    return older[-1] if older else releases[0]


def config_schema(version: Version) -> Schema:
    """The config schema that judges a project on `version` (`schema_release`)."""
    return load_release_schema(str(schema_release(version)))


@dataclass(frozen=True)
class NewestAdmitted:
    """The newest release a project's pin admits, when the pin is a range that admits newer than the version the
    project is judged at (a fresh install gets it): config rules are judged at it too."""

    version: Version
    pin: str  # the pin as messages name it: '`deepspeed>=0.13.5` (requirements.txt:4)'

    @classmethod
    def of(cls, newest: str | None, pin: str | None) -> NewestAdmitted | None:
        """From a RuleSelection's `deepspeed_newest` and `deepspeed_pin`."""
        version = Version.parse(newest) if newest else None
        return cls(version, pin or "the project's pin") if version is not None else None

    def note(self) -> str:
        return f"{self.pin} admits DeepSpeed {self.version}, which a fresh install gets"


def selected_version(text: str | None) -> Version:
    """The version a RuleSelection carries (`deepspeed_version`), or the newest known when it carries none."""
    version = Version.parse(text) if text else None
    return version if version is not None else newest_known()


# -- where DeepSpeed's behaviour moved (the rules' messages follow the project's version) -----------------------

DIRECT_BACKWARD_SINCE = Version(0, 18, 3)  # a direct loss.backward() is supported (ZeRO, no fp16) from here
BUFFERS_KEPT_SINCE = Version(0, 19, 2)  # the engine casts only parameters (buffers kept; data_types.buffer_dtype)
CLIPPING_BY_DEFAULT_SINCE = Version(0, 19, 3)  # gradient_clipping defaults to 1.0 (0.0, no clipping, before)
# zero_optimization (and its offload blocks) got a pydantic model forbidding unknown keys in 0.7.0; before, it was a
# plain dict read with `get` (unknown keys ignored silently), and the other sections the oldest known schema
# validates (comms_logger, hybrid_engine, weight_quantization) did not exist: an older pin refuses no section key
SECTION_KEYS_VALIDATED_SINCE = Version(0, 7, 0)
# the keys 0.6.x reads from zero_optimization (its zero/constants.py and offload_constants.py, the same list from
# 0.6.0 to 0.6.7); any other key there is ignored silently
ZERO_KEYS_BEFORE_0_7 = frozenset(
    {
        "allgather_bucket_size", "allgather_partitions", "allgather_size", "contiguous_gradients", "cpu_offload",
        "cpu_offload_params", "cpu_offload_use_pin_memory", "elastic_checkpoint", "ignore_unused_parameters",
        "legacy_stage1", "load_from_fp32_weights", "offload_optimizer", "offload_param", "overlap_comm",
        "reduce_bucket_size", "reduce_scatter", "round_robin_gradients", "stage",
        "stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
        "stage3_max_live_parameters", "stage3_max_reuse_distance", "stage3_param_persistence_threshold",
        "stage3_prefetch_bucket_size", "sub_group_size",
    }
)  # fmt: skip

"""Which rules run: `select` / `ignore` code prefixes, with ruff's precedence (the most specific prefix wins;
on a tie, ignore wins)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ALL = "ALL"


def normalize_prefix(prefix: str) -> str:
    prefix = prefix.strip().upper()
    return "" if prefix == ALL else prefix


@dataclass(frozen=True)
class RuleSelection:
    select: tuple[str, ...] = ("DSL",)
    ignore: tuple[str, ...] = ()
    # The DeepSpeed release the project runs ("0.14.0", see dslint.project.deepspeed_version); rules judge against it.
    # None: the newest release dslint knows.
    deepspeed_version: str | None = None
    # The newest release the project's pin admits, when it is a range that admits newer than `deepspeed_version`
    # (a fresh install gets it), and the pin as messages name it; config rules are judged at both ends.
    deepspeed_newest: str | None = None
    deepspeed_pin: str | None = None

    @classmethod
    def from_options(
        cls,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        extend_select: Iterable[str] = (),
    ) -> RuleSelection:
        chosen = tuple(normalize_prefix(p) for p in select) if select else ("DSL",)
        chosen += tuple(normalize_prefix(p) for p in extend_select)
        return cls(chosen, tuple(normalize_prefix(p) for p in ignore or ()))

    def enabled(self, code: str) -> bool:
        best_select = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        best_ignore = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return best_select >= 0 and best_select > best_ignore

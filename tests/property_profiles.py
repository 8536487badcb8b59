"""Hypothesis profiles for the suite, chosen by `HYPOTHESIS_PROFILE` (loaded by conftest.py before any test module).

- `ci` (the default, what the README's test command and `.ci/run` use): derandomized, no example database, so a
  fresh clone draws exactly the examples every other run draws. A property test is then as reproducible as any
  other test; new examples come only from a deliberate fuzz run, and a falsifying one found there becomes an
  `@example` of its test.
- `fuzz`: fresh randomness each run, the example database on (a failure is replayed first next time), and ten
  times the examples (`DSLINT_FUZZ_SCALE` sets another factor):
  `HYPOTHESIS_PROFILE=fuzz python -m pytest -m hypothesis` (the marker Hypothesis puts on every `@given` test).
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "fuzz"):
    raise SystemExit(f"HYPOTHESIS_PROFILE={PROFILE!r}: the suite has the profiles 'ci' (default) and 'fuzz'")
DERANDOMIZE = PROFILE == "ci"
SCALE = int(os.environ.get("DSLINT_FUZZ_SCALE", "10")) if PROFILE == "fuzz" else 1

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, deadline=None, print_blob=True)
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """`count` examples in CI, `SCALE` times as many in a fuzz run."""
    return count * SCALE

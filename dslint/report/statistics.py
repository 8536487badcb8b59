"""`--statistics`: how many findings of each rule, most frequent first (as ruff prints them).

    3  DSL101  [*] model-moved-before-initialize
    1  DSL401      unknown-top-level-config-key

`[*]` marks a rule whose findings here all have a safe fix, `[-]` some fix (unsafe, or not for all of them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from dslint.diagnostics import Diagnostic


def render(diagnostics: Sequence[Diagnostic]) -> str:
    counts = Counter(d.code for d in diagnostics)
    slugs = {d.code: d.slug for d in diagnostics}
    width = len(str(max(counts.values(), default=0)))
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        found = [d for d in diagnostics if d.code == code]
        if all(d.fix is not None and d.fix.is_safe for d in found):
            mark = "[*]"
        elif any(d.fix is not None for d in found):
            mark = "[-]"
        else:
            mark = "   "
        lines.append(f"{count:>{width}}  {code}  {mark} {slugs[code]}")
    return "".join(line + "\n" for line in lines)

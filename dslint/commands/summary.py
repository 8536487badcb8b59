"""The closing line of `dslint check`: counts that cannot contradict each other.

"All checks passed" only when every file given was analysed and nothing was found; a file that could not be
read is an error, never a pass; a file dslint does not read is counted as skipped, never as checked; findings
that a script's lint places in a config it points at count that config as a file with findings, named as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dslint.diagnostics import Diagnostic


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


@dataclass(frozen=True)
class Tally:
    diagnostics: Sequence[Diagnostic]
    checked: Sequence[str]  # the paths analysed
    errors: int = 0  # files that could not be checked (each reported above)
    skipped: int = 0  # files given that dslint does not read, or over a size limit (each reported above)
    suppressed: int = 0  # findings silenced by noqa comments

    def lines(self) -> list[str]:
        checked = plural(len(self.checked), "file")
        extra = []
        if self.skipped:
            extra.append(f"{plural(self.skipped, 'file')} skipped (see above)")
        if self.suppressed:
            extra.append(f"{self.suppressed} silenced by noqa")
        notes = "".join(f"; {note}" for note in extra)
        failed = f"{plural(self.errors, 'file')} could not be checked (see the errors above)" if self.errors else ""
        if not self.diagnostics:
            if self.errors and not self.checked:
                return [f"Nothing checked{notes}; {failed}."]
            if self.errors:
                return [f"No findings in {checked} checked{notes}; {failed}."]
            if not self.checked:
                return [f"No files checked{notes}."]
            return [f"All checks passed ({checked} checked{notes})."]
        paths = {d.path for d in self.diagnostics}
        linked = len(paths - set(self.checked))
        found = plural(len(self.diagnostics), "finding")
        if linked:  # a script's findings in the config it points at: that config was not named, yet has findings
            own = len(paths) - linked
            named = set(self.checked)
            in_own = sum(1 for d in self.diagnostics if d.path in named)
            one = len(self.checked) == 1
            configs = f"{plural(linked, 'config file')} {'it points' if one else 'they point'} at"
            if own:
                line = (
                    f"Found {found}: {in_own} in {own} of {checked} checked, "
                    f"{len(self.diagnostics) - in_own} in {configs}{notes}."
                )
            else:
                scripts = "the file checked points" if one else f"the {checked} checked point"
                line = f"Found {found} in {plural(linked, 'config file')} that {scripts} at{notes}."
        else:
            line = f"Found {found} in {len(paths)} of {checked}{notes}."
        return [line, f"{failed[0].upper()}{failed[1:]}."] if failed else [line]

"""The context one script's rules run in: the parsed module, positions, shared facts, and the findings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange

from dslint.config.versions import NewestAdmitted, Version, newest_known
from dslint.diagnostics import Diagnostic, Location
from dslint.script.facts import ScriptFacts, node_positions


@dataclass
class ScriptContext:
    path: str
    module: cst.Module
    facts: ScriptFacts
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _positions: Mapping[cst.CSTNode, CodeRange] | None = field(default=None, repr=False)
    deepspeed_version: Version = field(default_factory=newest_known)  # the DeepSpeed the project runs
    # A newer release the project's pin admits; the script's configs are judged there too.
    deepspeed_newest: NewestAdmitted | None = None
    _text: str | None = field(default=None, repr=False)  # the source libcst parsed, when the caller has it

    @property
    def text(self) -> str:
        """The module's source, as `module.code` gives it: the text that was parsed when the caller passed it
        (`text=`), else one code generation pass, kept."""
        if self._text is None:
            self._text = self.module.code
        return self._text

    @property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        """Line/column of every node: a whole code generation pass, so computed only once something is reported."""
        if self._positions is None:
            if self.facts.module is self.module:
                self._positions = self.facts.positions  # one pass for the facts' call keys and the findings
            else:
                self._positions = node_positions(self.module)
        return self._positions

    def span(self, node: cst.CSTNode) -> tuple[Location, Location]:
        """1-based line and column of where `node` starts and ends."""
        r = self.positions[node]
        return Location(r.start.line, r.start.column + 1), Location(r.end.line, r.end.column + 1)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

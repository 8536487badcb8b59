"""Colour for the terminal: on when the stream is a terminal, unless `NO_COLOR` is set; `FORCE_COLOR` turns it on
anywhere (https://no-color.org, https://force-color.org; an empty value or FORCE_COLOR=0 counts as unset)."""

from __future__ import annotations

import os
import re
from typing import TextIO

from dslint.diagnostics import Diagnostic, Severity

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
CYAN = "\x1b[36m"
SEVERITY_COLOURS = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m", Severity.INFO: "\x1b[1;34m"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def wants_colour(stream: TextIO, environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    force = env.get("FORCE_COLOR", "")
    if force and force != "0":
        return True
    if env.get("NO_COLOR", ""):
        return False
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def coloured_concise(diagnostic: Diagnostic) -> str:
    """The concise line with the path in bold, the position in cyan and the code in its severity's colour."""
    location = diagnostic.where[len(diagnostic.path) :]
    colour = SEVERITY_COLOURS[diagnostic.severity]
    code = f"{colour}{diagnostic.code}{RESET} {colour}[{diagnostic.severity.value}]{RESET}"
    return f"{BOLD}{diagnostic.path}{RESET}{CYAN}{location}:{RESET} {code} {diagnostic.message}"


def strip(text: str) -> str:
    return ANSI.sub("", text)

"""A progress bar on stderr for runs that take more than a second on a terminal (never in a pipe or a file)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

DELAY_SECONDS = 1.0
WIDTH = 30


class Progress:
    """Counts finished files; draws `[#####.....] 12/40 files` once a second has passed, erases it at the end."""

    def __init__(self, total: int, stream: TextIO | None = None, delay: float = DELAY_SECONDS) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.started = time.monotonic()
        self.delay = delay
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) and total > 1
        self.drawn = False
        self.last_draw = 0.0

    def advance(self, count: int = 1) -> None:
        self.done += count
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay or (self.drawn and now - self.last_draw < 0.1 and self.done < self.total):
            return
        filled = WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (WIDTH - filled)
        self.stream.write(f"\r[{bar}] {self.done}/{self.total} files")
        self.stream.flush()
        self.drawn = True
        self.last_draw = now

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * (WIDTH + 30) + "\r")
            self.stream.flush()
            self.drawn = False

"""What a live view writes (lines, one progress bar, one status line) and its plain form off a terminal, which
needs no rich: a run whose stderr is not a terminal starts without rich (0.05 CPU-s, bench/overhead.py)."""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

from orchestrator.spine.stderr import say

__all__ = ["ViewOutput", "PlainOutput"]

_PLAIN_PROGRESS_EVERY_S = 5.0


class ViewOutput(Protocol):
    """Lines, one progress bar and one status line; view/terminal.py's LiveOutput draws them on a terminal."""

    tty: bool

    def line(self, text: str) -> None: ...

    def bar(self, label: str, done: int, total: int, note: str, *, force: bool = False) -> None: ...

    def status(self, text: str) -> None: ...

    def end_bar(self) -> None: ...


class PlainOutput:
    """Plain lines on `stream`: progress at most every few seconds, so logs and CI output stay readable."""

    tty = False

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._last_plain = 0.0

    def line(self, text: str) -> None:
        """One line; on stderr in that stream's one format (spine.stderr.say)."""
        if self.stream is sys.stderr:
            say(text)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def bar(self, label: str, done: int, total: int, note: str, *, force: bool = False) -> None:
        """Progress `done`/`total` of `label` with a note, as a plain line at most every few seconds (or now,
        with `force`)."""
        now = time.monotonic()
        if force or now - self._last_plain >= _PLAIN_PROGRESS_EVERY_S:
            self._last_plain = now
            width = 30
            filled = int(width * done / total) if total else 0
            self.line(f"  {label:<12} [{'#' * filled}{'.' * (width - filled)}] {done}/{total or '?'}  {note}")

    def status(self, text: str) -> None:
        """One status line (the caller decides how often)."""
        self.line(text)

    def end_bar(self) -> None:
        """Nothing is redrawn off a terminal."""

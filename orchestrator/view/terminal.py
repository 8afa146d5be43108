"""The one terminal output of the live views, on rich: a progress bar or a status line redrawn in place on a
terminal, plain lines (progress at most every few seconds) otherwise, so logs and CI output stay readable.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from orchestrator.view.output import PlainOutput

__all__ = ["LiveOutput"]


class LiveOutput:
    """Lines and one progress bar on `stream`. Not thread-safe; the views call it from one task."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        # Plain text always: no markup, highlighting or wrapping of what the run says.
        self.console = Console(file=stream, highlight=False, markup=False, emoji=False, soft_wrap=True)
        self.tty = self.console.is_terminal
        self._plain = PlainOutput(stream)  # what is written off a terminal
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._live: Live | None = None

    def line(self, text: str) -> None:
        """One line, above the bar when one is shown; off a terminal a plain line (view/output.py)."""
        if not self.tty:
            self._plain.line(text)
            return
        if self._progress is not None:
            self._progress.console.print(text)
        elif self._live is not None:
            self._live.console.print(text)
        else:
            self.console.print(text)

    def bar(self, label: str, done: int, total: int, note: str, *, force: bool = False) -> None:
        """Show progress `done`/`total` of `label` with a note; a terminal redraws it in place, elsewhere a
        plain line is written at most every few seconds (or now, with `force`)."""
        if not self.tty:
            self._plain.bar(label, done, total, note, force=force)
            return
        if self._progress is None:
            self._progress = Progress(TextColumn("  {task.description:<12}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[note]}"), TimeElapsedColumn(),
                                      console=self.console, transient=False)
            self._progress.start()
            self._task = self._progress.add_task(label, total=total or None, note=note)
        assert self._task is not None
        self._progress.update(self._task, description=label, completed=done, total=total or None, note=note)

    def status(self, text: str) -> None:
        """One status line: redrawn in place on a terminal (other lines scroll above it), a plain line
        otherwise (the caller decides how often)."""
        if not self.tty:
            self._plain.status(text)
            return
        if self._live is None:
            self._live = Live(Text(text), console=self.console, auto_refresh=False, transient=False)
            self._live.start()
        self._live.update(Text(text), refresh=True)

    def end_bar(self) -> None:
        """Leave the last state of the bar or status line on screen and stop redrawing it."""
        if self._progress is not None:
            self._progress.stop()
            self._progress, self._task = None, None
        if self._live is not None:
            self._live.stop()
            self._live = None

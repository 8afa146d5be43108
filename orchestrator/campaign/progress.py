"""The campaign's live progress on the driver's terminal: a redrawn table on a tty, plain lines otherwise.

Shows what the driver has seen (model, node, stage, elapsed, status); never a source for reports.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

import msgspec

__all__ = ["Progress"]

_COLUMNS = ("model", "node", "stage", "elapsed", "status")
_REDRAW_S = 0.5


class _Row(msgspec.Struct, kw_only=True):
    model: str
    node: str = ""
    stage: str = ""
    status: str = "queued"
    started: float | None = None
    ended: float | None = None


class Progress:
    """Tracks one row per model; `show()` redraws (tty, at most every 0.5 s) or prints changed rows."""

    def __init__(self, models: list[str], *, out: TextIO | None = None, live: bool | None = None) -> None:
        self.out = out or sys.stderr
        self.live = self.out.isatty() if live is None else live
        self.rows = {m: _Row(model=m) for m in models}
        self._changed: list[str] = []
        self._drawn = 0
        self._last_draw = 0.0

    def update(self, model: str, *, node: str | None = None, stage: str | None = None,
               status: str | None = None) -> None:
        row = self.rows[model]
        before = (row.node, row.stage, row.status)
        if node is not None:
            row.node = node
        if stage is not None:
            row.stage = stage
        if status is not None:
            row.status = status
            if status == "running" and row.started is None:
                row.started = time.monotonic()
            elif status not in ("running", "queued", "submitted"):
                row.ended = time.monotonic()
        if (row.node, row.stage, row.status) != before and model not in self._changed:
            self._changed.append(model)

    def show(self, *, force: bool = False) -> None:
        if self.live:
            now = time.monotonic()
            if force or now - self._last_draw >= _REDRAW_S:
                self._redraw()
                self._last_draw = now
        else:
            for model in self._changed:
                r = self.rows[model]
                print(f"campaign: {model}: {r.status}" + (f" on {r.node}" if r.node else "")
                      + (f" at {r.stage}" if r.stage else "") + f" ({self._elapsed(r)})", file=self.out, flush=True)
        self._changed.clear()

    def _elapsed(self, row: _Row) -> str:
        if row.started is None:
            return "-"
        seconds = int((row.ended or time.monotonic()) - row.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def _redraw(self) -> None:
        table = [list(_COLUMNS)] + [[r.model, r.node or "-", r.stage or "-", self._elapsed(r), r.status]
                                    for r in self.rows.values()]
        widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
        text = "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
                         for line in table)
        # Move up over the previous table and clear to the end of the screen before drawing again.
        up = f"\x1b[{self._drawn}F\x1b[J" if self._drawn else ""
        self.out.write(up + text + "\n")
        self.out.flush()
        self._drawn = len(table)

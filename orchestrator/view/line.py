"""run-aiperf's live line on stderr: done, errors and p50 latencies about once a second, estimates from a lossy
subscription; redrawn in place on a terminal (view/terminal.py, passed in), plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

import anyio
from anyio.abc import TaskStatus

from orchestrator.events import RequestCorrelated
from orchestrator.judge.stats import StreamingQuantiles
from orchestrator.spine.bus import Bus
from orchestrator.view.output import PlainOutput, ViewOutput

__all__ = ["LiveLine"]


class LiveLine:
    """A lossy subscriber printing done / errors / p50 latencies about once a second (estimates)."""

    def __init__(self, bus: Bus, *, out: ViewOutput | None = None, stream: TextIO | None = None,
                 every_s: float = 1.0) -> None:
        """`out` draws the line (view/terminal.py's LiveOutput on a terminal); None: plain lines on `stream`
        (None: stderr)."""
        self.bus, self.every_s = bus, every_s
        self.out: ViewOutput = out or PlainOutput(stream or sys.stderr)
        self.done = self.errors = self.warmup = 0
        self.latency = StreamingQuantiles()
        self.model_call = StreamingQuantiles()
        self._last = 0.0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self.bus.subscribe("live-line", size=4096, lossy=True, kinds=(RequestCorrelated,)) as sub:
            task_status.started()
            async for ev in sub:
                if not isinstance(ev, RequestCorrelated):
                    continue
                if ev.phase == "warmup":
                    self.warmup += 1  # warmup is tagged and kept, never in the statistics
                    continue
                self.done += 1
                if not ev.ok:
                    self.errors += 1
                elif ev.request_latency_ms is not None:
                    self.latency.add(ev.request_latency_ms)
                    if ev.model_call_ms is not None:
                        self.model_call.add(ev.model_call_ms)
                if time.monotonic() - self._last >= self.every_s:
                    self.print()
        self.out.end_bar()

    def line(self) -> str:
        def ms(q: StreamingQuantiles) -> str:
            value = q.quantile(50)
            return f"{value:.1f} ms" if value is not None else "-"

        return (f"  live: done {self.done} (+{self.warmup} warmup)  errors {self.errors}  "
                f"p50 client {ms(self.latency)}  p50 model_call {ms(self.model_call)}")

    def print(self) -> None:
        """The line now: redrawn in place on a terminal, a plain line otherwise."""
        self._last = time.monotonic()
        self.out.status(self.line())

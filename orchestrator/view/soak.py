"""Live soak status on stderr (view/terminal.py): one line redrawn in place on a terminal, plain periodic lines
otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

import anyio
from anyio.abc import TaskStatus

from orchestrator.events import (
    AiperfExited,
    RequestCorrelated,
    ResourceSampled,
    ServerExited,
    ServerRestarting,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
    WindowStats,
)
from orchestrator.spine.bus import Bus
from orchestrator.view.terminal import LiveOutput

__all__ = ["SoakView", "format_status"]


def _ms(v: float | None) -> str:
    return f"{v:.0f}" if v is not None else "-"


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def format_status(*, elapsed_s: float, duration_s: float, windows: int, window: str, ok: int, errors: int,
                  last: WindowStats | None, rss_bytes: int | None, restarts: int,
                  loaded_s: float | None = None) -> str:
    """The one status line (pure, for tests and both output modes). The soak's duration is time under
    load (`loaded_s`); AIPerf's start-ups make the wall time (`elapsed_s`) longer, so both are shown."""
    lat = "last window: -"
    if last is not None:
        c, srv = last.client_latency_ms, last.server_latency_ms
        lat = (f"last window p50/p99 client {_ms(c.p50)}/{_ms(c.p99)} ms "
               f"server {_ms(srv.p50)}/{_ms(srv.p99)} ms")
    mem = f"{rss_bytes / 2**20:.0f} MiB" if rss_bytes is not None else "-"
    clock = (f"soak {_hms(elapsed_s)}/{_hms(duration_s)}" if loaded_s is None else
             f"soak {_hms(loaded_s)}/{_hms(duration_s)} under load (wall {_hms(elapsed_s)})")
    return (f"{clock}  windows {windows}{' (in ' + window + ')' if window else ''}"
            f"  ok {ok} err {errors}  {lat}  server rss {mem}  restarts {restarts}")


# A lossy bus subscriber: it never slows the soak and its counts are estimates (drops are counted by the bus
# and journaled); window latencies come from SoakWindowClosed, final numbers from the journal.
class SoakView:
    """`await tg.start(SoakView(bus, duration_s=...).run)`; ends when the bus closes."""

    def __init__(self, bus: Bus, *, duration_s: float, stream: TextIO | None = None,
                 tty_interval_s: float = 0.5, plain_interval_s: float = 30.0) -> None:
        self.bus = bus
        self.duration_s = duration_s
        self.out = LiveOutput(stream or sys.stderr)
        self.tty = self.out.tty
        self.interval_s = tty_interval_s if self.tty else plain_interval_s
        self.started = time.monotonic()
        self._last_print = 0.0
        self.windows = 0
        self.window = ""
        self.ok = 0
        self.errors = 0
        self.last: WindowStats | None = None
        self.rss_bytes: int | None = None
        self.restarts = 0
        # Time under load: closed windows' request spans, plus [first start, last end] of each window
        # still open (the running one counts up to now). One entry per open window: bounded.
        self._loaded_closed_s = 0.0
        self._covered_ns = 0  # the end of the time already counted in _loaded_closed_s
        self._spans: dict[str, list[int]] = {}
        self._running = ""
        self._next = ""

    def loaded_s(self, now_ns: int | None = None) -> float:
        """Seconds under load so far (an estimate: the view is a lossy subscriber)."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        total, covered = self._loaded_closed_s, self._covered_ns
        # Windows are time cuts of one load: a finalising window's last answers overlap the next one's
        # first requests, so spans are counted as a union (in start order), never twice.
        for window, (first, last) in sorted(self._spans.items(), key=lambda kv: kv[1][0]):
            end = now_ns if window == self._running else last
            if end > max(first, covered):
                total += (end - max(first, covered)) / 1e9
                covered = end
        return total

    def line(self) -> str:
        return format_status(elapsed_s=time.monotonic() - self.started, duration_s=self.duration_s,
                             windows=self.windows, window=self.window, ok=self.ok, errors=self.errors,
                             last=self.last, rss_bytes=self.rss_bytes, restarts=self.restarts,
                             loaded_s=self.loaded_s())

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self.bus.subscribe("soak-view", size=1024, lossy=True) as sub:
            task_status.started()
            async for ev in sub:
                self.show(ev)
        self.out.end_bar()

    def show(self, ev: object) -> None:
        """Update the counts from one event; print when the line is due (or something notable happened)."""
        notable = ""
        if isinstance(ev, RequestCorrelated):
            self._request(ev)
        elif isinstance(ev, ResourceSampled):
            self.rss_bytes = ev.rss_bytes
        elif isinstance(ev, SoakWindowOpened):
            # Opened a window ahead of its start: it becomes the running one when its first request shows.
            self._next = ev.window
        elif isinstance(ev, AiperfExited) and ev.window.startswith("soak/"):
            self._running = ""
        elif isinstance(ev, SoakWindowClosed):
            self._window_closed(ev)
            notable = "window"
        elif isinstance(ev, ServerRestarting):
            self.restarts += 1
            notable = f"server restarting (attempt {ev.attempt}): {ev.reason[:160]}"
        elif isinstance(ev, ServerExited) and not ev.expected:
            notable = f"server exited unexpectedly (incarnation {ev.incarnation}, code {ev.returncode} {ev.signal})"
        elif isinstance(ev, SoakVerdict):
            word = (ev.outcome or ("pass" if ev.passed else "fail")).upper()
            notable = f"{'final' if ev.final else 'checkpoint'} verdict {ev.metric}: {word} {ev.reason[:200]}"
        if notable and notable != "window":
            self._emit(notable, status=False)
        now = time.monotonic()
        if notable or now - self._last_print >= self.interval_s:
            self._last_print = now
            self._emit(self.line(), status=True)

    def _request(self, ev: RequestCorrelated) -> None:
        """Count a profiling request, and widen its soak window's span (the window runs from its first one)."""
        if ev.phase == "profiling":
            if ev.ok:
                self.ok += 1
            else:
                self.errors += 1
        if ev.window.startswith("soak/") and ev.request_start_ns:
            if ev.window == self._next:
                self.window = self._running = ev.window
            span = self._spans.get(ev.window)
            end = ev.request_end_ns or ev.request_start_ns
            if span is None:
                self._spans[ev.window] = [ev.request_start_ns, end]
            else:
                span[0], span[1] = min(span[0], ev.request_start_ns), max(span[1], end)

    def _window_closed(self, ev: SoakWindowClosed) -> None:
        """A closed window: counted, its summary kept, and its loaded time added once (windows overlap)."""
        self.windows = max(self.windows, ev.index)
        if self.window == ev.window:
            self.window = ""  # windows overlap: N closes after N+1 started
        self.last = ev.summary
        span = self._spans.pop(ev.window, None)
        first = ev.summary.first_request_unix_ns if ev.summary is not None else None
        last = ev.summary.last_request_unix_ns if ev.summary is not None else None
        if not (isinstance(first, int) and isinstance(last, int)) and span is not None:
            first, last = span
        if isinstance(first, int) and isinstance(last, int) and last > max(first, self._covered_ns):
            self._loaded_closed_s += (last - max(first, self._covered_ns)) / 1e9
            self._covered_ns = last

    def _emit(self, text: str, *, status: bool) -> None:
        # On a terminal the status line is redrawn in place; other messages scroll above it.
        if status:
            self.out.status(text)
        else:
            self.out.line(text)

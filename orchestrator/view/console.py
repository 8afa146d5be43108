"""Live progress of qualify on stderr: one line per stage, a progress bar on a terminal (view/terminal.py)."""

from __future__ import annotations

import sys
from typing import TextIO

import anyio
from anyio.abc import TaskStatus

from orchestrator.events import (
    AiperfExited,
    AiperfPhase,
    AiperfStarted,
    CapabilityProbed,
    CorrectnessPhase,
    DatasetPhase,
    ModelPhase,
    ModelResult,
    PhaseDetail,
    PhaseFinished,
    PhaseStarted,
    ReferencePhase,
    RequestCorrelated,
    ServerExited,
    ServerReady,
    ServerRestarting,
    ServerStateChanged,
    VerdictReached,
)
from orchestrator.spine.bus import Bus
from orchestrator.view.terminal import LiveOutput

__all__ = ["ConsoleView", "clip"]

# Server states a person follows (ready has its own line, from ServerReady; starting is implied by it).
_STATES_SHOWN = frozenset({"degraded", "unhealthy", "stopping", "stopped", "failed"})


# A lossy bus subscriber: it never slows the run, and its numbers are estimates (final numbers come from the
# journal). It prints; it publishes nothing but the bus's own drop count.
class ConsoleView:
    """`await tg.start(ConsoleView(bus).run)`; ends when the bus closes."""

    def __init__(self, bus: Bus, *, stream: TextIO | None = None) -> None:
        self.bus = bus
        self.out = LiveOutput(stream or sys.stderr)
        self._total = 0
        self._done = 0
        self._bad = 0
        self._misses: dict[str, int] = {}  # audio-arm misses per path (http, native): one answer, one miss
        self._stage = ""

    def _print(self, text: str) -> None:
        self.out.line(text)

    def _bar(self, force: bool = False) -> None:
        if self._stage == "aiperf":
            tally = f"failed: {self._bad}"
        else:
            tally = "audio-arm misses: " + (", ".join(f"{p} {n}" for p, n in self._misses.items()) or "0")
        self.out.bar(self._stage, self._done, self._total, tally, force=force)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self.bus.subscribe("console", size=1024, lossy=True) as sub:
            task_status.started()
            async for ev in sub:
                self.show(ev)

    def show(self, ev: object) -> None:
        if isinstance(ev, PhaseStarted):
            self._phase_started(ev)
        elif isinstance(ev, PhaseFinished):
            self._phase_finished(ev)
        elif isinstance(ev, VerdictReached) and ev.path != "aiperf":
            self._done += 1
            # Silence and transcript arms are expected to miss; only audio-arm misses are news.
            self._misses.setdefault(ev.path, 0)
            self._misses[ev.path] += ev.verdict != "correct" and ev.arm == "audio"
            self._bar()
        elif isinstance(ev, RequestCorrelated) and self._stage == "aiperf":
            self._done += 1
            self._bad += not ev.ok
            self._bar()
        elif (line := _event_line(ev)) is not None:
            self._print(line)

    def _phase_started(self, ev: PhaseStarted) -> None:
        d = ev.detail
        if ev.phase == "model":
            ident = d if isinstance(d, ModelPhase) else ModelPhase()
            # A model without a TRTMC profile (the reference server's, any [[models]] that names none) shows none.
            self._print(f"== {ev.model}: {ident.checkpoint}" + (f" ({ident.profile})" if ident.profile else ""))
            return
        self._stage, self._done, self._bad, self._misses = ev.phase, 0, 0, {}
        self._total = _expected_answers(d)
        self._print(f"  {ev.phase}: started")

    def _phase_finished(self, ev: PhaseFinished) -> None:
        if ev.phase in ("model", "dataset"):
            if isinstance(ev.detail, DatasetPhase):
                self._print(f"dataset {ev.detail.name} ({ev.detail.items} items, "
                            f"identity {ev.detail.identity[:12]})")
            return
        if self._total:
            self._bar(force=True)
            self.out.end_bar()
        self._total = 0
        self._print(f"  {ev.phase}: {ev.outcome}{' - ' + clip(ev.reason, 300) if ev.reason else ''}")


def _event_line(ev: object) -> str | None:
    """The one line an event prints outside the progress bars, or None when it prints nothing."""
    if isinstance(ev, CapabilityProbed):
        return f"    {ev.check}: {'pass' if ev.passed else 'FAIL'} - {clip(ev.reason, 200)}"
    if isinstance(ev, ServerReady):
        return f"  server ready (incarnation {ev.incarnation}, pid {ev.pid}, {ev.startup_ns / 1e9:.1f} s) at {ev.url}"
    if isinstance(ev, ServerExited) and not ev.expected:
        return (f"  server exited unexpectedly (incarnation {ev.incarnation}, code {ev.returncode}, "
                f"{ev.signal or 'no signal'})")
    if isinstance(ev, ServerStateChanged) and ev.state in _STATES_SHOWN:
        # From the bus, so in the order things happened (a log line would overtake this view's lines).
        return f"  server {ev.state} (incarnation {ev.incarnation}){': ' + ev.reason[:200] if ev.reason else ''}"
    if isinstance(ev, ServerRestarting):
        return f"  server restarting (attempt {ev.attempt}, in {ev.backoff_s:.1f} s): {ev.reason}"
    if isinstance(ev, AiperfStarted):
        return f"    aiperf: {ev.shell[:160]}{'...' if len(ev.shell) > 160 else ''}"
    if isinstance(ev, AiperfExited):
        return f"    aiperf exited {ev.returncode}: {ev.classification}{' - ' + ev.reason if ev.reason else ''}"
    if isinstance(ev, ModelResult):
        return f"== {ev.model}: {ev.status.upper()}{' at ' + ev.failed_stage if ev.failed_stage else ''}"
    return None


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its last line whole: an error's useful line is its last
    (`trtmc-server: error: bundle does not exist` after the usage text), so the cut falls before it."""
    if len(text) <= limit:
        return text
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    room = limit - len(last) - 3
    return (text[:room].rstrip() + " … " + last) if room > 20 else "… " + last


def _expected_answers(d: PhaseDetail | None) -> int:
    """How many answers a stage's progress bar counts to: each request (twice with a native path), or
    AIPerf's warmup and profiling requests; 0 for a stage without a bar."""
    if isinstance(d, CorrectnessPhase):
        return (d.requests or 0) * (2 if d.native else 1)
    if isinstance(d, ReferencePhase):
        return d.requests or 0
    if isinstance(d, AiperfPhase) and d.settings is not None:
        return (d.settings.warmup_requests or 0) + (d.settings.requests or 0)
    return 0

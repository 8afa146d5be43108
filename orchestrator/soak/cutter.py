"""The soak's windows step: opens each time window, closes it on time through the join, journals its summary."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import anyio

from orchestrator.events import AccountingChecked, SoakTail, SoakWindowClosed, SoakWindowOpened, WindowStats
from orchestrator.soak.closing import CLOSE_WAIT_S, wait_closable, wait_last_closable
from orchestrator.soak.progress import LoadProgress
from orchestrator.soak.segment import Cut, SegmentRuns
from orchestrator.soak.tracker import SoakTracker
from orchestrator.spine.ports import AiperfResult, EventSink

__all__ = ["WindowCutter", "WindowJoin", "tail_name"]


class WindowJoin(Protocol):
    """What the windows step asks of the join (correlate.Correlator): close a window's accounting (at most
    `timeout_s` for its last halves, `carry`ing what is still open into the next window), drop a window
    the load never reached (True when it held nothing), or open a segment's tail (what its last window,
    closed on time, carries once no later window is open)."""

    async def close_window(self, window: str, *, timeout_s: float | None = None,
                           carry: bool = False) -> AccountingChecked: ...

    async def discard_window(self, window: str) -> bool: ...

    def open_tail(self, window: str) -> None: ...


def tail_name(window: str) -> str:
    """`soak/w0008/tail`: the join's name for the requests of a segment's last window `window` still open at its
    close on time (they count there once, SoakTail)."""
    return f"{window}/tail"


class WindowCutter:
    """Every window of one soak, across its segments: opened on the bus (SoakWindowOpened), closed through the
    join and the tracker, journaled (SoakWindowClosed). Per-window aggregates stay here (one small struct each)."""

    def __init__(self, bus: EventSink, join: WindowJoin, tracker: SoakTracker, progress: LoadProgress, *,
                 window_s: float, stopped_at: Mapping[str, int]) -> None:
        self._bus = bus
        self._join = join
        self._tracker = tracker
        self._progress = progress
        self._window_ns = int(window_s * 1e9)
        self._stopped_at = stopped_at  # AIPerf runs the stop ended: name -> when (unix ns); the loop's
        self.index = 0  # windows opened so far
        self.stats: list[WindowStats] = []  # the closed windows' summaries, in the order closed
        self.cut_short: set[str] = set()  # windows not yet at their end when the stop came (names)
        self.sent = 0  # requests of the closed windows: where the next AIPerf run's input starts
        self.closed_seq = 0  # the last SoakWindowClosed's seq
        self._last_end_ns: int | None = None  # the last answer of the windows closed so far
        # A segment's last window closed on time before its runs ended: its summary (the tail is closed at their
        # end, close_rest).
        self._tail: WindowStats | None = None

    @property
    def done(self) -> int:
        """Windows closed so far."""
        return len(self.stats)

    async def open(self, start_ns: int, segment: int, cuts: list[Cut], end_ns: int | None = None) -> Cut:
        """Open the next window from `start_ns` and append it to `cuts`: the tracker first, then the
        journal (so the join's cut is never ahead of the tracker's window). Shielded: a cancelled
        announcer leaves no window half opened."""
        with anyio.CancelScope(shield=True):
            self.index += 1
            cut = Cut(self.index, start_ns)
            cut.end_ns = end_ns
            cuts.append(cut)
            self._tracker.open_window(cut.index, start_ns, segment)
            await self._bus.publish(SoakWindowOpened(source="soak", window=cut.name, index=cut.index,
                                                     start_unix_ns=start_ns, segment=segment))
        return cut

    async def announce(self, scope: anyio.CancelScope, cuts: list[Cut], first_ns: int, count: int,
                       length_s: float, segment: int) -> None:
        """Open window k+1 when window k starts: a cut is on the bus a whole window before any request
        it takes, so no request is counted by the join before its window exists."""
        window_ns = self._window_ns
        with scope:
            for k in range(1, count):
                start = first_ns + k * window_ns
                if k > 1:
                    await anyio.sleep(max(0.0, (first_ns + (k - 1) * window_ns - time.time_ns()) / 1e9))
                end = first_ns + (k + 1) * window_ns if k + 1 < count else first_ns + int(length_s * 1e9)
                await self.open(start, segment, cuts, end)

    async def close_on_time(self, cuts: list[Cut], count: int, runs: SegmentRuns, *, launch_ns: int,
                            closed: Callable[[], None]) -> int:
        """Close a segment's windows on time while its load goes on (closing.py), calling `closed` after each; the
        last one too once its runs have said what they sent (else it waits for their end: close_rest). Returns
        how many closed once the segment's runs have all ended."""
        n = 0
        while not runs.done.is_set():
            # Until the announcer has opened the next window (or while the first request is awaited), look
            # again in 1 s.
            end_ns = cuts[n].end_ns if n < len(cuts) and n < count else None
            if end_ns is None:
                with anyio.move_on_after(1.0):
                    await runs.done.wait()
                continue
            if n == count - 1:
                if await wait_last_closable(self._progress, runs.names, end_ns, done=runs.done,
                                            sent_of=lambda name: self._sent_of(runs, name)) is None:
                    continue  # the runs ended first: close_rest closes it at their exit, as any end
                # Opened before the close: what the window still has open is carried there, never lost.
                self._join.open_tail(tail_name(cuts[n].name))
            else:
                await wait_closable(self._progress, runs.names, end_ns, done=runs.done)
                if runs.done.is_set():
                    continue
            stats = await self.close(cuts[n], runs.sending, launch_ns=launch_ns, exit_ns=None,
                                     carry_by_ns=end_ns + int(CLOSE_WAIT_S * 1e9))
            if n == count - 1:
                self._tail = stats
            closed()
            n += 1
        return n

    def _sent_of(self, runs: SegmentRuns, name: str) -> int | None:
        """What run `name` says its profiling phase sent: told while it runs (progress), else its outcome's
        count from its log once it has been judged."""
        told = self._progress.sent_in_all(name)
        if told is None and (outcome := runs.outcome.get(name)) is not None \
                and outcome.issued_from.get("profiling") == "aiperf_log":
            told = outcome.issued.get("profiling")
        return told

    async def close_rest(self, rest: list[Cut], aiperf: str, *, launch_ns: int, exit_ns: int,
                         outcome: AiperfResult | None, closed: Callable[[bool], Awaitable[None]]) -> None:
        """Once a segment's runs have ended (everything AIPerf wrote is on the bus): close the tail of its last
        window when that closed on time, else the windows it reached, awaiting `closed(last)` after each, and
        forget the cuts it never reached."""
        if self._tail is not None:
            await self.close_tail(aiperf, exit_ns=exit_ns, outcome=outcome)
            await closed(True)
            return
        reached = [c for c in rest if (acc := self._tracker.window(c.name)) and (acc.issued or acc.warmup_issued)]
        last_reached = rest.index(reached[-1]) if reached else -1
        for k, cut in enumerate(rest):
            if k > last_reached and await self._join.discard_window(cut.name):
                self._tracker.discard_window(cut.name)
                continue
            await self.close(cut, aiperf, launch_ns=launch_ns, exit_ns=exit_ns, last=k >= last_reached,
                             outcome=outcome)
            await closed(k >= last_reached)

    async def close(self, cut: Cut, aiperf: str, *, launch_ns: int, exit_ns: int | None, last: bool = False,
                    outcome: AiperfResult | None = None, carry_by_ns: int | None = None) -> WindowStats:
        """Close one window's accounting and aggregates and journal them (SoakWindowClosed); no verdict work.
        `carry_by_ns`: a close on time, by then at the latest, carrying what is still open (closing.py)."""
        join = self._join
        accounting = await (join.close_window(cut.name) if carry_by_ns is None else join.close_window(
            cut.name, timeout_s=max(0.0, (carry_by_ns - time.time_ns()) / 1e9), carry=True))
        await self._tracker.wait_seen(accounting.seq)
        acc = self._tracker.window(cut.name)
        first = acc.first_request_ns if acc else None
        # Time without load across the cut: this window's first request after the last one's last answer.
        gap = max(0.0, (first - self._last_end_ns) / 1e9) if first and self._last_end_ns else None
        end_ns = cut.end_ns if cut.end_ns is not None and (exit_ns is None or cut.end_ns <= exit_ns) \
            else max(cut.start_ns, (acc.last_request_ns if acc else None) or exit_ns or cut.start_ns)
        opened_first = acc is not None and acc.start_unix_ns == launch_ns
        stopped = self._stopped_at.get(aiperf)
        if stopped is not None and (cut.end_ns is None or cut.end_ns > stopped):
            self.cut_short.add(cut.name)  # the stop ended its load early: reported, not judged for errors
        stats = self._tracker.close_window(
            cut.name, end_ns, aiperf_classification=outcome.classification if last and outcome else "",
            accounting_balanced=accounting.balanced, gap_before_s=gap,
            aiperf_launch_unix_ns=self._progress.aiperf_launch_ns.get(aiperf) if opened_first else None,
            aiperf_exit_unix_ns=exit_ns if last else None)
        self._last_end_ns = stats.last_request_unix_ns or self._last_end_ns
        self.sent += stats.issued + stats.warmup_issued
        self.stats.append(stats)
        closed = await self._bus.publish(SoakWindowClosed(source="soak", window=cut.name, index=cut.index,
                                                          summary=stats))
        self.closed_seq = closed.seq
        return stats

    async def close_tail(self, aiperf: str, *, exit_ns: int, outcome: AiperfResult | None) -> SoakTail:
        """Once a segment's runs have ended: close the tail of its last window (closed on time) in the join and
        journal it (SoakTail), with how the last run ended."""
        last, self._tail = self._tail, None
        assert last is not None
        name = tail_name(last.window)
        checked = None if await self._join.discard_window(name) else await self._join.close_window(name)
        issued = checked.issued if checked else {}
        causes = {k: n for k, n in (checked.by_cause.get("profiling", {}) if checked else {}).items() if k != "ok"}
        ok = (checked.by_category.get("profiling", {}) if checked else {}).get("ok", 0)
        tail = SoakTail(
            source="soak", window=last.window, segment=last.segment, aiperf_run=aiperf,
            issued=issued.get("profiling", 0), ok=ok, errors=issued.get("profiling", 0) - ok,
            by_cause=dict(sorted(causes.items())), warmup_issued=issued.get("warmup", 0),
            carried=checked.carried if checked else 0, balanced=checked.balanced if checked else True,
            problems=list(checked.problems) if checked else [],
            aiperf_classification=outcome.classification if outcome else "", aiperf_exit_unix_ns=exit_ns)
        self.sent += tail.issued + tail.warmup_issued
        published = await self._bus.publish(tail)
        self.closed_seq = published.seq
        return published

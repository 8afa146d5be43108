"""AIPerf hands over: the soak's load moves to a fresh AIPerf process without a gap (docs/soak.md). `HandoverCue`
says when (memory `handover_mib` above its first minute's level, or every `handover_every_s`); `swap` is the
halt/go itself. Pure of the soak loop."""

from __future__ import annotations

import statistics
import time

import anyio

from orchestrator.soak.sessions import SessionLedger
from orchestrator.spine.ports import HandoverControl

__all__ = ["BASELINE_S", "HandoverCue", "Swap", "swap"]

# A process's memory level: the median of its samples in its first minute of profiling.
BASELINE_S = 60.0
_MIB = 1 << 20
# How often the predecessor's halt fact and its finished requests are looked at during a swap.
_POLL_S = 0.005
# The predecessor's halt fact is written within milliseconds of `halt`; longer: it is not heard.
_HALT_WAIT_S = 30.0
# Rate mode: how long the successor's `go` waits for the predecessor's next slot (its halt fact comes within
# two 5 ms polls; a missed slot at 1 request/s would be a 1 s gap, one at 100/s 10 ms).
_SLOT_WAIT_S = 1.0


# AIPerf 0.13.0 keeps every record's metrics in its records manager (about 2.4 KiB per request with the worker
# GC fix) and no setting bounds it, so over a long fast soak the load generator's memory grows without bound:
# the soak hands the load over to a fresh process.
class HandoverCue:
    """When the sending AIPerf process should hand over: memory `mib` above its first minute's level
    (0: never by memory), or `every_s` after its first profiling request (0: never by time)."""

    def __init__(self, *, mib: float, every_s: float, baseline_s: float = BASELINE_S) -> None:
        self.mib, self.every_s, self.baseline_s = mib, every_s, baseline_s
        self._pid: int | None = None
        self._first_ns: int | None = None
        self._early: list[int] = []
        self.baseline_bytes: float | None = None
        self.latest_bytes: int | None = None

    def follow(self, pid: int | None, first_ns: int) -> None:
        """A new process sends from `first_ns` (its first profiling request): its own baseline starts."""
        self._pid, self._first_ns, self._early = pid, first_ns, []
        self.baseline_bytes = self.latest_bytes = None

    def observe(self, pid: int, unix_ns: int, rss_bytes: int) -> None:
        """One memory sample of an AIPerf process tree (those of another process are ignored)."""
        if self._first_ns is None or pid != self._pid or unix_ns < self._first_ns:
            return
        self.latest_bytes = rss_bytes
        if unix_ns - self._first_ns <= self.baseline_s * 1e9:
            self._early.append(rss_bytes)
        elif self.baseline_bytes is None and self._early:
            self.baseline_bytes = statistics.median(self._early)
            self._early = []

    def due(self, now_ns: int) -> str:
        """Why the sending process should hand over now ("" : not yet)."""
        if self._first_ns is None:
            return ""
        if self.every_s > 0 and now_ns - self._first_ns >= self.every_s * 1e9:
            return f"every {self.every_s:g} s"
        if self.mib > 0 and self.baseline_bytes is not None and self.latest_bytes is not None:
            grown = (self.latest_bytes - self.baseline_bytes) / _MIB
            if grown >= self.mib:
                return f"memory {grown:.1f} MiB above its first minute's level (limit {self.mib:g} MiB)"
        return ""


# In concurrency mode the successor starts at limit 0 and gains one slot per request of the predecessor that
# finishes, so the two never have more than the target open. Windows are cut by time whatever process sent a
# request: a handover is no cut, but its gap is judged by `window_gap` like a cut's.
class Swap:
    """What a swap did: when the predecessor was halted and the successor let go (unix ns), what the
    predecessor sent in all (None: its halt fact never came), and in concurrency mode the most requests
    of both open at once over the target, as the limit was set (None in rate mode)."""

    def __init__(self) -> None:
        self.halt_ns = 0
        self.go_ns = 0
        self.sent: int | None = None
        self.over_target: int | None = None
        self.due_ns: int | None = None  # rate mode: when the successor's first request was due


# The successor is launched gated (AIPerf's timing manager waits for `go`, adapters/aiperf/timing.py); once it
# is ready the predecessor is halted (its open requests finish; it ends as a complete run) and the successor
# let go at the same instant.
async def swap(predecessor: HandoverControl, successor: HandoverControl, ledger: SessionLedger, *,
               concurrency: int | None) -> Swap:
    """Halt the predecessor and let the successor go. Rate mode: the successor's first request is due at the
    predecessor's next slot (its halt fact's `next_unix_ns`, awaited up to `_SLOT_WAIT_S`; else one interval
    after `go`), so the schedule runs on across the handover, neither skipping a slot nor adding one.
    Concurrency mode: the successor is let go at once, its limit the target less the predecessor's
    requests still open (its halt fact's `sent` less those `ledger` has seen finish), raised as they finish.
    Returns once the predecessor's halt fact is known and, in concurrency mode, its requests have all finished
    (`ledger.final` is set, so windows stop waiting for its later requests)."""
    out = Swap()
    if concurrency is not None:
        successor.set_limit(0)  # before go: until the halt fact tells how many are open, the successor waits
    out.halt_ns = time.time_ns()
    predecessor.halt()
    if concurrency is None:
        with anyio.move_on_after(_SLOT_WAIT_S):
            while True:
                if (fact := predecessor.halted()) is not None:
                    out.due_ns = fact.next_unix_ns
                    break
                await anyio.sleep(_POLL_S)  # a file another process writes: nothing to wait on but time
    successor.go(out.due_ns)
    out.go_ns = time.time_ns()
    limit = -1
    with anyio.move_on_after(_HALT_WAIT_S):
        while True:
            fact = predecessor.halted()
            if fact is not None:
                out.sent = ledger.final = fact.sent
                if concurrency is None:
                    break
                open_now = max(0, fact.sent - ledger.seen)
                if concurrency - open_now != limit:
                    limit = concurrency - open_now
                    successor.set_limit(max(0, limit))
                    over = max(0, open_now + max(0, limit) - concurrency)
                    out.over_target = max(out.over_target or 0, over)
                if open_now == 0:
                    break
            await anyio.sleep(_POLL_S)
    if concurrency is not None and limit != concurrency:
        successor.set_limit(concurrency)  # the halt fact never came: the successor takes the whole target
    return out

"""Host pauses: spans in which the whole host stood still (a suspended or snapshotted virtual machine), found
where the wall clock ran ahead of the monotonic clock between two of the run's own host samples.
"""

from __future__ import annotations

import msgspec

__all__ = ["PAUSE_FLOOR_S", "HostPause", "PauseWatch", "paused_within"]

# Wall minus monotonic time between two samples above this is a pause (2 s samples slew by at most 1 ms).
PAUSE_FLOOR_S = 0.1
# Pauses kept (oldest dropped): a long soak on a host that pauses every minute still keeps bounded memory.
_MAX_PAUSES = 10_000


class HostPause(msgspec.Struct, frozen=True, kw_only=True):
    """Between two host samples (wall clock, unix ns) the host stood still for `paused_s`."""

    start_unix_ns: int
    end_unix_ns: int
    paused_s: float


class PauseWatch:
    """Folds the (wall ns, monotonic ns) stamps of consecutive host samples into the pauses between them.

    While a VM is paused no process runs, so no load can be sent; on resume the wall clock is set forward, but
    CLOCK_MONOTONIC does not count the pause (seen on this project's 2-core VM: 18.4 s of wall clock against
    2.05 s monotonic between two 2-second host samples, every process silent meanwhile, AIPerf's included). A
    load gap across such a span is the host's, not the load generator's: `window_gap` judges a gap net of the
    pause inside it, and says so. An NTP step forward reads the same way; slewing (at most 0.5 ms/s) stays far
    below PAUSE_FLOOR_S.
    """

    def __init__(self) -> None:
        self.pauses: list[HostPause] = []
        self._last: tuple[int, int] | None = None

    def observe(self, wall_ns: int, mono_ns: int) -> HostPause | None:
        """One sample's stamps (the bus's, on publish); the pause since the previous sample, if any."""
        last, self._last = self._last, (wall_ns, mono_ns)
        if last is None or not mono_ns or not last[1]:
            return None
        paused_s = ((wall_ns - last[0]) - (mono_ns - last[1])) / 1e9
        if paused_s <= PAUSE_FLOOR_S:
            return None
        pause = HostPause(start_unix_ns=last[0], end_unix_ns=wall_ns, paused_s=round(paused_s, 3))
        self.pauses.append(pause)
        del self.pauses[:-_MAX_PAUSES]
        return pause


def paused_within(pauses: list[HostPause], start_unix_ns: int, end_unix_ns: int) -> float:
    """Seconds of host pause inside [start, end]: each pause that overlaps it counts whole (its place within
    its sample interval is not known), capped at the span's own length."""
    paused = sum(p.paused_s for p in pauses if p.start_unix_ns < end_unix_ns and p.end_unix_ns > start_unix_ns)
    return min(paused, max(0.0, (end_unix_ns - start_unix_ns) / 1e9))

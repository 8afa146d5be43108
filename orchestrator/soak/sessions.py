"""When a soak window holds every request that started in it: AIPerf's session numbers, without gaps.
Pure: no bus, no clock.
"""

from __future__ import annotations

__all__ = ["SessionLedger"]


class SessionLedger:
    """The profiling session numbers of one AIPerf run seen so far, as a gap-free prefix (0 .. `next - 1`)
    and the few seen above it (at most the requests in flight). Memory is bounded by the requests in
    flight, not by the requests seen."""

    def __init__(self) -> None:
        self.next = 0  # the lowest session number not seen yet
        self.prefix_issued_ns: int | None = None  # the latest credit issue within the prefix
        self._above: dict[int, int | None] = {}  # seen session numbers above the prefix -> their issue (ns)
        # Set once the run was halted (a handover): the session numbers it issued in all; then every
        # boundary is covered once they are all seen (it issues nothing more).
        self.final: int | None = None

    def add(self, session_num: int | None, issued_ns: int | None) -> None:
        """One profiling request seen (its client record); a session seen twice (tap and export) counts once."""
        if session_num is None or session_num < self.next:
            return
        self._above[session_num] = issued_ns
        while self.next in self._above:
            issued = self._above.pop(self.next)
            if issued is not None and (self.prefix_issued_ns is None or issued > self.prefix_issued_ns):
                self.prefix_issued_ns = issued
            self.next += 1

    def covers(self, boundary_ns: int) -> bool:
        """Whether every request that started before `boundary_ns` has been seen: the gap-free prefix
        holds a credit issued at or after it.

        AIPerf numbers the credits of each phase `session_num` 0, 1, 2, ... in the order it issues them, with no
        gaps (measured on 0.13.0: `bench/RESULTS.md`, "Windows close one request timeout after their end"), and a
        request starts no earlier than its credit is issued. So once every session number up to one whose credit
        was issued at or after a window's end has been seen, nothing of the window is still in flight.
        """
        if self.final is not None and self.next >= self.final:
            return True
        return self.prefix_issued_ns is not None and self.prefix_issued_ns >= boundary_ns

    @property
    def seen(self) -> int:
        """Distinct profiling session numbers seen so far."""
        return self.next + len(self._above)

    @property
    def missing(self) -> int:
        """Session numbers below the highest seen that are not seen yet (requests still in flight)."""
        return max(self._above) + 1 - self.next - len(self._above) if self._above else 0

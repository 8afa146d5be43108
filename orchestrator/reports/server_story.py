"""A model's server story for the reports: each restart with its cause, each span served degraded or unhealthy,
each asked-for stop that left a traceback. Pure and bounded (one entry per restart, state change or incarnation).
"""

from __future__ import annotations

import msgspec

from orchestrator.events import ServerExited, ServerRestarting, ServerSpawned, ServerStateChanged
from orchestrator.reports.schema import ExpectedStop, Restart, StateSpan

__all__ = ["ServerStory"]

# States in which a server answered, or should have, short of ready: the ones a reader must see with their span.
_TROUBLED = frozenset({"degraded", "unhealthy"})


# Fed by reports/fold.py from ServerRestarting, ServerSpawned, ServerStateChanged and ServerExited.
class ServerStory:
    """One model's restarts and troubled spans, fed event by event with the event's time in run seconds."""

    def __init__(self) -> None:
        self.restarts: list[Restart] = []
        self.spans: list[StateSpan] = []
        self.stops: list[ExpectedStop] = []
        self._open: StateSpan | None = None

    def restarting(self, ev: ServerRestarting, t_s: float) -> None:
        self.restarts.append(Restart(incarnation=ev.incarnation, attempt=ev.attempt, at_s=t_s,
                                     backoff_s=ev.backoff_s, reason=ev.reason, cause=ev.cause))

    def spawned(self, ev: ServerSpawned, t_s: float) -> None:
        """The incarnation a restart decided was started: the restart happened now."""
        for i, r in enumerate(self.restarts):
            if r.incarnation == ev.incarnation and r.spawned_s is None:
                self.restarts[i] = msgspec.structs.replace(r, spawned_s=t_s)

    def state(self, ev: ServerStateChanged, t_s: float) -> None:
        """A troubled state opens a span; any other state (or another troubled one) closes the open span."""
        if self._open is not None and (ev.state != self._open.state or ev.incarnation != self._open.incarnation):
            self._close(t_s, ev.state)
        if ev.state in _TROUBLED and self._open is None:
            self._open = StateSpan(state=ev.state, incarnation=ev.incarnation, from_s=t_s, reason=ev.reason)

    def exited(self, ev: ServerExited) -> None:
        """A stop we asked for whose output ends in a traceback our signal raised (uvicorn re-raising SIGINT as
        KeyboardInterrupt), as the supervisor journaled it: noted as the server's own handling of the signal,
        so nobody reads it as a crash."""
        if ev.expected and ev.stop_traceback:
            self.stops.append(ExpectedStop(incarnation=ev.incarnation, returncode=ev.returncode, signal=ev.signal,
                                           last_line=ev.stop_traceback))

    def finish(self) -> tuple[list[Restart], list[StateSpan], list[ExpectedStop]]:
        """The restarts, spans and noted stops; a span still open ends with the journal (`until` stays None)."""
        if self._open is not None:
            self.spans.append(self._open)
            self._open = None
        return list(self.restarts), list(self.spans), list(self.stops)

    def _close(self, t_s: float, next_state: str) -> None:
        assert self._open is not None
        o = self._open
        self.spans.append(StateSpan(state=o.state, incarnation=o.incarnation, from_s=o.from_s, until_s=t_s,
                                    reason=o.reason, ended_by=next_state))
        self._open = None

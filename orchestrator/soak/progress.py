"""The load's progress per AIPerf run, from its client records: what has been seen, sent and answered."""

from __future__ import annotations

import re

import anyio

from orchestrator.events import AiperfExited, AiperfStarted, AnyEvent, ClientRecord, LogLine, ProcessSampled
from orchestrator.soak.folding import EventFold
from orchestrator.soak.sessions import SessionLedger
from orchestrator.spine.bus import Bus

__all__ = ["LoadProgress", "profiling_sent"]

# AIPerf 0.13.0's line as it stops issuing a phase (timing/phase/runner.py; adapters/aiperf/sent.py reads the same
# line for the run's outcome): `Phase profiling (profiling) sending complete | sent=239, ...`.
_SENT = re.compile(r"\((?P<kind>\w+)\) sending complete \| sent=(?P<sent>[\d,]+)")


def profiling_sent(text: str) -> int | None:
    """What AIPerf says its profiling phase sent, from its sending-complete log line; None for any other line."""
    if "sending complete" not in text:
        return None
    match = _SENT.search(text)
    return int(match["sent"].replace(",", "")) if match and match["kind"] == "profiling" else None


class LoadProgress(EventFold):
    """Lossless bus subscriber on the records step: folds each AIPerf run's client records (before the join)
    and its process into what the windows' closes and the handovers wait on. Publishes nothing."""

    def __init__(self, bus: Bus, *, size: int = 8192) -> None:
        super().__init__(bus, "soak-progress", size=size)
        self._first_seen = anyio.Event()
        # Per AIPerf run: its pid and its launch (AiperfStarted's wall clock).
        self.aiperf_pids: dict[str, int] = {}
        self.aiperf_launch_ns: dict[str, int] = {}
        # Per AIPerf run (its name): the start of its first profiling request, once a record shows it.
        self.first_profiling_ns: dict[str, int] = {}
        # Per AIPerf run: the latest start of its profiling requests seen, and their latest answer (a handover's
        # gap starts there: in concurrency mode the successor rightly waits for the predecessor's open requests).
        self.last_profiling_ns: dict[str, int] = {}
        self.last_answer_ns: dict[str, int] = {}
        # The latest sample of the sending AIPerf process tree: (pid, unix ns, bytes); the handover's cue.
        self.aiperf_sample: tuple[int, int, int] | None = None
        # Per AIPerf run: the profiling session numbers seen (when a window holds all its requests).
        self.sessions: dict[str, SessionLedger] = {}
        # Per AIPerf run: what its profiling phase sent in all, from its log (a segment's last window closes once
        # all of it is seen). AIPerf's log lines name no run: a line is the run's when it was the only one
        # started and not exited (during a handover's overlap two are, and the line is not used).
        self.sent: dict[str, int] = {}
        self._running: list[str] = []

    def observe(self, ev: AnyEvent) -> None:
        """Take one event (those of no concern are ignored)."""
        if isinstance(ev, ClientRecord):
            self._client_record(ev)
        elif isinstance(ev, AiperfStarted):
            # Keyed by the AIPerf run's own name (one per AIPerf process: a handful per soak).
            self.aiperf_pids[ev.window] = ev.pid
            self.aiperf_launch_ns[ev.window] = ev.ts_ns
            self._running.append(ev.window)
        elif isinstance(ev, AiperfExited):
            if ev.window in self._running:
                self._running.remove(ev.window)
        elif isinstance(ev, LogLine) and ev.source == "aiperf" and len(self._running) == 1:
            if (sent := profiling_sent(ev.text)) is not None:
                self.sent.setdefault(self._running[0], sent)
        elif isinstance(ev, ProcessSampled) and ev.role == "aiperf":
            self.aiperf_sample = (ev.pid, ev.ts_ns, ev.rss_bytes)

    def _client_record(self, ev: ClientRecord) -> None:
        """A profiling record's session number is seen; the first profiling record of an AIPerf run fixes
        its start."""
        if ev.phase != "profiling":
            return
        run = ev.aiperf_run
        self.ledger(run).add(ev.session_num, ev.credit_issued_ns)
        if ev.request_start_ns and ev.request_start_ns > self.last_profiling_ns.get(run, 0):
            self.last_profiling_ns[run] = ev.request_start_ns
        if ev.request_end_ns and ev.request_end_ns > self.last_answer_ns.get(run, 0):
            self.last_answer_ns[run] = ev.request_end_ns
        if ev.request_start_ns and run not in self.first_profiling_ns:
            self.first_profiling_ns[run] = ev.request_start_ns
            self._first_seen.set()
            self._first_seen = anyio.Event()

    async def wait_first_profiling(self, aiperf_run: str) -> int:
        """Block until a client record of `aiperf_run`'s profiling phase has been seen; its start (ns).
        Cancel the caller's scope to stop waiting (an AIPerf run may end without one)."""
        while aiperf_run not in self.first_profiling_ns:
            await self._first_seen.wait()
        return self.first_profiling_ns[aiperf_run]

    async def wait_covered(self, aiperf_run: str, boundary_ns: int) -> None:
        """Block until every request of AIPerf run `aiperf_run` that started before `boundary_ns` has
        been seen (its client record; see SessionLedger). Cancel the caller's scope to stop waiting."""
        while not ((ledger := self.sessions.get(aiperf_run)) is not None and ledger.covers(boundary_ns)):
            await self.next_batch()

    def ledger(self, aiperf_run: str) -> SessionLedger:
        """AIPerf run `aiperf_run`'s session ledger (made empty when none of its records was seen)."""
        ledger = self.sessions.get(aiperf_run)
        if ledger is None:
            ledger = self.sessions[aiperf_run] = SessionLedger()
        return ledger

    async def wait_all_seen(self, aiperf_run: str, sent: int) -> None:
        """Block until `sent` distinct profiling requests of run `aiperf_run` have been seen."""
        while self.ledger(aiperf_run).seen < sent:
            await self.next_batch()

    def sent_in_all(self, aiperf_run: str) -> int | None:
        """What run `aiperf_run`'s profiling phase sent in all, once it has said so (its halt fact at a handover,
        else its log's sending-complete line); None until then."""
        ledger = self.sessions.get(aiperf_run)
        if ledger is not None and ledger.final is not None:
            return ledger.final
        return self.sent.get(aiperf_run)

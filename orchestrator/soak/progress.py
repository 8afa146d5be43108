"""The load's progress per AIPerf run, from its client records: what has been seen, sent and answered."""

from __future__ import annotations

import anyio

from orchestrator.events import AiperfStarted, AnyEvent, ClientRecord, ProcessSampled
from orchestrator.soak.folding import EventFold
from orchestrator.soak.sessions import SessionLedger
from orchestrator.spine.bus import Bus

__all__ = ["LoadProgress"]


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

    def observe(self, ev: AnyEvent) -> None:
        """Take one event (those of no concern are ignored)."""
        if isinstance(ev, ClientRecord):
            self._client_record(ev)
        elif isinstance(ev, AiperfStarted):
            # Keyed by the AIPerf run's own name (one per AIPerf process: a handful per soak).
            self.aiperf_pids[ev.window] = ev.pid
            self.aiperf_launch_ns[ev.window] = ev.ts_ns
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

"""The soak's answer tracker: scores each correlated answer and counts it into its window."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import anyio
import msgspec
from anyio.abc import TaskStatus

from orchestrator.base.errors import DatasetError
from orchestrator.config import ModelConfig
from orchestrator.dataset import (
    Dataset,
)
from orchestrator.events import (
    AccountingChecked,
    AiperfStarted,
    AnswerIncomplete,
    AnyEvent,
    ClientRecord,
    Event,
    HostSampled,
    ProcessSampled,
    RequestCorrelated,
    ResourceSampled,
    ServerExited,
    ServerExitFact,
    ServerRestarting,
    VerdictReached,
)
from orchestrator.judge.answers import judge_answer
from orchestrator.judge.gates import ScoredAnswer
from orchestrator.judge.generations import Generation
from orchestrator.soak.pauses import PauseWatch
from orchestrator.soak.ratios import ItemRatioSeries
from orchestrator.soak.samples import SampleSeries
from orchestrator.soak.sessions import SessionLedger
from orchestrator.soak.supervision import SupervisionFacts
from orchestrator.soak.verdicts import FirstPass
from orchestrator.soak.window import WINDOW_PREFIX, WindowAccumulator, WindowStats
from orchestrator.spine.bus import Bus, Subscription

__all__ = ["SoakTracker"]


class SoakTracker:
    """Lossless bus subscriber: folds each open window's events into its WindowAccumulator, scores each
    profiling answer against its dataset item (publishing VerdictReached), and remembers unexpected
    exits. Windows are time cuts of one load and several are open at once (a window closes only once its
    last request can have ended): requests go to the window the join named, resource samples, restarts
    and exits to the open window whose start is the latest at or before their time. Publishing never
    waits on its own full queue (it drains that queue into a local backlog)."""

    def __init__(self, bus: Bus, dataset: Dataset, model: ModelConfig, *, size: int = 8192,
                 max_tokens: int | None = None, warmup_s: float = 60.0, baseline_s: float = 120.0) -> None:
        self._bus = bus
        self._max_tokens = max_tokens  # the limit AIPerf sends (workload.max_tokens), for length_limit
        self._dataset = dataset
        self._model = model
        self._size = size
        self._sub: Subscription | None = None
        self._backlog: deque[AnyEvent] = deque()
        self._open: dict[str, WindowAccumulator] = {}
        self._current: WindowAccumulator | None = None
        self._seen = anyio.Event()
        self.last_seq = 0
        self.accounting: dict[str, AccountingChecked] = {}
        # Per AIPerf run: its pid and its launch (AiperfStarted's wall clock).
        self.aiperf_pids: dict[str, int] = {}
        self.aiperf_launch_ns: dict[str, int] = {}
        # Per AIPerf run (its window name): the start of its first profiling request, once a record shows it.
        self.first_profiling_ns: dict[str, int] = {}
        self._first_seen = anyio.Event()
        # Per AIPerf run: the latest start of its profiling requests seen, and their latest answer (a handover's
        # gap starts there: in concurrency mode the successor rightly waits for the predecessor's open requests).
        self.last_profiling_ns: dict[str, int] = {}
        self.last_answer_ns: dict[str, int] = {}
        # The latest sample of the sending AIPerf process tree: (pid, unix ns, bytes); the handover's cue.
        self.aiperf_sample: tuple[int, int, int] | None = None
        # Per AIPerf run: the profiling session numbers seen (when a window holds all its requests).
        self.sessions: dict[str, SessionLedger] = {}
        # The rows of AIPerf's input (set by the loop; 0: unknown): the first pass over them is over once
        # each was sent and answered (the memory verdicts judge their slope after it).
        self.cycle = 0
        self.first_pass_ns: int | None = None
        self._first_rows: set[tuple[str, str]] = set()
        self._latest_end_ns = 0
        # The server's unplanned ends, restarts and orphans, as soak.supervision judges them.
        self.supervision = SupervisionFacts()
        self.restarts = 0
        # Every memory sample, by verdict (the sampled trend rule judges them, not window medians).
        self.samples: dict[str, SampleSeries] = {}
        # The host's own pauses (a suspended VM), from the host samples' two clocks: window_gap leaves them out.
        self.pause_watch = PauseWatch()
        # AIPerf's samples by process, in the order the processes first sampled (one per handover
        # generation: a handful per soak; 10 s blocks, so bounded by time like `samples`).
        self.aiperf_by_pid: dict[int, SampleSeries] = {}
        # Each profiling request's latency over its own item's baseline, by timing source (latency_drift).
        self.ratios = {kind: ItemRatioSeries(warmup_s=warmup_s, baseline_s=baseline_s) for kind in ("server", "client")}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._bus.subscribe("soak", size=self._size) as sub:
            self._sub = sub
            task_status.started()
            async for batch in sub.batches():
                self._backlog.extend(batch)
                while self._backlog:
                    ev = self._backlog.popleft()
                    for out in self._handle(ev):
                        await self._publish(out)
                    self.last_seq = max(self.last_seq, ev.seq)
                    self._seen.set()
                    self._seen = anyio.Event()

    async def _publish(self, ev: Event) -> None:
        assert self._sub is not None  # published only from run(), inside its subscription
        await self._sub.publish(ev, spill=self._backlog.append)

    async def wait_seen(self, seq: int, timeout_s: float = 30.0) -> None:
        """Block until every event up to `seq` has been handled (and its verdicts published)."""
        with anyio.move_on_after(timeout_s):
            while self.last_seq < seq:
                await self._seen.wait()

    @property
    def current(self) -> WindowAccumulator | None:
        """The accumulator of the window opened last, while open (None when every window is closed)."""
        return self._current

    def at(self, unix_ns: int) -> WindowAccumulator | None:
        """The open window whose start is the latest at or before `unix_ns` (else the earliest open)."""
        chosen: WindowAccumulator | None = None
        for acc in self._open.values():
            if acc.start_unix_ns <= unix_ns and (chosen is None or acc.start_unix_ns >= chosen.start_unix_ns):
                chosen = acc
        if chosen is None and self._open:
            chosen = min(self._open.values(), key=lambda a: a.start_unix_ns)
        return chosen

    async def wait_first_profiling(self, aiperf_window: str) -> int:
        """Block until a client record of `aiperf_window`'s profiling phase has been seen; its start (ns).
        Cancel the caller's scope to stop waiting (an AIPerf run may end without one)."""
        while aiperf_window not in self.first_profiling_ns:
            await self._first_seen.wait()
        return self.first_profiling_ns[aiperf_window]

    async def wait_covered(self, aiperf_window: str, boundary_ns: int) -> None:
        """Block until every request of AIPerf run `aiperf_window` that started before `boundary_ns` has
        been seen (its client record; see SessionLedger). Cancel the caller's scope to stop waiting."""
        while not ((ledger := self.sessions.get(aiperf_window)) is not None and ledger.covers(boundary_ns)):
            await self._seen.wait()

    def ledger(self, aiperf_window: str) -> SessionLedger:
        """AIPerf run `aiperf_window`'s session ledger (made empty when none of its records was seen)."""
        ledger = self.sessions.get(aiperf_window)
        if ledger is None:
            ledger = self.sessions[aiperf_window] = SessionLedger()
        return ledger

    async def wait_all_seen(self, aiperf_window: str, sent: int) -> None:
        """Block until `sent` distinct profiling requests of run `aiperf_window` have been seen."""
        while self.ledger(aiperf_window).seen < sent:
            await self._seen.wait()

    def window(self, window: str) -> WindowAccumulator | None:
        """An open window's accumulator by name."""
        return self._open.get(window)

    def open_window(self, index: int, start_unix_ns: int, segment: int = 0) -> WindowAccumulator:
        acc = WindowAccumulator(index, start_unix_ns, criteria=self._model.correctness, segment=segment)
        self._open[acc.window] = self._current = acc
        return acc

    def close_window(self, window: str, end_unix_ns: int, *, aiperf_classification: str = "",
                     accounting_balanced: bool | None = None, gap_before_s: float | None = None,
                     aiperf_launch_unix_ns: int | None = None, aiperf_exit_unix_ns: int | None = None) -> WindowStats:
        """Close an open window (WindowAccumulator.close with the loop's facts about it) and forget it."""
        acc = self._open.pop(window)
        if acc is self._current:
            self._current = None
        self.accounting.pop(window, None)
        return acc.close(end_unix_ns, aiperf_classification=aiperf_classification,
                         accounting_balanced=accounting_balanced, gap_before_s=gap_before_s,
                         aiperf_launch_unix_ns=aiperf_launch_unix_ns, aiperf_exit_unix_ns=aiperf_exit_unix_ns)

    def discard_window(self, window: str) -> None:
        """Drop an open window that the load never reached (nothing of it is kept)."""
        acc = self._open.pop(window, None)
        if acc is self._current:
            self._current = max(self._open.values(), key=lambda a: a.start_unix_ns, default=None)

    @property
    def exits(self) -> list[ServerExitFact]:
        return self.supervision.exits

    @property
    def orphans_killed(self) -> int:
        return self.supervision.orphans_killed

    def _handle(self, ev: AnyEvent) -> Iterable[Event]:
        self.supervision.observe(ev)
        if isinstance(ev, ClientRecord):
            self._client_record(ev)
        elif isinstance(ev, RequestCorrelated):
            return self._request(ev)
        elif isinstance(ev, ResourceSampled | ProcessSampled | ServerExited | ServerRestarting):
            self._sampled_or_server(ev, self.at(ev.ts_ns) if self._open else None)
        elif isinstance(ev, AccountingChecked):
            self.accounting[ev.window] = ev
        elif isinstance(ev, AiperfStarted):
            # Keyed by the AIPerf run's own name (one per AIPerf process: a handful per soak).
            self.aiperf_pids[ev.window] = ev.pid
            self.aiperf_launch_ns[ev.window] = ev.ts_ns
        elif isinstance(ev, HostSampled):
            self.pause_watch.observe(ev.ts_ns, ev.mono_ns)
        return ()

    def _client_record(self, ev: ClientRecord) -> None:
        """A profiling record's session number is seen; the first profiling record of an AIPerf run fixes
        its start (and the latency ratios' origin)."""
        if ev.phase == "profiling":
            ledger = self.ledger(ev.aiperf_run)
            ledger.add(ev.session_num, ev.credit_issued_ns)
            if ev.request_start_ns and ev.request_start_ns > self.last_profiling_ns.get(ev.aiperf_run, 0):
                self.last_profiling_ns[ev.aiperf_run] = ev.request_start_ns
            if ev.request_end_ns and ev.request_end_ns > self.last_answer_ns.get(ev.aiperf_run, 0):
                self.last_answer_ns[ev.aiperf_run] = ev.request_end_ns
        if ev.phase == "profiling" and ev.request_start_ns and ev.aiperf_run not in self.first_profiling_ns:
            self.first_profiling_ns[ev.aiperf_run] = ev.request_start_ns
            for series in self.ratios.values():
                series.start(ev.request_start_ns)
            self._first_seen.set()
            self._first_seen = anyio.Event()

    def first_pass(self) -> FirstPass | None:
        """The load's first pass over its input (None when the input's size is not known)."""
        return FirstPass(requests=self.cycle, end_ns=self.first_pass_ns) if self.cycle else None

    def _pass(self, ev: RequestCorrelated) -> None:
        """Count the request's input row toward the first pass (any phase: warmup requests reach the server
        too); the pass ends at the latest answer so far once every row was seen."""
        if ev.request_end_ns and ev.request_end_ns > self._latest_end_ns:
            self._latest_end_ns = ev.request_end_ns
        self._first_rows.add((ev.item_id or ev.conversation_id, ev.arm))
        if len(self._first_rows) >= self.cycle:
            self.first_pass_ns = self._latest_end_ns or ev.ts_ns
            self._first_rows = set()

    def _request(self, ev: RequestCorrelated) -> Iterable[Event]:
        """A correlated request counts in the window the join named (none once that window closed). The
        capability probe's requests (their own window, before the load) are not the load's: not of the first pass."""
        if self.cycle and self.first_pass_ns is None and ev.window.startswith(WINDOW_PREFIX):
            self._pass(ev)
        acc = self._open.get(ev.window)
        if acc is None:
            return ()
        acc.add_request(phase=ev.phase, ok=ev.ok, cause=ev.cause, request_latency_ms=ev.request_latency_ms,
                        handler_ms=ev.handler_ms, model_call_ms=ev.model_call_ms,
                        request_start_ns=ev.request_start_ns, request_end_ns=ev.request_end_ns,
                        incarnation=ev.incarnation, item_id=ev.item_id)
        if ev.phase == "profiling" and ev.ok:
            self._ratio(ev)
            return self._verdict(acc, ev)
        return ()

    def _sampled_or_server(self, ev: ResourceSampled | ProcessSampled | ServerExited | ServerRestarting,
                           acc: WindowAccumulator | None) -> None:
        """Memory samples go to their verdict's series and the open window of their time; so do
        unexpected exits and restarts (to the window only)."""
        if isinstance(ev, ResourceSampled):
            if not ev.pre_ready:  # a (re)starting server's climb to its level is no leak
                self._sample("server_rss", ev.ts_ns, ev.rss_bytes)
                if ev.gpu_memory_bytes is not None:
                    # In a PID namespace the figure is device-wide (every process on the GPU): its own verdict.
                    self._sample("device_gpu_memory" if ev.gpu_memory_scope == "device" else "server_gpu_memory",
                                 ev.ts_ns, ev.gpu_memory_bytes)
            if acc is not None:
                acc.add_resource(ev.rss_bytes, ev.gpu_memory_bytes)
        elif isinstance(ev, ProcessSampled):
            self._sample("orchestrator_rss" if ev.role == "orchestrator" else "aiperf_rss", ev.ts_ns, ev.rss_bytes)
            if ev.role == "aiperf":
                self.aiperf_sample = (ev.pid, ev.ts_ns, ev.rss_bytes)
                series = self.aiperf_by_pid.get(ev.pid)
                if series is None:
                    series = self.aiperf_by_pid[ev.pid] = SampleSeries()
                series.add(ev.ts_ns, ev.rss_bytes / 2.0**20)
            if acc is not None:
                acc.add_process(ev.role, ev.rss_bytes)
        elif isinstance(ev, ServerExited):
            if not ev.expected and acc is not None:
                acc.add_unexpected_exit()
        else:
            self.restarts += 1
            if acc is not None:
                acc.add_restart()

    def aiperf_generations(self, end_ns: int) -> list[Generation]:
        """AIPerf's samples up to `end_ns` by process generation (judge.generations), in their order, each
        from its first profiling request, with the requests seen of it. A process none of whose profiling
        requests was seen (a successor gated, or stopped before it sent) carried no load and is left out."""
        runs = {pid: window for window, pid in self.aiperf_pids.items()}
        out = []
        for pid, series in self.aiperf_by_pid.items():
            times, values, _n = series.between(0, end_ns)
            if not times:
                continue
            window = runs.get(pid)
            first = self.first_profiling_ns.get(window) if window is not None else None
            if window is None or first is None:
                continue
            ledger = self.sessions.get(window)
            out.append(Generation(pid=pid, times_s=times, values=values, start_s=first / 1e9,
                                  requests=ledger.seen if ledger is not None else 0))
        return out

    def _ratio(self, ev: RequestCorrelated) -> None:
        """The request's latency over its item's baseline, server-timed and client-timed."""
        if ev.request_start_ns is None:
            return
        if ev.handler_ms is not None:
            self.ratios["server"].add(ev.request_start_ns, ev.item_id, ev.handler_ms)
        if ev.request_latency_ms is not None:
            self.ratios["client"].add(ev.request_start_ns, ev.item_id, ev.request_latency_ms)

    def _sample(self, metric: str, unix_ns: int, value_bytes: int) -> None:
        series = self.samples.get(metric)
        if series is None:
            series = self.samples[metric] = SampleSeries()
        series.add(unix_ns, value_bytes / 2.0**20)

    def _verdict(self, acc: WindowAccumulator, ev: RequestCorrelated) -> tuple[Event, ...]:
        """The answer's VerdictReached, after its AnswerIncomplete when it is not whole. A missing text
        with a count of 0 is an empty answer; a missing text otherwise was not observed (an error)."""
        model = self._model
        try:
            item = self._dataset.item(ev.item_id)
        except (KeyError, DatasetError):
            acc.add_verdict(ScoredAnswer(item_id=ev.item_id, arm=ev.arm, kind="", verdict="error"))
            return (VerdictReached(source="soak", model=model.name, item_id=ev.item_id, arm=ev.arm, path="aiperf",
                                   verdict="error", answer=ev.answer, request_id=ev.request_id,
                                   detail=f"conversation {ev.conversation_id!r} maps to no dataset item"),)
        if model.correctness.scorer != "dataset":
            item = msgspec.structs.replace(item, scoring=model.correctness.scorer)
        text = ev.answer if ev.answer is not None or ev.completion_tokens != 0 else ""
        out: list[Event] = []
        if text is None:
            verdict, detail = "error", "the answer text was not observed (live tap)"
        else:
            judged = judge_answer(text, item, question=item.question, completion_tokens=ev.completion_tokens,
                                  max_tokens=self._max_tokens)
            verdict, detail = judged.verdict, judged.detail
            c = judged.completeness
            if not c.complete:
                out.append(AnswerIncomplete(
                    source="soak", model=model.name, path="aiperf", defects=list(c.defects), details=list(c.details),
                    item_id=item.id, arm=ev.arm, request_id=ev.request_id, answer=text[:500],
                    completion_tokens=ev.completion_tokens, max_tokens=self._max_tokens))
        acc.add_verdict(ScoredAnswer(item_id=item.id, arm=ev.arm, kind=item.kind, verdict=verdict))
        out.append(VerdictReached(source="soak", model=model.name, item_id=item.id, arm=ev.arm, path="aiperf",
                                  verdict=verdict, answer=ev.answer, gold=item.answer, item_kind=item.kind,  # type: ignore[arg-type]
                                  scoring=item.scoring, request_id=ev.request_id, detail=detail))
        return tuple(out)

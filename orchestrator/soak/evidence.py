"""What the soak's verdicts judge: `SoakEvidence`, a frozen snapshot that `judge_soak` takes whole, and the
verdict step's bus subscriber that folds the events into it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import msgspec

from orchestrator.events import (
    AiperfRunFact,
    AiperfStarted,
    AnyEvent,
    ClientRecord,
    HostSampled,
    ProcessSampled,
    RequestCorrelated,
    ResourceSampled,
    RestartFact,
    ServerExitFact,
    SoakHandover,
    SoakTail,
    SoakWindowClosed,
    SoakWindowOpened,
    WindowStats,
)
from orchestrator.judge.generations import Generation
from orchestrator.soak.folding import EventFold
from orchestrator.soak.pauses import HostPause, PauseWatch
from orchestrator.soak.ratios import ItemRatioSeries
from orchestrator.soak.samples import SampleSeries
from orchestrator.soak.sessions import SessionLedger
from orchestrator.soak.supervision import SupervisionFacts
from orchestrator.soak.window import WINDOW_PREFIX
from orchestrator.spine.bus import Bus

__all__ = ["EvidenceCollector", "FirstPass", "LoadFacts", "SoakEvidence"]


class FirstPass(msgspec.Struct, frozen=True, kw_only=True):
    """The load's first pass over its input: `requests` requests (each input row once), ended at `end_ns`
    (wall clock: the latest answer when the last row was first answered; None while it goes on)."""

    requests: int
    end_ns: int | None = None


# Taken at a look and judged at once (judge_soak is pure and synchronous): the series it holds are the
# collector's own, read before the collector's next event, so no copy is made of hours of samples.
class SoakEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the soak's verdicts judge at one look (see judge_soak for how each is used)."""

    # The closed windows, in any order (judged by index).
    windows: Sequence[WindowStats] = ()
    # The server's unplanned ends and its restarts (soak.supervision's facts).
    exits: Sequence[ServerExitFact] = ()
    restarts: Sequence[RestartFact] = ()
    # Windows a stop (SIGINT/SIGTERM) cut short: reported, not judged for errors.
    cut_short: Collection[str] = frozenset()
    # The AIPerf runs that have ended, the ones still going (", "-joined), and those the stop ended.
    runs: Sequence[AiperfRunFact] = ()
    running: str = ""
    stopped: Collection[str] = frozenset()
    # Every memory sample by verdict; None judges memory on the windows' medians instead.
    samples: Mapping[str, SampleSeries] | None = None
    # The load's span so far (wall-clock ns): its first request to the last closed window's end.
    load_span_ns: tuple[int, int] | None = None
    # Each request's latency over its item's baseline, by timing source; None judges per-window medians.
    ratios: Mapping[str, ItemRatioSeries] | None = None
    first_pass: FirstPass | None = None
    # Each handover's name, gap (s) and its end (wall-clock ns): window_gap judges them as cuts.
    handovers: Sequence[tuple[str, float | None, int | None]] = ()
    # AIPerf's samples by process generation; two or more judge aiperf_rss per generation.
    aiperf_generations: Sequence[Generation] = ()
    host_pauses: Sequence[HostPause] = ()
    # The segments' tails (a last window closed on time before its runs ended): the accounting adds them.
    tails: Sequence[SoakTail] = ()


class LoadFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What only the loop knows of the load at a look: the AIPerf runs that have ended (with what each says it
    issued), those still going, those the stop ended, and the windows the stop cut short."""

    runs: Sequence[AiperfRunFact] = ()
    running: str = ""
    stopped: Collection[str] = frozenset()
    cut_short: Collection[str] = frozenset()


class EvidenceCollector(EventFold):
    """Lossless bus subscriber, the verdict step's input: folds the closed windows (SoakWindowClosed), every
    memory sample, the host's pauses, the server's supervision, the handovers, each answer's latency ratio and
    the load's first pass into what `evidence()` hands the verdicts. Publishes nothing."""

    def __init__(self, bus: Bus, *, size: int = 8192, warmup_s: float = 60.0, baseline_s: float = 120.0) -> None:
        super().__init__(bus, "soak-evidence", size=size)
        self.windows: list[WindowStats] = []
        self._open: set[str] = set()  # the windows opened and not closed (a request counts only in one)
        # The server's unplanned ends, restarts and orphans, as soak.supervision judges them.
        self.supervision = SupervisionFacts()
        # Every memory sample, by verdict (the sampled trend rule judges them, not window medians).
        self.samples: dict[str, SampleSeries] = {}
        # The host's own pauses (a suspended VM), from the host samples' two clocks: window_gap leaves them out.
        self.pause_watch = PauseWatch()
        # AIPerf's samples by process, in the order the processes first sampled (one per handover
        # generation: a handful per soak; 10 s blocks, so bounded by time like `samples`).
        self.aiperf_by_pid: dict[int, SampleSeries] = {}
        self.aiperf_pids: dict[str, int] = {}
        self.first_profiling_ns: dict[str, int] = {}
        self._sessions: dict[str, SessionLedger] = {}  # per AIPerf run: its profiling requests seen
        # Each profiling request's latency over its own item's baseline, by timing source (latency_drift).
        self.ratios = {kind: ItemRatioSeries(warmup_s=warmup_s, baseline_s=baseline_s) for kind in ("server", "client")}
        self.handovers: list[tuple[str, float | None, int | None]] = []
        self.tails: list[SoakTail] = []
        # The rows of AIPerf's input (set by the loop; 0: unknown): the first pass over them is over once
        # each was sent and answered (the memory verdicts judge their slope after it).
        self.cycle = 0
        self.first_pass_ns: int | None = None
        self._first_rows: set[tuple[str, str]] = set()
        self._latest_end_ns = 0

    def observe(self, ev: AnyEvent) -> None:
        """Take one event (those of no concern are ignored)."""
        self.supervision.observe(ev)
        if isinstance(ev, RequestCorrelated):
            self._request(ev)
        elif isinstance(ev, ClientRecord):
            self._client_record(ev)
        elif isinstance(ev, ResourceSampled):
            if not ev.pre_ready:  # a (re)starting server's climb to its level is no leak
                self._sample("server_rss", ev.ts_ns, ev.rss_bytes)
                if ev.gpu_memory_bytes is not None:
                    # In a PID namespace the figure is device-wide (every process on the GPU): its own verdict.
                    self._sample("device_gpu_memory" if ev.gpu_memory_scope == "device" else "server_gpu_memory",
                                 ev.ts_ns, ev.gpu_memory_bytes)
        elif isinstance(ev, ProcessSampled):
            self._sample("orchestrator_rss" if ev.role == "orchestrator" else "aiperf_rss", ev.ts_ns, ev.rss_bytes)
            if ev.role == "aiperf":
                series = self.aiperf_by_pid.get(ev.pid)
                if series is None:
                    series = self.aiperf_by_pid[ev.pid] = SampleSeries()
                series.add(ev.ts_ns, ev.rss_bytes / 2.0**20)
        elif isinstance(ev, HostSampled):
            self.pause_watch.observe(ev.ts_ns, ev.mono_ns)
        elif isinstance(ev, SoakWindowOpened):
            self._open.add(ev.window)
        elif isinstance(ev, SoakWindowClosed):
            self._open.discard(ev.window)
            if ev.summary is not None:
                self.windows.append(ev.summary)
        elif isinstance(ev, AiperfStarted):
            self.aiperf_pids[ev.window] = ev.pid
        elif isinstance(ev, SoakHandover | SoakTail):
            self._load(ev)

    def _load(self, ev: SoakHandover | SoakTail) -> None:
        """A handover (window_gap judges its gap) or a segment's tail (the accounting adds it)."""
        if isinstance(ev, SoakTail):
            self.tails.append(ev)
        else:
            self.handovers.append((f"{ev.predecessor} -> {ev.successor}", ev.gap_s, ev.first_request_unix_ns))

    def _client_record(self, ev: ClientRecord) -> None:
        """Each AIPerf run's profiling requests are counted; its first one starts the latency ratios' span."""
        if ev.phase != "profiling":
            return
        ledger = self._sessions.get(ev.aiperf_run)
        if ledger is None:
            ledger = self._sessions[ev.aiperf_run] = SessionLedger()
        ledger.add(ev.session_num, ev.credit_issued_ns)
        if ev.request_start_ns and ev.aiperf_run not in self.first_profiling_ns:
            self.first_profiling_ns[ev.aiperf_run] = ev.request_start_ns
            for series in self.ratios.values():
                series.start(ev.request_start_ns)

    def _request(self, ev: RequestCorrelated) -> None:
        """A load request counts toward the first pass; a successful profiling one in an open window (the
        tracker counts only those) adds its latency ratios. The capability probe's requests (their own
        window, before the load) are not the load's."""
        if self.cycle and self.first_pass_ns is None and ev.window.startswith(WINDOW_PREFIX):
            self._pass(ev)
        if ev.window in self._open and ev.phase == "profiling" and ev.ok and ev.request_start_ns is not None:
            if ev.handler_ms is not None:
                self.ratios["server"].add(ev.request_start_ns, ev.item_id, ev.handler_ms)
            if ev.request_latency_ms is not None:
                self.ratios["client"].add(ev.request_start_ns, ev.item_id, ev.request_latency_ms)

    def _pass(self, ev: RequestCorrelated) -> None:
        """Count the request's input row toward the first pass (any phase: warmup requests reach the server
        too); the pass ends at the latest answer so far once every row was seen."""
        if ev.request_end_ns and ev.request_end_ns > self._latest_end_ns:
            self._latest_end_ns = ev.request_end_ns
        self._first_rows.add((ev.item_id or ev.conversation_id, ev.arm))
        if len(self._first_rows) >= self.cycle:
            self.first_pass_ns = self._latest_end_ns or ev.ts_ns
            self._first_rows = set()

    def _sample(self, metric: str, unix_ns: int, value_bytes: int) -> None:
        series = self.samples.get(metric)
        if series is None:
            series = self.samples[metric] = SampleSeries()
        series.add(unix_ns, value_bytes / 2.0**20)

    def first_pass(self) -> FirstPass | None:
        """The load's first pass over its input (None when the input's size is not known)."""
        return FirstPass(requests=self.cycle, end_ns=self.first_pass_ns) if self.cycle else None

    def load_span(self) -> tuple[int, int] | None:
        """The load's span so far (wall-clock ns): its first request (AIPerf's start-up is no load) to the
        last closed window's end."""
        if not self.windows:
            return None
        first = min(w.first_request_unix_ns or w.start_unix_ns for w in self.windows)
        return first, max(w.end_unix_ns for w in self.windows)

    def aiperf_generations(self, end_ns: int) -> list[Generation]:
        """AIPerf's samples up to `end_ns` by process generation (judge.generations), in their order, each
        from its first profiling request, with the requests seen of it. A process none of whose profiling
        requests was seen (a successor gated, or stopped before it sent) carried no load and is left out."""
        runs = {pid: name for name, pid in self.aiperf_pids.items()}
        out = []
        for pid, series in self.aiperf_by_pid.items():
            times, values, _n = series.between(0, end_ns)
            if not times:
                continue
            name = runs.get(pid)
            first = self.first_profiling_ns.get(name) if name is not None else None
            if name is None or first is None:
                continue
            ledger = self._sessions.get(name)
            out.append(Generation(pid=pid, times_s=times, values=values, start_s=first / 1e9,
                                  requests=ledger.seen if ledger is not None else 0))
        return out

    def evidence(self, load: LoadFacts, *, sampled_ratios: bool = True) -> SoakEvidence:
        """The snapshot the verdicts judge now: what this step folded, with the loop's `load` facts.
        `sampled_ratios`: latency drift is judged on the ratios (else on per-window medians)."""
        span = self.load_span()
        return SoakEvidence(
            windows=tuple(self.windows), exits=tuple(self.supervision.exits),
            restarts=tuple(self.supervision.restarts), cut_short=frozenset(load.cut_short), runs=tuple(load.runs),
            running=load.running, stopped=frozenset(load.stopped), samples=self.samples, load_span_ns=span,
            ratios=self.ratios if sampled_ratios else None, first_pass=self.first_pass(),
            handovers=tuple(self.handovers),
            aiperf_generations=tuple(self.aiperf_generations(span[1])) if span else (),
            host_pauses=tuple(self.pause_watch.pauses), tails=tuple(self.tails))

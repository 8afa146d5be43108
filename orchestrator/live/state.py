"""The live page's state: a pure fold of journal events into what the page shows, and the small changes
(`Change`) each event makes, which the page applies as they arrive.

Fed the journal it rebuilds the page of a run already under way; fed the bus it says what changed. Reads only
events; no I/O, no clocks. Every list it holds is bounded (windows by the run's length, series thinned).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypeVar

import msgspec

from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfStarted,
    AnyEvent,
    EventsDropped,
    GateEvaluated,
    ModelResult,
    NoninferiorityJudged,
    PhaseFinished,
    PhaseStarted,
    ProcessSampled,
    RequestCorrelated,
    RequestsInFlight,
    RequestUnmatched,
    ResourceSampled,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerLoadSampled,
    ServerRestarting,
    ServerStateChanged,
    SoakPhase,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
    TrendNumbers,
    verdict_numbers,
)
from orchestrator.reports import schema
from orchestrator.reports.schema import PhaseCounts
from orchestrator.reports.windows import Thinned

__all__ = ["PageFold", "PageState", "Change", "RunInfo", "Counters", "WindowRow", "ModelRow", "VerdictRow",
           "PointRow", "CampaignModelRow", "SloState", "ServerInfo", "LatencyPoint", "MemoryPoint", "InFlightPoint", "ModelSeries", "SERIES_CAP", "detects"]

# Points per chart series: a page draws ~1000 px wide; the page halves its copy at the same cap.
SERIES_CAP = 1000
_CAUSES_KEPT = 20  # restart causes and unexpected exits listed, the latest


class _S(msgspec.Struct, frozen=True, kw_only=True):
    pass


class RunInfo(_S, frozen=True, kw_only=True):
    """The run and how far it got: windows closed of planned (soak), models finished of configured (qualify)."""

    run_id: str = ""
    command: str = ""
    started_unix_ns: int = 0
    status: str = "running"
    reason: str = ""
    finished_unix_ns: int = 0
    phase: str = ""
    done: int = 0
    total: int = 0
    unit: str = ""
    duration_s: float | None = None


class Counters(PhaseCounts, frozen=True, kw_only=True):
    """Requests of the profiling phase so far (the report's PhaseCounts), with the warmup's, the unmatched
    halves and `in_flight` as the last window's accounting or a crash left it."""

    warmup: int = 0
    unmatched: int = 0
    in_flight: int = 0


class WindowRow(_S, frozen=True, kw_only=True):
    name: str
    index: int = 0
    state: Literal["open", "closed"] = "open"
    issued: int = 0
    ok: int = 0
    errors: int = 0
    client_p50_ms: float | None = None
    client_p99_ms: float | None = None
    model_call_p50_ms: float | None = None
    balanced: bool | None = None


class ModelRow(_S, frozen=True, kw_only=True):
    name: str
    stage: str = ""
    state: str = "running"
    reason: str = ""


class CampaignModelRow(_S, frozen=True, kw_only=True):
    """A campaign's model: where its current attempt runs, how far its qualify got (from the model's journal),
    its state (queued, submitted, running, retrying, then its final status) and its verdicts so far."""

    name: str
    node: str = ""
    attempt: int = 0
    stage: str = ""
    state: str = "queued"
    reason: str = ""
    issued: int = 0
    ok: int = 0
    errors: int = 0
    restarts: int = 0
    verdicts: dict[str, int] = {}  # outcome -> how many (pass, fail, inconclusive)


class SloState(_S, frozen=True, kw_only=True):
    """One SLO at a sweep point: its outcome, and why when it did not pass."""

    slo: str
    outcome: str
    reason: str = ""


class PointRow(_S, frozen=True, kw_only=True):
    """A sweep's load point as of its latest judgement (a rerun replaces it): the load offered and achieved,
    its tail latencies and each SLO's state. `name` is the offered load with its unit, the row's key."""

    name: str
    offered: float
    unit: str = ""
    outcome: str = ""
    runs: int = 0
    requests: int = 0
    ok: int = 0
    achieved_rps: float | None = None
    client_p99_ms: float | None = None
    model_call_p99_ms: float | None = None
    slos: list[SloState] = []
    balanced: bool = True
    stopped_early: bool = False
    saturation: list[str] = []


class VerdictRow(_S, frozen=True, kw_only=True):
    """A verdict as the page lists it: the latest per name (soak metric, gate, non-inferiority). No field is
    named like a credential (`key`, `token`): publish's scrubber would hide its value."""

    name: str
    outcome: str
    final: bool = False
    reason: str = ""
    interval: list[float] | None = None
    estimate: float | None = None
    limit: float | None = None
    unit: str = ""
    detects: str = ""


class ServerInfo(_S, frozen=True, kw_only=True):
    state: str = ""
    incarnation: int = 0
    restarts: int = 0
    causes: list[str] = []
    exits: list[str] = []


class LatencyPoint(schema.LatencyPoint, frozen=True, kw_only=True, array_like=True):
    """The report's latency point, array-like on the wire (the page's most frequent payload):
    [t_s, client_ms, handler_ms, model_call_ms]."""


class MemoryPoint(schema.MemoryPoint, frozen=True, kw_only=True, array_like=True):
    """The report's memory point with whose it is, array-like on the wire: [t_s, rss_bytes, gpu_memory_bytes,
    role]; role is `server`, `aqbench` or `aiperf`."""

    role: str = ""


class InFlightPoint(_S, frozen=True, kw_only=True, array_like=True):
    """The server's gauge of requests in flight at a time, array-like on the wire: [t_s, in_flight]."""

    t_s: float
    in_flight: int


class ModelSeries(_S, frozen=True, kw_only=True):
    """One campaign model's chart series: `points` as [seconds since the campaign started, value], thinned to
    a few hundred (a page shows many models)."""

    name: str
    points: list[tuple[float, float]] = []


class PageState(_S, frozen=True, kw_only=True):
    """Everything the page shows, as of event `seq`."""

    seq: int = 0
    run: RunInfo = RunInfo()
    counters: Counters = Counters()
    windows: list[WindowRow] = []
    models: list[ModelRow] = []
    points: list[PointRow] = []
    campaign: list[CampaignModelRow] = []
    verdicts: list[VerdictRow] = []
    server: ServerInfo = ServerInfo()
    latency: list[LatencyPoint] = []
    memory: list[MemoryPoint] = []
    in_flight: list[InFlightPoint] = []
    # A campaign's charts: each model's client latency and server RSS over the campaign's time.
    model_latency: list[ModelSeries] = []
    model_memory: list[ModelSeries] = []
    dropped: dict[str, int] = {}


class Change(_S, frozen=True, kw_only=True, array_like=True):
    """[seq, op, section, value]: `set` a section (run, counters, server, dropped), `put` a row by name (windows,
    models, points, campaign, verdicts) or `add` a point (latency, memory). The page skips changes at or before its state's seq."""

    seq: int
    op: Literal["set", "put", "add"]
    section: str
    value: Any


def detects(v: SoakVerdict) -> str:
    """What a soak verdict can detect with the evidence it has: a trend's interval half-width (a drift
    beyond it shows), or the limit a rate or gap is held to."""
    _slope, interval, limit, unit = verdict_numbers(v.detail)
    if interval is not None and len(interval) == 2:
        half = (interval[1] - interval[0]) / 2
        verdict = "can tell it from the limit" if limit is not None and half < abs(limit) else \
            "cannot yet tell it from the limit"
        return f"a slope beyond ±{half:.3g} {unit} ({verdict} {limit:.3g})" if limit is not None else \
            f"a slope beyond ±{half:.3g} {unit}"
    if isinstance(v.detail, TrendNumbers):
        # No interval on the slope yet (too few windows or too short a span): it can detect nothing so far.
        return f"nothing yet: no interval on the slope (limit {limit:.3g} {unit})" if limit is not None else ""
    if limit is not None:
        return f"a value above {limit:.3g} {unit}".rstrip()
    return ""


_Row = TypeVar("_Row", WindowRow, ModelRow, PointRow, VerdictRow)


class PageFold:
    """Feed events in seq order with `add` (it returns the changes they made); `state()` at any time."""

    def __init__(self) -> None:
        self.seq = 0
        self._run = RunInfo()
        self._counters = Counters()
        self._by_cause: dict[str, int] = {}
        self._windows: dict[str, WindowRow] = {}
        self._models: dict[str, ModelRow] = {}
        self._points: dict[str, PointRow] = {}
        self._verdicts: dict[str, VerdictRow] = {}
        self._server = ServerInfo()
        self._latency: Thinned[LatencyPoint] = Thinned(SERIES_CAP)
        self._memory: dict[str, Thinned[MemoryPoint]] = {}
        self._in_flight: Thinned[InFlightPoint] = Thinned(SERIES_CAP)
        self._dropped: dict[str, int] = {}
        self._origin = 0
        self._current = ""

    def state(self) -> PageState:
        mem = sorted((p for t in self._memory.values() for p in t.points), key=lambda p: p.t_s)
        return PageState(seq=self.seq, run=self._run, counters=self._counters, windows=list(self._windows.values()),
                         models=list(self._models.values()), points=list(self._points.values()), verdicts=list(self._verdicts.values()),
                         server=self._server, latency=list(self._latency.points), memory=mem,
                         in_flight=list(self._in_flight.points), dropped=dict(self._dropped))

    def add_all(self, events: Iterable[AnyEvent]) -> list[Change]:
        out: list[Change] = []
        for ev in events:
            out += self.add(ev)
        return out

    def add(self, ev: AnyEvent) -> list[Change]:
        """The changes `ev` makes to the page (often none)."""
        if ev.seq and ev.seq <= self.seq:
            return []  # already folded (a journal fold handed over to the bus)
        self.seq = ev.seq or self.seq
        handler = _HANDLERS.get(type(ev))
        return handler(self, ev) if handler is not None else []

    # ------------------------------------------------------------------------------- sections

    def _set_run(self, **fields: Any) -> list[Change]:
        self._run = msgspec.structs.replace(self._run, **fields)
        return [Change(seq=self.seq, op="set", section="run", value=self._run)]

    def _set_counters(self, **fields: Any) -> list[Change]:
        self._counters = msgspec.structs.replace(self._counters, **fields)
        return [Change(seq=self.seq, op="set", section="counters", value=self._counters)]

    def _set_server(self, **fields: Any) -> list[Change]:
        self._server = msgspec.structs.replace(self._server, **fields)
        return [Change(seq=self.seq, op="set", section="server", value=self._server)]

    def _put(self, section: str, rows: dict[str, _Row], key: str, row: _Row) -> list[Change]:
        rows[key] = row
        return [Change(seq=self.seq, op="put", section=section, value=row)]

    def _t(self, unix_ns: int | None) -> float:
        return round(((unix_ns or self._origin) - self._origin) / 1e9, 3)

    # ------------------------------------------------------------------------------- handlers

    def _on_run_started(self, ev: RunStarted) -> list[Change]:
        self._origin = ev.ts_ns
        total = len(ev.config.models) if ev.command == "qualify" and ev.config is not None else 0
        return self._set_run(run_id=ev.run_id, command=ev.command, started_unix_ns=ev.ts_ns, total=total,
                             unit="models" if total else "")

    def _on_run_finished(self, ev: RunFinished) -> list[Change]:
        return self._set_run(status=ev.status, reason=ev.reason, finished_unix_ns=ev.ts_ns)

    def _on_phase_started(self, ev: PhaseStarted) -> list[Change]:
        out = self._set_run(phase=ev.phase)
        if isinstance(ev.detail, SoakPhase) and ev.detail.duration_s and ev.detail.window_s:
            planned = max(1, -(-int(ev.detail.duration_s * 1000) // int(ev.detail.window_s * 1000)))
            out = self._set_run(total=planned, unit="windows", duration_s=ev.detail.duration_s)
        if isinstance(ev.detail, SweepPhase) and ev.detail.points:
            out = self._set_run(total=len(ev.detail.points), unit="points")
        if ev.phase == "model" and ev.model:
            self._current = ev.model
        if ev.model and ev.phase not in ("dataset", "reference"):
            out += self._put("models", self._models, ev.model, ModelRow(name=ev.model, stage=ev.phase))
        return out

    def _on_phase_finished(self, ev: PhaseFinished) -> list[Change]:
        if not ev.model or ev.phase in ("dataset", "reference"):
            return []
        out: list[Change] = []
        if ev.phase == "model":
            out += self._set_run(done=self._run.done + 1) if self._run.unit == "models" else []
            state = ev.outcome or "done"
        else:
            state = "running" if ev.outcome == "passed" else ev.outcome
        return out + self._put("models", self._models, ev.model,
                               ModelRow(name=ev.model, stage=ev.phase, state=state, reason=ev.reason[:300]))

    def _on_result(self, ev: ModelResult) -> list[Change]:
        return self._put("models", self._models, ev.model, ModelRow(
            name=ev.model, stage=ev.failed_stage or "done", state=ev.status, reason=ev.row.reason[:300]))

    def _on_correlated(self, ev: RequestCorrelated) -> list[Change]:
        c = self._counters
        if ev.phase == "warmup":
            return self._set_counters(warmup=c.warmup + 1)
        if ev.phase != "profiling":
            return []
        if not ev.ok:
            self._by_cause[ev.cause] = self._by_cause.get(ev.cause, 0) + 1
        out = self._set_counters(issued=c.issued + 1, ok=c.ok + ev.ok, errors=c.errors + (not ev.ok),
                                 by_cause=dict(self._by_cause))
        if (w := self._windows.get(ev.window)) is not None:
            out += self._put("windows", self._windows, ev.window, msgspec.structs.replace(
                w, issued=w.issued + 1, ok=w.ok + ev.ok, errors=w.errors + (not ev.ok)))
        if ev.ok and self._latency.due():
            point = LatencyPoint(t_s=self._t(ev.request_end_ns or ev.request_start_ns or ev.ts_ns),
                                 client_ms=ev.request_latency_ms, handler_ms=ev.handler_ms,
                                 model_call_ms=ev.model_call_ms)
            self._latency.keep(point)
            out.append(Change(seq=self.seq, op="add", section="latency", value=point))
        return out

    def _on_unmatched(self, ev: RequestUnmatched) -> list[Change]:
        return self._set_counters(unmatched=self._counters.unmatched + 1)

    def _on_accounting(self, ev: AccountingChecked) -> list[Change]:
        out = self._set_counters(in_flight=ev.in_flight)
        if (w := self._windows.get(ev.window)) is not None:
            out += self._put("windows", self._windows, ev.window, msgspec.structs.replace(w, balanced=ev.balanced))
        return out

    def _on_in_flight(self, ev: RequestsInFlight) -> list[Change]:
        return self._set_counters(in_flight=len(ev.request_ids))

    def _on_server_load(self, ev: ServerLoadSampled) -> list[Change]:
        # The server's own gauge, read every sample period while it is ready: the page's live in-flight.
        out = self._set_counters(in_flight=ev.in_flight)
        if self._in_flight.due():
            point = InFlightPoint(t_s=self._t(ev.ts_ns), in_flight=ev.in_flight)
            self._in_flight.keep(point)
            out.append(Change(seq=self.seq, op="add", section="in_flight", value=point))
        return out

    def _on_aiperf_started(self, ev: AiperfStarted) -> list[Change]:
        if ev.window.startswith("soak/"):  # a soak's AIPerf runs are cut into windows of their own
            return []
        return self._put("windows", self._windows, ev.window, WindowRow(name=ev.window, index=len(self._windows) + 1))

    def _on_aiperf_exited(self, ev: AiperfExited) -> list[Change]:
        if (w := self._windows.get(ev.window)) is None or ev.window.startswith("soak/"):
            return []
        return self._put("windows", self._windows, ev.window, msgspec.structs.replace(w, state="closed"))

    def _on_window_opened(self, ev: SoakWindowOpened) -> list[Change]:
        return self._put("windows", self._windows, ev.window, WindowRow(name=ev.window, index=ev.index))

    def _on_window_closed(self, ev: SoakWindowClosed) -> list[Change]:
        s = ev.summary
        row = WindowRow(name=ev.window, index=ev.index, state="closed") if s is None else WindowRow(
            name=ev.window, index=ev.index, state="closed", issued=s.issued, ok=s.ok, errors=s.errors,
            client_p50_ms=s.client_latency_ms.p50, client_p99_ms=s.client_latency_ms.p99,
            model_call_p50_ms=s.model_call_ms.p50, balanced=s.accounting_balanced)
        closed = sum(w.state == "closed" for w in self._windows.values()) + (
            self._windows.get(ev.window, row).state != "closed")
        return self._put("windows", self._windows, ev.window, row) + self._set_run(done=closed)

    def _on_soak_verdict(self, ev: SoakVerdict) -> list[Change]:
        prior = self._verdicts.get(ev.metric)
        if prior is not None and prior.final and not ev.final:
            return []  # a final verdict is never replaced by a checkpoint's
        return self._put("verdicts", self._verdicts, ev.metric, VerdictRow(
            name=ev.metric, outcome=ev.outcome or ("pass" if ev.passed else "fail"), final=ev.final,
            reason=ev.reason[:400], interval=ev.interval, estimate=ev.slope, limit=ev.limit, unit=ev.unit,
            detects=detects(ev)))

    def _on_gate(self, ev: GateEvaluated) -> list[Change]:
        key = f"{ev.model} {ev.gate}" + (f" ({ev.scope})" if ev.scope else "")
        outcome = "pass" if ev.passed else "fail" if ev.applicable else "inconclusive"
        return self._put("verdicts", self._verdicts, key, VerdictRow(
            name=key, outcome=outcome, final=True, estimate=ev.observed, limit=ev.required,
            reason=f"observed {ev.observed:.3g}, required {ev.required:.3g}" if ev.applicable else "not applicable",
            detects=f"a pass rate below {ev.required:.3g}"))

    def _on_noninferiority(self, ev: NoninferiorityJudged) -> list[Change]:
        r = ev.result
        key = f"{ev.model} non-inferiority"
        detect = (f"a regression of {r.detectable_regression:.2f} points observed; a true one of "
                  f"{r.detectable_power_regression:.2f} points with probability 0.8"
                  if r.detectable_regression is not None and r.detectable_power_regression is not None else "")
        return self._put("verdicts", self._verdicts, key, VerdictRow(
            name=key, outcome=r.outcome, final=True, reason=r.reason[:400], estimate=r.estimate, limit=r.margin,
            interval=[r.lower, r.upper] if r.lower is not None and r.upper is not None else None,
            unit="points", detects=detect))

    def _on_point(self, ev: SweepPointJudged) -> list[Change]:
        unit = "req/s" if ev.mode == "rate" else "concurrent"
        st = ev.stats
        row = PointRow(
            name=f"{ev.offered:g} {unit}", offered=ev.offered, unit=unit, outcome=ev.outcome, runs=len(ev.windows),
            requests=st.requests, ok=st.ok, achieved_rps=st.achieved_rps, client_p99_ms=st.latency_p99_ms,
            model_call_p99_ms=st.model_call_p99_ms, balanced=ev.accounting_balanced, stopped_early=ev.stopped_early,
            saturation=ev.saturation[:5],
            slos=[SloState(slo=c.slo, outcome=c.outcome, reason="" if c.outcome == "pass" else c.reason[:300])
                  for c in ev.checks])
        out = self._put("points", self._points, row.name, row)
        # Refinement adds points between the planned ones: the total grows with them.
        done = len(self._points)
        return out + self._set_run(done=done, total=max(done, self._run.total), unit="points")

    def _on_concluded(self, ev: SweepConcluded) -> list[Change]:
        # The capacity is the sweep's one verdict, its interval the bracket of points run around it; points above
        # a broken one are never run, so progress ends full.
        outcome = "pass" if ev.outcome in ("bracketed", "all_passed") else \
            "fail" if ev.outcome == "none_passed" else "inconclusive"
        bracket = [ev.highest_passing, ev.lowest_failing]
        interval = [b for b in bracket if b is not None] if None not in bracket else None
        detects = (f"the capacity to within the points run ({ev.highest_passing:g} held, {ev.lowest_failing:g} broke)"
                   if interval else f"undecided: {'; '.join(ev.undecided)[:200]}" if ev.undecided else "")
        row = VerdictRow(name="capacity", outcome=outcome, final=True, estimate=ev.capacity, interval=interval,
                         unit=ev.unit, reason=f"{ev.outcome}: {ev.summary}"[:400], detects=detects)
        return self._put("verdicts", self._verdicts, row.name, row) + self._set_run(total=len(self._points))

    def _on_server_state(self, ev: ServerStateChanged) -> list[Change]:
        return self._set_server(state=ev.state, incarnation=ev.incarnation)

    def _on_server_restarting(self, ev: ServerRestarting) -> list[Change]:
        cause = f"incarnation {ev.incarnation} attempt {ev.attempt}: {ev.reason[:200]}"
        return self._set_server(restarts=self._server.restarts + 1,
                                causes=[*self._server.causes, cause][-_CAUSES_KEPT:])

    def _on_server_exited(self, ev: ServerExited) -> list[Change]:
        if ev.expected:
            return []
        text = f"incarnation {ev.incarnation} exited {ev.returncode} {ev.signal} during {ev.during}".replace("  ", " ")
        return self._set_server(exits=[*self._server.exits, text][-_CAUSES_KEPT:])

    def _on_resource(self, ev: ResourceSampled) -> list[Change]:
        return self._memory_point("server", ev.ts_ns, ev.rss_bytes)

    def _on_process(self, ev: ProcessSampled) -> list[Change]:
        return self._memory_point("aqbench" if ev.role == "orchestrator" else ev.role, ev.ts_ns, ev.rss_bytes)

    def _memory_point(self, role: str, ts_ns: int, rss: int) -> list[Change]:
        series = self._memory.setdefault(role, Thinned(SERIES_CAP))
        if not series.due():
            return []
        point = MemoryPoint(role=role, t_s=self._t(ts_ns), rss_bytes=rss)
        series.keep(point)
        return [Change(seq=self.seq, op="add", section="memory", value=point)]

    def _on_dropped(self, ev: EventsDropped) -> list[Change]:
        self._dropped[ev.subscriber] = max(self._dropped.get(ev.subscriber, 0), ev.dropped)
        return [Change(seq=self.seq, op="set", section="dropped", value=dict(self._dropped))]


_HANDLERS: dict[type, Any] = {
    RunStarted: PageFold._on_run_started,
    RunFinished: PageFold._on_run_finished,
    PhaseStarted: PageFold._on_phase_started,
    PhaseFinished: PageFold._on_phase_finished,
    ModelResult: PageFold._on_result,
    RequestCorrelated: PageFold._on_correlated,
    RequestUnmatched: PageFold._on_unmatched,
    AccountingChecked: PageFold._on_accounting,
    RequestsInFlight: PageFold._on_in_flight,
    ServerLoadSampled: PageFold._on_server_load,
    AiperfStarted: PageFold._on_aiperf_started,
    AiperfExited: PageFold._on_aiperf_exited,
    SoakWindowOpened: PageFold._on_window_opened,
    SoakWindowClosed: PageFold._on_window_closed,
    SoakVerdict: PageFold._on_soak_verdict,
    GateEvaluated: PageFold._on_gate,
    NoninferiorityJudged: PageFold._on_noninferiority,
    SweepPointJudged: PageFold._on_point,
    SweepConcluded: PageFold._on_concluded,
    ServerStateChanged: PageFold._on_server_state,
    ServerRestarting: PageFold._on_server_restarting,
    ServerExited: PageFold._on_server_exited,
    ResourceSampled: PageFold._on_resource,
    ProcessSampled: PageFold._on_process,
    EventsDropped: PageFold._on_dropped,
}

"""A pure fold of journal events into a RunReport; streams, so memory stays bounded.

Per model and per AIPerf window it keeps running counts; exact latency percentiles need a window's
values, which are held as compact arrays only until the window closes. Picture series are thinned to
a fixed number of points. Never reads anything but the events it is given.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfStarted,
    AnyEvent,
    CapabilityProbed,
    EventsDropped,
    Failed,
    GateEvaluated,
    GpuSampled,
    ModelResult,
    OrphanKilled,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RequestUnmatched,
    ResourceSampled,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    SoakWindowClosed,
    SubscriberFailed,
    VerdictReached,
    Warned,
)
from orchestrator.journal import TornLine, iter_journal
from orchestrator.reports.schema import (
    AiperfRun,
    AudioLift,
    CapabilityCheck,
    Commands,
    Counts,
    DatasetIdentity,
    FailingItem,
    GateRow,
    GridCell,
    GridRow,
    Histogram,
    IdentityResult,
    LatencyPoint,
    MemoryPoint,
    Mismatch,
    ModelCharts,
    ModelRow,
    Notice,
    PassRate,
    PathCorrectness,
    PhaseCounts,
    Provenance,
    RunReport,
    ServerExit,
    ServerFacts,
    StageOutcome,
    Summary,
    Timing,
    TornInfo,
    VerdictGrid,
    WindowSummary,
)
from orchestrator.stats import summarize

__all__ = ["ReportFold", "fold", "build_report", "MAX_POINTS", "MAX_GRID_ITEMS", "HISTOGRAM_BINS"]

MAX_POINTS = 1500  # per picture series; enough for a 1000 px wide chart
MAX_GRID_ITEMS = 400  # rows of the verdict grid per path; the pass rates still count every item
HISTOGRAM_BINS = 40
_ANSWER_CHARS = 160
_VERDICTS = ("correct", "wrong", "unparsed", "error")
_RUN_PHASES = frozenset({"dataset"})  # phases that belong to the run, not to a model
_TIMING_FIELDS = ("request_latency_ms", "client_lifecycle_ms", "handler_ms", "model_call_ms",
                  "worker_roundtrip_ms")  # the RequestCorrelated fields kept per window, in ms


class _Thinned:
    """Keeps every `stride`-th point; doubles the stride (dropping every other kept point) when the
    cap is passed. Deterministic, order-preserving, at most `cap` points for any number of adds.
    Callers ask `due()` first so that points that would be dropped are never built."""

    def __init__(self, cap: int = MAX_POINTS) -> None:
        self.cap, self.stride, self.seen = cap, 1, 0
        self.points: list[Any] = []

    def due(self) -> bool:
        """Count one point; True when it is to be kept (then pass it to `keep`)."""
        self.seen += 1
        return (self.seen - 1) % self.stride == 0

    def keep(self, point: Any) -> None:
        self.points.append(point)
        if len(self.points) > self.cap:
            self.points = self.points[::2]
            self.stride *= 2


def _iso(ns: int | None) -> str:
    if ns is None:
        return ""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= _ANSWER_CHARS:
        return text
    return text[: _ANSWER_CHARS - 1] + "…"


def _rate(c: Counter[str]) -> PassRate:
    total = sum(c[v] for v in _VERDICTS)
    return PassRate(total=total, correct=c["correct"], wrong=c["wrong"], unparsed=c["unparsed"],
                    error=c["error"], rate=c["correct"] / total if total else None)


def _diff(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


@dataclass
class _PhaseTally:
    issued: int = 0
    ok: int = 0
    by_cause: Counter[str] = field(default_factory=Counter)

    def frozen(self) -> PhaseCounts:
        errors = self.issued - self.ok
        return PhaseCounts(issued=self.issued, ok=self.ok, errors=errors,
                           by_cause={k: v for k, v in sorted(self.by_cause.items()) if k != "ok"})


@dataclass
class _Window:
    """Running state of one AIPerf window; the value arrays are freed when it closes."""

    name: str
    model: str
    phases: dict[str, _PhaseTally] = field(default_factory=dict)
    values: dict[str, array] = field(default_factory=lambda: {f: array("d") for f in _TIMING_FIELDS})
    scopes: Counter[str] = field(default_factory=Counter)
    first_start: int | None = None
    last_end: int | None = None
    audio_seconds: float = 0.0
    unmatched: Counter[str] = field(default_factory=Counter)
    balanced: bool | None = None
    problems: list[str] = field(default_factory=list)
    started: AiperfStarted | None = None
    exited: AiperfExited | None = None
    load: Counter[str] = field(default_factory=Counter)
    soak: dict[str, Any] = field(default_factory=dict)
    late: int = 0
    timing: Timing | None = None
    histogram: Histogram = field(default_factory=Histogram)

    def add(self, ev: RequestCorrelated) -> None:
        key = ev.phase if ev.phase in ("warmup", "profiling") else "other"
        tally = self.phases.get(key)
        if tally is None:
            tally = self.phases[key] = _PhaseTally()
        tally.issued += 1
        tally.by_cause["ok" if ev.ok else ev.cause] += 1
        if ev.ok:
            tally.ok += 1
        if self.timing is not None:
            self.late += 1  # counted, but the window's percentiles are already final
            return
        if ev.phase != "profiling":
            return
        start, end = ev.request_start_ns, ev.request_end_ns
        if start is not None and (self.first_start is None or start < self.first_start):
            self.first_start = start
        if end is not None and (self.last_end is None or end > self.last_end):
            self.last_end = end
        if not ev.ok:
            return
        v = self.values
        # Unrolled over _TIMING_FIELDS: this is the per-request hot path. NaN != NaN, so NaN is skipped.
        if (x := ev.request_latency_ms) is not None and x == x:
            v["request_latency_ms"].append(x)
        if (x := ev.client_lifecycle_ms) is not None and x == x:
            v["client_lifecycle_ms"].append(x)
        if (x := ev.handler_ms) is not None and x == x:
            v["handler_ms"].append(x)
        if (x := ev.model_call_ms) is not None and x == x:
            v["model_call_ms"].append(x)
        if (x := ev.worker_roundtrip_ms) is not None and x == x:
            v["worker_roundtrip_ms"].append(x)
        if ev.model_call_ms is not None and ev.timing_scope:
            self.scopes[ev.timing_scope] += 1
        if ev.audio_seconds:
            self.audio_seconds += ev.audio_seconds

    def close(self) -> None:
        """Freeze the timing and the histogram, then drop the values (idempotent)."""
        if self.timing is not None:
            return
        summaries = {name: summarize(self.values[name]) for name in _TIMING_FIELDS}
        prof = self.phases.get("profiling", _PhaseTally())
        span = (self.last_end - self.first_start) / 1e9 if self.first_start and self.last_end else None
        span = span if span and span > 0 else None
        self.timing = Timing(
            **summaries,
            timing_scope=self.scopes.most_common(1)[0][0] if self.scopes else "",
            span_s=span,
            requests_per_s=prof.ok / span if span else None,
            audio_seconds=self.audio_seconds,
            audio_seconds_per_s=self.audio_seconds / span if span else None,
        )
        self.histogram = _histogram({
            "client request_latency": self.values["request_latency_ms"],
            "server handler": self.values["handler_ms"],
            "server model_call": self.values["model_call_ms"],
        })
        self.values = {}

    def summary(self) -> WindowSummary:
        self.close()
        assert self.timing is not None
        return WindowSummary(
            window=self.name, model=self.model, aiperf=_aiperf_run(self.name, self.started, self.exited),
            counts=self.counts(), timing=self.timing, load_correctness=_rate(self.load),
            first_start_unix_ns=self.first_start, last_end_unix_ns=self.last_end, soak=self.soak,
        )

    def counts(self) -> Counts:
        empty = _PhaseTally()
        return Counts(
            warmup=self.phases.get("warmup", empty).frozen(),
            profiling=self.phases.get("profiling", empty).frozen(),
            other=self.phases.get("other", empty).frozen(),
            unmatched=dict(sorted(self.unmatched.items())),
            accounting_balanced=self.balanced,
            accounting_problems=list(self.problems),
            late_events=self.late,
        )


def _histogram(series: dict[str, array]) -> Histogram:
    """Shared bins over every series: log-spaced when the range spans more than 4x, else linear."""
    present = {k: np.frombuffer(v, dtype=np.float64) for k, v in series.items() if len(v)}
    if not present:
        return Histogram()
    lo = float(min(v.min() for v in present.values()))
    hi = float(max(v.max() for v in present.values()))
    if hi <= lo:
        hi = lo + 1.0
    if lo > 0 and hi / lo > 4:
        edges = np.geomspace(lo, hi, HISTOGRAM_BINS + 1)
    else:
        edges = np.linspace(lo, hi, HISTOGRAM_BINS + 1)
    edges[0], edges[-1] = lo, hi  # exact ends, so the outermost values fall inside
    counts = {name: [int(c) for c in np.histogram(values, bins=edges)[0]] for name, values in present.items()}
    return Histogram(edges_ms=[float(e) for e in edges], counts=counts)


def _aiperf_run(window: str, started: AiperfStarted | None, exited: AiperfExited | None) -> AiperfRun | None:
    if started is None and exited is None:
        return None
    return AiperfRun(
        window=window,
        command=started.shell if started else "",
        version=started.version if started else "",
        fingerprint=started.fingerprint if started else "",
        artifact_dir=started.artifact_dir if started else "",
        classification=exited.classification if exited else "",
        returncode=exited.returncode if exited else None,
        reason=exited.reason if exited else "",
        duration_s=exited.duration_ns / 1e9 if exited and exited.duration_ns else None,
    )


@dataclass
class _Stage:
    started_ns: int
    finished_ns: int | None = None
    outcome: str = ""
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Model:
    """Running state of one model's qualification."""

    name: str
    detail: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, _Stage] = field(default_factory=dict)
    capability: list[CapabilityCheck] = field(default_factory=list)
    # (path, item_id, arm) -> (verdict, answer, gold, kind); bounded by dataset size x arms x paths.
    cells: dict[str, dict[tuple[str, str], tuple[str, str | None, str, str]]] = field(default_factory=dict)
    load: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)  # (kind, arm) -> verdicts
    gates: list[GateRow] = field(default_factory=list)
    windows: list[str] = field(default_factory=list)
    current_window: str = ""
    result: ModelResult | None = None
    argv: list[str] = field(default_factory=list)
    incarnations: set[int] = field(default_factory=set)
    restarts: int = 0
    exits: list[ServerExit] = field(default_factory=list)
    orphans: int = 0
    startup_ns: int | None = None
    peak_rss: int | None = None
    peak_gpu: int | None = None
    peak_device: int | None = None
    served: list[Any] = field(default_factory=list)
    latency: _Thinned = field(default_factory=_Thinned)
    memory: _Thinned = field(default_factory=_Thinned)


class ReportFold:
    """Feed events in journal order with `add`, then call `finish` once. Pure: no I/O, no clocks."""

    def __init__(self) -> None:
        self._started: RunStarted | None = None
        self._finished: RunFinished | None = None
        self._first_ts: int | None = None
        self._last_ts: int | None = None
        self._events = 0
        self._dataset: DatasetIdentity | None = None
        self._models: dict[str, _Model] = {}
        self._current = ""
        self._windows: dict[str, _Window] = {}
        self._notices: list[Notice] = []
        self._dropped: dict[str, int] = {}
        self._gpus: dict[int, str] = {}
        self._aiperf_fingerprint = ""
        self._aiperf_version = ""

    # ------------------------------------------------------------------------------- feeding

    def add(self, ev: AnyEvent) -> None:
        self._events += 1
        if ev.ts_ns:
            self._first_ts = ev.ts_ns if self._first_ts is None else self._first_ts
            self._last_ts = ev.ts_ns
        handler = _HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, ev)

    def _model(self, name: str) -> _Model | None:
        name = name or self._current
        if not name:
            return None
        if name not in self._models:
            self._models[name] = _Model(name=name)
        return self._models[name]

    def _window(self, name: str, model: str = "") -> _Window:
        if name not in self._windows:
            self._windows[name] = _Window(name=name, model=model or self._current)
            m = self._model(model)
            if m is not None:
                m.windows.append(name)
        return self._windows[name]

    def _t(self, ns: int | None) -> float:
        origin = self._started.ts_ns if self._started and self._started.ts_ns else (self._first_ts or 0)
        return round(((ns or origin) - origin) / 1e9, 6)

    def _on_run_started(self, ev: RunStarted) -> None:
        self._started = ev

    def _on_run_finished(self, ev: RunFinished) -> None:
        self._finished = ev

    def _on_phase_started(self, ev: PhaseStarted) -> None:
        if ev.phase == "model" and ev.model:
            self._current = ev.model
            self._model(ev.model).detail = dict(ev.detail)  # type: ignore[union-attr]
        if ev.phase in _RUN_PHASES:
            return
        m = self._model(ev.model)
        if m is not None:
            m.stages[ev.phase] = _Stage(started_ns=ev.ts_ns)

    def _on_phase_finished(self, ev: PhaseFinished) -> None:
        if ev.phase == "dataset":
            d = ev.detail
            self._dataset = DatasetIdentity(name=str(d.get("name", "")), identity=str(d.get("identity", "")),
                                            path=str(d.get("path", "")), items=int(d.get("items") or 0),
                                            arms=[str(a) for a in d.get("arms") or []])
            return
        if ev.phase in _RUN_PHASES:
            return
        m = self._model(ev.model)
        if m is None:
            return
        stage = m.stages.setdefault(ev.phase, _Stage(started_ns=ev.ts_ns))
        stage.finished_ns, stage.outcome, stage.reason, stage.detail = ev.ts_ns, ev.outcome, ev.reason, dict(ev.detail)
        if ev.phase == "server":
            m.served = list(ev.detail.get("models") or m.served)
            m.argv = [str(a) for a in ev.detail.get("argv") or m.argv]
        if ev.phase in ("aiperf", "model"):
            for name in m.windows:
                self._windows[name].close()
        if ev.phase == "model" and self._current == m.name:
            self._current = ""

    def _on_server_spawned(self, ev: ServerSpawned) -> None:
        if (m := self._model("")) is not None:
            m.incarnations.add(ev.incarnation)
            m.argv = m.argv or list(ev.argv)

    def _on_server_ready(self, ev: ServerReady) -> None:
        if (m := self._model("")) is not None:
            m.startup_ns = ev.startup_ns if m.startup_ns is None else m.startup_ns
            m.served = m.served or list(ev.models)

    def _on_server_exited(self, ev: ServerExited) -> None:
        if (m := self._model("")) is not None and not ev.expected:
            m.exits.append(ServerExit(incarnation=ev.incarnation, pid=ev.pid, returncode=ev.returncode,
                                      signal=ev.signal, during=ev.during, output_tail=list(ev.output_tail[-20:])))

    def _on_server_restarting(self, ev: ServerRestarting) -> None:
        if (m := self._model("")) is not None:
            m.restarts += 1

    def _on_orphan_killed(self, ev: OrphanKilled) -> None:
        if (m := self._model("")) is not None:
            m.orphans += 1

    def _on_resource(self, ev: ResourceSampled) -> None:
        if (m := self._model("")) is None:
            return
        m.peak_rss = max(m.peak_rss or 0, ev.rss_bytes)
        if ev.gpu_memory_bytes is not None:
            m.peak_gpu = max(m.peak_gpu or 0, ev.gpu_memory_bytes)
        if m.memory.due():
            m.memory.keep(MemoryPoint(t_s=self._t(ev.ts_ns), rss_bytes=ev.rss_bytes,
                                      gpu_memory_bytes=ev.gpu_memory_bytes))

    def _on_gpu(self, ev: GpuSampled) -> None:
        if ev.name:
            self._gpus.setdefault(ev.index, ev.name)
        if (m := self._model("")) is not None:
            m.peak_device = max(m.peak_device or 0, ev.memory_used_bytes)

    def _on_capability(self, ev: CapabilityProbed) -> None:
        if (m := self._model(ev.model)) is not None:
            m.capability.append(CapabilityCheck(check=ev.check, passed=ev.passed, reason=ev.reason,
                                                evidence=dict(ev.evidence)))

    def _on_verdict(self, ev: VerdictReached) -> None:
        m = self._model(ev.model)
        if m is None:
            return
        if ev.path == "aiperf":
            m.load.setdefault((ev.item_kind, ev.arm), Counter())[ev.verdict] += 1
            if m.current_window:
                self._windows[m.current_window].load[ev.verdict] += 1
            return
        # A repeated item/arm on one path (a retry) replaces the earlier verdict.
        m.cells.setdefault(ev.path, {})[(ev.item_id, ev.arm)] = (ev.verdict, _short(ev.answer), ev.gold, ev.item_kind)

    def _on_gate(self, ev: GateEvaluated) -> None:
        if (m := self._model(ev.model)) is not None:
            m.gates.append(GateRow(gate=ev.gate, scope=ev.scope, required=ev.required, observed=ev.observed,
                                   passed=ev.passed))

    def _on_result(self, ev: ModelResult) -> None:
        if (m := self._model(ev.model)) is not None:
            m.result = ev

    def _on_aiperf_started(self, ev: AiperfStarted) -> None:
        w = self._window(ev.window)
        w.started = ev
        self._aiperf_version = self._aiperf_version or ev.version
        self._aiperf_fingerprint = self._aiperf_fingerprint or ev.fingerprint
        if (m := self._model(w.model)) is not None:
            m.current_window = ev.window

    def _on_aiperf_exited(self, ev: AiperfExited) -> None:
        self._window(ev.window).exited = ev

    def _on_correlated(self, ev: RequestCorrelated) -> None:
        w = self._window(ev.window)
        w.add(ev)
        m = self._model(w.model)
        # Pictures show load (AIPerf windows), not the one-at-a-time probe windows of earlier stages.
        if m is not None and w.started is not None and ev.phase == "profiling" and ev.ok and m.latency.due():
            m.latency.keep(LatencyPoint(t_s=self._t(ev.request_end_ns or ev.request_start_ns or ev.ts_ns),
                                       client_ms=ev.request_latency_ms, handler_ms=ev.handler_ms,
                                       model_call_ms=ev.model_call_ms))

    def _on_unmatched(self, ev: RequestUnmatched) -> None:
        self._window(ev.window).unmatched[ev.cause] += 1

    def _on_accounting(self, ev: AccountingChecked) -> None:
        w = self._window(ev.window)
        w.balanced = ev.balanced
        w.problems = list(ev.problems)

    def _on_soak_window(self, ev: SoakWindowClosed) -> None:
        w = self._window(ev.window)
        w.soak = dict(ev.summary)
        w.close()

    def _on_warned(self, ev: Warned) -> None:
        self._notices.append(Notice(kind="warned", code=ev.code, message=ev.message,
                                    model=str(ev.detail.get("model", "")) or self._current))

    def _on_failed(self, ev: Failed) -> None:
        self._notices.append(Notice(kind="failed", code=ev.code, message=ev.message,
                                    model=str(ev.detail.get("model", "")) or self._current))

    def _on_dropped(self, ev: EventsDropped) -> None:
        self._dropped[ev.subscriber] = max(self._dropped.get(ev.subscriber, 0), ev.dropped)

    def _on_subscriber_failed(self, ev: SubscriberFailed) -> None:
        self._notices.append(Notice(kind="subscriber_failed", code=ev.subscriber, message=ev.error))

    # ------------------------------------------------------------------------------- finishing

    def finish(self, torn: TornLine | None = None) -> RunReport:
        """The report of everything added so far (call once, after the last event)."""
        notices = list(self._notices)
        notices += [Notice(kind="events_dropped", code=name, message=f"lossy subscriber {name!r} dropped {n} events")
                    for name, n in sorted(self._dropped.items())]
        if torn is not None:
            notices.append(Notice(kind="torn_line", code=f"line {torn.line}",
                                  message="the journal's last line is torn (writer killed mid-line) and was skipped"))
        if self._finished is None:
            notices.append(Notice(kind="interrupted", code="no RunFinished",
                                  message="the journal has no RunFinished: the run was interrupted"))
        names = self._row_order()
        rows = [self._row(self._models.get(n) or _Model(name=n)) for n in names]
        charts = {n: self._charts(self._models[n]) for n in names if n in self._models}
        windows = [w.summary() for w in self._windows.values()]
        return RunReport(provenance=self._provenance(torn), rows=rows, windows=windows, notices=notices,
                         charts=charts)

    def _config_models(self) -> list[dict[str, Any]]:
        models = (self._started.config.get("models") if self._started else None) or []
        return [m for m in models if isinstance(m, dict) and m.get("name")]

    def _row_order(self) -> list[str]:
        names = [str(m["name"]) for m in self._config_models()]
        return names + [n for n in self._models if n not in names]

    def _provenance(self, torn: TornLine | None) -> Provenance:
        s, f = self._started, self._finished
        tools = s.tool_versions if s else {}
        host = s.host if s else {}
        start = s.ts_ns if s and s.ts_ns else self._first_ts
        end = f.ts_ns if f and f.ts_ns else None
        gpus = [self._gpus[i] for i in sorted(self._gpus)] or [str(g) for g in host.get("gpus") or []]
        return Provenance(
            run_id=(s.run_id if s else "") or (f.run_id if f else ""),
            command=s.command if s else "",
            argv=list(s.argv) if s else [],
            journal_schema_version=s.schema_version if s else 0,
            aqbench_version=tools.get("aqbench", ""),
            aqbench_commit=tools.get("aqbench_commit", ""),
            aiperf_version=self._aiperf_version or tools.get("aiperf", ""),
            aiperf_fingerprint=self._aiperf_fingerprint or tools.get("aiperf_fingerprint", ""),
            python=tools.get("python", "") or str(host.get("python", "")),
            os=str(host.get("os", "")),
            cpu=str(host.get("cpu", "")),
            cpus=int(host.get("cpus") or 0),
            gpus=gpus,
            hostname=str(host.get("hostname", "")),
            dataset=self._dataset,
            config_path=s.config_path if s else "",
            config_sha256=s.config_sha256 if s else "",
            started_unix_ns=start,
            finished_unix_ns=end,
            started_at=_iso(start),
            finished_at=_iso(end),
            duration_s=(end - start) / 1e9 if start and end else None,
            status=f.status if f else "interrupted",
            exit_code=f.exit_code if f else None,
            reason=f.reason if f else "the journal ends without RunFinished",
            interrupted=f is None or f.status == "interrupted",
            torn_line=TornInfo(line=torn.line, text=torn.text.decode("utf-8", "replace")) if torn else None,
            events=self._events,
        )

    def _row(self, m: _Model) -> ModelRow:
        conf = next((c for c in self._config_models() if c.get("name") == m.name), {})
        res_row = m.result.row if m.result else {}
        server_detail = m.stages["server"].detail if "server" in m.stages else {}

        def ident(key: str, *alts: str) -> str:
            for source in (res_row, m.detail, conf):
                for k in (key, *alts):
                    if source.get(k):
                        return str(source[k])
            return ""

        status, failed_stage, reason = self._status(m)
        gate_arm = str((conf.get("correctness") or {}).get("arm") or "audio")
        window = self._row_window(m)
        summary = window.summary() if window else None
        aiperf_detail = m.stages["aiperf"].detail if "aiperf" in m.stages else {}
        identity_detail = m.stages["identity"].detail if "identity" in m.stages else {}
        return ModelRow(
            model=m.name,
            checkpoint=ident("checkpoint"),
            profile=ident("profile"),
            revision=ident("revision"),
            family=ident("family"),
            native_task=ident("native_task"),
            precision=ident("precision"),
            bundle_sha256=str(res_row.get("bundle_sha256") or server_detail.get("bundle_sha256") or ""),
            dataset_name=self._dataset.name if self._dataset else "",
            dataset_identity=self._dataset.identity if self._dataset else "",
            status=status,
            failed_stage=failed_stage,
            reason=reason,
            stages=[StageOutcome(phase=p, outcome=s.outcome, reason=s.reason,
                                 duration_s=(s.finished_ns - s.started_ns) / 1e9
                                 if s.finished_ns and s.started_ns else None)
                    for p, s in m.stages.items()],
            capability=list(m.capability),
            correctness=self._correctness(m),
            gates=list(m.gates),
            failing_items=self._failing(m, gate_arm),
            identity=IdentityResult(
                outcome=m.stages["identity"].outcome if "identity" in m.stages else "",
                compared=int(identity_detail.get("compared") or 0),
                mismatches=_mismatches(identity_detail.get("mismatches")),
            ),
            load_identity_mismatches=_mismatches(aiperf_detail.get("identity_mismatches")),
            aiperf=summary.aiperf if summary else None,
            aiperf_settings=dict(aiperf_detail.get("settings") or {}),
            counts=summary.counts if summary else Counts(),
            timing=summary.timing if summary else Timing(),
            server=ServerFacts(
                argv=list(m.argv), incarnations=len(m.incarnations), restarts=m.restarts,
                unexpected_exits=list(m.exits), orphans_killed=m.orphans,
                startup_s=m.startup_ns / 1e9 if m.startup_ns is not None else None,
                peak_rss_bytes=m.peak_rss, peak_gpu_memory_bytes=m.peak_gpu,
                peak_device_memory_used_bytes=m.peak_device, served_models=list(m.served),
            ),
            commands=Commands(qualify=str(res_row.get("qualify_command") or ""),
                              aiperf=str(res_row.get("aiperf_command") or "")
                              or (summary.aiperf.command if summary and summary.aiperf else "")),
            windows=list(m.windows),
        )

    def _row_window(self, m: _Model) -> _Window | None:
        """The AIPerf window a row's counts and timing come from: qualify's `<model>/aiperf`, else the
        model's last window that ran AIPerf (probe windows such as `<model>/correctness` never count)."""
        if (w := self._windows.get(f"{m.name}/aiperf")) is not None:
            return w
        ran = [self._windows[n] for n in m.windows if self._windows[n].started is not None]
        return ran[-1] if ran else None

    def _status(self, m: _Model) -> tuple[str, str, str]:
        if m.result is not None:
            reason = str(m.result.row.get("reason") or "") or self._stage_reason(m, m.result.failed_stage)
            return m.result.status, m.result.failed_stage, reason
        if not m.stages:
            return "not-run", "", "the run ended before this model was reached"
        # The stage it stopped in: one left open, else the last one that failed.
        open_stage = next((p for p, s in reversed(m.stages.items()) if s.finished_ns is None and p != "model"), "") \
            or next((p for p, s in reversed(m.stages.items()) if s.outcome == "failed" and p != "model"), "")
        f = self._finished
        if f is None or f.status == "interrupted":
            return "interrupted", open_stage, f"the run was interrupted before this model's result{_why(f)}"
        return "error", open_stage, f"the run ended before this model's result{_why(f)}"

    @staticmethod
    def _stage_reason(m: _Model, stage: str) -> str:
        return m.stages[stage].reason if stage in m.stages else ""

    def _correctness(self, m: _Model) -> dict[str, PathCorrectness]:
        out: dict[str, PathCorrectness] = {}
        for path, cells in m.cells.items():
            by_arm: dict[str, Counter[str]] = {}
            by_kind: dict[str, dict[str, Counter[str]]] = {}
            for (_item, arm), (verdict, _a, _g, kind) in cells.items():
                by_arm.setdefault(arm, Counter())[verdict] += 1
                by_kind.setdefault(kind, {}).setdefault(arm, Counter())[verdict] += 1
            out[path] = PathCorrectness(
                path=path,
                by_arm={a: _rate(c) for a, c in sorted(by_arm.items())},
                by_kind={k: {a: _rate(c) for a, c in sorted(arms.items())} for k, arms in sorted(by_kind.items())},
                audio_lift=_lift(cells),
            )
        if m.load:
            by_arm = {}
            by_kind = {}
            for (kind, arm), c in m.load.items():
                by_arm.setdefault(arm, Counter()).update(c)
                by_kind.setdefault(kind, {}).setdefault(arm, Counter()).update(c)
            out["aiperf"] = PathCorrectness(
                path="aiperf",
                by_arm={a: _rate(c) for a, c in sorted(by_arm.items())},
                by_kind={k: {a: _rate(c) for a, c in sorted(arms.items())} for k, arms in sorted(by_kind.items())},
            )
        return out

    def _failing(self, m: _Model, gate_arm: str) -> list[FailingItem]:
        """Failing items as the correctness stage listed them, with their answers from the verdicts."""
        cells = m.cells.get("http", {})
        listed = (m.stages["correctness"].detail.get("failing_items") if "correctness" in m.stages else None)
        keys: list[tuple[str, str]] = []
        if listed:
            for entry in listed:
                if isinstance(entry, dict):
                    keys.append((str(entry.get("item_id", "")), str(entry.get("arm") or gate_arm)))
                else:
                    keys.append((str(entry), gate_arm))
        elif "correctness" in m.stages and m.stages["correctness"].outcome == "failed":
            keys = [k for k, cell in cells.items() if k[1] == gate_arm and cell[0] != "correct"]
        out = []
        for item_id, arm in keys:
            verdict, answer, gold, kind = cells.get((item_id, arm), ("", None, "", ""))
            out.append(FailingItem(item_id=item_id, arm=arm, kind=kind, path="http", verdict=verdict,
                                   answer=answer, gold=gold))
        return out

    def _charts(self, m: _Model) -> ModelCharts:
        window = self._row_window(m)
        if window is not None:
            window.close()
        grids = []
        for path, cells in m.cells.items():
            arms: list[str] = []
            rows: dict[str, dict[str, GridCell]] = {}
            kinds: dict[str, str] = {}
            for (item, arm), (verdict, answer, gold, kind) in cells.items():
                if arm not in arms:
                    arms.append(arm)
                if item not in rows and len(rows) >= MAX_GRID_ITEMS:
                    continue
                rows.setdefault(item, {})[arm] = GridCell(verdict=verdict, answer=answer, gold=gold)
                kinds.setdefault(item, kind)
            total_items = len({item for item, _arm in cells})
            grids.append(VerdictGrid(
                path=path, arms=sorted(arms, key=_arm_order),
                rows=[GridRow(item_id=i, kind=kinds[i], cells=c) for i, c in rows.items()],
                truncated=total_items - len(rows),
            ))
        return ModelCharts(latency=list(m.latency.points), latency_stride=m.latency.stride,
                           histogram=window.histogram if window else Histogram(),
                           memory=list(m.memory.points), memory_stride=m.memory.stride, grids=grids)


def _why(f: RunFinished | None) -> str:
    return f": {f.reason}" if f is not None and f.reason else ""


def _arm_order(arm: str) -> tuple[int, str]:
    order = {"audio": 0, "silence": 1, "transcript": 2}
    return order.get(arm, 9), arm


def _lift(cells: dict[tuple[str, str], tuple[str, str | None, str, str]]) -> AudioLift:
    audio: dict[str, bool] = {}
    silence: list[bool] = []
    transcript: dict[str, bool] = {}
    for (item, arm), (verdict, _a, _g, _k) in cells.items():
        ok = verdict == "correct"
        if arm == "audio":
            audio[item] = ok
        elif arm == "silence":
            silence.append(ok)
        elif arm == "transcript":
            transcript[item] = ok
    audio_rate = sum(audio.values()) / len(audio) if audio else None
    silence_rate = sum(silence) / len(silence) if silence else None
    # Speech items are those with a transcript arm; compare on the items both arms answered.
    speech = [i for i in transcript if i in audio]
    audio_speech = sum(audio[i] for i in speech) / len(speech) if speech else None
    transcript_rate = sum(transcript[i] for i in speech) / len(speech) if speech else None
    return AudioLift(audio_rate=audio_rate, silence_rate=silence_rate, vs_silence=_diff(audio_rate, silence_rate),
                     speech_items=len(speech), audio_rate_speech=audio_speech, transcript_rate=transcript_rate,
                     vs_transcript=_diff(audio_speech, transcript_rate))


def _mismatches(raw: Any) -> list[Mismatch]:
    """Mismatch entries as qualify journals them: item_id, arm, and one answer per path."""
    out = []
    for entry in raw or []:
        if not isinstance(entry, dict):
            out.append(Mismatch(item_id=str(entry)))
            continue
        answers = {str(k): (None if v is None else str(v)) for k, v in entry.items()
                   if k not in ("item_id", "arm", "request_id")}
        out.append(Mismatch(item_id=str(entry.get("item_id", "")), arm=str(entry.get("arm", "")),
                            answers=dict(sorted(answers.items())), request_id=str(entry.get("request_id") or "")))
    return out


_HANDLERS: dict[type, Any] = {
    RunStarted: ReportFold._on_run_started,
    RunFinished: ReportFold._on_run_finished,
    PhaseStarted: ReportFold._on_phase_started,
    PhaseFinished: ReportFold._on_phase_finished,
    ServerSpawned: ReportFold._on_server_spawned,
    ServerReady: ReportFold._on_server_ready,
    ServerExited: ReportFold._on_server_exited,
    ServerRestarting: ReportFold._on_server_restarting,
    OrphanKilled: ReportFold._on_orphan_killed,
    ResourceSampled: ReportFold._on_resource,
    GpuSampled: ReportFold._on_gpu,
    CapabilityProbed: ReportFold._on_capability,
    VerdictReached: ReportFold._on_verdict,
    GateEvaluated: ReportFold._on_gate,
    ModelResult: ReportFold._on_result,
    AiperfStarted: ReportFold._on_aiperf_started,
    AiperfExited: ReportFold._on_aiperf_exited,
    RequestCorrelated: ReportFold._on_correlated,
    RequestUnmatched: ReportFold._on_unmatched,
    AccountingChecked: ReportFold._on_accounting,
    SoakWindowClosed: ReportFold._on_soak_window,
    Warned: ReportFold._on_warned,
    Failed: ReportFold._on_failed,
    EventsDropped: ReportFold._on_dropped,
    SubscriberFailed: ReportFold._on_subscriber_failed,
}


def fold(events: Iterable[AnyEvent], torn: TornLine | None = None) -> RunReport:
    """The RunReport of a sequence of events (pure)."""
    f = ReportFold()
    for ev in events:
        f.add(ev)
    return f.finish(torn)


def build_report(journal_path: str | Path) -> RunReport:
    """Stream `journal_path` through the fold. Blocks (file reads). A torn last line is reported
    in the provenance and as a notice; other corruption raises JournalError naming the line."""
    torn: list[TornLine] = []
    events: Iterator[AnyEvent] = iter_journal(journal_path, on_torn=torn.append)
    f = ReportFold()
    for ev in events:
        f.add(ev)
    return f.finish(torn[0] if torn else None)

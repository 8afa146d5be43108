"""The live page's state: a pure fold of journal events into what the page shows, and the small changes
(`Change`) each event makes, which the page applies as they arrive. No I/O, no clocks; every list is bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from orchestrator.base.figures import figure
from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfStarted,
    AnyEvent,
    EventsDropped,
    GateEvaluated,
    GpuIdentified,
    GpuSampled,
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
    Warned,
)
from orchestrator.live.page_types import (
    CampaignModelRow,
    Change,
    Counters,
    GpuRow,
    InFlightPoint,
    LatencyPoint,
    MemoryPoint,
    ModelRow,
    ModelSeries,
    PageState,
    PointRow,
    RunInfo,
    ServerInfo,
    SloState,
    VerdictRow,
    WindowRow,
)
from orchestrator.live.report_rows import ReportSections, detects, exit_text
from orchestrator.reports.error_kinds import ErrorKinds
from orchestrator.reports.row_status import StageState, model_status, soak_status
from orchestrator.reports.windows import PhaseTally, Thinned, phase_key

__all__ = ["PageFold", "PageState", "Change", "why_empty", "clock", "run_info", "RunInfo", "Counters", "WindowRow", "ModelRow", "VerdictRow",
           "PointRow", "CampaignModelRow", "SloState", "ServerInfo", "LatencyPoint", "MemoryPoint", "InFlightPoint", "ModelSeries", "SERIES_CAP", "detects"]

# Points per chart series: a page draws ~1000 px wide; the page halves its copy at the same cap.
SERIES_CAP = 1000
_CAUSES_KEPT = 20  # restart causes and unexpected exits listed, the latest


_Row = TypeVar("_Row", WindowRow, ModelRow, PointRow, VerdictRow, GpuRow)


# Fed the journal it rebuilds the page of a run already under way; fed the bus it says what changed. The rows the
# reports also show (soak windows and verdicts, sweep points and capacity, the server's restarts and exits) come from
# the reports' own folds (report_rows.py), fed the same events. Lists are bounded by the run's length (windows) or
# thinned (series, SERIES_CAP).
class PageFold:
    """Feed events in seq order with `add` (it returns the changes they made); `state()` at any time."""

    def __init__(self) -> None:
        self.seq = 0
        self._run = run_info()
        self._counters = Counters()
        # The reports' own per-phase tally (reports/windows.py), summed over the run's windows.
        self._tallies: dict[str, PhaseTally] = {}
        self._windows: dict[str, WindowRow] = {}
        self._models: dict[str, ModelRow] = {}
        self._points: dict[str, PointRow] = {}
        self._verdicts: dict[str, VerdictRow] = {}
        self._server = ServerInfo()
        self._gpus: dict[str, GpuRow] = {}
        self._gpu_uuid: dict[int, str] = {}
        self._gpu_notice = ""
        self._latency: Thinned[LatencyPoint] = Thinned(SERIES_CAP)
        self._memory: dict[str, Thinned[MemoryPoint]] = {}
        self._in_flight: Thinned[InFlightPoint] = Thinned(SERIES_CAP)
        self._dropped: dict[str, int] = {}
        self._errors = ErrorKinds()
        self._origin = 0
        self._current = ""
        # What the report's fold keeps to say how each model ended (reports/row_status.py): its stages, its
        # result, a soak's final verdicts and the run's end.
        self._stages: dict[str, dict[str, StageState]] = {}
        self._results: dict[str, ModelResult] = {}
        self._soak_final: dict[str, str] = {}
        self._finished: RunFinished | None = None
        self.reports = ReportSections()

    def state(self) -> PageState:
        mem = sorted((p for t in self._memory.values() for p in t.points), key=lambda p: p.t_s)
        return PageState(seq=self.seq, run=self._run, counters=self._counters, windows=list(self._windows.values()),
                         models=list(self._models.values()), points=list(self._points.values()), verdicts=list(self._verdicts.values()),
                         server=self._server, latency=list(self._latency.points), memory=mem,
                         in_flight=list(self._in_flight.points), dropped=dict(self._dropped),
                         gpus=list(self._gpus.values()), error_kinds=self._errors.rows())

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
        self.reports.add(ev)
        handler = _HANDLERS.get(type(ev))
        return handler(self, ev) if handler is not None else []

    # ------------------------------------------------------------------------------- sections

    # `fields`: a section Struct's own fields by name, checked by msgspec.structs.replace.
    def _set_run(self, **fields: Any) -> list[Change]:
        run = msgspec.structs.replace(self._run, **fields)
        self._run = msgspec.structs.replace(run, empty=why_empty(run))
        return [Change(seq=self.seq, op="set", section="run", value=self._run)]

    def _set_counters(self, **fields: Any) -> list[Change]:  # as _set_run
        self._counters = msgspec.structs.replace(self._counters, **fields)
        return [Change(seq=self.seq, op="set", section="counters", value=self._counters)]

    def _set_server(self, **fields: Any) -> list[Change]:  # as _set_run
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
        self._finished = ev
        out = self._set_run(status=ev.status, reason=ev.reason, finished_unix_ns=ev.ts_ns)
        for name, row in list(self._models.items()):  # a model without a result ends as the report says
            if (ended := self._model_row(name, row.stage)) != row:
                out += self._put("models", self._models, name, ended)
        return out

    def _record_stage(self, ev: PhaseStarted | PhaseFinished) -> str:
        """The stage as the report's fold records it; the model it belongs to ("" for the run's own)."""
        name = ev.model or self._current
        if not name or ev.phase == "dataset":
            return ""
        done = (ev.outcome, ev.reason, True) if isinstance(ev, PhaseFinished) else ("", "", False)
        self._stages.setdefault(name, {})[ev.phase] = done
        return name

    def _model_row(self, name: str, stage: str) -> ModelRow:
        """A model's row: how it ended, by the report's own rules, once its result, its soak's end or the run's
        end says; until then the stage it is in, running or as that stage ended."""
        stages = self._stages.get(name, {})
        result = self._results.get(name)
        soaked = soak_status(stages, self._soak_final) if result is None else None
        if result is not None or soaked is not None or self._finished is not None:
            status, failed_stage, reason = soaked or model_status(result, stages, self._finished)
            return ModelRow(name=name, stage=failed_stage or "done", state=status, reason=reason[:300])
        outcome, reason, _finished = stages.get(stage, ("", "", False))
        return ModelRow(name=name, stage=stage, state="running" if outcome in ("", "passed") else outcome,
                        reason=reason[:300])

    def _on_phase_started(self, ev: PhaseStarted) -> list[Change]:
        out = self._set_run(phase=ev.phase)
        if isinstance(ev.detail, SoakPhase) and ev.detail.duration_s and ev.detail.window_s:
            planned = max(1, -(-int(ev.detail.duration_s * 1000) // int(ev.detail.window_s * 1000)))
            out = self._set_run(total=planned, unit="windows", duration_s=ev.detail.duration_s,
                                window_s=ev.detail.window_s, checkpoint_s=ev.detail.checkpoint_every_s)
        if isinstance(ev.detail, SweepPhase) and ev.detail.points:
            out = self._set_run(total=len(ev.detail.points), unit="points")
        if ev.phase == "model" and ev.model:
            self._current = ev.model
        self._record_stage(ev)
        if ev.model and ev.phase not in ("dataset", "reference"):
            out += self._put("models", self._models, ev.model, self._model_row(ev.model, ev.phase))
        return out

    def _on_phase_finished(self, ev: PhaseFinished) -> list[Change]:
        self._record_stage(ev)
        if not ev.model or ev.phase in ("dataset", "reference"):
            return []
        out: list[Change] = []
        if ev.phase == "model" and self._run.unit == "models":
            out += self._set_run(done=self._run.done + 1)
        return out + self._put("models", self._models, ev.model, self._model_row(ev.model, ev.phase))

    def _on_result(self, ev: ModelResult) -> list[Change]:
        self._results[ev.model] = ev
        return self._put("models", self._models, ev.model, self._model_row(ev.model, ev.failed_stage))

    def _on_correlated(self, ev: RequestCorrelated) -> list[Change]:
        key = phase_key(ev)
        tally = self._tallies.setdefault(key, PhaseTally())
        tally.count(ev)
        failed: list[Change] = []
        if not ev.ok:
            self._errors.add(ev)
            failed = [Change(seq=self.seq, op="set", section="error_kinds", value=self._errors.rows())]
        return failed + self._on_counted(ev, key, tally)

    def _on_counted(self, ev: RequestCorrelated, key: str, tally: PhaseTally) -> list[Change]:
        if key == "warmup":
            return self._set_counters(warmup=tally.issued)
        if key != "profiling":
            return []
        counts = tally.frozen()
        out = self._set_counters(issued=counts.issued, ok=counts.ok, errors=counts.errors, by_cause=counts.by_cause,
                                 by_rule=counts.by_rule)
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
        row = self.reports.window(ev.index)
        closed = sum(w.state == "closed" for w in self._windows.values()) + (
            self._windows.get(ev.window, WindowRow(name="")).state != "closed")
        return self._put("windows", self._windows, ev.window, row) + self._set_run(done=closed)

    def _on_soak_verdict(self, ev: SoakVerdict) -> list[Change]:
        if ev.final:
            self._soak_final[ev.metric] = ev.outcome
        row = self.reports.verdict(ev.metric)  # a final verdict is never replaced by a checkpoint's
        return [] if self._verdicts.get(ev.metric) == row else self._put("verdicts", self._verdicts, ev.metric, row)

    def _on_gate(self, ev: GateEvaluated) -> list[Change]:
        key = f"{ev.model} {ev.gate}" + (f" ({ev.scope})" if ev.scope else "")
        outcome = "pass" if ev.passed else "fail" if ev.applicable else "inconclusive"
        return self._put("verdicts", self._verdicts, key, VerdictRow(
            name=key, outcome=outcome, final=True, estimate=ev.observed, limit=ev.required,
            reason=f"observed {figure(ev.observed)}, required {figure(ev.required)}" if ev.applicable else "not applicable",
            detects=f"a pass rate below {figure(ev.required)}"))

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
        row = self.reports.point(ev.offered)
        out = self._put("points", self._points, row.name, row)
        # Refinement adds points between the planned ones: the total grows with them.
        done = len(self._points)
        return out + self._set_run(done=done, total=max(done, self._run.total), unit="points")

    def _on_concluded(self, ev: SweepConcluded) -> list[Change]:
        # The capacity is the sweep's one verdict; points above a broken one are never run, so progress ends full.
        row = self.reports.capacity()
        out = self._put("verdicts", self._verdicts, row.name, row) if row is not None else []
        return out + self._set_run(total=len(self._points))

    def _on_server_state(self, ev: ServerStateChanged) -> list[Change]:
        return self._set_server(state=ev.state, incarnation=ev.incarnation)

    def _on_server_restarting(self, ev: ServerRestarting) -> list[Change]:
        cause = f"incarnation {ev.incarnation} attempt {ev.attempt}: {ev.reason[:200]}"
        return self._set_server(restarts=self.reports.soak.restarts,
                                causes=[*self._server.causes, cause][-_CAUSES_KEPT:])

    def _on_server_exited(self, ev: ServerExited) -> list[Change]:
        if ev.expected:
            return []
        return self._set_server(exits=[exit_text(e) for e in self.reports.soak.exits[-_CAUSES_KEPT:]])

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

    def _on_gpu(self, ev: GpuSampled) -> list[Change]:
        row = GpuRow(name=f"{ev.index} {ev.name}", uuid=self._gpu_uuid.get(ev.index, ""),
                     utilization_percent=ev.utilization_mean_percent, power_w=ev.power_w,
                     temperature_c=ev.temperature_c, sm_clock_mhz=ev.sm_clock_mhz,
                     memory_used_bytes=ev.memory_used_bytes, memory_total_bytes=ev.memory_total_bytes,
                     server_memory_bytes=None if self._gpu_notice else ev.tree_memory_bytes,
                     throttle_reasons=list(ev.throttle_reasons), notice=self._gpu_notice)
        return self._put("gpus", self._gpus, row.name, row)

    def _on_gpu_identified(self, ev: GpuIdentified) -> list[Change]:
        self._gpu_uuid[ev.gpu.index] = ev.gpu.uuid
        return []

    def _on_warned(self, ev: Warned) -> list[Change]:
        if ev.code == "gpu_pid_namespace":
            self._gpu_notice = ev.message
        return []

    def _on_dropped(self, ev: EventsDropped) -> list[Change]:
        self._dropped[ev.subscriber] = max(self._dropped.get(ev.subscriber, 0), ev.dropped)
        return [Change(seq=self.seq, op="set", section="dropped", value=dict(self._dropped))]


def clock(seconds: float) -> str:
    """A time of the run as a person reads it: `5:00`, `1:30:00`."""
    s = max(0, round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


def why_empty(run: RunInfo) -> dict[str, str]:
    """What each table says while it has no rows (table id -> sentence), from the run's command and settings:
    an empty table is a question a person should not have to ask."""
    if run.status != "running":  # the run is over: nothing more will come
        return {"verdicts": "none: the run ended before any verdict", "windows": "none: the run ended before any",
                "models": "none: the run ended before any model started", "points": "none: no load point was judged",
                "campaign": "none: the campaign ended before any model was queued"}
    verdicts = {
        "soak": (f"no checkpoint yet: the first at {clock(run.checkpoint_s)} under load, the final verdicts at "
                 "the end" if run.checkpoint_s else "no checkpoint yet: verdicts come at each checkpoint and at the end"),
        "qualify": "no verdict yet: each model's gates are judged after its correctness stage",
        "sweep": "no capacity yet: it is concluded once the load points bracket it",
        "campaign": "no verdict yet: each model's gates come with its qualify's correctness stage",
    }.get(run.command, "no verdict yet")
    windows = (f"no window yet: the first opens once the server is ready and closes {clock(run.window_s)} later"
               if run.command == "soak" and run.window_s else
               "no AIPerf run yet: it is each model's last stage" if run.command in ("qualify", "campaign")
               else "no AIPerf run yet")
    return {"verdicts": verdicts, "windows": windows, "models": "no model started yet",
            "points": "no load point judged yet", "campaign": "no model queued yet"}


def run_info(**fields: Any) -> RunInfo:  # RunInfo's own fields by name, checked by its constructor
    """A RunInfo with `fields`, saying why its tables are empty."""
    run = RunInfo(**fields)
    return msgspec.structs.replace(run, empty=why_empty(run))


# Each handler takes its own event type, which one dict's value type cannot say.
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
    GpuSampled: PageFold._on_gpu,
    GpuIdentified: PageFold._on_gpu_identified,
    Warned: PageFold._on_warned,
    ProcessSampled: PageFold._on_process,
    EventsDropped: PageFold._on_dropped,
}

"""A pure fold of journal events into a RunReport; streams, so memory stays bounded. Reads only its events."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from orchestrator.base.identity import ModelIdentity
from orchestrator.config import ModelConfig
from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfPhase,
    AiperfStarted,
    AnswerIncomplete,
    AnyEvent,
    CapabilityPhase,
    CapabilityProbed,
    DatasetPhase,
    EventsDropped,
    Failed,
    GateEvaluated,
    GpuIdentified,
    GpuIdentity,
    GpuSampled,
    HostFacts,
    IdentityPhase,
    Json,
    ModelPhase,
    ModelResult,
    NoninferiorityJudged,
    NoninferiorityResult,
    OrphanKilled,
    OrphanReaped,
    PhaseDetail,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RequestUnmatched,
    ResourceSampled,
    ResultRow,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerPhase,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    ServerStateChanged,
    SoakVerdict,
    SoakWindowClosed,
    SubscriberFailed,
    VerdictReached,
    Warned,
)
from orchestrator.reports.completeness import CompletenessTally
from orchestrator.reports.correctness import (
    MAX_GRID_ITEMS,
    failing_items,
    mismatches,
    path_correctness,
    verdict_grids,
)
from orchestrator.reports.gpu import GpuTally
from orchestrator.reports.row_status import chosen_models, model_status, soak_status
from orchestrator.reports.schema import (
    CapabilityCheck,
    Commands,
    Counts,
    DatasetIdentity,
    GateRow,
    Histogram,
    IdentityResult,
    LatencyPoint,
    MemoryPoint,
    ModelCharts,
    ModelRow,
    Notice,
    PathCorrectness,
    Provenance,
    RunReport,
    ServerExit,
    ServerFacts,
    StageOutcome,
    Timing,
    TornInfo,
)
from orchestrator.reports.server_story import ServerStory
from orchestrator.reports.windows import HISTOGRAM_BINS, MAX_POINTS, Thinned, WindowTally
from orchestrator.spine.journal import TornLine, iter_journal
from orchestrator.spine.redaction import Redactor

__all__ = ["ReportFold", "fold", "build_report", "MAX_POINTS", "MAX_GRID_ITEMS", "HISTOGRAM_BINS"]

_ANSWER_CHARS = 160
_RUN_PHASES = frozenset({"dataset"})  # phases that belong to the run, not to a model
_LOAD_PHASES = frozenset({"aiperf", "soak", "sweep", "ab"})  # a model's phases under AIPerf load (GPU busy %)
# Patterns only (no environment values): the fold stays pure, and a journal written before the journal
# writer redacted credentials still gives reports without them.
_REDACTOR = Redactor()


def _iso(ns: int | None) -> str:
    if ns is None:
        return ""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= _ANSWER_CHARS:
        return text
    return text[: _ANSWER_CHARS - 1] + "…"


def _diff(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


@dataclass
class _Stage:
    started_ns: int
    finished_ns: int | None = None
    outcome: str = ""
    reason: str = ""
    detail: PhaseDetail | None = None


@dataclass
class _Model:
    """Running state of one model's qualification."""

    name: str
    detail: ModelPhase | None = None
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
    story: ServerStory = field(default_factory=ServerStory)
    exits: list[ServerExit] = field(default_factory=list)
    orphans: int = 0
    reaped: int = 0
    startup_ns: int | None = None
    peak_rss: int | None = None
    peak_gpu: int | None = None
    peak_device: int | None = None
    served: list[Json] = field(default_factory=list)
    latency: Thinned[LatencyPoint] = field(default_factory=Thinned)
    memory: Thinned[MemoryPoint] = field(default_factory=Thinned)
    completeness: CompletenessTally = field(default_factory=CompletenessTally)
    noninferiority: NoninferiorityResult | None = None
    gpu: GpuTally = field(default_factory=GpuTally)
    ready_sample: bool = False  # the last ResourceSampled was after readiness (its GpuSampled follow it)


# Per model and per AIPerf window it keeps running counts; a window's values (for exact percentiles) are held as
# compact arrays only until it closes. Picture series are thinned to a fixed number of points.
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
        self._gpu_identity: dict[int, GpuIdentity] = {}
        self._current = ""
        self._windows: dict[str, WindowTally] = {}
        self._notices: list[Notice] = []
        self._dropped: dict[str, int] = {}
        self._gpus: dict[int, str] = {}
        self._aiperf_fingerprint = ""
        self._aiperf_version = ""
        self._soak_final: dict[str, str] = {}  # a soak's final verdicts: metric -> outcome

    # ------------------------------------------------------------------------------- feeding

    def add(self, ev: AnyEvent) -> None:
        self._events += 1
        if ev.ts_ns:
            self._first_ts = ev.ts_ns if self._first_ts is None else self._first_ts
            self._last_ts = ev.ts_ns
        handler = _HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, _REDACTOR.event(ev))

    def _model(self, name: str) -> _Model | None:
        name = name or self._current
        if not name:
            return None
        if name not in self._models:
            self._models[name] = _Model(name=name)
        return self._models[name]

    def _window(self, name: str, model: str = "") -> WindowTally:
        if name not in self._windows:
            self._windows[name] = WindowTally(name=name, model=model or self._current)
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

    def _on_soak_verdict(self, ev: SoakVerdict) -> None:
        if ev.final:
            self._soak_final[ev.metric] = ev.outcome

    def _on_phase_started(self, ev: PhaseStarted) -> None:
        if ev.phase in ("reference", "noninferiority"):  # the reference side's server is not the model's
            self._current = "" if ev.phase == "reference" else ev.model
        if ev.phase == "model" and ev.model:
            self._current = ev.model
            if (m := self._model(ev.model)) is not None and isinstance(ev.detail, ModelPhase):
                m.detail = ev.detail
        if ev.phase in _RUN_PHASES:
            return
        m = self._model(ev.model)
        if m is not None:
            m.stages[ev.phase] = _Stage(started_ns=ev.ts_ns)

    def _on_phase_finished(self, ev: PhaseFinished) -> None:
        if ev.phase == "dataset":
            d = ev.detail if isinstance(ev.detail, DatasetPhase) else DatasetPhase()
            self._dataset = DatasetIdentity(name=d.name, identity=d.identity, path=d.path, items=d.items or 0,
                                            arms=list(d.arms))
            return
        if ev.phase in _RUN_PHASES:
            return
        m = self._model(ev.model)
        if m is None:
            return
        stage = m.stages.setdefault(ev.phase, _Stage(started_ns=ev.ts_ns))
        stage.finished_ns, stage.outcome, stage.reason, stage.detail = ev.ts_ns, ev.outcome, ev.reason, ev.detail
        if ev.phase == "capability":  # a line for the probes, even where no answer was checked
            checked = ev.detail.answers_checked if isinstance(ev.detail, CapabilityPhase) else None
            m.completeness.probes_checked(checked or 0)
        if isinstance(ev.detail, ServerPhase):
            m.argv = list(ev.detail.argv or m.argv)
        if ev.phase in ("aiperf", "model"):
            for name in m.windows:
                self._windows[name].close()
        if ev.phase == "model" and self._current == m.name:
            self._current = ""

    def _on_server_spawned(self, ev: ServerSpawned) -> None:
        if (m := self._model("")) is not None:
            m.incarnations.add(ev.incarnation)
            m.story.spawned(ev, self._t(ev.ts_ns))
            m.argv = m.argv or list(ev.argv)

    def _on_server_ready(self, ev: ServerReady) -> None:
        if (m := self._model("")) is not None:
            m.startup_ns = ev.startup_ns if m.startup_ns is None else m.startup_ns
            m.served = m.served or list(ev.models)

    def _on_server_exited(self, ev: ServerExited) -> None:
        if (m := self._model("")) is not None:
            m.story.exited(ev)
        if (m := self._model("")) is not None and not ev.expected:
            m.exits.append(ServerExit(incarnation=ev.incarnation, pid=ev.pid, returncode=ev.returncode,
                                      signal=ev.signal, during=ev.during, output_tail=list(ev.output_tail[-20:])))

    def _on_server_restarting(self, ev: ServerRestarting) -> None:
        if (m := self._model("")) is not None:
            m.story.restarting(ev, self._t(ev.ts_ns))

    def _on_server_state(self, ev: ServerStateChanged) -> None:
        if (m := self._model("")) is not None:
            m.story.state(ev, self._t(ev.ts_ns))

    def _on_orphan_killed(self, ev: OrphanKilled) -> None:
        if (m := self._model("")) is not None:
            m.orphans += 1

    def _on_orphan_reaped(self, ev: OrphanReaped) -> None:
        if (m := self._model("")) is not None:
            m.reaped += 1

    def _on_resource(self, ev: ResourceSampled) -> None:
        if (m := self._model("")) is None:
            return
        if not ev.pre_ready:  # start-up memory is never presented as the peak
            m.peak_rss = max(m.peak_rss or 0, ev.rss_bytes)
            if ev.gpu_memory_bytes is not None:
                m.peak_gpu = max(m.peak_gpu or 0, ev.gpu_memory_bytes)
        m.ready_sample = not ev.pre_ready
        if ev.gpu_memory_scope == "device":
            m.gpu.scope = "device"
        if m.memory.due():
            m.memory.keep(MemoryPoint(t_s=self._t(ev.ts_ns), rss_bytes=ev.rss_bytes,
                                      gpu_memory_bytes=ev.gpu_memory_bytes))

    def _on_gpu(self, ev: GpuSampled) -> None:
        if ev.name:
            self._gpus.setdefault(ev.index, ev.name)
        if (m := self._model("")) is not None:
            m.peak_device = max(m.peak_device or 0, ev.memory_used_bytes)
            if m.ready_sample:
                m.gpu.add(ev, busy_phase=any(st.finished_ns is None for p, st in m.stages.items() if p in _LOAD_PHASES))

    def _on_gpu_identified(self, ev: GpuIdentified) -> None:
        self._gpu_identity.setdefault(ev.gpu.index, ev.gpu)

    def _on_capability(self, ev: CapabilityProbed) -> None:
        if (m := self._model(ev.model)) is not None:
            m.capability.append(CapabilityCheck(check=ev.check, passed=ev.passed, reason=ev.reason,
                                                evidence=ev.evidence))

    def _on_verdict(self, ev: VerdictReached) -> None:
        m = self._model(ev.model)
        if m is None:
            return
        m.completeness.add_verdict(ev)
        if ev.path == "aiperf":
            m.load.setdefault((ev.item_kind, ev.arm), Counter())[ev.verdict] += 1
            if m.current_window:
                self._windows[m.current_window].load[ev.verdict] += 1
            return
        # A repeated item/arm on one path (a retry) replaces the earlier verdict.
        m.cells.setdefault(ev.path, {})[(ev.item_id, ev.arm)] = (ev.verdict, _short(ev.answer), ev.gold, ev.item_kind)

    def _on_incomplete(self, ev: AnswerIncomplete) -> None:
        if (m := self._model(ev.model)) is not None:
            m.completeness.add_incomplete(ev)

    def _on_gate(self, ev: GateEvaluated) -> None:
        if (m := self._model(ev.model)) is not None:
            m.gates.append(GateRow(gate=ev.gate, scope=ev.scope, required=ev.required, observed=ev.observed,
                                   passed=ev.passed, applicable=ev.applicable))

    def _on_noninferiority(self, ev: NoninferiorityJudged) -> None:
        if (m := self._model(ev.model)) is not None:
            m.noninferiority = ev.result

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
        w.soak = ev.summary
        w.close()

    def _on_warned(self, ev: Warned) -> None:
        self._notices.append(Notice(kind="warned", code=ev.code, message=ev.message,
                                    model=ev.detail.model or self._current))

    def _on_failed(self, ev: Failed) -> None:
        self._notices.append(Notice(kind="failed", code=ev.code, message=ev.message,
                                    model=ev.detail.model or self._current))

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

    def _config_models(self) -> list[ModelConfig]:
        config = self._started.config if self._started else None
        return list(config.models) if config is not None else []

    def _row_order(self) -> list[str]:
        """qualify: every configured model (one it never reached reads not-run); a command that serves
        one model (run-aiperf, soak): the models the journal names, never the rest of bench.toml."""
        if self._started is not None and self._started.command not in ("", "qualify"):
            return list(self._models)
        chosen = chosen_models(self._started.argv if self._started else [])
        names = [m.name for m in self._config_models() if not chosen or m.name in chosen]
        return names + [n for n in self._models if n not in names]

    def _provenance(self, torn: TornLine | None) -> Provenance:
        s, f = self._started, self._finished
        tools = s.tool_versions if s else {}
        host = s.host if s else HostFacts()
        start = s.ts_ns if s and s.ts_ns else self._first_ts
        end = f.ts_ns if f and f.ts_ns else None
        gpus = [self._gpus[i] for i in sorted(self._gpus)]
        return Provenance(
            run_id=(s.run_id if s else "") or (f.run_id if f else ""),
            command=s.command if s else "",
            argv=list(s.argv) if s else [],
            journal_schema_version=s.schema_version if s else 0,
            aqbench_version=tools.get("aqbench", ""),
            aqbench_commit=tools.get("aqbench_commit", ""),
            aiperf_version=self._aiperf_version or tools.get("aiperf", ""),
            aiperf_fingerprint=self._aiperf_fingerprint or tools.get("aiperf_fingerprint", ""),
            python=tools.get("python", "") or host.python,
            os=host.os,
            cpu=host.cpu,
            cpus=host.cpus,
            gpus=gpus,
            hostname=host.hostname,
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
            gpu_identity=[self._gpu_identity[i] for i in sorted(self._gpu_identity)],
        )

    def _row(self, m: _Model) -> ModelRow:
        conf = next((c for c in self._config_models() if c.name == m.name), None)
        res_row = m.result.row if m.result else ResultRow()
        # The result row states the identity; a model without one (interrupted, soak) has its phase's or config's.
        ident = ModelIdentity.first_known(res_row, m.detail, conf)
        server_detail = _detail(m, "server", ServerPhase)
        stages = {p: (st.outcome, st.reason, st.finished_ns is not None) for p, st in m.stages.items()}
        soaked = soak_status(stages, self._soak_final) if m.result is None else None
        status, failed_stage, reason = soaked or model_status(m.result, stages, self._finished)
        restarts, spans, stops = m.story.finish()
        gate_arm = (conf.correctness.arm if conf is not None else "") or "audio"
        window = self._row_window(m)
        summary = window.summary() if window else None
        aiperf_detail = _detail(m, "aiperf", AiperfPhase)
        identity_detail = _detail(m, "identity", IdentityPhase)
        return ModelRow(
            model=m.name,
            **ident.identity_fields(),
            bundle_sha256=res_row.bundle_sha256 or (server_detail.bundle_sha256 if server_detail else ""),
            keyed_by=res_row.keyed_by,
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
            failing_items=failing_items(m.cells.get("http", {}), m.stages.get("correctness"), gate_arm),
            identity=IdentityResult(
                outcome=m.stages["identity"].outcome if "identity" in m.stages else "",
                compared=(identity_detail.compared or 0) if identity_detail else 0,
                mismatches=mismatches(identity_detail.mismatches if identity_detail else []),
            ),
            load_identity_mismatches=mismatches(aiperf_detail.identity_mismatches if aiperf_detail else []),
            aiperf=summary.aiperf if summary else None,
            aiperf_settings=aiperf_detail.settings if aiperf_detail else None,
            counts=summary.counts if summary else Counts(),
            timing=summary.timing if summary else Timing(),
            server=ServerFacts(
                argv=list(m.argv), incarnations=len(m.incarnations),
                restarts=sum(r.spawned_s is not None for r in restarts),
                unexpected_exits=list(m.exits), orphans_killed=m.orphans,
                startup_s=m.startup_ns / 1e9 if m.startup_ns is not None else None,
                peak_rss_bytes=m.peak_rss, peak_gpu_memory_bytes=m.peak_gpu,
                peak_device_memory_used_bytes=m.peak_device, served_models=list(m.served),
                restart_causes=restarts, state_spans=spans, expected_stops=stops, orphans_reaped=m.reaped,
                gpus=m.gpu.facts(self._gpu_identity),
            ),
            commands=Commands(qualify=res_row.qualify_command,
                              aiperf=res_row.aiperf_command
                              or (summary.aiperf.command if summary and summary.aiperf else "")),
            windows=list(m.windows),
            completeness=m.completeness.lines(),
            noninferiority=m.noninferiority or res_row.noninferiority,
            gpus=[self._gpu_identity[i] for i in sorted(m.gpu.devices) if i in self._gpu_identity],
            gpu_busy_percent=m.gpu.busy_percent(),
        )

    def _row_window(self, m: _Model) -> WindowTally | None:
        """The AIPerf window a row's counts and timing come from: qualify's `<model>/aiperf`, else the
        model's last window that ran AIPerf (probe windows such as `<model>/correctness` never count)."""
        if (w := self._windows.get(f"{m.name}/aiperf")) is not None:
            return w
        ran = [self._windows[n] for n in m.windows if self._windows[n].started is not None]
        return ran[-1] if ran else None

    def _correctness(self, m: _Model) -> dict[str, PathCorrectness]:
        return path_correctness(m.cells, m.load)

    def _charts(self, m: _Model) -> ModelCharts:
        window = self._row_window(m)
        if window is not None:
            window.close()
        grids = verdict_grids(m.cells)
        return ModelCharts(latency=list(m.latency.points), latency_stride=m.latency.stride,
                           histogram=window.histogram if window else Histogram(),
                           memory=list(m.memory.points), memory_stride=m.memory.stride, grids=grids)


_P = TypeVar("_P", ServerPhase, AiperfPhase, IdentityPhase)


def _detail(m: _Model, phase: str, kind: type[_P]) -> _P | None:
    """The detail the model's `phase` finished with, when it is of `kind`."""
    stage = m.stages.get(phase)
    return stage.detail if stage is not None and isinstance(stage.detail, kind) else None


# Each handler takes its own event type, which one dict's value type cannot say.
_HANDLERS: dict[type, Any] = {
    RunStarted: ReportFold._on_run_started,
    RunFinished: ReportFold._on_run_finished,
    PhaseStarted: ReportFold._on_phase_started,
    PhaseFinished: ReportFold._on_phase_finished,
    ServerSpawned: ReportFold._on_server_spawned,
    ServerReady: ReportFold._on_server_ready,
    ServerExited: ReportFold._on_server_exited,
    ServerRestarting: ReportFold._on_server_restarting,
    ServerStateChanged: ReportFold._on_server_state,
    OrphanKilled: ReportFold._on_orphan_killed,
    OrphanReaped: ReportFold._on_orphan_reaped,
    ResourceSampled: ReportFold._on_resource,
    GpuSampled: ReportFold._on_gpu,
    GpuIdentified: ReportFold._on_gpu_identified,
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
    SoakVerdict: ReportFold._on_soak_verdict,
    Warned: ReportFold._on_warned,
    Failed: ReportFold._on_failed,
    EventsDropped: ReportFold._on_dropped,
    SubscriberFailed: ReportFold._on_subscriber_failed,
    AnswerIncomplete: ReportFold._on_incomplete,
    NoninferiorityJudged: ReportFold._on_noninferiority,
}


def fold(events: Iterable[AnyEvent], torn: TornLine | None = None) -> RunReport:
    """The RunReport of a sequence of events (pure)."""
    f = ReportFold()
    for ev in events:
        f.add(ev)
    return f.finish(torn)


def build_report(journal_path: str | Path, *, also: Sequence[Callable[[AnyEvent], None]] = ()) -> RunReport:
    """Stream `journal_path` through the fold. Blocks (file reads). A torn last line is reported
    in the provenance and as a notice; other corruption raises JournalError naming the line. Each of
    `also` (another report's fold) is handed every event too: one pass over the journal for both."""
    torn: list[TornLine] = []
    events: Iterator[AnyEvent] = iter_journal(journal_path, on_torn=torn.append)
    f = ReportFold()
    if not also:
        for ev in events:
            f.add(ev)
        return f.finish(torn[0] if torn else None)
    for ev in events:
        f.add(ev)
        for other in also:
            other(ev)
    return f.finish(torn[0] if torn else None)

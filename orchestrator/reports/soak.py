"""The soak report (soak.json, soak.md, soak.html): per-window time series pictures and the verdict
table with the numbers behind each verdict, folded from the journal alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

import msgspec
from markupsafe import Markup

from orchestrator.base.figures import figure
from orchestrator.config import SoakConfig
from orchestrator.events import (
    RESTART_CAUSES,
    AnyEvent,
    GpuIdentified,
    GpuIdentity,
    GpuSampled,
    MemorySummary,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    ResourceSampled,
    RunFinished,
    RunStarted,
    SampledMemoryDetail,
    ServerExited,
    ServerRestarting,
    ServerSpawned,
    SoakHandover,
    SoakPhase,
    SoakStopped,
    SoakTail,
    SoakVerdict,
    SoakWindowClosed,
    StopPlan,
    TrendPlan,
    Warned,
    WindowStats,
)
from orchestrator.reports.error_kinds import ERROR_KIND_HEAD, ErrorKind, ErrorKinds, error_kind_rows
from orchestrator.reports.gpu import GpuTally
from orchestrator.reports.gpu_tables import GPU_NOTICE_CODES, gpu_context, gpu_markdown
from orchestrator.reports.schema import GpuFacts
from orchestrator.reports.svg import line_chart
from orchestrator.reports.templating import render
from orchestrator.reports.text import dash
from orchestrator.spine.journal import TornLine, iter_journal

__all__ = ["SoakReport", "SoakExit", "SoakRestart", "restart_text", "SoakFold", "fold_soak", "build_soak_report", "inconclusive_lines",
           "render_soak_markdown", "render_soak_html", "write_soak_report"]

# 2: verdicts carry `outcome` (pass/fail/inconclusive) instead of passed/judged; `in progress` status.
# 3: each verdict is the SoakVerdict as journaled (its detail typed by kind of rule).
# It complements report.{json,md,html} (the qualify-shaped report of the same journal). Reads only events and the
# journal; windows, verdicts and settings are kept as the typed values the journal holds.
SOAK_REPORT_VERSION = 3
_MIB = 2.0**20


class SoakExit(msgspec.Struct, frozen=True, kw_only=True):
    """An unexpected server exit as journaled (ServerExited), with the last lines it printed."""

    incarnation: int
    returncode: int | None = None
    signal: str = ""
    during: str = ""
    unix_ns: int = 0
    output_tail: list[str] = []


class SoakReport(msgspec.Struct, frozen=True, kw_only=True):
    """soak.json: the run, its closed windows and its verdicts (as journaled), and the server's exits.

    Each verdict is the last one journaled for its metric: the final one when the soak ended, else the
    latest checkpoint's."""

    report_version: int = SOAK_REPORT_VERSION
    run_id: str = ""
    command: str = ""
    status: str = "interrupted"
    reason: str = ""
    settings: SoakConfig | None = None
    windows: list[WindowStats] = []
    verdicts: list[SoakVerdict] = []
    verdicts_final: bool = False
    checkpoints: int = 0
    exits: list[SoakExit] = []
    restarts: int = 0
    torn_line: int | None = None
    # What each trend verdict could decide under the soak's plan, said before the load (SoakPhase.plan).
    plan: list[TrendPlan] = []
    # Each handover of the load to a fresh AIPerf process (docs/soak.md, "AIPerf hands over"), as journaled.
    handovers: list[SoakHandover] = []
    # The server's GPUs: identity, figures after readiness (busy % under the load), attribution notices.
    gpu_identity: list[GpuIdentity] = []
    gpus: list[GpuFacts] = []
    gpu_notices: list[str] = []
    # Each restart decided, with its cause, dated by its spawn (or never made).
    restart_events: list[SoakRestart] = []
    # What the failed requests were answered, by HTTP status and kind of body, with one example each.
    error_kinds: list[ErrorKind] = []
    # The look that ended the soak early (None: it ran its duration, or was stopped otherwise), and when each
    # verdict that can end a soak could first decide (SoakPhase.stop_plan).
    stopped: SoakStopped | None = None
    stop_plan: list[StopPlan] = []
    # Each segment's tail: what its last window, closed on time before its AIPerf runs ended, still had open
    # (docs/soak.md, "Windows close on time"), counted there once.
    tails: list[SoakTail] = []


class SoakRestart(msgspec.Struct, frozen=True, kw_only=True):
    """A restart the supervisor decided, in run seconds: when decided, and when its incarnation was spawned (None:
    never; the run ended during the backoff), with what ended the one before (ServerRestarting.cause)."""

    incarnation: int
    decided_s: float
    spawned_s: float | None = None
    cause: str = ""
    reason: str = ""


def _never_made(report: SoakReport) -> str:
    never = sum(r.spawned_s is None for r in report.restart_events)
    return f" ({never} decided and never made: the run ended first)" if never else ""


def restart_text(r: SoakRestart) -> str:
    """One restart in words, dated by its spawn, or said as decided and never made."""
    why = RESTART_CAUSES.get(r.cause, r.cause)
    if r.spawned_s is None:
        return (f"restart decided at {r.decided_s:.1f} s; the run ended first (incarnation {r.incarnation} was never "
                f"started); cause: {why}")
    return f"incarnation {r.incarnation} started at {r.spawned_s:.1f} s (decided at {r.decided_s:.1f} s); cause: {why}"


class SoakFold:
    """fold_soak, fed one event at a time (`add`), its report at any point (`report`): the live page folds a
    running soak's journal with it, as the checkpoint and final reports do. Memory: one summary per window and
    one verdict per metric."""

    def __init__(self) -> None:
        self.started: RunStarted | None = None
        self.finished: RunFinished | None = None
        self.windows: dict[int, WindowStats] = {}
        self.latest: dict[str, SoakVerdict] = {}
        self.checkpoint_seqs: set[int] = set()
        self.exits: list[SoakExit] = []
        self.restarts = 0
        self.restart_events: list[SoakRestart] = []
        self.handovers: list[SoakHandover] = []
        self.tails: list[SoakTail] = []
        self.plan: list[TrendPlan] = []
        self.stop_plan: list[StopPlan] = []
        self.stopped: SoakStopped | None = None
        self.errors = ErrorKinds()
        self.rule: Literal["window", "sampled"] | None = None  # the latency drift rule the soak journaled
        self.gpu = GpuTally()
        self.gpu_identity: dict[int, GpuIdentity] = {}
        self.gpu_notices: list[str] = []
        self.ready_sample = False
        self.loading = False  # the soak phase (the load) is open

    def add(self, ev: AnyEvent) -> None:
        if isinstance(ev, RunStarted):
            self.started = ev
        elif isinstance(ev, RunFinished):
            self.finished = ev
        elif isinstance(ev, SoakWindowClosed):
            self.windows[ev.index] = ev.summary or WindowStats(window=ev.window, index=ev.index, start_unix_ns=0,
                                                               end_unix_ns=0)
        elif isinstance(ev, SoakVerdict):
            prior = self.latest.get(ev.metric)
            if prior is not None and prior.final and not ev.final:
                return  # a final verdict is never replaced by a checkpoint's
            self.latest[ev.metric] = ev
            if not ev.final:
                self.checkpoint_seqs.add(ev.windows_closed)
        elif isinstance(ev, ServerExited) and not ev.expected:
            self.exits.append(SoakExit(incarnation=ev.incarnation, returncode=ev.returncode, signal=ev.signal,
                                       during=ev.during, unix_ns=ev.ts_ns, output_tail=list(ev.output_tail[-5:])))
        elif isinstance(ev, ServerRestarting):
            self.restarts += 1
            self.restart_events.append(SoakRestart(incarnation=ev.incarnation, decided_s=self._run_s(ev.ts_ns),
                                                   cause=ev.cause, reason=ev.reason))
        elif isinstance(ev, ServerSpawned):
            self.restart_events = [msgspec.structs.replace(r, spawned_s=self._run_s(ev.ts_ns))
                                   if r.incarnation == ev.incarnation and r.spawned_s is None else r
                                   for r in self.restart_events]
        elif isinstance(ev, RequestCorrelated):
            self.errors.add(ev)
        elif isinstance(ev, SoakHandover | SoakTail):
            self._load(ev)
        elif isinstance(ev, SoakStopped):
            self.stopped = ev
        elif isinstance(ev, PhaseStarted) and isinstance(ev.detail, SoakPhase):
            self.plan = list(ev.detail.plan)
            self.stop_plan = list(ev.detail.stop_plan)
            self.rule = ev.detail.limits.latency_drift_rule if ev.detail.limits is not None else None
            self.loading = True
        elif isinstance(ev, PhaseFinished) and ev.phase == "soak":
            self.loading = False
        else:
            self._gpu(ev)

    def _load(self, ev: SoakHandover | SoakTail) -> None:
        """A handover, kept; a segment's tail, kept, and how its last run ended told on its last window, as when
        that window closed at the run's exit."""
        if isinstance(ev, SoakHandover):
            self.handovers.append(ev)
            return
        self.tails.append(ev)
        for index, w in self.windows.items():
            if w.window == ev.window and not w.aiperf_classification and w.aiperf_exit_unix_ns is None:
                self.windows[index] = msgspec.structs.replace(w, aiperf_classification=ev.aiperf_classification,
                                                              aiperf_exit_unix_ns=ev.aiperf_exit_unix_ns)

    def _gpu(self, ev: AnyEvent) -> None:
        if isinstance(ev, ResourceSampled):
            self.ready_sample = not ev.pre_ready
            if ev.gpu_memory_scope == "device":
                self.gpu.scope = "device"
        elif isinstance(ev, GpuSampled) and self.ready_sample:
            self.gpu.add(ev, busy_phase=self.loading)
        elif isinstance(ev, GpuIdentified):
            self.gpu_identity.setdefault(ev.gpu.index, ev.gpu)
        elif isinstance(ev, Warned) and ev.code in GPU_NOTICE_CODES and ev.message not in self.gpu_notices:
            self.gpu_notices.append(ev.message)

    def _run_s(self, ts_ns: int) -> float:
        return (ts_ns - self.started.ts_ns) / 1e9 if self.started is not None and self.started.ts_ns else 0.0

    def report(self, torn: TornLine | None = None, *, live: bool = False) -> SoakReport:
        """The report of what was added so far (`live`: see fold_soak)."""
        started, finished, windows = self.started, self.finished, self.windows
        verdicts = list(self.latest.values())
        settings = started.config.soak if started is not None and started.config is not None else None
        if settings is not None and self.rule is not None:
            # The rule the soak judged by, as journaled: a configuration snapshot from before the key existed
            # reads as today's default, which it was not judged by.
            settings = msgspec.structs.replace(settings, latency_drift_rule=self.rule)
        return SoakReport(
            run_id=started.run_id if started else "", command=started.command if started else "",
            status=finished.status if finished else ("in progress" if live else "interrupted"),
            reason=finished.reason if finished else (
                f"the soak is running; this checkpoint report covers the {len(windows)} window(s) closed so far"
                if live else "the journal has no RunFinished: the run was interrupted"),
            settings=settings,
            windows=[windows[i] for i in sorted(windows)], verdicts=verdicts,
            verdicts_final=bool(verdicts) and all(v.final for v in verdicts),
            checkpoints=len(self.checkpoint_seqs), exits=list(self.exits), restarts=self.restarts,
            torn_line=torn.line if torn else None, plan=list(self.plan), handovers=list(self.handovers),
            gpu_identity=[self.gpu_identity[i] for i in sorted(self.gpu_identity)],
            gpus=self.gpu.facts(self.gpu_identity), gpu_notices=list(self.gpu_notices),
            restart_events=list(self.restart_events),
            error_kinds=self.errors.rows(), stopped=self.stopped, stop_plan=list(self.stop_plan),
            tails=list(self.tails))


def fold_soak(events: Iterable[AnyEvent], torn: TornLine | None = None, *, live: bool = False) -> SoakReport:
    """Pure fold of a soak journal (SoakFold). Memory: one summary per window and one verdict per metric.

    `live`: the journal is being written by a running soak (a checkpoint report): without RunFinished
    the status is `in progress`, not `interrupted`."""
    f = SoakFold()
    for ev in events:
        f.add(ev)
    return f.report(torn, live=live)


def build_soak_report(journal_path: str | Path, *, live: bool = False) -> SoakReport:
    """Stream the journal through fold_soak (`live`: see fold_soak). Blocks (file reads)."""
    torn: list[TornLine] = []
    return fold_soak(iter_journal(journal_path, on_torn=torn.append), torn[0] if torn else None, live=live)


# ------------------------------------------------------------------------------------ series


def _t_min(report: SoakReport, w: WindowStats) -> float:
    origin = report.windows[0].start_unix_ns
    return ((w.start_unix_ns + w.end_unix_ns) / 2 - origin) / 60e9


def _series(report: SoakReport, pick: Callable[[WindowStats], float | None], scale: float = 1.0) -> list[tuple[float, float]]:
    return [(_t_min(report, w), v * scale) for w in report.windows if (v := pick(w)) is not None]


def _correct_pct(report: SoakReport) -> list[tuple[float, float]]:
    return [(_t_min(report, w), 100.0 * w.correct / w.scored) for w in report.windows if w.scored]


def _charts(report: SoakReport) -> list[str]:
    x = "minutes since the first window started (window midpoints)"
    mib = 1 / _MIB
    return [
        line_chart("soak-latency", "Latency per window", [
            ("client p50", _series(report, lambda w: w.client_latency_ms.p50)),
            ("client p99", _series(report, lambda w: w.client_latency_ms.p99)),
            ("server p50", _series(report, lambda w: w.server_latency_ms.p50)),
            ("server p99", _series(report, lambda w: w.server_latency_ms.p99)),
        ], x_label=x, y_label="ms"),
        line_chart("soak-memory", "Server memory per window", [
            ("RSS median", _series(report, lambda w: w.rss.median_bytes, scale=mib)),
            ("RSS peak", _series(report, lambda w: w.rss.peak_bytes, scale=mib)),
            ("GPU memory peak", _series(report, lambda w: w.gpu_memory.peak_bytes, scale=mib)),
        ], x_label=x, y_label="MiB"),
        line_chart("soak-observer", "The observer's own memory per window", [
            ("aqbench RSS median", _series(report, lambda w: w.orchestrator_rss.median_bytes, scale=mib)),
            ("AIPerf tree RSS median", _series(report, lambda w: w.aiperf_rss.median_bytes, scale=mib)),
        ], x_label=x, y_label="MiB"),
        line_chart("soak-errors", "Error rate per window", [
            ("errors %", _series(report, lambda w: w.error_rate, scale=100.0)),
        ], x_label=x, y_label="% of profiling requests"),
        line_chart("soak-correctness", "Correctness under load per window", [
            ("correct %", _correct_pct(report)),
        ], x_label=x, y_label="% of scored answers"),
        line_chart("soak-gaps", "Time without load before each window", [
            ("gap before", _series(report, lambda w: w.gap_before_s)),
        ], x_label=x, y_label="s"),
    ]


# ------------------------------------------------------------------------------------ tables


def _num(v: float | None, digits: int = 3) -> str:
    """`digits` significant digits, written out plainly: 3150 and 0.00012, never 3.15e+03."""
    if v is None or v != v:
        return dash
    return figure(v, digits)


def _interval(iv: list[float] | None) -> str:
    return f"[{_num(iv[0])}, {_num(iv[1])}]" if iv is not None and len(iv) == 2 else dash


def _verdict_rows(report: SoakReport) -> list[list[str]]:
    return [[v.metric, v.outcome.upper(), "final" if v.final else f"checkpoint ({v.windows_closed or '?'} windows)",
             _num(v.slope), _interval(v.interval), _num(v.limit), v.unit, v.reason] for v in report.verdicts]


_VERDICT_HEAD = ["metric", "result", "when", "slope", "interval", "limit", "unit", "numbers"]
_WINDOW_HEAD = ["window", "issued", "ok", "errors (by cause)", "req/s", "client p50/p99 ms", "server p50/p99 ms",
                "correct", "RSS start/end/peak MiB", "aqbench/AIPerf RSS MiB", "restarts", "gap before s",
                "AIPerf run"]


def _mib(v: float | None) -> str:
    return f"{v / _MIB:.0f}" if v is not None else dash


def _rss(m: MemorySummary) -> str:
    return f"{_mib(m.start_bytes)}/{_mib(m.end_bytes)}/{_mib(m.peak_bytes)}"


def _window_rows(report: SoakReport) -> list[list[str]]:
    rows = []
    tails: dict[str, list[SoakTail]] = {}
    for t in report.tails:
        if t.issued or t.warmup_issued or not t.balanced:
            tails.setdefault(t.window, []).append(t)
    for w in report.windows:
        causes = ", ".join(f"{k} {n}" for k, n in w.by_cause.items())
        c, s = w.client_latency_ms, w.server_latency_ms
        rows.append([
            w.window, str(w.issued), str(w.ok), f"{w.errors}" + (f" ({causes})" if causes else ""),
            _num(w.throughput_rps), f"{_num(c.p50)}/{_num(c.p99)}", f"{_num(s.p50)}/{_num(s.p99)}",
            f"{w.correct}/{w.scored}" + ("" if w.correctness_passed is not False else " below gate"),
            _rss(w.rss), f"{_mib(w.orchestrator_rss.median_bytes)}/{_mib(w.aiperf_rss.median_bytes)}",
            str(w.restarts), _num(w.gap_before_s),
            str(w.segment or dash) + (f" ({w.aiperf_classification})" if w.aiperf_classification else ""),
        ])
        rows += [_tail_row(t) for t in tails.get(w.window, [])]
    return rows


def _tail_row(t: SoakTail) -> list[str]:
    """A segment's tail under its last window: what that window still had open at its close on time."""
    causes = ", ".join(f"{k} {n}" for k, n in t.by_cause.items())
    balanced = "" if t.balanced else " (unbalanced: " + "; ".join(t.problems) + ")"
    return [f"{t.window} tail (still open at its close){balanced}", str(t.issued), str(t.ok),
            f"{t.errors}" + (f" ({causes})" if causes else ""), *[dash] * 8, str(t.segment or dash)]


_GENERATION_HEAD = ["AIPerf pid", "start min", "level MiB", "peak growth within MiB", "within", "requests"]


def _generation_rows(report: SoakReport) -> list[list[str]]:
    """aiperf_rss judged per AIPerf process generation (after a handover): one row per process, its start
    (min after the load's start), settled level, peak sustained growth over it and the requests it sent."""
    v = next((v for v in report.verdicts if v.metric == "aiperf_rss"), None)
    if v is None or not isinstance(v.detail, SampledMemoryDetail):
        return []
    return [[str(g.pid), f"{g.start_s / 60:.1f}", _num(g.level_mib, 4), _num(g.peak_growth_mib),
             (g.outcome.upper() if g.level_mib is not None else "not settled"), str(g.requests or dash)]
            for g in v.detail.generations]


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def cell(v: str) -> str:
        return v.replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows), ""]


def _headline(report: SoakReport) -> str:
    failed = [v.metric for v in report.verdicts if v.outcome == "fail"]
    undecided = [v.metric for v in report.verdicts if v.outcome == "inconclusive"]
    state = "final" if report.verdicts_final else ("checkpoint" if report.verdicts else "no verdict yet")
    if failed:
        verdict = f"FAILED ({', '.join(failed)})"
    elif not report.verdicts:
        verdict = "not judged yet"
    elif undecided:  # no verdict failed, but these decided nothing: no pass
        verdict = f"INCONCLUSIVE ({', '.join(undecided)}; no verdict failed)"
    else:
        verdict = "PASSED"
    return f"Soak {verdict}; verdicts: {state}; run status: {report.status}; windows closed: {len(report.windows)}"


def stopped_line(report: SoakReport) -> str:
    """Why the soak ended before its duration, when a look decided it ("" otherwise)."""
    st = report.stopped
    if st is None:
        return ""
    load = f", {st.load_s / 60:.1f} min of load" if st.load_s is not None else ""
    return (f"Stopped early after {st.windows_closed} window(s){load}: decided at {st.confidence * 100:.4g}% per look; "
            + "; ".join(f"{v.metric}: {v.reason}" for v in st.verdicts))


def _plan_lines(report: SoakReport) -> list[str]:
    return [p.text for p in report.plan] + [p.text for p in report.stop_plan]


def inconclusive_lines(report: SoakReport) -> list[str]:
    """What the evidence could not decide, one line per verdict, for the top of the report."""
    return [f"{v.metric}: {v.reason}" for v in report.verdicts if v.outcome == "inconclusive"]


def render_soak_markdown(report: SoakReport) -> str:
    lines = [f"# aqbench soak {report.run_id}", "", _headline(report), ""]
    if report.reason:
        lines += [f"Reason: {report.reason}", ""]
    if stopped := stopped_line(report):
        lines += [stopped, ""]
    if undecided := inconclusive_lines(report):
        lines += ["Inconclusive (the evidence cannot decide; not a failure unless run with --strict):", "",
                  *(f"- {u}" for u in undecided), ""]
    if report.torn_line is not None:
        lines += [f"Note: the journal's last line ({report.torn_line}) is torn and was skipped.", ""]
    if plan := _plan_lines(report):
        lines += ["## What the plan could decide (said before the load)", "", *(f"- {p}" for p in plan), ""]
    lines += ["## Verdicts", "", *_md_table(_VERDICT_HEAD, _verdict_rows(report))]
    lines += gpu_markdown(report.gpu_identity, report.gpus, report.gpu_notices)
    if report.error_kinds:
        lines += ["## Errors by HTTP status and body", "", *_md_table(ERROR_KIND_HEAD, error_kind_rows(report.error_kinds))]
    lines += ["## Windows", "", *_md_table(_WINDOW_HEAD, _window_rows(report))]
    if generations := _generation_rows(report):
        lines += ["## AIPerf generations (aiperf_rss judged per process)", "",
                  *_md_table(_GENERATION_HEAD, generations)]
    if report.handovers:
        lines += ["## AIPerf handovers", "", *_md_table(
            ["predecessor", "successor", "why", "gap s", "predecessor sent", "over target"],
            [[h.predecessor, h.successor, h.reason, _num(h.gap_s), str(h.sent if h.sent is not None else "-"),
              str(h.over_target if h.over_target is not None else "-")] for h in report.handovers]), ""]
    if report.exits or report.restart_events:
        lines += ["## Server restarts and unexpected exits", ""]
        for e in report.exits:
            lines.append(f"- incarnation {e.incarnation} exited: code {e.returncode} {e.signal} during {e.during}")
        lines += [f"- {restart_text(r)}" for r in report.restart_events]
        lines += ["", f"Restarts: {report.restarts}{_never_made(report)}", ""]
    lines += ["Pictures (latency, memory, error rate, correctness per window) are in soak.html.", ""]
    return "\n".join(lines)


_CSS = ("body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}"
        "table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
        "th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
        ".figs svg{display:block;margin:8px 0;border:1px solid #eee;max-width:100%;height:auto}")


def render_soak_html(report: SoakReport) -> str:
    """soak.html from its Jinja2 template (autoescaped; the charts are SVG that svg.py built escaped)."""
    return render("soak.html", report=report, css=_CSS, restart_lines=[restart_text(r) for r in report.restart_events],
                  never_made=_never_made(report), headline=_headline(report),
                  undecided=inconclusive_lines(report), verdict_head=_VERDICT_HEAD, verdict_rows=_verdict_rows(report),
                  charts=[Markup(c) for c in _charts(report)], window_head=_WINDOW_HEAD,
                  window_rows=_window_rows(report), generation_head=_GENERATION_HEAD,
                  generation_rows=_generation_rows(report), stopped=stopped_line(report), plan=_plan_lines(report),
                  error_head=ERROR_KIND_HEAD, error_rows=error_kind_rows(report.error_kinds),
                  gpu=gpu_context(report.gpu_identity, report.gpus, report.gpu_notices))


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_soak_report(journal_path: str | Path, out_dir: str | Path, *,
                      live: bool = False, report: SoakReport | None = None) -> tuple[Path, Path, Path]:
    """Fold the journal and write soak.json, soak.md and soak.html into `out_dir` (`live`: a running soak's
    checkpoint, see fold_soak); `report`: the journal's fold already made (a SoakFold fed beside the run
    report's, in one pass), not folded again. Blocks."""
    report = report if report is not None else build_soak_report(journal_path, live=live)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / "soak.json", out / "soak.md", out / "soak.html")
    _write_atomic(paths[0], msgspec.json.format(msgspec.json.encode(report, order="sorted"), indent=1) + b"\n")
    _write_atomic(paths[1], render_soak_markdown(report).encode())
    _write_atomic(paths[2], render_soak_html(report).encode())
    return paths

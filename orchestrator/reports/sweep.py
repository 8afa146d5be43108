"""The sweep report (sweep.json, sweep.md, sweep.html): the capacity and each load point's numbers and SLO
checks, folded from the journal alone (SweepPointJudged, SweepConcluded, the sweep's phase)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
from markupsafe import Markup

from orchestrator.events import (
    AnyEvent,
    PhaseStarted,
    PointStats,
    RunFinished,
    RunStarted,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
)
from orchestrator.figures import figure
from orchestrator.journal import TornLine, iter_journal
from orchestrator.reports.svg import line_chart
from orchestrator.reports.templating import render

__all__ = ["SweepReport", "SweepPoint", "Capacity", "SweepFold", "fold_sweep", "build_sweep_report", "render_sweep_markdown",
           "render_sweep_html", "write_sweep_report"]

SWEEP_REPORT_VERSION = 1


class SweepPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One load point as its latest SweepPointJudged says: offered and achieved load, p99 latency, accounting."""

    offered: float
    achieved_rps: float | None
    latency_p99_ms: float | None
    accounting_balanced: bool
    outcome: str
    judged: SweepPointJudged
    # Where the point came from: "grid" (configured), "doubling" (beyond the grid while nothing failed), or
    # "midpoint" (halving a bracket); "" where the journal does not say (a sweep before the doublings).
    placed: str = ""


class Capacity(msgspec.Struct, frozen=True, kw_only=True):
    """The capacity (`value` in `unit`) and the points that bracket it."""

    value: float | None
    unit: str
    outcome: str
    highest_passing: float | None = None
    lowest_failing: float | None = None
    summary: str = ""
    undecided: list[str] = []


class SweepReport(msgspec.Struct, frozen=True, kw_only=True):
    """sweep.json: the run, the capacity (None: the sweep never concluded), its points by offered load."""

    version: int = SWEEP_REPORT_VERSION
    run_id: str
    status: str
    reason: str = ""
    mode: str = ""
    slo: dict[str, float] = {}
    command: str = ""
    # What each point could decide at its planned request count, stated before the sweep ran.
    detects: list[str] = []
    # Each window's planned duration, stated before the sweep ran (the baseline's from the capability probe).
    planned: list[str] = []
    capacity: Capacity | None = None
    points: list[SweepPoint] = []
    torn_line: int | None = None


class SweepFold:
    """fold_sweep, fed one event at a time (`add`), its report at any point (`report`): the live page folds a
    running sweep's journal with it, as the sweep report does."""

    def __init__(self) -> None:
        self.started: RunStarted | None = None
        self.finished: RunFinished | None = None
        self.phase: SweepPhase | None = None
        self.points: dict[float, SweepPointJudged] = {}
        self.concluded: SweepConcluded | None = None

    def add(self, ev: AnyEvent) -> None:
        if isinstance(ev, RunStarted):
            self.started = ev
        elif isinstance(ev, RunFinished):
            self.finished = ev
        elif isinstance(ev, PhaseStarted) and isinstance(ev.detail, SweepPhase):
            self.phase = ev.detail
        elif isinstance(ev, SweepPointJudged):
            self.points[ev.offered] = ev
        elif isinstance(ev, SweepConcluded):
            self.concluded = ev

    def report(self, torn: TornLine | None = None) -> SweepReport:
        started, finished, phase, concluded = self.started, self.finished, self.phase, self.concluded
        capacity = None if concluded is None else Capacity(
            value=concluded.capacity, unit=concluded.unit, outcome=concluded.outcome,
            highest_passing=concluded.highest_passing, lowest_failing=concluded.lowest_failing,
            summary=concluded.summary, undecided=list(concluded.undecided))
        return SweepReport(
            run_id=started.run_id if started else "", status=finished.status if finished else "interrupted",
            reason=finished.reason if finished else "the journal has no RunFinished: the sweep was interrupted",
            mode=phase.mode if phase else "", slo=dict(phase.slo) if phase else {},
            command=shlex.join(phase.argv) if phase and phase.argv else "", capacity=capacity,
            detects=[d.statement for d in phase.detects] if phase else [],
            planned=list(phase.planned) if phase else [],
            points=[SweepPoint(offered=p.offered, achieved_rps=p.stats.achieved_rps,
                               latency_p99_ms=p.stats.latency_p99_ms, accounting_balanced=p.accounting_balanced,
                               outcome=p.outcome, judged=p, placed=_placed(phase, p.offered))
                    for _v, p in sorted(self.points.items())],
            torn_line=torn.line if torn else None)


def _placed(phase: SweepPhase | None, offered: float) -> str:
    if phase is None or not phase.points:
        return ""
    return "grid" if offered in phase.points else "doubling" if offered in phase.extensions else "midpoint"


def fold_sweep(events: Iterable[AnyEvent], torn: TornLine | None = None) -> SweepReport:
    """Pure fold of a sweep journal (SweepFold); each point is its latest verdict (a rerun point pools its runs)."""
    f = SweepFold()
    for ev in events:
        f.add(ev)
    return f.report(torn)


def build_sweep_report(journal_path: str | Path) -> SweepReport:
    """Stream the journal through fold_sweep. Blocks (file reads)."""
    torn: list[TornLine] = []
    return fold_sweep(iter_journal(journal_path, on_torn=torn.append), torn[0] if torn else None)


def _num(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else figure(v, digits)


_POINT_HEAD = ["offered", "outcome", "requests", "errors", "achieved req/s", "goodput req/s", "audio s/s",
               "RTF", "p50 ms", "p90 ms", "p99 ms", "model_call p99 ms", "answers differing", "accounted", "runs", "saturation"]
_CHECK_HEAD = ["offered", "SLO", "outcome", "observed", "limit", "n", "beyond", "why"]


def _point_rows(report: SweepReport) -> list[list[str]]:
    rows = []
    for p in report.points:
        s = p.judged.stats
        errors = ", ".join(f"{k} {v}" for k, v in sorted(s.errors_by_cause.items())) or "0"
        placed = f" ({p.placed})" if p.placed in ("doubling", "midpoint") else ""
        rows.append([f"{p.offered:g}{placed}", p.outcome, str(s.requests), errors, _num(s.achieved_rps), _num(s.goodput_rps),
                     _num(s.audio_s_per_s), _num(s.real_time_factor), _num(s.latency_p50_ms, 4),
                     _num(s.latency_p90_ms, 4), _num(s.latency_p99_ms, 4), _num(s.model_call_p99_ms, 4),
                     f"{s.answers_differing}/{s.answers_compared}", "yes" if p.accounting_balanced else "NO",
                     str(len(p.judged.windows)) + (" (stopped early)" if p.judged.stopped_early else ""),
                     "; ".join(p.judged.saturation) or "-"])
    return rows


def _check_rows(report: SweepReport) -> list[list[str]]:
    return [[f"{p.offered:g}", c.slo, c.outcome, _num(c.observed, 4), _num(c.limit, 4), str(c.n), str(c.beyond),
             c.reason] for p in report.points for c in p.judged.checks]


def _headline(report: SweepReport) -> str:
    if report.capacity is None:
        return f"No capacity concluded ({report.status}: {report.reason})."
    return report.capacity.summary[:1].upper() + report.capacity.summary[1:] + "."


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(c: str) -> str:
        return c.replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows)]


def render_sweep_markdown(report: SweepReport) -> str:
    """sweep.md: the capacity first, then the points and every SLO check behind their verdicts."""
    lines = [f"# aqbench sweep {report.run_id}", "", _headline(report), "", f"Run status: {report.status}"
             + (f" ({report.reason})" if report.reason else ""), ""]
    if report.capacity and report.capacity.undecided:
        lines += ["Undecided (the evidence cannot decide):", "", *(f"- {u}" for u in report.capacity.undecided), ""]
    if report.slo:
        lines += ["SLO: " + ", ".join(f"{k} {v:g}" for k, v in sorted(report.slo.items())), ""]
    if report.detects:
        lines += ["What each point could decide (planned before it ran):", "", *(f"- {d}" for d in report.detects), ""]
    if report.planned:
        lines += ["Planned durations (stated before any load):", "", *(f"- {d}" for d in report.planned), ""]
    if report.points:  # none when the sweep stopped before any load (e.g. at the capability probe)
        lines += ["## Points", "", *_md_table(_POINT_HEAD, _point_rows(report)), "", "## SLO checks", "",
                  *_md_table(_CHECK_HEAD, _check_rows(report)), ""]
    if report.command:
        lines += ["## Reproduce", "", "```", report.command, "```", ""]
    return "\n".join(lines)


def _charts(report: SweepReport) -> list[str]:
    x_label = "offered " + ("req/s" if report.mode == "rate" else "concurrency")
    picks: list[tuple[str, Callable[[PointStats], float | None]]] = [
        ("client p99 ms", lambda s: s.latency_p99_ms), ("client p90 ms", lambda s: s.latency_p90_ms),
        ("model_call p99 ms", lambda s: s.model_call_p99_ms)]
    lat = [(name, [(p.offered, v) for p in report.points if (v := pick(p.judged.stats)) is not None])
           for name, pick in picks]
    xs = [p.offered for p in report.points]
    for key, label in (("p99_latency_ms", "p99 SLO"), ("p90_latency_ms", "p90 SLO"),
                       ("p99_model_call_ms", "model_call p99 SLO")):
        if key in report.slo and xs:
            lat.append((label, [(min(xs), report.slo[key]), (max(xs), report.slo[key])]))
    thr = [("achieved req/s", [(p.offered, p.achieved_rps) for p in report.points if p.achieved_rps is not None]),
           ("goodput req/s", [(p.offered, g) for p in report.points if (g := p.judged.stats.goodput_rps) is not None])]
    if report.mode == "rate" and xs:
        thr.append(("offered", [(x, x) for x in xs]))
    return [line_chart("latency", "Latency against offered load", lat, x_label=x_label, y_label="ms"),
            line_chart("throughput", "Achieved against offered load", thr, x_label=x_label, y_label="req/s")]


_CSS = ("body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}"
        "table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
        "th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
        ".figs svg{display:block;margin:8px 0;border:1px solid #eee;max-width:100%;height:auto}")


def render_sweep_html(report: SweepReport) -> str:
    """sweep.html from its Jinja2 template (autoescaped; the charts are SVG that svg.py built escaped)."""
    return render("sweep.html", report=report, css=_CSS, headline=_headline(report), point_head=_POINT_HEAD,
                  point_rows=_point_rows(report), check_head=_CHECK_HEAD, check_rows=_check_rows(report),
                  charts=[Markup(c) for c in _charts(report)])


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_sweep_report(journal_path: str | Path, out_dir: str | Path) -> list[Path]:
    """Fold the journal and write sweep.json, sweep.md and sweep.html into `out_dir`. Blocks."""
    report = build_sweep_report(journal_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "sweep.json", out / "sweep.md", out / "sweep.html"]
    _write_atomic(paths[0], msgspec.json.format(msgspec.json.encode(report, order="sorted"), indent=1) + b"\n")
    _write_atomic(paths[1], render_sweep_markdown(report).encode())
    _write_atomic(paths[2], render_sweep_html(report).encode())
    return paths

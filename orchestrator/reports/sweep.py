"""The sweep report (sweep.json, sweep.md, sweep.html): the capacity and each load point's numbers and SLO
checks, folded from the journal alone (SweepPointJudged, SweepConcluded, the sweep's phase)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
from markupsafe import Markup

from orchestrator.base.figures import figure
from orchestrator.events import (
    AnyEvent,
    CapacityEstimate,
    PhaseStarted,
    PointStats,
    RunFinished,
    RunStarted,
    SloCapacity,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
)
from orchestrator.reports.svg import line_chart
from orchestrator.reports.templating import render
from orchestrator.spine.journal import TornLine, iter_journal

__all__ = ["SLO_NAMES", "SweepReport", "SweepPoint", "Capacity", "Curve", "CurvePoint", "SweepFold", "fold_sweep", "build_sweep_report", "render_sweep_markdown",
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
    """The capacity: `value` in `unit` with its `level` interval [`low`, `high`] (None: open at that end), fitted
    near the boundary, the SLO that binds (`binding`) and its boundary's `shape`; and the points that bracket it.
    A sweep journaled before the fit has no interval: its `value` is the highest point that held every SLO."""

    value: float | None
    unit: str
    outcome: str
    highest_passing: float | None = None
    lowest_failing: float | None = None
    summary: str = ""
    undecided: list[str] = []
    low: float | None = None
    high: float | None = None
    level: float | None = None
    binding: str = ""
    shape: str = ""
    half_width: float | None = None  # (high - low) / 2 / value
    precision: float | None = None  # the half-width asked ([sweep] precision)
    reached: bool | None = None
    requests_needed: int | None = None  # near the boundary, for the precision asked (None: points, not requests)
    estimate: str = ""  # the fit in words
    slos: list[SloCapacity] = []  # each SLO's own crossing, and its share beyond at the capacity


class CurvePoint(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One SLO's figure at one point: its observed value (ms, or the share failed), and the share beyond its limit."""

    offered: float
    achieved_rps: float | None = None
    observed: float | None = None
    share_beyond: float | None = None
    n: int = 0
    outcome: str = ""


class Curve(msgspec.Struct, frozen=True, kw_only=True):
    """One SLO's figure against offered (and achieved) load, with its limit."""

    slo: str
    limit: float | None
    unit: str
    points: list[CurvePoint] = []


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
    curves: list[Curve] = []  # each SLO's figure against load (the capacity's interval is in `capacity`)
    precision_plan: list[str] = []  # whether the precision asked was reachable, said before any load


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
        capacity = None if concluded is None else _capacity(concluded, concluded.estimate)
        points = [p for _v, p in sorted(self.points.items())]
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
                    for p in points],
            torn_line=torn.line if torn else None, curves=_curves(points),
            precision_plan=list(phase.precision_plan) if phase else [])


def _capacity(concluded: SweepConcluded, est: CapacityEstimate | None) -> Capacity:
    base = Capacity(value=concluded.capacity, unit=concluded.unit, outcome=concluded.outcome,
                    highest_passing=concluded.highest_passing, lowest_failing=concluded.lowest_failing,
                    summary=concluded.summary, undecided=list(concluded.undecided))
    if est is None:
        return base
    return msgspec.structs.replace(base, value=est.value, low=est.low, high=est.high, level=est.level,
                                   binding=est.binding, shape=est.shape, half_width=est.half_width,
                                   precision=est.precision, reached=est.reached, requests_needed=est.requests_needed,
                                   estimate=est.summary, slos=list(est.slos))


_CURVE_UNITS = {"p99_latency": "ms", "p90_latency": "ms", "p99_model_call": "ms", "error_rate": "share failed",
                "answers": "answers differing", "complete_outputs": "answers cut"}


def _curves(points: Sequence[SweepPointJudged]) -> list[Curve]:
    by: dict[str, list[tuple[float | None, CurvePoint]]] = {}
    for p in points:
        for c in p.checks:
            if c.slo == "evidence":
                continue
            by.setdefault(c.slo, []).append((c.limit, CurvePoint(
                offered=p.offered, achieved_rps=p.stats.achieved_rps, observed=c.observed,
                share_beyond=round(c.beyond / c.n, 5) if c.n else None, n=c.n, outcome=c.outcome)))
    return [Curve(slo=slo, limit=next((lim for lim, _ in got if lim is not None), None),
                  unit=_CURVE_UNITS.get(slo, ""), points=[cp for _, cp in got]) for slo, got in by.items()]


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


def _verdict(report: SweepReport) -> str:
    """The capacity as a figure with its interval and the SLO that binds, in one sentence ("" before the fit)."""
    cap = report.capacity
    if cap is None or not cap.estimate:
        return ""
    return cap.estimate[:1].upper() + cap.estimate[1:] + "."


# How each SLO reads to a person, in the sweep's reports and the grid's.
SLO_NAMES = {"p99_latency": "p99 client latency", "p90_latency": "p90 client latency",
          "p99_model_call": "p99 model_call_ms", "error_rate": "error rate", "answers": "answers",
          "complete_outputs": "complete outputs", "evidence": "evidence"}


def _slo_lines(report: SweepReport) -> list[str]:
    """How each SLO stands at the capacity (its own crossing, its share beyond there)."""
    return [f.summary for f in report.capacity.slos] if report.capacity else []


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(c: str) -> str:
        return c.replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows)]


def render_sweep_markdown(report: SweepReport) -> str:
    """sweep.md: the capacity first, then the points and every SLO check behind their verdicts."""
    lines = [f"# aqbench sweep {report.run_id}", ""]
    if verdict := _verdict(report):
        lines += [f"**{verdict}**", "", "Each SLO at the capacity:", "", *(f"- {x}" for x in _slo_lines(report)), ""]
    lines += [_headline(report), "", f"Run status: {report.status}" + (f" ({report.reason})" if report.reason else ""),
              ""]
    if report.capacity and report.capacity.undecided:
        lines += ["Undecided (the evidence cannot decide):", "", *(f"- {u}" for u in report.capacity.undecided), ""]
    if report.slo:
        lines += ["SLO: " + ", ".join(f"{k} {v:g}" for k, v in sorted(report.slo.items())), ""]
    if report.detects:
        lines += ["What each point could decide (planned before it ran):", "", *(f"- {d}" for d in report.detects), ""]
    if report.planned:
        lines += ["Planned durations (stated before any load):", "", *(f"- {d}" for d in report.planned), ""]
    if report.precision_plan:
        lines += ["The capacity's precision (stated before any load):", "",
                  *(f"- {d}" for d in report.precision_plan), ""]
    if report.curves:
        lines += ["## Each SLO's figure against load", "",
                  *_md_table(["SLO", "limit", "offered", "achieved req/s", "observed", "share beyond", "n", "outcome"],
                             [[c.slo, _num(c.limit, 4), f"{p.offered:g}", _num(p.achieved_rps), _num(p.observed, 4),
                               _num(p.share_beyond), str(p.n), p.outcome] for c in report.curves for p in c.points]),
                  ""]
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
    return [*_curve_charts(report),
            line_chart("latency", "Latency against offered load", lat, x_label=x_label, y_label="ms"),
            line_chart("throughput", "Achieved against offered load, and goodput (requests that met every SLO, "
                       "answered correctly)", thr, x_label=x_label, y_label="req/s")]


def _curve_charts(report: SweepReport) -> list[str]:
    """Each SLO with a limit: its figure against offered and achieved load, the limit, and the capacity with its
    interval (a box from low to high; an open end drawn at the chart's edge)."""
    cap = report.capacity
    out = []
    unit = "req/s" if report.mode == "rate" else "concurrency"
    for curve in report.curves:
        if curve.slo in ("answers", "complete_outputs") or curve.limit is None:
            continue
        off = [(p.offered, p.observed) for p in curve.points if p.observed is not None]
        ach = [(p.achieved_rps, p.observed) for p in curve.points if p.observed is not None and p.achieved_rps]
        if not off:
            continue
        xs = [x for x, _ in off] + [x for x, _ in ach]
        top = max([y for _, y in off] + [curve.limit]) * 1.05
        series: list[tuple[str, list[tuple[float, float]]]] = [
            (f"{curve.slo} vs offered", off), (f"{curve.slo} vs achieved", [(float(x), y) for x, y in ach]),
            ("limit", [(min(xs), curve.limit), (max(xs), curve.limit)])]
        if cap is not None and cap.value is not None:
            lo = cap.low if cap.low is not None else min(xs)
            hi = cap.high if cap.high is not None else max(xs)
            label = f"capacity {cap.value:.3g} {unit}, {cap.level or 0.9:.0%} interval [{lo:.3g}, {hi:.3g}]"
            series.append((label, [(lo, 0.0), (lo, top), (cap.value, top), (cap.value, 0.0), (cap.value, top),
                                   (hi, top), (hi, 0.0)]))
        title = f"{SLO_NAMES.get(curve.slo, curve.slo)} ({curve.unit}) against load" + (
            " - binds" if cap is not None and cap.binding == curve.slo else "")
        out.append(line_chart(f"slo-{curve.slo}", title, series, x_label=f"load ({unit})", y_label=curve.unit))
    return out


_CSS = ("body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}"
        "table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
        "th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
        ".figs svg{display:block;margin:8px 0;border:1px solid #eee;max-width:100%;height:auto}"
        ".verdict{font-size:20px;border:2px solid #333;padding:10px 14px;margin:8px 0 12px;background:#f8f8f8}"
        "h1{font-size:20px;margin:4px 0}")


def render_sweep_html(report: SweepReport) -> str:
    """sweep.html from its Jinja2 template (autoescaped; the charts are SVG that svg.py built escaped)."""
    return render("sweep.html", report=report, css=_CSS, headline=_headline(report), verdict=_verdict(report),
                  slo_lines=_slo_lines(report), point_head=_POINT_HEAD,
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

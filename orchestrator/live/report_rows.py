"""The page's rows that the reports also show, made from the reports' own folds (SoakFold, SweepFold), so a page
opened late shows what the report of the same journal prefix says. Pure: no I/O, no clocks.
"""

from __future__ import annotations

from orchestrator.base.figures import figure
from orchestrator.events import AnyEvent, SoakVerdict, SweepPointJudged, TrendNumbers, WindowStats, verdict_numbers
from orchestrator.live.page_types import PointRow, SloState, VerdictRow, WindowRow
from orchestrator.reports.soak import SoakExit, SoakFold, SoakReport
from orchestrator.reports.sweep import Capacity, SweepFold, SweepReport

__all__ = ["ReportSections", "detects", "verdict_row", "window_row", "point_row", "capacity_row", "exit_text",
           "soak_rows", "sweep_rows"]


# Soak windows and verdicts come from SoakFold (soak.json's fold), sweep points and the capacity from SweepFold
# (sweep.json's), the server's restarts and unexpected exits from SoakFold. The page's fold feeds these folds and
# takes its rows from them, on the bus and from the journal alike.
def detects(v: SoakVerdict) -> str:
    """What a soak verdict can detect with the evidence it has: a trend's interval half-width (a drift
    beyond it shows), or the limit a rate or gap is held to."""
    _slope, interval, limit, unit = verdict_numbers(v.detail)
    if interval is not None and len(interval) == 2:
        half = (interval[1] - interval[0]) / 2
        verdict = "can tell it from the limit" if limit is not None and half < abs(limit) else \
            "cannot yet tell it from the limit"
        return f"a slope beyond ±{figure(half)} {unit} ({verdict} {figure(limit)})" if limit is not None else \
            f"a slope beyond ±{figure(half)} {unit}"
    if isinstance(v.detail, TrendNumbers):
        # No interval on the slope yet (too few windows or too short a span): it can detect nothing so far.
        return f"nothing yet: no interval on the slope (limit {figure(limit)} {unit})" if limit is not None else ""
    if limit is not None:
        return f"a value above {figure(limit)} {unit}".rstrip()
    return ""


def verdict_row(v: SoakVerdict) -> VerdictRow:
    """A soak verdict as soak.json holds it (the latest per metric; a final one never replaced)."""
    return VerdictRow(name=v.metric, outcome=v.outcome or ("pass" if v.passed else "fail"), final=v.final,
                      reason=v.reason[:400], interval=v.interval, estimate=v.slope, limit=v.limit, unit=v.unit,
                      detects=detects(v))


def window_row(w: WindowStats) -> WindowRow:
    """A closed soak window as soak.json holds it."""
    return WindowRow(name=w.window, index=w.index, state="closed", issued=w.issued, ok=w.ok, errors=w.errors,
                     client_p50_ms=w.client_latency_ms.p50, client_p99_ms=w.client_latency_ms.p99,
                     model_call_p50_ms=w.model_call_ms.p50, balanced=w.accounting_balanced)


def point_row(p: SweepPointJudged) -> PointRow:
    """A sweep point as sweep.json holds it (its latest judgement)."""
    unit = "req/s" if p.mode == "rate" else "concurrent"
    st = p.stats
    return PointRow(
        name=f"{p.offered:g} {unit}", offered=p.offered, unit=unit, outcome=p.outcome, runs=len(p.windows),
        requests=st.requests, ok=st.ok, achieved_rps=st.achieved_rps, client_p99_ms=st.latency_p99_ms,
        model_call_p99_ms=st.model_call_p99_ms, balanced=p.accounting_balanced, stopped_early=p.stopped_early,
        saturation=p.saturation[:5],
        slos=[SloState(slo=c.slo, outcome=c.outcome, reason="" if c.outcome == "pass" else c.reason[:300])
              for c in p.checks])


def capacity_row(c: Capacity) -> VerdictRow:
    """sweep.json's capacity as the sweep's one verdict: its fitted value and interval where the sweep fitted one,
    else the bracket of points run around it."""
    outcome = "pass" if c.outcome in ("bracketed", "all_passed") else \
        "fail" if c.outcome == "none_passed" else "inconclusive"
    bracket = [c.highest_passing, c.lowest_failing]
    interval = [b for b in bracket if b is not None] if None not in bracket else None
    detect = (f"the capacity to within the points run ({c.highest_passing:g} held, {c.lowest_failing:g} broke)"
              if interval else f"undecided: {'; '.join(c.undecided)[:200]}" if c.undecided else "")
    if c.level is not None and c.low is not None and c.high is not None:  # fitted: its own interval, said
        interval, detect = [c.low, c.high], c.estimate[:300]
    return VerdictRow(name="capacity", outcome=outcome, final=True, estimate=c.value, interval=interval,
                      unit=c.unit, reason=f"{c.outcome}: {c.summary}"[:400], detects=detect)


def exit_text(e: SoakExit) -> str:
    return f"incarnation {e.incarnation} exited {e.returncode} {e.signal} during {e.during}".replace("  ", " ")


def soak_rows(report: SoakReport) -> tuple[list[VerdictRow], list[WindowRow]]:
    """A soak report's verdicts and closed windows as the page shows them."""
    return [verdict_row(v) for v in report.verdicts], [window_row(w) for w in report.windows]


def sweep_rows(report: SweepReport) -> tuple[list[PointRow], VerdictRow | None]:
    """A sweep report's points and capacity as the page shows them."""
    return ([point_row(p.judged) for p in report.points],
            capacity_row(report.capacity) if report.capacity is not None else None)


class ReportSections:
    """The reports' folds of one journal, fed every event the page sees; each row the page shows from them."""

    def __init__(self) -> None:
        self.soak = SoakFold()
        self.sweep = SweepFold()

    def add(self, ev: AnyEvent) -> None:
        self.soak.add(ev)
        self.sweep.add(ev)

    def verdict(self, metric: str) -> VerdictRow:
        return verdict_row(self.soak.latest[metric])

    def window(self, index: int) -> WindowRow:
        return window_row(self.soak.windows[index])

    def point(self, offered: float) -> PointRow:
        return point_row(self.sweep.points[offered])

    def capacity(self) -> VerdictRow | None:
        capacity = self.sweep.report().capacity
        return capacity_row(capacity) if capacity is not None else None

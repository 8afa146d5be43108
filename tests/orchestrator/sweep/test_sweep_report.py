"""The sweep report: a pure fold of the journal (capacity, points by offered load, each point's latest
verdict), rendered as markdown and HTML with both charts."""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.events import (
    CapacityEstimate,
    PhaseStarted,
    PointStats,
    RunFinished,
    RunStarted,
    SloCheck,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
)
from orchestrator.reports.sweep import build_sweep_report, render_sweep_html, render_sweep_markdown, write_sweep_report

_LAT = SloCheck(slo="p99_latency", outcome="fail", observed=9100.0, limit=8000.0, n=300, beyond=40,
                reason="p99 9100 ms > 8000 ms (40 of 300 beyond; 90% confidence)")


def _point(offered: float, outcome: str, runs: int = 1, p99: float = 500.0) -> SweepPointJudged:
    checks = [_LAT] if outcome == "fail" else [SloCheck(slo="p99_latency", outcome=outcome, reason="ok")]  # type: ignore[arg-type]
    return SweepPointJudged(index=0, mode="rate", offered=offered, windows=[f"m/rate{offered:g}-{i}" for i in range(1, runs + 1)],
                            outcome=outcome, checks=checks,  # type: ignore[arg-type]
                            stats=PointStats(requests=300, ok=300, achieved_rps=offered * 0.98, latency_p99_ms=p99,
                                             latency_p90_ms=p99 / 2, model_call_p99_ms=p99 / 3))


def _journal(tmp_path: Path, *, finished: bool = True, estimate: CapacityEstimate | None = None) -> Path:
    events = [RunStarted(command="sweep", seq=1),
              PhaseStarted(phase="sweep", seq=2, detail=SweepPhase(mode="rate", points=[1.0, 3.0, 3.4],
                                                                    slo={"p99_latency_ms": 8000.0},
                                                                    argv=["aqbench", "sweep", "--rates", "1,3,3.4"],
                                                                    baseline_planned_s=1.3,
                                                                    planned=["baseline 1.3 s", "1 req/s 64.0 s"])),
              _point(1.0, "pass"), _point(3.0, "inconclusive"), _point(3.0, "pass", runs=2),
              _point(3.4, "fail", p99=9100.0),
              SweepConcluded(outcome="bracketed", mode="rate", unit="req/s", capacity=3.0, highest_passing=3.0,
                             lowest_failing=3.4, broken=[_LAT], summary="capacity 3 req/s: 3 held every SLO, 3.4 "
                             "broke p99 client latency (p99 9100 ms > 8000 ms)", estimate=estimate)]
    if finished:
        events.append(RunFinished(status="ok"))
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    return path


class TestSweepReport:
    def test_capacity_and_points_folded_from_the_journal(self, tmp_path: Path) -> None:
        """The capacity and its bracket as concluded; one entry per point, its latest verdict (the rerun)."""
        report = build_sweep_report(_journal(tmp_path))
        assert report.capacity is not None
        assert (report.capacity.value, report.capacity.unit, report.capacity.highest_passing,
                report.capacity.lowest_failing) == (3.0, "req/s", 3.0, 3.4)
        assert [(p.offered, p.outcome, len(p.judged.windows)) for p in report.points] == [
            (1.0, "pass", 1), (3.0, "pass", 2), (3.4, "fail", 1)]
        assert report.points[2].latency_p99_ms == 9100.0 and report.points[2].accounting_balanced
        assert report.command == "aqbench sweep --rates 1,3,3.4"
        assert report.planned == ["baseline 1.3 s", "1 req/s 64.0 s"]

    def test_each_point_says_where_it_came_from(self, tmp_path: Path) -> None:
        """A configured point is the grid's; one beyond it the sweep doubled to; any other a midpoint. The
        markdown marks the latter two in the offered column."""
        events = [RunStarted(command="sweep", seq=1),
                  PhaseStarted(phase="sweep", seq=2, detail=SweepPhase(mode="rate", points=[4.0, 8.0],
                                                                        extensions=[16.0, 32.0])),
                  _point(4.0, "pass"), _point(8.0, "inconclusive", runs=2), _point(16.0, "fail"), _point(6.0, "pass"),
                  RunFinished(status="ok")]
        path = tmp_path / "events.jsonl"
        path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
        report = build_sweep_report(path)
        assert [(p.offered, p.placed) for p in report.points] == [
            (4.0, "grid"), (6.0, "midpoint"), (8.0, "grid"), (16.0, "doubling")]
        md = render_sweep_markdown(report)
        assert "| 16 (doubling) | fail |" in md and "| 6 (midpoint) | pass |" in md and "| 8 | inconclusive |" in md

    def test_markdown_leads_with_the_capacity(self, tmp_path: Path) -> None:
        """sweep.md opens with the capacity sentence and lists every SLO check with its reason."""
        md = render_sweep_markdown(build_sweep_report(_journal(tmp_path)))
        assert md.splitlines()[2] == ("Capacity 3 req/s: 3 held every SLO, 3.4 broke p99 client latency "
                                      "(p99 9100 ms > 8000 ms).")
        assert "| 3.4 | p99_latency | fail | 9,100 | 8,000 | 300 | 40 | p99 9100 ms > 8000 ms" in md
        # The planned durations, as the sweep stated them before any load.
        assert "Planned durations (stated before any load):\n\n- baseline 1.3 s\n- 1 req/s 64.0 s\n" in md

    def test_html_draws_both_charts_with_the_slo_line(self, tmp_path: Path) -> None:
        """sweep.html holds the latency and throughput charts, the SLO line among the latency series."""
        html = render_sweep_html(build_sweep_report(_journal(tmp_path)))
        assert 'Latency against offered load' in html and 'Achieved against offered load' in html
        assert "p99 SLO" in html

    def test_the_fitted_capacity_leads_every_report(self, tmp_path: Path) -> None:
        """With a fit journaled: sweep.json's capacity is the figure with its interval and binding SLO, each SLO's
        curve is data, and sweep.md and sweep.html say the verdict before the bracket."""
        est = CapacityEstimate(value=3.2, low=3.05, high=3.38, binding="p99_latency", shape="smooth",
                               half_width=0.05, reached=True, summary="capacity 3.2 req/s, 90% interval [3.05, 3.38], "
                               "bound by p99 client latency (smooth boundary); ±5.0% meets the ±10% asked")
        report = build_sweep_report(_journal(tmp_path, estimate=est))
        cap = report.capacity
        assert cap is not None and (cap.value, cap.low, cap.high, cap.binding, cap.reached, cap.highest_passing) == (
            3.2, 3.05, 3.38, "p99_latency", True, 3.0)
        [curve] = report.curves
        assert (curve.slo, curve.limit) == ("p99_latency", 8000.0)
        assert [(p.offered, p.observed, p.share_beyond) for p in curve.points][-1] == (3.4, 9100.0, round(40 / 300, 5))
        md = render_sweep_markdown(report)
        assert md.index("**Capacity 3.2 req/s, 90% interval [3.05, 3.38]") < md.index("Capacity 3 req/s: 3 held")
        html = render_sweep_html(report)
        assert html.index('id="verdict"') < html.index('data-chart="slo-p99_latency"') < html.index("<h2>Points")
        written = msgspec.json.decode((write_sweep_report(_journal(tmp_path, estimate=est), tmp_path)[0]).read_bytes())
        assert (written["capacity"]["low"], written["capacity"]["high"]) == (3.05, 3.38) and written["curves"]

    def test_an_interrupted_sweep_says_so(self, tmp_path: Path) -> None:
        """No RunFinished: the report's status is interrupted, and the files are still written."""
        journal = _journal(tmp_path, finished=False)
        paths = write_sweep_report(journal, tmp_path / "out")
        report = build_sweep_report(journal)
        assert report.status == "interrupted" and [p.name for p in paths] == ["sweep.json", "sweep.md", "sweep.html"]

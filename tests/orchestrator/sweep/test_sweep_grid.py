"""`aqbench sweep --server-grid`: the grid parsed against [server]'s settings, each configuration's bench.toml,
and the grid's report folded from the sweeps' journals (capacity per configuration and per replica, Pareto)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from orchestrator.base.errors import UsageError
from orchestrator.config import Config, ServerConfig, load_config
from orchestrator.events import (
    CapacityEstimate,
    HostSampled,
    PointStats,
    RunFinished,
    RunStarted,
    SweepConcluded,
    SweepPointJudged,
)
from orchestrator.reports.sweep_grid import build_grid_report, render_grid_markdown, write_grid_report
from orchestrator.sweep.grid import parse_grid, with_server_value

BENCH = Path(__file__).resolve().parents[3] / "bench.toml"


def _cfg() -> Config:
    return load_config(BENCH)


def test_the_grid_names_a_server_setting_and_two_values() -> None:
    assert parse_grid("replicas=1,2") == ("replicas", ["1", "2"])
    with pytest.raises(UsageError, match="one of the \\[server\\] settings: .*replicas"):
        parse_grid("replica=1,2")
    with pytest.raises(UsageError, match="at least two distinct values"):
        parse_grid("replicas=2")
    cfg = with_server_value(_cfg(), "replicas", "3")
    assert cfg.server.replicas == 3 and cfg.server.argv == _cfg().server.argv and isinstance(cfg.server, ServerConfig)
    with pytest.raises(UsageError, match="whole number"):
        with_server_value(_cfg(), "replicas", "two")


def _run(tmp: Path, name: str, replicas: int, fitted: tuple[float, float, float],
         points: list[tuple[float, float, float]], *, failed: tuple[float, ...] = (), outside_cpus: float = 0.2) -> Path:
    """A sweep's journal: its server's replicas, its points (offered, goodput, p99 ms; those `failed` broke an SLO),
    its fitted capacity, and the host's samples (other processes taking `outside_cpus`)."""
    cfg = with_server_value(_cfg(), "replicas", str(replicas))
    events = [RunStarted(command="sweep", run_id=name, config=cfg),
              *(HostSampled(interval_s=2.0, load1=1.0, cpus=2, busy_cpus=outside_cpus + 0.5, run_cpus=0.5,
                            outside_cpus=outside_cpus, steal_share=0.0) for _ in range(3)),
              *(SweepPointJudged(index=i, mode="rate", offered=o, windows=[f"m/rate{o:g}-1"],
                                 outcome="fail" if o in failed else "pass",
                                 stats=PointStats(requests=60, ok=60, goodput_rps=g, latency_p99_ms=p))
                for i, (o, g, p) in enumerate(points)),
              SweepConcluded(outcome="bracketed", mode="rate", unit="req/s", capacity=points[-1][0],
                             estimate=CapacityEstimate(value=fitted[0], low=fitted[1], high=fitted[2],
                                                       binding="error_rate")),
              RunFinished(status="ok")]
    run = tmp / name
    run.mkdir()
    (run / "events.jsonl").write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    return run


def test_the_grid_report_gives_capacity_per_replica_and_the_pareto_front(tmp_path: Path) -> None:
    """Capacity per configuration and per replica with its interval; the front holds the points no other beats on
    both goodput per replica and p99 latency; the host was alike for both, so no note."""
    one = _run(tmp_path, "r1", 1, (4.0, 3.6, 4.4), [(2.0, 2.0, 300.0), (4.0, 3.8, 900.0)])
    two = _run(tmp_path, "r2", 2, (7.0, 6.3, 7.7), [(4.0, 4.0, 250.0), (8.0, 6.0, 1500.0)], outside_cpus=0.5)
    report = build_grid_report([("1", one), ("2", two)], "replicas")
    assert [(e.value, e.replicas, e.per_replica, e.per_replica_low, e.per_replica_high) for e in report.entries] == [
        ("1", 1, 4.0, 3.6, 4.4), ("2", 2, 3.5, 3.15, 3.85)]
    front = {(p.value, p.offered) for p in report.pareto if p.on_front}
    # replicas=1 at 4 req/s: 3.8 per replica at 900 ms; replicas=2 at 4 req/s: 2.0 per replica at 250 ms; the
    # rest are beaten (replicas=2 at 8: 3.0 at 1500 ms is dominated by replicas=1 at 4).
    assert front == {("1", 4.0), ("2", 4.0)}
    assert report.host_note == "" and [e.host.outside_cpus for e in report.entries if e.host] == [0.2, 0.5]
    assert ("| replicas=2 | r2 | 7 | [6.3, 7.7] | error rate | 2 | 3.5 | [3.15, 3.85] | bracketed | 0.5 |"
            in render_grid_markdown(report))
    paths = write_grid_report(report, tmp_path / "grid")
    assert 'data-chart="pareto"' in paths[2].read_text()


def test_a_point_that_broke_an_slo_is_never_on_the_front(tmp_path: Path) -> None:
    """An overloaded point answers many requests fast (the rest rejected): it broke the error rate, so it is no
    operating point and cannot push a point that held off the front."""
    one = _run(tmp_path, "r1", 1, (3.0, 2.5, 3.5), [(2.0, 2.0, 470.0), (8.0, 5.4, 530.0)], failed=(8.0,))
    two = _run(tmp_path, "r2", 2, (6.0, 5.0, 7.0), [(4.0, 3.0, 600.0)])
    report = build_grid_report([("1", one), ("2", two)], "replicas")
    assert [(p.value, p.offered, p.outcome, p.on_front) for p in report.pareto] == [
        ("1", 2.0, "pass", True), ("1", 8.0, "fail", False), ("2", 4.0, "pass", False)]
    assert "| replicas=1 | 8 | fail | 5.4 | 530 |  |" in render_grid_markdown(report)


def test_an_unequally_busy_host_is_said(tmp_path: Path) -> None:
    """Configurations swept while other processes left them unequal CPU: the report says their capacities differ
    by the host's load too, naming each configuration's figure; CPU left alike within 1.5x says nothing."""
    one = _run(tmp_path, "r1", 1, (2.8, 2.0, 4.0), [(2.0, 2.0, 470.0)], outside_cpus=0.2)
    two = _run(tmp_path, "r2", 2, (5.0, 4.5, 5.5), [(2.0, 1.6, 300.0)], outside_cpus=0.5)
    assert build_grid_report([("1", one), ("2", two)], "replicas").host_note == ""  # 1.8 and 1.5 CPUs left
    three = _run(tmp_path, "r3", 1, (2.8, 2.0, 4.0), [(2.0, 2.0, 470.0)], outside_cpus=1.42)
    four = _run(tmp_path, "r4", 2, (1.0, 0.5, 1.8), [(2.0, 1.6, 3300.0)], outside_cpus=1.72)
    report = build_grid_report([("1", three), ("2", four)], "replicas")
    assert report.host_note.startswith("The host was unequally busy: other processes took 1.42 of 2 CPUs on average "
                                       "while replicas=1 ran and 1.72 while replicas=2 ran, leaving it 2.07x less")
    assert report.host_note in render_grid_markdown(report)

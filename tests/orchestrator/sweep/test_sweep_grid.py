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
         points: list[tuple[float, float, float]]) -> Path:
    """A sweep's journal: its server's replicas, its points (offered, goodput, p99 ms), its fitted capacity."""
    cfg = with_server_value(_cfg(), "replicas", str(replicas))
    events = [RunStarted(command="sweep", run_id=name, config=cfg),
              *(SweepPointJudged(index=i, mode="rate", offered=o, windows=[f"m/rate{o:g}-1"], outcome="pass",
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
    one = _run(tmp_path, "r1", 1, (4.0, 3.6, 4.4), [(2.0, 2.0, 300.0), (4.0, 3.8, 900.0)])
    two = _run(tmp_path, "r2", 2, (7.0, 6.3, 7.7), [(4.0, 4.0, 250.0), (8.0, 6.0, 1500.0)])
    report = build_grid_report([("1", one), ("2", two)], "replicas")
    assert [(e.value, e.replicas, e.per_replica, e.per_replica_low, e.per_replica_high) for e in report.entries] == [
        ("1", 1, 4.0, 3.6, 4.4), ("2", 2, 3.5, 3.15, 3.85)]
    front = {(p.value, p.offered) for p in report.pareto if p.on_front}
    # replicas=1 at 4 req/s: 3.8 per replica at 900 ms; replicas=2 at 4 req/s: 2.0 per replica at 250 ms; the
    # rest are beaten (replicas=2 at 8: 3.0 at 1500 ms is dominated by replicas=1 at 4).
    assert front == {("1", 4.0), ("2", 4.0)}
    assert "| replicas=2 | r2 | 7 | [6.3, 7.7] | error_rate | 2 | 3.5 | [3.15, 3.85]" in render_grid_markdown(report)
    paths = write_grid_report(report, tmp_path / "grid")
    assert 'data-chart="pareto"' in paths[2].read_text()

"""End to end: `aqbench sweep` with real AIPerf 0.13.0 against the real reference server, two closed-loop
points, the second served by a server that swaps answers under load: the capacity is bracketed by the
answers SLO, every point is accounted, and `aqbench report` rebuilds sweep.json byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from reference_run import REFERENCE_ARGV, ROOT, aqbench, only_run, write_config

from orchestrator.events import AccountingChecked, AiperfStarted, SweepConcluded, SweepPointJudged
from orchestrator.journal import read_journal

# Two real AIPerf runs and one reference server: about a minute on a busy 2-core box.
pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(480)]

_SWEEP = """
[slo]
max_error_rate = 0.2
min_answers = 5

[sweep]
mode = "concurrency"
points = [1, 2]
requests_per_point = 12
"""


def test_swapped_answers_under_load_bracket_the_capacity(tmp_path: Path) -> None:
    """Concurrency 1 holds every SLO; at 2 the server answers with another request's answer, which breaks
    the answers SLO: capacity 1, bracketed, each point balanced, reports rebuilt identically."""
    argv = [*REFERENCE_ARGV, "--fault-swap-above", "1",
            # 100 ms per answer: at concurrency 2 both requests are in the engine together, so the swap happens.
            "--fault-latency-ms", "100"]
    config = write_config(tmp_path / "bench.toml", out=tmp_path / "runs", name="sweep", argv=argv, stop_grace=False,
                          requests=12, concurrency=1, arms=("transcript",), extra=_SWEEP)
    proc = aqbench("sweep", "--config", str(config), timeout=450)
    run_dir = only_run(tmp_path / "runs")
    events, torn = read_journal(run_dir / "events.jsonl")
    assert not torn
    assert proc.returncode == 0, proc.stderr[-3000:]
    # One AIPerf run per point, against one server; each window accounted against AIPerf's own count.
    assert [e.window for e in events if isinstance(e, AiperfStarted)] == ["reference-audioqa/c1-1",
                                                                            "reference-audioqa/c2-1"]
    accounts = [e for e in events if isinstance(e, AccountingChecked)]
    assert [a.balanced for a in accounts] == [True, True]
    assert accounts[0].issued == accounts[0].expected == {"warmup": 2, "profiling": 12}
    assert accounts[1].issued == accounts[1].expected, accounts[1]
    points = {e.offered: e for e in events if isinstance(e, SweepPointJudged)}
    assert points[1.0].outcome == "pass", points[1.0].checks
    broken = {c.slo: c for c in points[2.0].checks if c.outcome == "fail"}
    assert set(broken) == {"answers"} and "differ from concurrency 1" in broken["answers"].reason
    assert points[2.0].stats.answers_differing >= 1
    # A point that clearly broke an SLO may be stopped early: never more than planned, every request accounted.
    assert points[2.0].stats.requests == accounts[1].issued["profiling"] <= 12
    [concluded] = [e for e in events if isinstance(e, SweepConcluded)]
    assert (concluded.outcome, concluded.capacity, concluded.lowest_failing) == ("bracketed", 1.0, 2.0)
    assert concluded.summary.startswith("capacity 1 concurrent requests: 1 held every SLO, 2 broke answers")
    sweep_json = (run_dir / "sweep.json").read_bytes()
    data = msgspec.json.decode(sweep_json)
    assert data["capacity"]["value"] == 1.0 and data["capacity"]["unit"] == "concurrent requests"
    assert [(p["offered"], p["accounting_balanced"]) for p in data["points"]] == [(1.0, True), (2.0, True)]
    assert "Capacity 1 concurrent requests" in (run_dir / "sweep.md").read_text()
    assert "<svg" in (run_dir / "sweep.html").read_text()
    # The reports are folds of the journal: rebuilt from it alone, byte for byte.
    (run_dir / "sweep.json").unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(run_dir)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (run_dir / "sweep.json").read_bytes() == sweep_json

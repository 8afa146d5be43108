"""End to end: `aqbench sweep` with real AIPerf 0.13.0 against the real reference server, two closed-loop
points, the second served by a server that swaps answers under load: the capacity is bracketed by the
answers SLO, every point is accounted, and `aqbench report` rebuilds sweep.json byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from reference_run import REFERENCE_ARGV, ROOT, aqbench, aqbench_argv, only_run, write_config

from orchestrator.events import (
    AccountingChecked,
    AiperfStarted,
    CapabilityProbed,
    DatasetPhase,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    ServerSpawned,
    SweepConcluded,
    SweepPointJudged,
)
from orchestrator.spine.journal import read_journal

STUB = ROOT / "tests" / "data" / "servers" / "chat_stub.py"

_SWEEP = """
[slo]
max_error_rate = 0.2
min_answers = 5

[sweep]
mode = "concurrency"
points = [1, 2]
requests_per_point = 12
"""


def _config(tmp_path: Path, argv: list[str]) -> Path:
    return write_config(tmp_path / "bench.toml", out=tmp_path / "runs", name="sweep", argv=argv, stop_grace=False,
                        requests=12, concurrency=1, arms=("transcript",), extra=_SWEEP)


@pytest.mark.aiperf
@pytest.mark.slow
@pytest.mark.timeout(480)  # one real AIPerf process (two windows) and one reference server: about a minute on a busy 2-core box
def test_swapped_answers_under_load_bracket_the_capacity(tmp_path: Path) -> None:
    """Concurrency 1 holds every SLO; at 2 the server answers with another request's answer, which breaks
    the answers SLO: capacity 1, bracketed, each point balanced, reports rebuilt identically."""
    argv = [*REFERENCE_ARGV, "--fault-swap-above", "1",
            # 100 ms per answer: at concurrency 2 both requests are in the engine together, so the swap happens.
            "--fault-latency-ms", "100"]
    proc = aqbench("sweep", "--config", str(_config(tmp_path, argv)), timeout=450)
    run_dir = only_run(tmp_path / "runs")
    events, torn = read_journal(run_dir / "events.jsonl")
    assert not torn
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Both points in one AIPerf process (its phases: one start-up), against one server; each point its own
    # window, started as its phase starts, accounted against what AIPerf says it issued in that window's phases.
    started = [e for e in events if isinstance(e, AiperfStarted)]
    assert [e.window for e in started] == ["reference-audioqa/c1-1", "reference-audioqa/c2-1"]
    assert len({e.pid for e in started}) == 1 and "--config" in started[0].argv
    assert all("AQBENCH_TIMING_WAIT=1" in e.shell for e in started)  # a sweep's batches always wait (no spin)
    assert started[1].load[:2] == ["--concurrency", "2"]
    # The capability probe's requests first (qualify's probe, before any load), then each point's.
    probe, *accounts = [e for e in events if isinstance(e, AccountingChecked)]
    assert probe.window == "reference-audioqa/capability" and probe.balanced
    assert [e.passed for e in events if isinstance(e, CapabilityProbed)] and all(
        e.passed for e in events if isinstance(e, CapabilityProbed))
    assert [a.balanced for a in accounts] == [True, True]
    assert accounts[0].issued == accounts[0].expected == {"warmup": 2, "profiling": 12}
    assert accounts[1].issued == accounts[1].expected, accounts[1]
    points = {e.offered: e for e in events if isinstance(e, SweepPointJudged)}
    assert points[1.0].outcome == "pass", points[1.0].checks
    broken = {c.slo: c for c in points[2.0].checks if c.outcome == "fail"}
    assert set(broken) == {"answers"} and "differ from concurrency 1" in broken["answers"].reason
    assert points[2.0].stats.answers_differing >= 1
    # Concurrency 2 clearly broke the answers SLO at a look (every 5 requests, against concurrency 1's answers from
    # the same batch), so its run was halted: never more than planned, every request it sent accounted.
    assert points[2.0].stopped_early
    assert points[2.0].stats.requests == accounts[1].issued["profiling"] <= 12
    [concluded] = [e for e in events if isinstance(e, SweepConcluded)]
    assert (concluded.outcome, concluded.capacity, concluded.lowest_failing) == ("bracketed", 1.0, 2.0)
    assert concluded.summary.startswith("capacity 1 concurrent requests: 1 held every SLO, 2 broke answers")
    sweep_json = (run_dir / "sweep.json").read_bytes()
    data = msgspec.json.decode(sweep_json)
    # The fitted capacity: the answers SLO binds, an exact step between 1 and 2 (no load between them to narrow it).
    cap = data["capacity"]
    assert (cap["highest_passing"], cap["low"], cap["high"], cap["binding"]) == (1.0, 1.0, 2.0, "answers"), cap
    assert 1.0 <= cap["value"] <= 2.0 and cap["unit"] == "concurrent requests" and not cap["reached"]
    assert [(p["offered"], p["accounting_balanced"]) for p in data["points"]] == [(1.0, True), (2.0, True)]
    assert "Capacity 1 concurrent requests" in (run_dir / "sweep.md").read_text()
    # What a point of 12 requests could decide was journaled before the first point ran.
    [plan] = [e for e in events if isinstance(e, PhaseStarted) and e.phase == "sweep"]
    assert plan.seq < min(e.seq for e in events if isinstance(e, AiperfStarted))
    # Its AIPerf process was spawned beside the capability probe, its first window held at its gate until then.
    assert started[0].spawned_ns < plan.ts_ns < started[0].ts_ns
    assert [d.slo for d in plan.detail.detects] == ["error_rate", "answers", "complete_outputs"]
    assert plan.detail.detects[0].statement.startswith("error_rate at 12 requests: can pass (needs 11)")
    assert "What each point could decide (planned before it ran):" in (run_dir / "sweep.md").read_text()
    assert "<svg" in (run_dir / "sweep.html").read_text()
    # The reports are folds of the journal: rebuilt from it alone, byte for byte.
    (run_dir / "sweep.json").unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(run_dir)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (run_dir / "sweep.json").read_bytes() == sweep_json


@pytest.mark.aiperf  # the first batch's AIPerf process starts beside the probe (and sends nothing here)
@pytest.mark.timeout(120)
def test_a_text_only_server_stops_at_the_capability_probe(tmp_path: Path) -> None:
    """A server that answers from the question alone has no capacity to find: the sweep runs qualify's
    capability probe before any load and stops there `unsupported` with its evidence, exit 1, no AIPerf load (the
    first batch's AIPerf process, spawned beside the probe, has every load skipped at its gate: no window)."""
    argv = ["{python}", str(STUB), "--mode", "text-only", "--host", "{host}", "--port", "{port}",
            "--model-name", "{model}", "--records", "{records}"]
    proc = aqbench("sweep", "--config", str(_config(tmp_path, argv)), timeout=110)
    assert proc.returncode == 1, proc.stderr[-3000:]
    run_dir = only_run(tmp_path / "runs")
    events, torn = read_journal(run_dir / "events.jsonl")
    assert not torn
    assert not [e for e in events if isinstance(e, AiperfStarted | SweepPointJudged)]
    probed = [e for e in events if isinstance(e, CapabilityProbed)]
    assert probed and not all(p.passed for p in probed)
    [result] = [e for e in events if isinstance(e, ModelResult)]
    assert (result.status, result.failed_stage) == ("unsupported", "capability")
    assert "text-only:" in result.row.reason and "before any load" in result.row.reason
    report = msgspec.json.decode((run_dir / "sweep.json").read_bytes())
    assert report["capacity"] is None and "unsupported at the capability probe" in report["reason"]
    assert "## Points" not in (run_dir / "sweep.md").read_text()  # no empty tables where no load ran
    # The dataset is loaded (every clip decoded, ~0.8 s) while the server starts, not before its spawn: its phase
    # is journaled after the spawn and before the probe, with the identity that `aqbench compare` reads.
    [dataset] = [e for e in events if isinstance(e, PhaseFinished) and e.phase == "dataset"]
    [spawned] = [e for e in events if isinstance(e, ServerSpawned)]
    assert spawned.seq < dataset.seq < min(e.seq for e in probed)
    assert isinstance(dataset.detail, DatasetPhase) and len(dataset.detail.identity) == 64


_RATES = """
[slo]
max_error_rate = 0.2
min_answers = 5

[sweep]
mode = "rate"
points = [2, 8]
requests_per_point = 20
extend = 0  # the grid only: the clean server's capacity stays "at least 8" (doublings: test_sweep_search)
"""


@pytest.mark.aiperf
@pytest.mark.slow
@pytest.mark.timeout(600)  # two sweeps at once, of one real AIPerf process each (3 windows): about a minute on a busy 2-core box
def test_added_latency_lowers_the_capacity(tmp_path: Path) -> None:
    """The same reference server, twice: as shipped it holds 8 req/s (constant arrivals, 125 ms apart: its two
    replicas answer a transcript in well under that); with --fault-latency-ms 400 each request holds a replica
    for over 400 ms, so at 8 req/s every other request finds both busy (HTTP 429) and the error rate breaks,
    while 2 req/s (500 ms apart) still holds. The capacity falls from at least 8 to 2 or the midpoint 5 (its
    reruns and the midpoint ride behind gates in the one AIPerf process: the clean server's are all skipped, the
    slow one's midpoint runs), and compare says so. The two sweeps run at once."""
    # Both sweeps at once: the slow server's replicas mostly sleep (its fault), so the clean one still has the CPU
    # that 8 req/s of transcripts need, and the serial lane waits for one sweep's start-up and points, not two.
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for name, extra in (("clean", []), ("slow", ["--fault-latency-ms", "400"])):
            cfg = write_config(tmp_path / f"{name}.toml", out=tmp_path / name, name=name,
                               argv=[*REFERENCE_ARGV, *extra], stop_grace=False, requests=20, concurrency=1,
                               arms=("transcript",), extra=_RATES)
            procs[name] = subprocess.Popen(aqbench_argv("sweep", "--config", str(cfg)), cwd=ROOT,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        done = {name: proc.communicate(timeout=280) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    runs = {}
    for name, proc in procs.items():
        runs[name] = only_run(tmp_path / name)
        assert proc.returncode == 0, done[name][1][-3000:]
    clean, slow = (msgspec.json.decode((runs[n] / "sweep.json").read_bytes()) for n in ("clean", "slow"))
    assert clean["capacity"]["outcome"] == "all_passed" and clean["capacity"]["highest_passing"] == 8.0, \
        clean["capacity"]
    # No SLO crossed among the loads run: the fitted capacity is open above, never a figure it did not measure.
    assert (clean["capacity"]["value"], clean["capacity"]["high"]) == (None, None)
    assert [p["offered"] for p in clean["points"]] == [2.0, 8.0]
    assert slow["capacity"]["outcome"] == "bracketed" and slow["capacity"]["highest_passing"] in (2.0, 5.0), \
        slow["capacity"]
    # The fit: the error rate binds, its interval closed and wholly below the clean sweep's open one (above 8).
    assert slow["capacity"]["binding"] == "error_rate" and slow["capacity"]["high"] is not None
    assert (slow["capacity"]["low"] or 0.0) <= slow["capacity"]["value"] <= slow["capacity"]["high"] < 8.0 * 1.01
    assert slow["capacity"]["lowest_failing"] in (5.0, 8.0) and " broke error rate" in slow["capacity"]["summary"]
    # The midpoint between the held 2 and the broken 8 ran behind its gate, in the batch's one AIPerf process.
    assert 5.0 in [p["offered"] for p in slow["points"]]
    slow_events, _ = read_journal(runs["slow"] / "events.jsonl")
    started = [e for e in slow_events if isinstance(e, AiperfStarted)]
    assert len({e.pid for e in started}) == 1 and any(e.window.endswith("/rate5-1") for e in started)
    # The batch's input holds one copy of the rows per planned load; the gated midpoint wrapped to the first copy
    # and asked the same items in the same order as a planned point did.
    def asked(window: str) -> list[str]:
        return [e.item_id for e in sorted((e for e in slow_events if isinstance(e, RequestCorrelated)
                                           and e.window == f"reference-audioqa/{window}"),
                                          key=lambda e: e.request_start_ns)]
    assert asked("rate5-1") and asked("rate5-1") == asked("rate2-1")
    assert all(p["accounting_balanced"] for p in clean["points"] + slow["points"])
    cmp = aqbench("compare", str(runs["clean"]), str(runs["slow"]), "--out", str(tmp_path / "cmp"), timeout=120)
    assert cmp.returncode == 1, cmp.stdout + cmp.stderr
    assert cmp.stdout.startswith("capacity regressed: capacity fell: the candidate broke an SLO at "
                                 f"{slow['capacity']['lowest_failing']:g} req/s")

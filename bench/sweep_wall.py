"""Sweep wall time against the sum of its points' planned durations (issue 33's target: at most 1.10x).

Usage: flock /tmp/aqbench-heavy.lock .venv/bin/python bench/sweep_wall.py [--rates 2,4] [--requests 60]

Runs a real `aqbench sweep` (real AIPerf 0.13.0 per point, the shipped reference server) on a temporary copy of
bench.toml, then reads its journal and prints, side by side from that one run:
- the planned duration of each point run ((warmup + profiling requests) / offered rate) and their sum;
- the sweep's wall time and its ratio to that sum, whole (server start, capability probe, the concurrency-1
  baseline included) and over the points alone (first point's AIPerf start to last point's exit);
- where each point's time goes: AIPerf's start-up (its start to its first request), the requests, the tail
  (last request sent to AIPerf's exit) and the gap before the next point's AIPerf.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.events import (
    AiperfExited,
    AiperfStarted,
    AnyEvent,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    SweepPhase,
)
from orchestrator.journal import read_journal

ROOT = Path(__file__).resolve().parents[1]
AQBENCH = Path(sys.executable).with_name("aqbench")
TARGET = 1.10


def _config(tmp: Path) -> Path:
    text = (ROOT / "bench.toml").read_text().replace('output_dir = "runs"', f'output_dir = "{tmp / "runs"}"')
    cfg = tmp / "bench.toml"
    cfg.write_text(text)
    return cfg


def analyse(events: list[AnyEvent], wall: float) -> None:
    """Print the planned durations beside the journal's own times (wall: the sweep's wall time)."""
    started = {e.window: e.ts_ns for e in events if isinstance(e, AiperfStarted)}
    exited = {e.window: e.ts_ns for e in events if isinstance(e, AiperfExited)}
    reqs: dict[str, list[RequestCorrelated]] = {}
    for e in events:
        if isinstance(e, RequestCorrelated):
            reqs.setdefault(e.window, []).append(e)
    plan = next(e.detail for e in events if isinstance(e, PhaseStarted) and isinstance(e.detail, SweepPhase))
    warmup, requests = plan.warmup_requests or 0, plan.requests_per_point or 0
    points = [w for w in started if "/rate" in w]
    planned = startup = 0.0
    print(f"{'window':<30} {'planned s':>9} {'AIPerf s':>8} {'start-up s':>10} {'sending s':>9} {'exit s':>6} {'gap s':>6}")
    for w in [*(x for x in started if x.endswith("/baseline")), *points]:
        rate = float(w.rsplit("/rate", 1)[1].rsplit("-", 1)[0]) if "/rate" in w else None
        plan_s = (requests + warmup) / rate if rate else 0.0
        planned += plan_s
        sends = [r.request_start_ns for r in reqs.get(w, []) if r.request_start_ns]
        ends = [r.request_end_ns for r in reqs.get(w, []) if r.request_end_ns]
        first, last_end = (min(sends), max(ends)) if sends and ends else (started[w], started[w])
        startup += (first - started[w]) / 1e9 if rate else 0.0
        nxt = points.index(w) + 1 if w in points else 0
        gap = (started[points[nxt]] - exited[w]) / 1e9 if nxt < len(points) else 0.0
        print(f"{w:<30} {plan_s:9.1f} {(exited[w] - started[w]) / 1e9:8.1f} {(first - started[w]) / 1e9:10.1f} "
              f"{(last_end - first) / 1e9:9.1f} {(exited[w] - last_end) / 1e9:6.1f} {gap:6.1f}")
    span = (exited[points[-1]] - started[points[0]]) / 1e9 if points else 0.0
    marks = {(e.phase, isinstance(e, PhaseFinished)): e.ts_ns for e in events if isinstance(e, PhaseStarted | PhaseFinished)}
    probe = (marks.get(("capability", True), 0) - marks.get(("capability", False), 0)) / 1e9
    print(f"planned sum (points, the baseline has none) {planned:.1f} s")
    print(f"points' span {span:.1f} s = {span / planned:.2f}x planned; their AIPerf start-ups {startup:.1f} s")
    print(f"whole sweep {wall:.1f} s = {wall / planned:.2f}x planned (target <= {TARGET:.2f}x); capability probe "
          f"{probe:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="2,4", help="open-loop points, req/s (default 2,4)")
    ap.add_argument("--requests", type=int, default=60, help="profiling requests per point (default 60)")
    ap.add_argument("--journal", type=Path, help="analyse this finished sweep's events.jsonl instead of running one")
    args = ap.parse_args()
    if args.journal:
        events, _ = read_journal(args.journal)
        analyse(events, (events[-1].ts_ns - events[0].ts_ns) / 1e9)
        return 0
    with tempfile.TemporaryDirectory(prefix="aqbench-sweep-wall-") as d:
        tmp = Path(d)
        cfg = _config(tmp)
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        proc = subprocess.run([str(AQBENCH), "--log-level", "warning", "sweep", "--config", str(cfg), "--rates",
                               args.rates, "--requests-per-point", str(args.requests)], cwd=ROOT,
                              capture_output=True, text=True)
        wall = time.monotonic() - t0
        [run_dir] = list((tmp / "runs").iterdir())
        events, _ = read_journal(run_dir / "events.jsonl")
    print(f"aqbench sweep --rates {args.rates} --requests-per-point {args.requests}: exit {proc.returncode}; load "
          f"average before {load0:.2f}, after {os.getloadavg()[0]:.2f} (2 cores shared with other sessions)")
    if proc.returncode not in (0, 1):
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    print("\n".join(ln for ln in proc.stderr.splitlines() if ln.startswith(("sweep: ", "  ")) and "reports:" not in ln))
    analyse(events, wall)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

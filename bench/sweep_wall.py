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

from orchestrator.events import AiperfExited, AiperfStarted, PhaseFinished, PhaseStarted, RequestCorrelated
from orchestrator.journal import read_journal

ROOT = Path(__file__).resolve().parents[1]
AQBENCH = Path(sys.executable).with_name("aqbench")
TARGET = 1.10


def _config(tmp: Path) -> Path:
    text = (ROOT / "bench.toml").read_text().replace('output_dir = "runs"', f'output_dir = "{tmp / "runs"}"')
    cfg = tmp / "bench.toml"
    cfg.write_text(text)
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="2,4", help="open-loop points, req/s (default 2,4)")
    ap.add_argument("--requests", type=int, default=60, help="profiling requests per point (default 60)")
    args = ap.parse_args()
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
    print(f"aqbench sweep exit {proc.returncode}; load average before {load0:.2f}, after {os.getloadavg()[0]:.2f} "
          "(2 cores shared with other sessions)")
    if proc.returncode not in (0, 1):
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    started = {e.window: e.ts_ns for e in events if isinstance(e, AiperfStarted)}
    exited = {e.window: e.ts_ns for e in events if isinstance(e, AiperfExited)}
    reqs: dict[str, list[RequestCorrelated]] = {}
    for e in events:
        if isinstance(e, RequestCorrelated):
            reqs.setdefault(e.window, []).append(e)
    warmup = next((e.detail.warmup_requests for e in events if isinstance(e, PhaseStarted) and e.phase == "sweep"
                   and e.detail is not None and hasattr(e.detail, "warmup_requests")), 0) or 0
    points = [w for w in started if "/rate" in w]
    planned = 0.0
    print(f"{'window':<32} {'planned s':>9} {'start-up s':>10} {'requests s':>10} {'tail s':>7} {'gap s':>6}")
    for i, w in enumerate(points):
        rate = float(w.rsplit("/rate", 1)[1].rsplit("-", 1)[0])
        plan = (args.requests + warmup) / rate
        planned += plan
        starts = [r.request_start_ns for r in reqs.get(w, []) if r.request_start_ns]
        ends = [r.request_end_ns for r in reqs.get(w, []) if r.request_end_ns]
        first, last_start = (min(starts), max(starts)) if starts else (started[w], started[w])
        gap = (started[points[i + 1]] - exited[w]) / 1e9 if i + 1 < len(points) else 0.0
        print(f"{w:<32} {plan:9.1f} {(first - started[w]) / 1e9:10.1f} {(last_start - first) / 1e9:10.1f} "
              f"{(exited[w] - last_start) / 1e9:7.1f} {gap:6.1f}" + (f"  (last answer {(max(ends) - last_start) / 1e9:.1f} s after the last send)" if ends else ""))
    span = (exited[points[-1]] - started[points[0]]) / 1e9 if points else 0.0
    phases = {(e.phase, type(e).__name__): e.ts_ns for e in events if isinstance(e, PhaseStarted | PhaseFinished)}
    cap = ((phases.get(("capability", "PhaseFinished"), 0) - phases.get(("capability", "PhaseStarted"), 0)) / 1e9)
    base = [w for w in started if w.endswith("/baseline")]
    base_s = (exited[base[0]] - started[base[0]]) / 1e9 if base else 0.0
    print(f"planned sum {planned:.1f} s; points' span {span:.1f} s = {span / planned:.2f}x; whole sweep {wall:.1f} s "
          f"= {wall / planned:.2f}x (target <= {TARGET:.2f}x); of which capability probe {cap:.1f} s, "
          f"concurrency-1 baseline {base_s:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

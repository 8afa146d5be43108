"""Sweep wall time against the sum of its points' planned durations (issue 33's target: at most 1.10x).

Usage: flock /tmp/aqbench-heavy.lock .venv/bin/python bench/sweep_wall.py [--rates 2,4] [--requests 60] [--both]
       [--keep DIR] [--server-args "--fault-latency-ms 300"]   (set PYTHONPATH to the tree to measure)

Runs a real `aqbench sweep` (real AIPerf 0.13.0, the shipped reference server) on a temporary copy of bench.toml,
then reads its journal and prints, from that one run:
- the planned duration of each point run ((warmup + profiling requests) / offered rate) and their sum, with the
  concurrency-1 baseline window's where the sweep planned it before its first AIPerf process started (the
  `sweep` phase's baseline_planned_s: its requests x the mean latency of 8 of its own rows, timed before any load,
  or the capability probe's median where none was);
- where the rest went: AIPerf start-ups and exits, gaps between AIPerf processes, the journal's start to the first
  AIPerf spawn (server start, capability probe, the baseline's timed sample), its last exit to the run's end, and the time outside the journal;
- the sweep's wall time and its ratio to that sum, whole (server start, capability probe, the concurrency-1
  baseline included) and over the points alone (first AIPerf process's start to the last one's exit);
- per AIPerf process (a batch of points, its phases): its start-up (spawn to first request; for the first batch,
  spawned beside the capability probe and held at its gate, that includes the probe and the sample) and exit (last
  request's end to exit); per window: its phase's start after the previous window's last request (for a gated
  rerun: the wait for the verdict that runs it), its sending.
`--server-args` appends flags to the reference server's argv (a fault latency puts a knee among the rates, so
that the sweep's midpoint runs). `--no-stop-early` runs it with `[sweep] stop_early = false` (every load runs to its
planned count, none halted once it clearly broke an SLO); `--both` runs the sweep as shipped and then without early
stops, side by side.
"""

from __future__ import annotations

import argparse
import os
import shutil
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
from orchestrator.spine.journal import read_journal

ROOT = Path(__file__).resolve().parents[1]
AQBENCH = Path(sys.executable).with_name("aqbench")
TARGET = 1.10


def _config(tmp: Path, no_stop: bool, server_args: list[str] | None = None) -> Path:
    text = (ROOT / "bench.toml").read_text().replace('output_dir = "runs"', f'output_dir = "{tmp / "runs"}"')
    if server_args:  # appended to the first argv (the served model's [server]), not [models.reference]'s
        head, sep, rest = text.partition('"--replicas", "{replicas}"')
        if not sep:
            raise SystemExit("bench.toml's [server] argv does not end with --replicas {replicas}")
        text = head + sep + "".join(f', "{a}"' for a in server_args) + rest
    if no_stop and "\n[sweep]\n" in text:
        text = text.replace("\n[sweep]\n", "\n[sweep]\nstop_early = false\n", 1)
    elif no_stop:
        text += "\n[sweep]\nstop_early = false\n"
    cfg = tmp / "bench.toml"
    cfg.write_text(text)
    return cfg


def analyse(events: list[AnyEvent], wall: float) -> float:
    """Print the planned durations beside the journal's own times (wall: the sweep's wall time); returns the
    whole sweep's ratio to plan (the baseline window's planned duration counted where the sweep stated one
    before its first AIPerf process started)."""
    started = {e.window: e for e in events if isinstance(e, AiperfStarted)}
    exited = {e.window: e.ts_ns for e in events if isinstance(e, AiperfExited)}
    reqs: dict[str, list[RequestCorrelated]] = {}
    for e in events:
        if isinstance(e, RequestCorrelated):
            reqs.setdefault(e.window, []).append(e)
    phase = next(e for e in events if isinstance(e, PhaseStarted) and isinstance(e.detail, SweepPhase))
    plan = phase.detail
    assert isinstance(plan, SweepPhase)
    warmup, requests = plan.warmup_requests or 0, plan.requests_per_point or 0
    # Planned means stated before any load: the plan event precedes every AIPerf process.
    stated = min((e.seq for e in started.values()), default=phase.seq) > phase.seq
    baseline_plan = plan.baseline_planned_s if stated and plan.baseline_planned_s is not None else None
    procs: dict[int, list[str]] = {}
    for w, e in started.items():
        procs.setdefault(e.pid, []).append(w)
    planned = startup = exits = gaps = 0.0
    print(f"{'AIPerf process / window':<34} {'planned s':>9} {'start-up s':>10} {'to phase s':>10} {'sending s':>9} "
          f"{'exit s':>6}")
    first_start = last_exit = 0
    for pid, windows in procs.items():
        # A first window held at its gate (the first batch, spawned beside the capability probe) starts after
        # its process: the process's own spawn time where the journal has it.
        head = started[windows[0]]
        spawn, end = head.spawned_ns or head.ts_ns, exited.get(windows[-1], head.ts_ns)
        held = (head.ts_ns - spawn) / 1e9
        if last_exit:
            gaps += max(0.0, (spawn - last_exit) / 1e9)
        first_start, last_exit = first_start or spawn, max(last_exit, end)
        sends = [r.request_start_ns for w in windows for r in reqs.get(w, []) if r.request_start_ns]
        ends = [r.request_end_ns for w in windows for r in reqs.get(w, []) if r.request_end_ns]
        up = (min(sends) - spawn) / 1e9 if sends else 0.0
        down = (end - max(ends)) / 1e9 if ends else 0.0
        startup, exits = startup + up, exits + down
        print(f"{'pid ' + str(pid) + f' ({len(windows)} windows)':<34} {'':>9} {up:10.1f} {'':>10} {'':>9} "
              f"{down:6.1f}" + (f"  (spawned beside the probe; its first window opened {held:.1f} s after "
                                "spawn, once the plan was stated)" if held > 0.5 else ""))
        previous_end = min(sends) if sends else spawn
        for w in windows:
            rate = float(w.rsplit("/rate", 1)[1].rsplit("-", 1)[0]) if "/rate" in w else None
            plan_s = (requests + warmup) / rate if rate else 0.0
            if w.endswith("/baseline") and baseline_plan is not None:
                plan_s = baseline_plan
            planned += plan_s
            w_sends = [r.request_start_ns for r in reqs.get(w, []) if r.request_start_ns]
            w_ends = [r.request_end_ns for r in reqs.get(w, []) if r.request_end_ns]
            if not (w_sends and w_ends):
                continue
            to_phase = max(0.0, (started[w].ts_ns - previous_end) / 1e9) if w != windows[0] else 0.0
            print(f"  {w:<32} {plan_s:9.1f} {'':>10} {to_phase:10.1f} {(max(w_ends) - min(w_sends)) / 1e9:9.1f}")
            previous_end = max(w_ends)
    span = (last_exit - first_start) / 1e9
    marks = {(e.phase, isinstance(e, PhaseFinished)): e.ts_ns for e in events if isinstance(e, PhaseStarted | PhaseFinished)}
    probe = (marks.get(("capability", True), 0) - marks.get(("capability", False), 0)) / 1e9
    run0 = events[0].ts_ns
    before = (first_start - run0) / 1e9 if first_start else 0.0
    after = (events[-1].ts_ns - last_exit) / 1e9 if last_exit else 0.0
    points = planned - (baseline_plan or 0.0)
    print("planned, as stated before any load: " + "; ".join(plan.planned) if plan.planned else
          "planned: the sweep stated none (before baseline_planned_s); points by (warmup + requests) / rate")
    base = f"{baseline_plan:.1f} s" if baseline_plan is not None else "unplanned"
    print(f"planned sum {planned:.1f} s (points {points:.1f} s + the baseline window {base}); {len(procs)} AIPerf "
          "processes")
    print(f"points' span {span:.1f} s = {span / planned:.2f}x planned; AIPerf start-ups {startup:.1f} s, exits "
          f"{exits:.1f} s, gaps between processes {gaps:.1f} s")
    print(f"journal: run start to first AIPerf spawn {before:.1f} s (server start, capability probe {probe:.1f} s); "
          f"last AIPerf exit to the run's end {after:.1f} s; outside the journal (aqbench start-up, reports) "
          f"{wall - (events[-1].ts_ns - run0) / 1e9:.1f} s")
    print(f"whole sweep {wall:.1f} s = {wall / planned:.2f}x planned (target <= {TARGET:.2f}x); without the baseline's "
          f"planned time {wall / points:.2f}x")
    return wall / planned


def _run(rates: str, requests: int, no_stop: bool, keep: Path | None = None,
         server_args: list[str] | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="aqbench-sweep-wall-") as d:
        tmp = Path(d)
        cfg = _config(tmp, no_stop, server_args)
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        proc = subprocess.run([str(AQBENCH), "--log-level", "warning", "sweep", "--config", str(cfg), "--rates",
                               rates, "--requests-per-point", str(requests)], cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - t0
        [run_dir] = list((tmp / "runs").iterdir())
        events, _ = read_journal(run_dir / "events.jsonl")
        if keep is not None:  # the journal kept for --journal and --gaps after the temporary folder goes
            keep.mkdir(parents=True, exist_ok=True)
            name = f"{'no-stop' if no_stop else 'batched'}-{time.strftime('%H%M%S')}.jsonl"
            shutil.copyfile(run_dir / "events.jsonl", keep / name)
            print(f"journal kept: {keep / name}")
    side = "no early stops (stop_early = false)" if no_stop else "as shipped (stop_early = true)"
    print(f"== {side}: aqbench sweep --rates {rates} --requests-per-point {requests}: exit {proc.returncode}; load "
          f"average before {load0:.2f}, after {os.getloadavg()[0]:.2f} (2 cores shared with other sessions)")
    if proc.returncode not in (0, 1):
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    print("\n".join(ln for ln in proc.stderr.splitlines() if ln.startswith(("sweep: ", "  ")) and "reports:" not in ln))
    analyse(events, wall)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="2,4", help="open-loop points, req/s (default 2,4)")
    ap.add_argument("--requests", type=int, default=60, help="profiling requests per point (default 60)")
    ap.add_argument("--no-stop-early", action="store_true", help="[sweep] stop_early = false: no load halted")
    ap.add_argument("--both", action="store_true", help="as shipped, then without early stops, side by side")
    ap.add_argument("--keep", type=Path, help="copy each sweep's events.jsonl into this folder")
    ap.add_argument("--server-args", default="", help="flags appended to the reference server's argv")
    ap.add_argument("--journal", type=Path, help="analyse this finished sweep's events.jsonl instead of running one")
    args = ap.parse_args()
    if args.journal:
        events, _ = read_journal(args.journal)
        analyse(events, (events[-1].ts_ns - events[0].ts_ns) / 1e9)
        return 0
    sides = [False, True] if args.both else [args.no_stop_early]
    return max(_run(args.rates, args.requests, no_stop, args.keep, args.server_args.split()) for no_stop in sides)


if __name__ == "__main__":
    raise SystemExit(main())

"""Issue 33's proofs on the default reference server: `aqbench sweep --max-duration 5m` exits 0 with a bracketed
capacity and every point accounted; with `--fault-latency-ms 400` on the same server the capacity is lower.

Usage (one case per hold of the lock, each under 10 minutes):
  flock /tmp/aqbench-heavy.lock .venv/bin/python bench/sweep_proofs.py --case default
  flock /tmp/aqbench-heavy.lock .venv/bin/python bench/sweep_proofs.py --case latency-400
  .venv/bin/python bench/sweep_proofs.py --compare      # the two latest runs: aqbench compare, then the verdict

Each case runs the shipped bench.toml unchanged but for its output folder (runs/sweep-proofs/<case>/) and, for
latency-400, `--fault-latency-ms 400` appended to the [server] argv (the reference server then adds 400 ms inside
every engine call, so it counts in model_call_ms and holds its replica longer). Prints the exit code, the wall
time, the capacity and every point with its accounting.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AQBENCH = Path(sys.executable).with_name("aqbench")
OUT = ROOT / "runs" / "sweep-proofs"
CASES = {"default": [], "latency-400": ["--fault-latency-ms", "400"]}
_SERVER_ARGV_END = '"--replicas", "{replicas}"]'


def _config(case: str) -> Path:
    text = (ROOT / "bench.toml").read_text()
    text = text.replace('output_dir = "runs"', f'output_dir = "{OUT / case}"')
    extra = "".join(f', "{a}"' for a in CASES[case])
    # The first argv ending this way is [server]'s ([models.reference] comes later and is not used by sweep).
    text = text.replace(_SERVER_ARGV_END, _SERVER_ARGV_END[:-1] + extra + "]", 1)
    path = OUT / f"{case}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _latest(case: str) -> Path:
    return max((OUT / case).iterdir(), key=lambda p: p.stat().st_mtime)


def _show(run: Path) -> dict[str, object]:
    sweep = json.loads((run / "sweep.json").read_text())
    cap = sweep["capacity"]
    print(f"  capacity: {cap['outcome']}, value {cap['value']} {cap['unit']}, {cap.get('level')} interval "
          f"[{cap.get('low')}, {cap.get('high')}], binding {cap.get('binding')} ({cap.get('shape')}); "
          f"half-width {cap.get('half_width')} against {cap.get('precision')} asked, reached {cap.get('reached')}, "
          f"requests needed {cap.get('requests_needed')}")
    print(f"  fit: {cap.get('estimate')}")
    print(f"  bracket: {cap['summary']}")
    for p in sweep["points"]:
        print(f"  point {p['offered']:g}: {p['outcome']}, achieved {p['achieved_rps']} req/s, p99 "
              f"{p['latency_p99_ms']} ms, accounting_balanced {p['accounting_balanced']}")
    return cap


def _case(case: str, max_duration: str) -> int:
    cfg = _config(case)
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    proc = subprocess.run([str(AQBENCH), "--log-level", "warning", "sweep", "--config", str(cfg), "--max-duration",
                           max_duration], cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    run = _latest(case)
    print(f"{case}: aqbench sweep --max-duration {max_duration} (server argv {' '.join(CASES[case]) or 'unchanged'}): "
          f"exit {proc.returncode}, wall {wall:.1f} s; load average before {load0:.2f}, after "
          f"{os.getloadavg()[0]:.2f}; run {run}")
    if not (run / "sweep.json").is_file():
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    cap = _show(run)
    balanced = all(p["accounting_balanced"] for p in json.loads((run / "sweep.json").read_text())["points"])
    print(f"  every point accounted: {balanced}")
    if case == "default":
        return 0 if proc.returncode == 0 and cap["outcome"] == "bracketed" and balanced else 1
    return 0 if balanced else 1


def _compare() -> int:
    base, cand = _latest("default"), _latest("latency-400")
    caps = [json.loads((r / "sweep.json").read_text())["capacity"] for r in (base, cand)]
    proc = subprocess.run([str(AQBENCH), "compare", str(base), str(cand), "--out", str(OUT / "compare")], cwd=ROOT,
                          capture_output=True, text=True)
    print(f"aqbench compare {base} {cand}: exit {proc.returncode}")
    print("\n".join(proc.stdout.strip().splitlines()[:6]))
    lower = caps[1]["value"] is not None and caps[0]["value"] is not None and caps[1]["value"] < caps[0]["value"]
    print(f"capacity default {caps[0]['value']} vs latency-400 {caps[1]['value']}: lower with the fault: {lower}")
    below = caps[1].get("high") is not None and caps[0].get("low") is not None and caps[1]["high"] < caps[0]["low"]
    print(f"intervals: default [{caps[0].get('low')}, {caps[0].get('high')}], latency-400 [{caps[1].get('low')}, "
          f"{caps[1].get('high')}]: the fault's wholly below: {below}")
    return 0 if lower else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--max-duration", default="5m")
    ap.add_argument("--compare", action="store_true", help="compare the latest default and latency-400 runs")
    args = ap.parse_args()
    if args.compare:
        return _compare()
    if not args.case:
        ap.error("--case or --compare")
    return _case(args.case, args.max_duration)


if __name__ == "__main__":
    raise SystemExit(main())

"""Which of AIPerf's processes grows over a soak: each one's RSS, sampled by its process title.

Runs a real `aqbench soak` (real AIPerf 0.13.0, one process tree for the whole soak) against the fast
scripted stub server (tests/data/stub_server.py, 2 ms per answer) in rate mode, and samples every
`--every` seconds the RSS of each process under it. AIPerf names its services' processes by
setproctitle ("aiperf worker_1a2b...", "aiperf records_manager", ...); the process that runs AIPerf's
command line keeps its argv ("... aiperf profile ..."). Prints, per process, its RSS after the first
minute and at the load's end (the last profiling request), the growth between them, the growth per request
the soak's journal counted over the same span (RequestCorrelated events), its CPU use while under load (% of
one core), and its last sample (after AIPerf's exports); then the client latency percentiles of the ok
profiling requests. `--series RSS.JSON --journal RUN_DIR` reprints the table from a kept run. Heavy: hold /tmp/aqbench-heavy.lock.

    flock /tmp/aqbench-heavy.lock .venv/bin/python bench/aiperf_processes.py --duration 240 --rate 20 \
        [--stock-gc] [--env MALLOC_MMAP_THRESHOLD_=131072]

`--stock-gc` keeps AIPerf 0.13.0's own collector setting in its worker (off), the "without" side of the
worker-GC comparison; by default the soak turns it on (adapters/aiperf/worker.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent


def _config(folder: Path, duration_s: float, window_s: float) -> Path:
    text = (REPO / "bench.toml").read_text()
    text = text.replace("request_timeout_s = 60.0", "request_timeout_s = 10.0", 1)
    text = text.replace('output_dir = "runs"', f'output_dir = "{folder / "runs"}"')
    stub = REPO / "tests" / "data" / "stub_server.py"
    text = re.sub(r'argv = \[.*?\]\n', f'argv = ["{{python}}", "{stub}", "--host", "{{host}}", "--port", "{{port}}", '
                  f'"--model-name", "{{model}}", "--records", "{{records}}", "--latency-ms", "2"]\n', text, count=1,
                  flags=re.S)
    text = re.sub(r"duration_s = 28800.0\nwindow_s = 300.0", f"duration_s = {duration_s}\nwindow_s = {window_s}", text)
    # The stub's answers are not the dataset's: correctness is not what this bench measures.
    text = text.replace("min_pass_rate = 0.9", "min_pass_rate = 0.0").replace("count = 1.0", "count = 0.0")
    path = folder / "bench.toml"
    path.write_text(text)
    return path


def _role(proc: psutil.Process) -> str | None:
    """AIPerf's service name for its process (hex ids dropped), None for a process that is not AIPerf's."""
    try:
        argv = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    if argv.startswith("aiperf "):
        return re.sub(r"_[0-9a-f]{6,}", "", argv.split()[1])
    if "aiperf" in argv and " profile " in f"{argv} ":
        return "main (aiperf profile)"
    return None


def _sample(root: psutil.Process) -> dict[str, tuple[str, float, float]]:
    """Per AIPerf process: its role, RSS (MiB) and CPU seconds so far (user + system)."""
    out: dict[str, tuple[str, float, float]] = {}
    try:
        children = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return out
    for proc in children:
        role = _role(proc)
        if role is None:
            continue
        try:
            cpu = proc.cpu_times()
            out[f"{role}#{proc.pid}"] = (role, proc.memory_info().rss / 2**20, cpu.user + cpu.system)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def _requests(run_dir: Path) -> tuple[list[int], list[float]]:
    """The end times (ns) of every correlated profiling request in the journal, sorted, and the client
    latencies (ms) of the ok ones."""
    ends, latencies = [], []
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        if '"request_correlated"' not in line:
            continue
        ev = json.loads(line)
        if ev.get("phase") == "profiling":
            ends.append(int(ev["ts_ns"]))
            if ev.get("ok") and ev.get("request_latency_ms") is not None:
                latencies.append(float(ev["request_latency_ms"]))
    return sorted(ends), sorted(latencies)


def _pct(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] if sorted_values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=240.0, help="soak seconds")
    ap.add_argument("--window", type=float, default=60.0, help="window seconds")
    ap.add_argument("--rate", type=float, default=20.0, help="requests per second")
    ap.add_argument("--concurrency", type=int, default=0, help="closed loop at this concurrency instead of --rate")
    ap.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    ap.add_argument("--skip", type=float, default=60.0, help="seconds of load before the first compared sample")
    ap.add_argument("--stock-gc", action="store_true",
                    help="keep AIPerf's own collector setting (off) in its worker, though the soak asks for it on")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="set in the soak's environment, which AIPerf inherits (e.g. MALLOC_MMAP_THRESHOLD_=131072)")
    ap.add_argument("--series", type=Path, help="a kept run's rss.json: reprint its table (with --journal), no soak")
    ap.add_argument("--journal", type=Path, help="with --series: that run's soak folder (holding events.jsonl)")
    args = ap.parse_args()
    if args.series is not None:
        kept = json.loads(args.series.read_text())
        return _table(args.journal, kept["roles"], kept["series"], args.skip, args.series)
    folder = Path(tempfile.mkdtemp(prefix="aqb-aiperf-procs-"))
    config = _config(folder, args.duration, args.window)
    soak = subprocess.Popen([sys.executable, "-m", "orchestrator", "--log-level", "warning", "soak", "--config",
                             str(config), *(["--concurrency", str(args.concurrency)] if args.concurrency
                                            else ["--rate", f"{args.rate:g}"])], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **dict(kv.split("=", 1) for kv in args.env),
                                 **({"AQBENCH_WORKER_GC_STOCK": "1"} if args.stock_gc else {})})
    root = psutil.Process(soak.pid)
    series: dict[str, list[tuple[int, float, float]]] = {}
    roles: dict[str, str] = {}
    while soak.poll() is None:
        now = time.time_ns()
        for key, (role, rss, cpu_s) in _sample(root).items():
            roles[key] = role
            series.setdefault(key, []).append((now, rss, cpu_s))
        time.sleep(args.every)
    output = soak.stdout.read() if soak.stdout else ""
    (folder / "rss.json").write_text(json.dumps({"roles": roles, "series": series}))
    runs = sorted((folder / "runs").glob("*soak-*"))
    if not runs:
        print(output[-3000:])
        return 1
    print(f"soak exit {soak.returncode}")
    return _table(runs[0], roles, series, args.skip, folder / "rss.json")


def _table(run_dir: Path, roles: dict[str, str], series: dict[str, list[tuple[int, float, float]]], skip: float,
           samples: Path) -> int:
    """Each AIPerf process's growth and CPU over the loaded span, from the samples and the soak's journal."""
    ends, lat = _requests(run_dir)
    print(f"{len(ends)} profiling requests; run dir {run_dir}; samples {samples}")
    print(f"client latency of ok profiling requests (ms): p50 {_pct(lat, 0.5):.2f} p90 {_pct(lat, 0.9):.2f} "
          f"p99 {_pct(lat, 0.99):.2f} p99.9 {_pct(lat, 0.999):.2f} max {lat[-1] if lat else float('nan'):.2f}")
    if not ends:
        return 1
    t0 = ends[0] + int(skip * 1e9)
    print(f"{'process':<34} {'samples':>7} {'RSS at +' + format(skip, 'g') + ' s':>12} {'at load end':>11} "
          f"{'growth':>8} {'requests':>8} {'KiB/request':>11} {'CPU % under load':>16} {'last sample':>12}")
    last_end = ends[-1]
    for key, points in sorted(series.items(), key=lambda kv: roles[kv[0]]):
        # Growth and CPU over the loaded span only (from +skip to the last request): AIPerf's final statistics
        # and exports after it (the system controller's ~45 MiB) are a one-time step, not growth per request.
        loaded = [p for p in points if t0 <= p[0] <= last_end]
        if len(loaded) < 2:
            continue
        (ta, va, _), (tb, vb, _) = loaded[0], loaded[-1]
        n = sum(1 for e in ends if ta <= e <= tb)
        per = (vb - va) * 1024 / n if n else float("nan")
        cpu = ((loaded[-1][2] - loaded[0][2]) / ((loaded[-1][0] - loaded[0][0]) / 1e9) * 100
               if loaded[-1][0] > loaded[0][0] else float("nan"))
        print(f"{key:<34} {len(points):>7} {va:>10.1f} M {vb:>8.1f} M {vb - va:>+7.1f}M {n:>8} {per:>11.2f} "
              f"{cpu:>16.1f} {points[-1][1]:>10.1f} M")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

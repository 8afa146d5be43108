"""AIPerf's timing manager in concurrency mode, spinning (AIPerf 0.13.0 as it is) and waiting for a freed slot
(aqbench's timing plugin, AQBENCH_TIMING_WAIT=1), side by side in one run.

Usage: flock /tmp/aqbench-heavy.lock .venv/bin/python bench/aiperf_timing.py [--pairs 2] [--duration 60]
           [--concurrency 2] [--latency-ms 2] [--with-handover]

Starts the scripted stub server (tests/data/stub_server.py, `--latency-ms` per answer) once, then runs
`aiperf profile` with the argv and environment `build_command` gives aqbench (closed loop, no warmup,
`--benchmark-duration`), alternating stock and wait (order swapped every pair). While each runs it samples the CPU
time of every AIPerf process (by process title) once a second. Per run it prints the timing manager's CPU (% of
one core) over the loaded span (first request's start + 5 s to the last request's end), the other AIPerf
processes' CPU, the profiling requests delivered, and the client latency p50/p90/p99 of the ok profiling
requests; then the medians per side and wait/stock ratios. `--with-handover` adds a third side, "handover": the
wait with a handover folder (ungated, never halted), what the plugin's 5 ms look at its files costs. Run from the repository root with PYTHONPATH=$PWD
when the tree is not the one installed (AIPerf's processes must load this tree's plugin).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from server_ready import wait_ready  # bench/ is on sys.path as the script's folder

from adapters.aiperf import build_command, ensure_tokenizer
from adapters.aiperf.handover import FileHandover
from adapters.aiperf.records import parse_export_line
from orchestrator.config import WorkloadConfig

ROOT = Path(__file__).resolve().parents[1]
SKIP_NS = 5_000_000_000  # start-up transients (worker connections, first requests) left out of the CPU span


def _role(proc: psutil.Process) -> str | None:
    try:
        argv = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    if argv.startswith("aiperf "):
        return re.sub(r"_[0-9a-f]{6,}", "", argv.split()[1])
    return None


def _sample(root: psutil.Process) -> dict[str, float]:
    """CPU seconds so far per AIPerf service (summed over replicas)."""
    out: dict[str, float] = {}
    try:
        children = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return out
    for proc in children:
        role = _role(proc)
        if role is None:
            continue
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out[role] = out.get(role, 0.0) + t.user + t.system
    return out


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def _run(kind: str, args: argparse.Namespace, url: str, rows: Path, tokenizer: Path, work: Path) -> dict[str, float]:
    # "stock" is AIPerf's own loop: [workload] timing = "stock" (the default waits, as every command's runs do).
    workload = WorkloadConfig(warmup_requests=0, requests=10_000_000, concurrency=args.concurrency,
                              request_timeout_s=10.0, timing="stock" if kind == "stock" else "wait")
    cmd = build_command(workload, base_url=url, model="stub", input_file=rows, artifact_dir=work / "artifacts",
                        tokenizer=tokenizer, live_tap=False, tmp_dir=work / "tmp",
                        control=FileHandover(work / "handover", gated=False) if kind == "handover" else None).extended(
        ["--benchmark-duration", f"{args.duration:g}", "--benchmark-grace-period", "5"])
    Path(cmd.env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AQBENCH_")}
    proc = subprocess.Popen(cmd.argv, env={**env, **cmd.env}, cwd=work, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    root = psutil.Process(proc.pid)
    series: list[tuple[int, dict[str, float]]] = []
    while proc.poll() is None:
        series.append((time.time_ns(), _sample(root)))
        time.sleep(1.0)
    recs = [parse_export_line(line) for line in (work / "artifacts" / "profile_export.jsonl").read_bytes().splitlines()]
    recs = [r for r in recs if r.phase == "profiling"]
    lat = sorted(r.request_latency_ms for r in recs if r.request_latency_ms is not None and not r.error_code)
    start = min(r.request_start_ns for r in recs if r.request_start_ns) + SKIP_NS
    end = max(r.request_end_ns for r in recs if r.request_end_ns)
    span = [(t, s) for t, s in series if start <= t <= end and s]
    (t0, s0), (t1, s1) = span[0], span[-1]
    cpu = {role: 100 * (s1.get(role, 0.0) - s0.get(role, 0.0)) / ((t1 - t0) / 1e9) for role in s1}
    return {"timing_manager": cpu.get("timing_manager", float("nan")),
            "others": sum(v for k, v in cpu.items() if k != "timing_manager"),
            "worker": cpu.get("worker", float("nan")), "record_processor": cpu.get("record_processor", float("nan")),
            "requests": float(len(recs)), "p50": _pct(lat, 0.5), "p90": _pct(lat, 0.9), "p99": _pct(lat, 0.99),
            "rc": float(proc.returncode)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--latency-ms", type=float, default=2.0)
    ap.add_argument("--with-handover", action="store_true")
    args = ap.parse_args()
    kinds = ("stock", "wait", "handover") if args.with_handover else ("stock", "wait")
    results: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="aqtb-", dir="/tmp") as d:
        work = Path(d)
        rows = work / "in.jsonl"
        rows.write_text("".join(json.dumps({"text": f"question {i}"}) + "\n" for i in range(200)))
        tokenizer = ensure_tokenizer()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "data" / "stub_server.py"), "--port", str(port),
                                   "--records", str(work / "srv.jsonl"), "--latency-ms", f"{args.latency_ms:g}"],
                                  start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, 30)
            for i in range(args.pairs):
                for kind in (kinds if i % 2 == 0 else kinds[::-1]):
                    got = _run(kind, args, url, rows, tokenizer, work / f"{kind}-{i}")
                    results[kind].append(got)
                    print(f"pair {i + 1} {kind:<8} timing manager {got['timing_manager']:5.1f} %  other AIPerf "
                          f"{got['others']:5.1f} %  requests {got['requests']:7.0f}  p50/p90/p99 {got['p50']:.2f} / "
                          f"{got['p90']:.2f} / {got['p99']:.2f} ms  exit {got['rc']:.0f}  (load average "
                          f"{os.getloadavg()[0]:.2f})", flush=True)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(10)
    print(f"load average before {load0[0]:.2f}, after {os.getloadavg()[0]:.2f}; concurrency {args.concurrency}, "
          f"{args.duration:g} s per run, stub answers in {args.latency_ms:g} ms")
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in results.items()}
    for key, label in (("timing_manager", "timing manager CPU %"), ("others", "other AIPerf CPU %"),
                       ("worker", "worker CPU %"), ("record_processor", "record processor CPU %"),
                       ("requests", "profiling requests"), ("p50", "p50 ms"), ("p90", "p90 ms"), ("p99", "p99 ms")):
        print(f"median {label:<24} " + "  ".join(f"{k} {med[k][key]:9.2f}" for k in kinds)
              + "  " + "  ".join(f"{k}/stock {med[k][key] / med['stock'][key]:.2f}" for k in kinds[1:]))
    return 0 if all(r["rc"] == 0 for v in results.values() for r in v) else 1


if __name__ == "__main__":
    sys.exit(main())

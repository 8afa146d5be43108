"""Benchmark `aqbench ingest` against DuckDB on the same generated files, both as whole processes.

Each side is a child process; its CPU seconds (user + system, every thread) and peak RSS come from the
child's resource usage (os.wait4). DuckDB reads both files with `read_json`, joins them by request id
(full outer join) and computes the grouped quantiles ingest reports (count, mean, p50/p90/p99, min, max
of five latency fields per phase and outcome); the bench checks that both found the same joins and
the same quantiles. `--follow` also follows a growing file and samples the follower's RSS.

Run: nice -n 19 .venv/bin/python bench/ingest.py [--lines 1000000] [--repeat 3] [--follow]
(goal: `aqbench ingest` >= DuckDB's lines per CPU-second on 1M lines).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import msgspec

T0 = 1_714_564_800_000_000_000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("request_latency_ms", "client_lifecycle_ms", "handler_ms", "model_call_ms", "worker_roundtrip_ms")


def _server_line(i: int) -> dict[str, Any]:
    return {
        "request_id": f"req-{i:08d}", "route": "/v1/chat/completions", "model": "whisper-qa", "replica": f"w{i % 4}",
        "status": 200 if i % 50 else 429, "handler_ms": 20.0 + i % 97 / 10, "admission_ms": 0.05,
        "model_call_ms": 15.0 + i % 89 / 10, "timing_scope": "public_task_call_wall", "worker_roundtrip_ms": 18.1,
        "setup_ms": 0.4, "prefill_ms": 3.2, "decode_ms": 11.0, "completion_tokens": 12,
        "completion_token_source": "family", "input_tokens": None, "streaming": "none",
        "audio": {"seconds": 3.5, "bytes": 112044, "format": "wav"}, "error_code": "",
        "start_unix_ns": T0 + i * 1_000_000, "end_unix_ns": T0 + i * 1_000_000 + 21_000_000,
    }


def _aiperf_line(i: int) -> dict[str, Any]:
    start = T0 + i * 1_000_000 - 500_000
    return {
        "metadata": {
            "session_num": i, "x_request_id": f"req-{i:08d}", "x_correlation_id": f"corr-{i % 64}",
            "conversation_id": f"item-{i % 55:04d}:audio", "turn_index": 0, "credit_issued_ns": start - 20_000,
            "request_start_ns": start, "request_ack_ns": None, "request_end_ns": start + 23_000_000 + i % 7 * 1000,
            "worker_id": "worker_0", "record_processor_id": "record_processor_0",
            "benchmark_phase": "profiling" if i > 100 else "warmup", "was_cancelled": False,
        },
        "metrics": {
            "request_latency": {"value": 23.0 + i % 101 / 10, "unit": "ms"},
            "output_sequence_length": {"value": 12, "unit": "tokens"},
            "input_sequence_length": {"value": 9, "unit": "tokens"},
            "output_token_throughput_per_user": {"value": 512.3, "unit": "tokens/sec/user"},
            "http_req_duration": {"value": 22.9, "unit": "ms"}, "http_req_waiting": {"value": 21.7, "unit": "ms"},
        },
        "error": None if i % 50 else {"code": 429, "type": "Too Many Requests", "message": "server_busy"},
    }


def _encode(make: Callable[[int], dict[str, Any]], lo: int, hi: int) -> bytes:
    enc = msgspec.json.Encoder()
    buf = bytearray()
    for i in range(lo, hi):
        enc.encode_into(make(i), buf, -1)
        buf += b"\n"
    return bytes(buf)


def _write(path: str, make: Callable[[int], dict[str, Any]], n: int) -> None:
    with open(path, "wb") as fh:
        for lo in range(0, n, 50_000):
            fh.write(_encode(make, lo, min(n, lo + 50_000)))


# DuckDB's side: the join and the statistics ingest reports, ok profiling requests per (phase, ok) group.
_DUCKDB = r"""
import json, sys, duckdb
rec, exp, out = sys.argv[1:4]
con = duckdb.connect()
con.execute(f"CREATE TEMP VIEW s AS SELECT request_id, status, handler_ms, model_call_ms, worker_roundtrip_ms, "
            f"end_unix_ns FROM read_json('{rec}', format='newline_delimited')")
con.execute(f"CREATE TEMP VIEW c AS SELECT metadata.x_request_id AS request_id, "
            f"metadata.benchmark_phase AS phase, metadata.request_start_ns AS t0, metadata.request_end_ns AS t1, "
            f"metrics.request_latency.value AS request_latency_ms, error FROM read_json('{exp}', format='newline_delimited')")
fields = ("request_latency_ms", "client_lifecycle_ms", "handler_ms", "model_call_ms", "worker_roundtrip_ms")
stats = ", ".join(f"count({f}), avg({f}), quantile_cont({f}, [0.5, 0.9, 0.99]), min({f}), max({f})" for f in fields)
rows = con.execute(f'''
  WITH j AS (
    SELECT coalesce(c.request_id, s.request_id) AS rid, c.request_id IS NOT NULL AS has_client,
           s.request_id IS NOT NULL AS has_server, c.phase,
           (c.error IS NULL AND s.request_id IS NOT NULL AND coalesce(s.status, 200) < 400) AS ok,
           c.request_latency_ms, (c.t1 - c.t0) / 1e6 AS client_lifecycle_ms,
           s.handler_ms, s.model_call_ms, s.worker_roundtrip_ms
    FROM c FULL OUTER JOIN s ON c.request_id = s.request_id)
  SELECT phase, ok, has_client, has_server, count(*), {stats} FROM j GROUP BY ALL ORDER BY ALL''').fetchall()
groups = []
for r in rows:
    g = {"phase": r[0], "ok": r[1], "has_client": r[2], "has_server": r[3], "rows": r[4]}
    for k, f in enumerate(fields):
        n, mean, q, lo, hi = r[5 + 5 * k: 10 + 5 * k]
        g[f] = {"count": n, "mean": mean, "p50": q[0] if q else None, "p90": q[1] if q else None,
                "p99": q[2] if q else None, "min": lo, "max": hi}
    groups.append(g)
json.dump(groups, open(out, "w"))
"""


class Measured(msgspec.Struct):
    cpu_s: float
    wall_s: float
    max_rss_mib: float


def _child(argv: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run `argv` to its end; its CPU (user + system, all threads) and peak RSS from wait4's rusage."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} exited {proc.returncode}")
    return Measured(cpu_s=usage.ru_utime + usage.ru_stime, wall_s=wall, max_rss_mib=usage.ru_maxrss / 1024)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled modules cached after the first run
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _aqbench(rec: str, exp: str, out: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator", "ingest", rec, exp, "--json", out]


def _check(summary: dict[str, Any], groups: list[dict[str, Any]], half: int) -> str:
    """Both sides found the same joins and the same statistics of ok profiling requests."""
    joined = sum(g["rows"] for g in groups if g["has_client"] and g["has_server"])
    assert summary["joined"] == joined == half, (summary["joined"], joined, half)
    (ok,) = [g for g in groups if g["phase"] == "profiling" and g["ok"]]
    assert summary["joined_ok"] == sum(g["rows"] for g in groups if g["ok"]), summary["joined_ok"]
    for f in FIELDS:
        mine, theirs = summary["latency_ms"][f], ok[f]
        assert mine["count"] == theirs["count"], (f, mine, theirs)
        for k in ("mean", "p50", "p90", "p99", "min", "max"):
            assert abs(mine[k] - theirs[k]) <= 1e-9 * max(1.0, abs(theirs[k])), (f, k, mine[k], theirs[k])
    return f"same joins ({joined}, {summary['joined_ok']} ok) and the same statistics of {len(FIELDS)} fields"


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def follow(tmp: str, lines: int, batch: int) -> None:
    """Follow two growing files (records and export, appended in step) and sample the follower's RSS."""
    rec, exp, out = (os.path.join(tmp, n) for n in ("f-records-1.jsonl", "f-profile_export.jsonl", "f.json"))
    open(rec, "wb").close()
    open(exp, "wb").close()
    proc = subprocess.Popen(_aqbench(rec, exp, out) + ["--follow"], stdout=subprocess.DEVNULL, env=_env())
    half, samples, t = lines // 2, [], time.perf_counter()
    try:
        for lo in range(0, half, batch):
            hi = min(half, lo + batch)
            with open(rec, "ab") as fh:
                fh.write(_encode(_server_line, lo, hi))
            with open(exp, "ab") as fh:
                fh.write(_encode(_aiperf_line, lo, hi))
            samples.append((2 * hi, _rss_kib(proc.pid)))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the follower has read everything (its CPU goes idle)
            before = _cpu(proc.pid)
            time.sleep(0.5)
            if _cpu(proc.pid) - before < 0.02:
                break
        samples.append((lines, _rss_kib(proc.pid)))
    finally:
        proc.send_signal(signal.SIGINT)
        _pid, _status, usage = os.wait4(proc.pid, 0)
    with open(out) as fh:
        summary = json.load(fh)
    print(f"follow: {lines} lines appended in batches of {2 * batch} over {time.perf_counter() - t:.0f} s; "
          f"joined {summary['joined']}; CPU {usage.ru_utime + usage.ru_stime:.1f} s; peak RSS "
          f"{usage.ru_maxrss / 1024:.0f} MiB")
    step = max(1, len(samples) // 8)
    print("  RSS after N lines: " + ", ".join(f"{n // 1000}k {kib / 1024:.0f} MiB" for n, kib in samples[::step]))


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        parts = fh.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000, help="total lines, half records, half AIPerf")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side, alternating; the best is compared")
    ap.add_argument("--follow", action="store_true", help="also follow growing files and sample the RSS")
    ap.add_argument("--follow-lines", type=int, default=1_000_000)
    args = ap.parse_args()
    half = args.lines // 2
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "records-1.jsonl")
        exp = os.path.join(tmp, "profile_export.jsonl")
        _write(rec, _server_line, half)
        _write(exp, _aiperf_line, half)
        size = os.path.getsize(rec) + os.path.getsize(exp)
        duck_py = os.path.join(tmp, "duck.py")
        with open(duck_py, "w") as fh:
            fh.write(_DUCKDB)
        summary_path, groups_path = os.path.join(tmp, "summary.json"), os.path.join(tmp, "groups.json")
        runs: dict[str, list[Measured]] = {"aqbench ingest": [], "duckdb": []}
        for _ in range(args.repeat):
            runs["aqbench ingest"].append(_child(_aqbench(rec, exp, summary_path), _env()))
            runs["duckdb"].append(_child([sys.executable, duck_py, rec, exp, groups_path]))
        with open(summary_path) as fh, open(groups_path) as gh:
            agreement = _check(json.load(fh), json.load(gh), half)
        print(f"{args.lines} lines ({size / 2**20:.0f} MiB): {half} server records + {half} AIPerf export lines; "
              f"{args.repeat} runs of each, alternating; load average {os.getloadavg()[0]:.2f}")
        best = {}
        for name, ms in runs.items():
            best[name] = min(ms, key=lambda m: m.cpu_s)
            print(f"  {name:<15} CPU " + " ".join(f"{m.cpu_s:.2f}" for m in ms) + " s; wall "
                  + " ".join(f"{m.wall_s:.2f}" for m in ms) + f" s; best {args.lines / best[name].cpu_s / 1e6:.3f} "
                  f"M lines per CPU-s; peak RSS " + " ".join(f"{m.max_rss_mib:.0f}" for m in ms) + " MiB")
        ratio = best["duckdb"].cpu_s / best["aqbench ingest"].cpu_s
        print(f"aqbench ingest / DuckDB, lines per CPU-second: {ratio:.2f}x (goal >= 1)")
        print(f"check: {agreement}")
        if args.follow:
            follow(tmp, args.follow_lines, 20_000)


if __name__ == "__main__":
    main()

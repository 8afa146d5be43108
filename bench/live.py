"""Live record streaming and correlation: lag from a request's end (`request_end_ns`) to its event on
the bus, through the live tap and through the profile_export.jsonl tailer, in one real AIPerf run
(against tests/data/stub_server.py); and the pure join core's throughput on a synthetic stream.

Run: .venv/bin/python bench/live.py [--requests 200] [--concurrency 4] [--records 300000]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from adapters.aiperf import build_command, check_install, ensure_tokenizer, run_aiperf
from adapters.trtmc.records_tail import ServerRecordsTailer
from orchestrator.config import WorkloadConfig
from orchestrator.correlate import Correlator, Joiner
from orchestrator.events import ClientRecord, RequestCorrelated, ServerRecord
from orchestrator.judge.stats import summarize
from orchestrator.spine.bus import Bus

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _lag_run(folder: Path, requests: int, concurrency: int, rate: float | None) -> dict[str, list[float]]:
    port = _free_port()
    records = folder / "server.jsonl"
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/data/stub_server.py"), "--port", str(port),
                               "--records", str(records), "--latency-ms", "20"])
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps({"session_id": f"item-{i}.transcript", "text": f"question {i}?"}) + "\n"
                            for i in range(16)))
    lags: dict[str, list[float]] = {"tap": [], "export": [], "correlated": []}
    try:
        await anyio.sleep(1.0)
        install = check_install()
        load = {"concurrency": None, "request_rate": rate} if rate else {"concurrency": concurrency}
        cmd = build_command(WorkloadConfig(warmup_requests=0, requests=requests, **load),
                            base_url=f"http://127.0.0.1:{port}", model="stub", input_file=rows,
                            artifact_dir=folder / "art", tokenizer=ensure_tokenizer())
        bus = Bus("bench-live")
        corr = Correlator(bus, match_timeout_s=2.0, answer_grace_s=0.0)
        tailer = ServerRecordsTailer(bus)
        async with anyio.create_task_group() as tg:
            sub = bus.subscribe("bench", size=1 << 20, lossy=True)
            await tg.start(corr.run)
            await tg.start(tailer.run)
            tailer.follow(records, 1)
            await run_aiperf(cmd, bus, window="bench", install=install)
            await corr.close_window("bench")
            tg.cancel_scope.cancel()
        while True:
            try:
                ev = sub.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if isinstance(ev, ClientRecord) and ev.request_end_ns:
                lags[ev.via].append((ev.ts_ns - ev.request_end_ns) / 1e6)
            elif isinstance(ev, RequestCorrelated) and ev.request_end_ns:
                lags["correlated"].append((ev.ts_ns - ev.request_end_ns) / 1e6)
        sub.close()
    finally:
        server.terminate()
        server.wait()
    return lags


def _synthetic(n: int) -> tuple[list, int]:
    rng = random.Random(0)
    t0 = 1_800_000_000_000_000_000
    stream: list = []
    for i in range(n):
        rid = f"{i:032x}"
        start = t0 + i * 1_000_000
        stream.append(ClientRecord(request_id=rid, via="tap", aiperf_run="w", phase="profiling",
                                   conversation_id=f"item-{i % 48}.audio", request_start_ns=start,
                                   request_end_ns=start + 90_000_000, status_code=200,
                                   request_latency_ms=90.0, answer="four"))
        stream.append(ServerRecord(request_id=rid, status=200, handler_ms=80.0, model_call_ms=70.0,
                                   worker_roundtrip_ms=75.0, timing_scope="public_task_call_wall",
                                   incarnation=1, end_unix_ns=start + 85_000_000))
        stream.append(ClientRecord(request_id=rid, via="export", aiperf_run="w", phase="profiling",
                                   conversation_id=f"item-{i % 48}.audio", request_start_ns=start,
                                   request_end_ns=start + 90_000_000, status_code=200, request_latency_ms=90.0))
    # Out of order within a sliding window of 64 records, as several processes write concurrently.
    for i in range(0, len(stream) - 64, 32):
        chunk = stream[i:i + 64]
        rng.shuffle(chunk)
        stream[i:i + 64] = chunk
    return stream, n


def _throughput(n: int) -> tuple[float, float, bool]:
    stream, requests = _synthetic(n)

    def parse_key(key: str) -> tuple[str, str]:
        item, _, arm = key.rpartition(".")
        return item, arm

    j = Joiner(key_parser=parse_key)
    add_c, add_s = j.add_client, j.add_server
    t = time.perf_counter()
    produced = 0
    for rec in stream:
        produced += len(add_c(rec) if type(rec) is ClientRecord else add_s(rec))
    acc = j.close_window("w")[-1]
    elapsed = time.perf_counter() - t
    return len(stream) / elapsed, requests / elapsed, acc.balanced and produced == requests


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--request-rate", type=float, default=None, help="open loop instead of --concurrency")
    p.add_argument("--records", type=int, default=100_000, help="synthetic requests (3 records each)")
    args = p.parse_args()
    rec_s, req_s, ok = _throughput(args.records)
    print(f"join core: {rec_s:,.0f} records/s ({req_s:,.0f} requests/s, tap+server+export per request), "
          f"balanced={ok}; goal 100,000 records/s -> {rec_s / 100_000:.2f}x")
    with tempfile.TemporaryDirectory(prefix="aqb-live-") as tmp:
        lags = anyio.run(_lag_run, Path(tmp), args.requests, args.concurrency, args.request_rate)
    load = f"request rate {args.request_rate}/s" if args.request_rate else f"concurrency {args.concurrency}"
    print(f"\nlag request_end_ns -> event on the bus, {args.requests} requests, {load}")
    print(f"{'path':<22}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'p99 / 50 ms goal':>18}")
    for name, label in (("tap", "live tap"), ("export", "export tailer"), ("correlated", "RequestCorrelated")):
        s = summarize(lags[name])
        print(f"{label:<22}{s.count:>6}{s.p50:>10.1f}{s.p99:>10.1f}{s.max:>10.1f}{s.p99 / 50:>18.2f}")
    tap, exp = summarize(lags["tap"]), summarize(lags["export"])
    print(f"\nexport / tap: p50 {exp.p50 / tap.p50:.2f}x, p99 {exp.p99 / tap.p99:.2f}x")


if __name__ == "__main__":
    main()

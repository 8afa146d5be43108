"""Benchmark `aqbench ingest`: lines/s for ingest + join of a generated server-records file and an AIPerf
export, against the ceiling of msgspec-decoding the same lines into typed Structs and a json.loads loop.

Run: .venv/bin/python bench/ingest.py [--lines 1000000]   (one core; prints ratios; goal >= 30 % of the
msgspec ceiling and >= 3x json.loads).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time

import msgspec

from adapters.aiperf.records import _ExportLine as AiperfView
from orchestrator.commands.wiring import log_codecs
from orchestrator.events import ServerRecord
from orchestrator.ingest import Ingest, new_joiner

T0 = 1_714_564_800_000_000_000


def _server_line(i: int) -> dict:
    return {
        "request_id": f"req-{i:08d}", "route": "/v1/chat/completions", "model": "whisper-qa", "replica": f"w{i % 4}",
        "status": 200 if i % 50 else 429, "handler_ms": 20.0 + i % 97 / 10, "admission_ms": 0.05,
        "model_call_ms": 15.0 + i % 89 / 10, "timing_scope": "public_task_call_wall", "worker_roundtrip_ms": 18.1,
        "setup_ms": 0.4, "prefill_ms": 3.2, "decode_ms": 11.0, "completion_tokens": 12,
        "completion_token_source": "family", "input_tokens": None, "streaming": "none",
        "audio": {"seconds": 3.5, "bytes": 112044, "format": "wav"}, "error_code": "",
        "start_unix_ns": T0 + i * 1_000_000, "end_unix_ns": T0 + i * 1_000_000 + 21_000_000,
    }


def _aiperf_line(i: int) -> dict:
    start = T0 + i * 1_000_000 - 500_000
    return {
        "metadata": {
            "session_num": i, "x_request_id": f"req-{i:08d}", "x_correlation_id": f"corr-{i % 64}",
            "conversation_id": f"item-{i % 55:04d}:audio", "turn_index": 0, "credit_issued_ns": start - 20_000,
            "request_start_ns": start, "request_ack_ns": None, "request_end_ns": start + 23_000_000,
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


def _write(path: str, make, n: int) -> None:
    enc = msgspec.json.Encoder()
    with open(path, "wb") as fh:
        buf = bytearray()
        for i in range(n):
            enc.encode_into(make(i), buf, -1)
            buf += b"\n"
            if len(buf) > 1 << 20:
                fh.write(buf)
                buf.clear()
        fh.write(buf)


class _NoJoin:
    """Stands in for the join to show what reading, detection and decoding cost apart from it."""

    def add_client(self, rec: object, now_ns: int = 0) -> list:
        return []

    def add_server(self, rec: object, now_ns: int = 0) -> list:
        return []

    def add_clients(self, recs: object, now_ns: int = 0) -> list:
        return []

    def add_servers(self, recs: object, now_ns: int = 0) -> list:
        return []

    def flush(self) -> list:
        return []


def _lines(path: str) -> list[bytes]:
    with open(path, "rb") as fh:
        return fh.read().splitlines()


def _timed(fn) -> float:
    """CPU seconds of this (single-threaded) process: the one-core cost, unaffected by other work
    waiting for the same cores on a shared machine (on an idle machine it equals wall time)."""
    gc.collect()
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000, help="total lines, half records, half AIPerf")
    ap.add_argument("--repeat", type=int, default=3, help="best of N")
    args = ap.parse_args()
    half = args.lines // 2
    with tempfile.TemporaryDirectory() as tmp:
        rec_path = os.path.join(tmp, "records-1.jsonl")
        exp_path = os.path.join(tmp, "profile_export.jsonl")
        _write(rec_path, _server_line, half)
        _write(exp_path, _aiperf_line, half)
        size = os.path.getsize(rec_path) + os.path.getsize(exp_path)
        rec_lines, exp_lines = _lines(rec_path), _lines(exp_path)
        total = len(rec_lines) + len(exp_lines)

        def loads() -> None:
            for line in rec_lines:
                json.loads(line)
            for line in exp_lines:
                json.loads(line)

        rec_dec = msgspec.json.Decoder(ServerRecord)
        exp_dec = msgspec.json.Decoder(AiperfView)

        def ceiling() -> None:
            for line in rec_lines:
                rec_dec.decode(line)
            for line in exp_lines:
                exp_dec.decode(line)

        def ceiling_kept() -> None:
            # The same decode, results kept (as ingest must until the join): memory costs included.
            # The cyclic GC is paused as ingest pauses it, so this row compares like with like.
            gc.disable()
            try:
                kept: list[object] = [rec_dec.decode(line) for line in rec_lines]
                kept += [exp_dec.decode(line) for line in exp_lines]
            finally:
                gc.enable()

        summaries = []

        def ingest() -> None:
            ing = Ingest(new_joiner(), log_codecs())
            ing.feed_path(rec_path)
            ing.feed_path(exp_path)
            summaries.append(ing.finish())

        def ingest_no_join() -> None:
            ing = Ingest(_NoJoin(), log_codecs())
            ing.feed_path(rec_path)
            ing.feed_path(exp_path)
            ing.finish()

        results = {}
        for name, fn in (("json.loads loop", loads), ("msgspec typed ceiling", ceiling),
                         ("msgspec, results kept", ceiling_kept), ("ingest, join skipped", ingest_no_join),
                         ("ingest + join", ingest)):
            results[name] = min(_timed(fn) for _ in range(args.repeat))
        s = summaries[-1]
        assert s.lines == total and s.bad_lines == 0, (s.lines, total, s.bad_lines)
        assert s.joined == half, (s.joined, half)

    print(f"{total} lines ({size / 2**20:.0f} MiB): {half} server records + {half} AIPerf export records; "
          f"best of {args.repeat}")
    for name, secs in results.items():
        print(f"  {name:<24} {secs:7.3f} s  {total / secs / 1e6:6.3f} M lines/s")
    ing_s = results["ingest + join"]
    print(f"ingest + join vs msgspec ceiling: {results['msgspec typed ceiling'] / ing_s:.0%} (goal >= 30%)")
    print(f"ingest + join vs json.loads:      {results['json.loads loop'] / ing_s:.2f}x (goal >= 3x)")
    no_join = results["ingest, join skipped"]
    print(f"without the join: {results['msgspec typed ceiling'] / no_join:.0%} of the ceiling, "
          f"{results['json.loads loop'] / no_join:.2f}x json.loads; the join is "
          f"{(ing_s - no_join) / total * 1e6:.2f} us of {ing_s / total * 1e6:.2f} us per line")
    print(f"joined {s.joined} requests, {s.joined_ok} ok; p50 latency {s.latency_ms['request_latency_ms'].p50:.1f} ms")


if __name__ == "__main__":
    main()

"""A scripted stand-in for the `aiperf` executable, to test run_aiperf's process handling cheaply.

Reads --artifact-dir from argv; FAKE_MODE picks the behaviour: ok, slow_sigint (stops cleanly on
SIGINT), ignore_sigint (must be killed), fail (exit 1, no files), torn (half a line, no marker, exit 143),
all_failed (every request answered 500, AIPerf's own "All N inference request(s) failed", exit 1, no marker),
lost (says it sent 7 requests, records 5, exits 1 without aggregates: AIPerf 0.13.0 after a server crash).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path


def _line(i: int, phase: str, status: int = 200) -> dict:
    now = time.time_ns()
    return {"metadata": {"x_request_id": str(uuid.uuid4()), "conversation_id": f"item-{i}.audio",
                         "session_num": i, "benchmark_phase": phase, "request_start_ns": now - 10_000_000,
                         "request_end_ns": now},
            "metrics": {"request_latency": {"value": 10.0, "unit": "ms"}},
            "trace_data": {"response_status_code": status, "response_headers": {"Server-Timing": "model;dur=5"}}}


def _finish(art: Path, n: int, cancelled: bool) -> None:
    (art / "phase_manifest.json").write_text(json.dumps({"phases": [
        {"phase_name": "profiling", "total_request_count": n, "successful_request_count": n,
         "error_request_count": 0, "was_cancelled": cancelled}]}))
    (art / "profile_export_aiperf.json").write_text(json.dumps({
        "request_count": {"avg": n}, "error_request_count": {"avg": 0}, "was_cancelled": cancelled,
        "is_complete": not cancelled}))
    (art / ".aiperf_results_ready.json").write_text(json.dumps({"ready": True, "was_cancelled": cancelled,
                                                                "partial": False}))


def main() -> int:
    art = Path(sys.argv[sys.argv.index("--artifact-dir") + 1])
    art.mkdir(parents=True, exist_ok=True)
    mode = os.environ.get("FAKE_MODE", "ok")
    print("12:00:00.000 INFO     Starting fake AIPerf", flush=True)
    if mode == "fail":
        print("12:00:00.001 ERROR    bad flag --nope", flush=True)
        return 1
    export = open(art / "profile_export.jsonl", "w")
    tap_dir = os.environ.get("AQBENCH_TAP_DIR")
    tap = open(Path(tap_dir) / f"tap-{os.getpid()}-rp.jsonl", "a") if tap_dir else None
    stop = {"flag": False}
    if mode == "slow_sigint":
        signal.signal(signal.SIGINT, lambda *_: stop.update(flag=True))
    elif mode == "ignore_sigint":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    n = 0
    total = 5 if mode in ("ok", "torn", "all_failed", "lost") else 10_000
    for i in range(total):
        if stop["flag"]:
            break
        rec = _line(i, "profiling", 500 if mode == "all_failed" else 200)
        export.write(json.dumps(rec) + "\n")
        export.flush()
        if tap:
            md = rec["metadata"]
            tap.write(json.dumps({"request_id": md["x_request_id"], "conversation_id": md["conversation_id"],
                                  "phase": "profiling", "request_start_ns": md["request_start_ns"],
                                  "request_end_ns": md["request_end_ns"], "status": 200, "text": "four"}) + "\n")
            tap.flush()
        n += 1
        time.sleep(0.02)
    sent = n + 2 if mode == "lost" else n
    # AIPerf 0.13.0's timing manager, once its phase has sent every credit (timing/phase/runner.py).
    print(f"12:00:01.000 NOTICE   Phase profiling (profiling) sending complete | sent={sent:,}, completed={n:,}, "
          f"in_flight={sent - n:,}", flush=True)
    if mode == "lost":
        return 1
    if mode == "all_failed":
        # As AIPerf 0.13.0's system controller: its error, then the shutdown chatter, exit 1, no marker.
        print(f"12:00:01.000 ERROR    All {n} inference request(s) failed; no successful responses were "
              "collected.", flush=True)
        print("12:00:01.010 INFO     Stopping services", flush=True)
        print("12:00:01.020 INFO     Services stopped", flush=True)
        print("12:00:01.030 INFO     Shutting down", flush=True)
        print("12:00:01.040 INFO     Goodbye", flush=True)
        print("12:00:01.050 INFO     Exit", flush=True)
        return 1
    if mode == "torn":
        export.write('{"metadata": {"x_request_id": "half')
        export.flush()
        return 143  # as AIPerf on SIGTERM: records cut short, no aggregates, no marker
    _finish(art, n, cancelled=stop["flag"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

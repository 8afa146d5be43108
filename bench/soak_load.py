"""A fast scripted stand-in for the `aiperf` executable, for soak benchmarks of aqbench itself.

Understands the argv aqbench builds (--url, --model, --input-file, --concurrency or --request-rate, --warmup-request-count,
--benchmark-duration, --artifact-dir) and AQBENCH_TAP_DIR: sends real chat requests (X-Request-ID per
request) in a closed loop, writes one live-tap line per request exactly as the aqbench tap plugin does,
and on the end of its duration or SIGINT writes the files AIPerf finishes with. Costs a few MiB and a
fraction of a core instead of AIPerf's ~0.8 GB and busy-polling timer.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import aiohttp


def _arg(name: str, default: str = "") -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def _finish(art: Path, counts: dict[str, int], cancelled: bool) -> None:
    n = counts["profiling"]
    (art / "phase_manifest.json").write_text(json.dumps({"phases": [
        {"phase_name": "profiling", "total_request_count": n, "successful_request_count": n - counts["errors"],
         "error_request_count": counts["errors"], "was_cancelled": cancelled}]}))
    (art / "profile_export_aiperf.json").write_text(json.dumps({
        "request_count": {"avg": n}, "error_request_count": {"avg": counts["errors"]}, "was_cancelled": cancelled,
        "is_complete": not cancelled}))
    (art / ".aiperf_results_ready.json").write_text(json.dumps({"ready": True, "was_cancelled": cancelled,
                                                                "partial": False}))


async def _main() -> int:
    if "--artifact-dir" not in sys.argv:  # e.g. `--help` from `aqbench doctor`: write nothing in the cwd
        print("soak_load.py: a scripted AIPerf stand-in; needs --artifact-dir DIR --url URL --model M "
              "--input-file F", file=sys.stderr)
        return 2
    art = Path(_arg("--artifact-dir"))
    art.mkdir(parents=True, exist_ok=True)
    (art / "profile_export.jsonl").touch()
    url = _arg("--url").rstrip("/") + "/v1/chat/completions"
    model = _arg("--model")
    rows = [json.loads(line) for line in Path(_arg("--input-file")).read_text().splitlines() if line.strip()]
    concurrency = int(_arg("--concurrency", "1"))
    warmup = int(_arg("--warmup-request-count", "0"))
    duration_s = float(_arg("--benchmark-duration", "10"))
    tap_dir = os.environ.get("AQBENCH_TAP_DIR", "")
    fd = os.open(Path(tap_dir) / f"tap-{os.getpid()}-load.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                 0o644) if tap_dir else None
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    counts = {"profiling": 0, "warmup": 0, "errors": 0}
    next_row = 0

    async def one(session: aiohttp.ClientSession, phase: str) -> None:
        nonlocal next_row
        row = rows[next_row % len(rows)]
        next_row += 1
        rid = str(uuid.uuid4())
        body = {"model": model, "messages": [{"role": "user", "content": row.get("text", "")}], "stream": False}
        start = time.time_ns()
        status, text, headers, error = None, None, {}, None
        try:
            async with session.post(url, json=body, headers={"X-Request-ID": rid}) as resp:
                status, headers = resp.status, {k.lower(): v for k, v in resp.headers.items()}
                payload = await resp.json()
                if status == 200:
                    text = payload["choices"][0]["message"]["content"]
                else:
                    error = {"code": status, "type": "HTTPError", "message": json.dumps(payload), "cause": None}
        except (TimeoutError, aiohttp.ClientError) as exc:
            error = {"code": None, "type": type(exc).__name__, "message": str(exc), "cause": None}
        end = time.time_ns()
        counts[phase] += 1
        counts["errors"] += error is not None and phase == "profiling"
        line = {"request_id": rid, "correlation_id": rid, "conversation_id": row.get("session_id", ""),
                "phase": phase, "session_num": counts[phase], "worker_id": "load-0", "credit_issued_ns": start,
                "request_start_ns": start, "request_ack_ns": end, "request_end_ns": end, "status": status,
                "error": error, "was_cancelled": False, "text": text, "headers": headers, "observed_ns": end,
                "request_latency_ms": (end - start) / 1e6}
        if fd is not None:
            os.write(fd, (json.dumps(line) + "\n").encode())

    async with aiohttp.ClientSession() as session:
        for _ in range(warmup):
            await one(session, "warmup")
        deadline = time.monotonic() + duration_s
        rate = float(_arg("--request-rate", "0"))

        async def worker() -> None:
            while not stop.is_set() and time.monotonic() < deadline:
                await one(session, "profiling")

        async def open_loop() -> None:
            # A constant rate, each request in its own task (AIPerf's --request-rate, constant arrivals).
            tasks: set[asyncio.Task[None]] = set()
            start = time.monotonic()
            sent = 0
            while not stop.is_set() and time.monotonic() < deadline:
                due = start + sent / rate
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                task = asyncio.ensure_future(one(session, "profiling"))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                sent += 1
            await asyncio.gather(*tasks)

        await (open_loop() if rate > 0 else asyncio.gather(*(worker() for _ in range(concurrency))))
    for phase in ("warmup", "profiling"):  # as AIPerf 0.13.0 logs it (the soak's accounting reads it)
        if counts[phase]:
            print(f"Phase {phase} ({phase}) sending complete | sent={counts[phase]:,}, completed={counts[phase]:,}, "
                  "in_flight=0", flush=True)
    _finish(art, counts, cancelled=stop.is_set())
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(_main()))

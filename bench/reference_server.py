"""Benchmark the reference server: requests/s and HTTP+decode overhead (handler_ms - model_call_ms)
against engine time (model_call_ms), at concurrency 1 and 4, for signal-only and speech items.

Usage: .venv/bin/python bench/reference_server.py [--requests 24] [--replicas 4]
Starts `python -m adapters.reference` on a free loopback port; reads the overhead from its records.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
AUDIO = REPO / "datasets" / "audioqa-v1" / "audio"
SETS = {
    "signal": [("beeps-5.wav", "wav", "How many beeps do you hear?"),
               ("tone-1k.wav", "wav", "What is the frequency of the tone, in hertz?"),
               ("tones-up.wav", "wav", "Which tone is higher, the first or the second?")],
    "speech": [("meeting.wav", "wav", "On which day of the week is the meeting?"),
               ("euros.flac", "flac", "How many euros are left?"),
               ("platform.ogg", "ogg", "Which platform does the train leave from?")],
}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _body(name: str, fmt: str, question: str) -> bytes:
    data = base64.b64encode((AUDIO / name).read_bytes()).decode()
    return json.dumps({"model": "bench", "messages": [{"role": "user", "content": [
        {"type": "text", "text": question},
        {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}]}]}).encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=24, help="requests per (set, concurrency) cell")
    ap.add_argument("--replicas", type=int, default=4)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(prefix="aqbench-refbench-"))
    records = tmp / "records.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "adapters.reference", "--port", str(port),
                             "--model-name", "bench", "--replicas", str(args.replicas),
                             "--records", str(records)], cwd=REPO, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    peak_rss = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak_rss
        p = psutil.Process(proc.pid)
        while not stop.is_set():
            try:
                peak_rss = max(peak_rss, p.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.05)

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("server did not become ready in 60 s") from None
                time.sleep(0.2)
        threading.Thread(target=sample, daemon=True).start()
        print(f"{'set':7s} {'conc':>4s} {'req/s':>6s} {'engine p50':>10s} {'engine p99':>10s} "
              f"{'overhead p50':>12s} {'overhead p99':>12s} {'p50 ratio':>9s}")
        for set_name, items in SETS.items():
            bodies = [_body(*it) for it in items]
            # Warm each set once so first-call costs stay out of the figures.
            for b in bodies:
                urllib.request.urlopen(urllib.request.Request(url, data=b, headers={
                    "Content-Type": "application/json", "X-Request-ID": f"warm-{time.time_ns()}"}))
            for conc in (1, 4):
                prefix = f"{set_name}-c{conc}-"

                def one(i: int, bodies: list[bytes] = bodies, prefix: str = prefix) -> None:
                    req = urllib.request.Request(url, data=bodies[i % len(bodies)], headers={
                        "Content-Type": "application/json", "X-Request-ID": f"{prefix}{i}"})
                    while True:
                        try:
                            urllib.request.urlopen(req, timeout=120).read()
                            return
                        except urllib.error.HTTPError as e:
                            if e.code != 429:
                                raise
                            time.sleep(0.05)

                t0 = time.perf_counter()
                with ThreadPoolExecutor(conc) as pool:
                    list(pool.map(one, range(args.requests)))
                wall = time.perf_counter() - t0
                time.sleep(0.3)
                recs = [r for r in map(json.loads, records.read_text().splitlines())
                        if r["request_id"].startswith(prefix) and r["status"] == 200]
                engine = [r["model_call_ms"] for r in recs]
                over = [r["handler_ms"] - r["model_call_ms"] for r in recs]
                print(f"{set_name:7s} {conc:4d} {len(recs) / wall:6.2f} {_pct(engine, .5):9.1f}ms "
                      f"{_pct(engine, .99):9.1f}ms {_pct(over, .5):11.2f}ms {_pct(over, .99):11.2f}ms "
                      f"{_pct(over, .5) / statistics.median(engine):9.2%}")
        print(f"peak server RSS: {peak_rss / 2**20:.0f} MiB")
    finally:
        stop.set()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())

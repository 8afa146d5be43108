"""Are two identically configured reference servers on one host exchangeable? (issue 32, the A/A that read
"improved"). Starts two reference servers as `aqbench ab` does (same argv, both running), alternates blocks
of chat requests between them in the ABBA/BAAB order, without AIPerf (a plain aiohttp client at concurrency
2), and reads each answer's model-call time from its Server-Timing header. Also reads each server's CPU
time (/proc) before and after every block, so the idle server's own work while the other is loaded shows.

Run (under the heavy lock, it starts real servers):
    flock /tmp/aqbench-heavy.lock .venv/bin/python bench/ab_instances.py [--pairs 6] [--block-requests 40]
        [--first A|B] [--cpu-threads N] [--omp-passive]

Prints one JSON line per block and a summary: per pair log(B p50 / A p50) of model-call time, their mean
and a t interval, and the idle server's CPU seconds per block.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np
from scipy.stats import t as student_t

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.ab.plan import block_order, pairs_of  # noqa: E402
from orchestrator.dataset import interleave_kinds, load_dataset, prepare_arms  # noqa: E402

MODEL = "reference-audioqa"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """The process's user + system CPU seconds (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bodies(tmp: Path) -> list[dict[str, object]]:
    dataset = load_dataset(ROOT / "datasets" / "audioqa-v1")
    rows = interleave_kinds(prepare_arms(dataset, ["audio", "transcript"], tmp / "wire"), dataset)
    out = []
    for r in rows:
        content: list[dict[str, object]] = [{"type": "text", "text": r.text}]
        if r.audio_path is not None:
            data = base64.b64encode(Path(r.audio_path).read_bytes()).decode()
            content.append({"type": "input_audio", "input_audio": {"data": data, "format": r.wire_format}})
        out.append({"model": MODEL, "messages": [{"role": "user", "content": content}], "temperature": 0})
    return out


async def _ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"server on {port} exited {proc.returncode}")
            try:
                async with http.get(f"http://127.0.0.1:{port}/health/ready") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"server on {port} not ready")


async def _block(port: int, bodies: list[dict[str, object]], warmup: int, requests: int) -> list[float]:
    """warmup + requests chat requests, rows in file order from the first, at concurrency 2; model ms each."""
    queue = list(range(warmup + requests))
    model_ms: dict[int, float] = {}

    async def worker(http: aiohttp.ClientSession) -> None:
        while queue:
            i = queue.pop(0)
            while True:
                async with http.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     json=bodies[i % len(bodies)]) as r:
                    await r.read()
                    if r.status == 429:  # a replica still finishing: no queue in the server
                        await asyncio.sleep(0.01)
                        continue
                    m = re.search(r"dur=([0-9.]+)", r.headers.get("Server-Timing", ""))
                    if i >= warmup and m:
                        model_ms[i] = float(m[1])
                    break

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
        await asyncio.gather(worker(http), worker(http))
    return [model_ms[i] for i in sorted(model_ms)]


def _start(port: int, args: argparse.Namespace, records: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if args.omp_passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    cmd = [sys.executable, "-m", "adapters.reference", "--host", "127.0.0.1", "--port", str(port), "--model-name",
           MODEL, "--records", str(records), "--replicas", "2"] + (["--cpu-threads", str(args.cpu_threads)] if args.cpu_threads else [])
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def main_async(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="ab-inst-") as tmp:
        bodies = _bodies(Path(tmp))
        ports = {"A": _free_port(), "B": _free_port()}
        procs: dict[str, subprocess.Popen[bytes]] = {}
        try:
            for side in (args.first, "B" if args.first == "A" else "A"):  # started one after the other, as ab
                procs[side] = _start(ports[side], args, Path(tmp) / f"records-{side}.jsonl")
                await _ready(ports[side], procs[side])
            order = block_order(args.pairs, args.seed)
            p50: dict[int, float] = {}
            for k, side in enumerate(order):
                other = "B" if side == "A" else "A"
                cpu0 = {s: _cpu_s(procs[s].pid) for s in procs}
                t0 = time.monotonic()
                ms = await _block(ports[side], bodies, args.block_warmup, args.block_requests)
                wall = time.monotonic() - t0
                cpu = {s: round(_cpu_s(procs[s].pid) - cpu0[s], 2) for s in procs}
                p50[k] = float(np.median(ms))
                print(json.dumps({"block": k, "side": side, "n": len(ms), "model_p50_ms": round(p50[k], 1),
                                  "model_p90_ms": round(float(np.quantile(ms, 0.9)), 1), "wall_s": round(wall, 1),
                                  "cpu_s_loaded": cpu[side], "cpu_s_idle_other": cpu[other]}), flush=True)
            changes = [math.log(p50[b] / p50[a]) for a, b in pairs_of(order)]
            mean, se = float(np.mean(changes)), float(np.std(changes, ddof=1) / math.sqrt(len(changes)))
            t = float(student_t.ppf(0.95, len(changes) - 1))
            print(json.dumps({"first_started": args.first, "ports": ports, "order": order,
                              "pair_changes_pct": [round(math.expm1(c) * 100, 1) for c in changes],
                              "mean_change_pct": round(math.expm1(mean) * 100, 1),
                              "interval90_pct": [round(math.expm1(mean - t * se) * 100, 1),
                                                 round(math.expm1(mean + t * se) * 100, 1)]}), flush=True)
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                proc.wait(30)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=6)
    p.add_argument("--block-requests", type=int, default=40)
    p.add_argument("--block-warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--first", choices=("A", "B"), default="A", help="which server starts first")
    p.add_argument("--cpu-threads", type=int, default=0)
    p.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE in both servers")
    return asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())

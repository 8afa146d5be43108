"""Supervisor latencies and sampler cost, each beside the figure it is judged against.

1. Readiness: ServerReady's time minus the moment the scripted server says its socket listens
   (both CLOCK_MONOTONIC), against the start-up probe period.
2. Crash: SIGKILL sent -> ServerExited published, against the 200 ms goal and against what a health poll
   would need (health_period_s x health_failure_threshold).
3. Sampler: CPU of this process per second of wall time while sampling a server tree at 1 s and 0.1 s,
   minus an idle loop with the same wake-ups, against 1 % of a core.

Run: .venv/bin/python bench/supervisor.py [--rounds 10] [--sample-seconds 20]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil

from adapters.server.sampler import PsutilSampler
from adapters.server_kinds import server_parts
from orchestrator.config import config_from_dict
from orchestrator.events import LogLine, ServerExited, ServerReady
from orchestrator.spine.bus import Bus
from orchestrator.spine.logs import configure_logging
from orchestrator.supervision.supervisor import ServerSpec, supervised

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "tests" / "data" / "servers" / "scripted_server.py"


def _spec(run_dir: Path, restarts: int) -> ServerSpec:
    cfg = config_from_dict({
        "server": {"argv": ["{python}", str(SERVER), "--host", "{host}", "--port", "{port}", "--model-name", "{model}"],
                   "startup_timeout_s": 30.0, "health_period_s": 1.0, "health_failure_threshold": 3,
                   "stop_grace_s": 5.0, "sample_period_s": 1.0,
                   "restart": {"max_restarts": restarts, "window_s": 3600.0, "backoff_s": 0.0, "backoff_max_s": 0.0}},
        "models": [{"name": "bench-model", "family": "b", "checkpoint": "b/c", "correctness": {"min_pass_rate": 1.0}}],
    }, where="bench", base=run_dir)
    return ServerSpec.from_config(cfg, cfg.models[0], run_dir, parts=server_parts(cfg.server.kind))


async def readiness_and_crash(rounds: int) -> tuple[list[float], list[float], float]:
    """One supervisor; each round kills the server with SIGKILL and waits for the next incarnation."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(Path(tmp), restarts=rounds)
        bus = Bus("bench")
        sub = bus.subscribe("bench", size=1_000_000)
        kills: list[int] = []
        async with supervised(spec, bus) as handle:
            for i in range(rounds):
                with anyio.fail_after(30):
                    while handle.incarnation < i + 1 or handle.state != "ready":
                        await anyio.sleep(0.01)
                await anyio.sleep(0.3)
                kills.append(time.monotonic_ns())
                os.kill(handle.pid, signal.SIGKILL)
            with anyio.fail_after(30):
                while handle.incarnation < rounds + 1 or handle.state != "ready":
                    await anyio.sleep(0.01)
        events = []
        while True:
            try:
                events.append(sub.receive_nowait())
            except anyio.WouldBlock:
                break
    listening = {e.incarnation: e.fields["mono_ns"] for e in events
                 if isinstance(e, LogLine) and e.fields and e.fields.get("event") == "listening"}
    ready_ms = [(e.mono_ns - listening[e.incarnation]) / 1e6 for e in events if isinstance(e, ServerReady)]
    crashes = [e for e in events if isinstance(e, ServerExited) and not e.expected]
    crash_ms = [(e.mono_ns - k) / 1e6 for e, k in zip(crashes, kills, strict=True)]
    return ready_ms, crash_ms, spec.startup_probe_period_s * 1000


async def sampler_cpu(period_s: float, seconds: float, pid: int, *, sample: bool) -> tuple[float, float]:
    """CPU % of one core used by this process while (not) sampling `pid` every period; ms per sample."""
    sampler = PsutilSampler()
    limiter = anyio.CapacityLimiter(1)
    n = 0
    spent = 0.0
    cpu0, wall0 = time.process_time(), time.monotonic()
    next_at = wall0
    while time.monotonic() - wall0 < seconds:
        if sample:
            t = time.perf_counter()
            await anyio.to_thread.run_sync(sampler.sample, pid, limiter=limiter)
            spent += time.perf_counter() - t
            n += 1
        else:
            await anyio.to_thread.run_sync(lambda: None, limiter=limiter)
        next_at += period_s
        await anyio.sleep(max(0.0, next_at - time.monotonic()))
    cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0) * 100
    sampler.close()
    return cpu, (spent / n * 1000) if n else 0.0


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def main(rounds: int, sample_seconds: float) -> None:
    ready_ms, crash_ms, period_ms = await readiness_and_crash(rounds)
    print(f"readiness delay after the server listens ({len(ready_ms)} starts): median {statistics.median(ready_ms):.1f} ms, "
          f"max {max(ready_ms):.1f} ms; probe period {period_ms:.0f} ms; ratio max/period {max(ready_ms) / period_ms:.2f}")
    poll_ms = 1000.0 * 3
    print(f"kill -> ServerExited ({len(crash_ms)} kills): median {statistics.median(crash_ms):.1f} ms, "
          f"max {max(crash_ms):.1f} ms; goal 200 ms (ratio {max(crash_ms) / 200:.3f}); "
          f"a health poll would need ~{poll_ms:.0f} ms (ratio {statistics.median(crash_ms) / poll_ms:.4f})")
    # A server-like tree: the scripted server plus a grandchild, sampled as the supervisor does.
    port = str(_free_port())
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port", port, "--grandchild"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        await anyio.sleep(1.0)
        for period in (1.0, 0.1):
            idle, _ = await sampler_cpu(period, sample_seconds, proc.pid, sample=False)
            busy, per = await sampler_cpu(period, sample_seconds, proc.pid, sample=True)
            print(f"sampler at {period:g} s: {busy - idle:.2f} % of a core above an idle loop "
                  f"({busy:.2f} % vs {idle:.2f} %), {per:.2f} ms per sample; goal 1 % at 1 s "
                  f"(ratio {(busy - idle) / 1.0:.2f})")
    finally:
        kids = psutil.Process(proc.pid).children(recursive=True)  # the grandchild is in its own session
        os.killpg(proc.pid, signal.SIGKILL)
        for kid in kids:
            kid.kill()
        proc.wait()
        psutil.wait_procs(kids, timeout=5)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--sample-seconds", type=float, default=20.0)
    args = ap.parse_args()
    configure_logging(fmt="json", level="warning")
    anyio.run(main, args.rounds, args.sample_seconds)

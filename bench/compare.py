"""Benchmark `aqbench compare`: time and peak memory to compare two runs of N requests each.

Run: .venv/bin/python bench/compare.py [--requests 100000]   (pinned to one core; goal: under 5 s).
CPU time is reported beside wall time: on a shared machine the wall clock also counts other work.
The journals are synthetic, run-aiperf-shaped: one model, one AIPerf window, seeded lognormal latencies
over 400 dataset items, one verdict per item; the candidate's model call is 10 % slower.
"""

from __future__ import annotations

import os

# One core: BLAS threads off before numpy loads, and the process pinned where the OS allows it.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import resource  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import msgspec  # noqa: E402
import numpy as np  # noqa: E402

from orchestrator.compare import compare_runs, write_comparison  # noqa: E402
from orchestrator.config import CompareConfig  # noqa: E402
from orchestrator.events import (  # noqa: E402
    AiperfRunPhase,
    AiperfStarted,
    AnyEvent,
    DatasetPhase,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RunFinished,
    RunStarted,
    VerdictReached,
)
from orchestrator.spine.journal import encode_event, iter_journal  # noqa: E402

T0 = 1_764_547_200_000_000_000
ITEMS = 400


def write_journal(path: Path, requests: int, *, seed: int, slower: float) -> int:
    """A run-aiperf-shaped journal of `requests` correlated requests; returns its event count."""
    rng = np.random.default_rng(seed)
    costs = 200.0 * np.random.default_rng(7).lognormal(0.0, 0.5, ITEMS)
    call = costs[np.arange(requests) % ITEMS] * rng.lognormal(0.0, 0.25, requests) * slower
    client = call + 1.5 + rng.exponential(3.0, requests)
    argv = ["aiperf", "profile", "--model", "m", "--url", f"http://127.0.0.1:{8000 + seed}", "--request-count",
            str(requests), "--concurrency", "8", "--artifact-dir", f"/runs/{seed}"]
    seq, clock = 0, T0
    buf = bytearray()
    with path.open("wb") as fh:

        def put(ev: AnyEvent) -> None:
            nonlocal seq
            seq += 1
            buf.extend(encode_event(msgspec.structs.replace(ev, seq=seq, ts_ns=clock, run_id=f"bench-{seed}")))
            buf.extend(b"\n")
            if len(buf) > 1 << 20:
                fh.write(buf)
                buf.clear()

        put(RunStarted(command="run-aiperf"))
        put(PhaseFinished(phase="dataset", detail=DatasetPhase(name="bench", identity="sha256:bench", items=ITEMS)))
        put(PhaseStarted(phase="aiperf", model="m", detail=AiperfRunPhase(arms=["audio"])))
        put(AiperfStarted(window="m/aiperf-1", argv=argv, shell=" ".join(argv), artifact_dir="/a", version="0.13.0"))
        for i in range(requests):
            clock += int(client[i] * 1e6 / 8)
            item = f"item-{i % ITEMS:03d}"
            put(RequestCorrelated(
                request_id=f"req-{i:08d}", window="m/aiperf-1", phase="profiling", conversation_id=f"{item}#0",
                item_id=item, arm="audio", ok=True, http_status=200, answer=f"answer {item}",
                request_start_ns=clock - int(client[i] * 1e6), request_end_ns=clock,
                request_latency_ms=float(client[i]), handler_ms=float(call[i]) + 1.5, model_call_ms=float(call[i]),
                timing_scope="public_task_call_wall"))
        for j in range(ITEMS):
            put(VerdictReached(model="m", item_id=f"item-{j:03d}", arm="audio", path="http", verdict="correct",
                               answer=f"answer item-{j:03d}", item_kind="fact"))
        put(RunFinished(status="ok"))
        fh.write(buf)
    return seq


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory() as tmp:
        base, cand = Path(tmp) / "base.jsonl", Path(tmp) / "cand.jsonl"
        events = write_journal(base, args.requests, seed=1, slower=1.0)
        write_journal(cand, args.requests, seed=2, slower=1.10)
        size = base.stat().st_size
        cfg = CompareConfig()
        gc.collect()
        t = time.process_time()
        for path in (base, cand):
            for _ev in iter_journal(path):
                pass
        t_decode = time.process_time() - t
        gc.collect()
        t, cpu = time.perf_counter(), time.process_time()
        result = compare_runs(base, cand, cfg)
        t_compare, cpu_compare = time.perf_counter() - t, time.process_time() - cpu
        t = time.perf_counter()
        write_comparison(result, Path(tmp) / "out")
        t_write = time.perf_counter() - t
        gc.collect()
        tracemalloc.start()
        compare_runs(base, cand, cfg)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    regressed = [f.key for m in result.models for f in m.figures if f.change == "regressed"]
    print(f"journals: 2 x {events:,} events, {size / 2**20:.1f} MiB each ({args.requests:,} requests)")
    print(f"{'measure':<52}{'result':>14}")
    print(f"{'ceiling: decode both journals only (iter_journal), CPU':<52}{t_decode:>12.2f} s")
    print(f"{'compare_runs (load both + every figure), CPU':<52}{cpu_compare:>12.2f} s")
    print(f"{'compare_runs, wall clock (shared machine)':<52}{t_compare:>12.2f} s")
    print(f"{'  ratio compare / decode (CPU)':<52}{cpu_compare / t_decode:>14.2f}")
    print(f"{'write compare.json + .md + .html':<52}{t_write * 1000:>11.1f} ms")
    print(f"{'peak traced memory during compare_runs':<52}{peak / 2**20:>10.1f} MiB")
    print(f"{'max RSS of the process':<52}{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:>10.1f} MiB")
    print(f"figures regressed (candidate 10 % slower): {', '.join(regressed)}")


if __name__ == "__main__":
    main()

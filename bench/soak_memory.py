"""aqbench's own resident memory over a soak, two ways.

`join` (default): a synthetic stream of client and server records through the correlator's pure join
core (Joiner), answer scoring and the window aggregation, exactly the per-request work of a soak.
`whole`: the whole soak process in this one: `soak()` itself with the supervisor, bus, journal writer,
record tailers, correlator, tracker, observer sampler and checkpoint reports, against the scripted
stub server (tests/data/stub_server.py) driven by a scripted AIPerf stand-in (bench/soak_load.py) at
a hundred requests per second (--rate). `--tracemalloc` prints, per window, the allocation sites (file:line)
that grew most since the first window. Both report the RSS slope in MiB per 100,000 requests beside
the goal (under 1 MiB per 100,000 requests).

    .venv/bin/python bench/soak_memory.py [--requests 1000000] [--window 5000]
    .venv/bin/python bench/soak_memory.py --whole [--duration 150] [--window-s 10] [--rate 100]
        [--request-timeout 10] [--checkpoint-s S] [--tracemalloc] [--heap-probe S]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.config import (
    CorrectnessCriteria,
    DatasetConfig,
)
from orchestrator.correlate import Joiner
from orchestrator.dataset import load_dataset, parse_session_key, resolve_dataset_path, session_key
from orchestrator.events import ClientRecord, RequestCorrelated, ServerRecord
from orchestrator.judge.gates import ScoredAnswer
from orchestrator.judge.scoring import score
from orchestrator.soak.verdicts import SoakEvidence, SoakLimits, fit_trend, judge_soak
from orchestrator.soak.window import WindowAccumulator, WindowStats, window_name

GOAL_MIB_PER_100K = 1.0
NOMINAL_RPS = 20.0  # a busy soak: 72,000 requests per hour


def run(requests: int, per_window: int, sample_every: int) -> dict[str, float]:
    proc = psutil.Process(os.getpid())
    dataset = load_dataset(resolve_dataset_path(DatasetConfig()))
    items = [it for it in dataset.items]
    criteria = CorrectnessCriteria(min_pass_rate=0.9, arm="audio")
    joiner = Joiner(key_parser=parse_session_key, match_timeout_s=5.0)
    windows: list[WindowStats] = []
    samples: list[tuple[int, float]] = []
    t0_ns = 1_800_000_000 * 10**9
    started = time.perf_counter()
    acc: WindowAccumulator | None = None
    index = 0
    for n in range(requests):
        if n % per_window == 0:
            if acc is not None:
                joiner.close_window(acc.window)
                windows.append(acc.close(t0_ns + n * 50_000_000))
            index += 1
            acc = WindowAccumulator(index, t0_ns + n * 50_000_000, criteria=criteria)
            joiner.start_window(window_name(index))
        assert acc is not None
        item = items[n % len(items)]
        rid = f"{n:08x}-5ccd-4faa-87b0-e035a7bd1539"
        start = t0_ns + n * 50_000_000
        latency = 40.0 + (n % 97)
        answer = item.answer if n % 50 else "no idea"
        out = joiner.add_client(ClientRecord(
            request_id=rid, via="export", aiperf_run=acc.window, conversation_id=session_key(item.id, "audio"),
            phase="profiling", request_start_ns=start, request_end_ns=start + int(latency * 1e6), status_code=200,
            request_latency_ms=latency, answer=answer), now_ns=n)
        out += joiner.add_server(ServerRecord(request_id=rid, status=200, handler_ms=latency - 2,
                                              model_call_ms=latency - 4, incarnation=1), now_ns=n)
        for ev in out:
            if isinstance(ev, RequestCorrelated):
                acc.add_request(phase=ev.phase, ok=ev.ok, cause=ev.cause, request_latency_ms=ev.request_latency_ms,
                                handler_ms=ev.handler_ms, model_call_ms=ev.model_call_ms,
                                request_start_ns=ev.request_start_ns, request_end_ns=ev.request_end_ns,
                                incarnation=ev.incarnation)
                verdict = score(ev.answer, item).verdict
                acc.add_verdict(ScoredAnswer(item_id=item.id, arm="audio", kind=item.kind, verdict=verdict))
        if n % 1000 == 0:
            acc.add_resource(500 * 2**20, None)
        if n % sample_every == 0:
            samples.append((n, proc.memory_info().rss / 2**20))
    elapsed = time.perf_counter() - started
    gc.collect()
    judge_soak(SoakEvidence(windows=windows), SoakLimits())
    # Slope after the first window (imports, first allocations and the first window's arrays).
    tail = [(n, r) for n, r in samples if n >= per_window]
    trend = fit_trend([n / 100_000 for n, _ in tail], [r for _, r in tail])
    per_100k = trend.slope_per_h  # units: MiB per (100,000 requests) since x is in 100k requests
    rate = requests / elapsed
    return {
        "requests": requests, "windows": len(windows), "elapsed_s": elapsed, "requests_per_s": rate,
        "rss_start_mib": tail[0][1], "rss_end_mib": samples[-1][1], "rss_peak_mib": max(r for _, r in samples),
        "slope_mib_per_100k": per_100k, "growth_mib_per_100k": trend.growth_per_h,
        "slope_mib_per_h_stream": per_100k * rate * 3600 / 100_000,
        "slope_mib_per_h_nominal": per_100k * NOMINAL_RPS * 3600 / 100_000,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--window", type=int, default=5000, help="join: requests per soak window")
    ap.add_argument("--window-s", type=float, default=10.0, help="whole: window seconds")
    ap.add_argument("--sample-every", type=int, default=10_000)
    ap.add_argument("--whole", action="store_true", help="the whole soak process (see the module docstring)")
    ap.add_argument("--duration", type=float, default=150.0, help="whole: soak seconds")
    ap.add_argument("--rate", type=float, default=100.0, help="whole: requests per second (open loop)")
    ap.add_argument("--tracemalloc", action="store_true", help="whole: allocation sites that grow between windows")
    ap.add_argument("--request-timeout", type=float, default=10.0, metavar="S",
                    help="whole: the workload's request timeout (a window closes S + 3 s after its end)")
    ap.add_argument("--checkpoint-s", type=float, default=0.0, metavar="S",
                    help="whole: a checkpoint report every S seconds (default: every two windows)")
    ap.add_argument("--heap-probe", type=float, default=0.0, metavar="S",
                    help="whole: every S seconds, where the process's memory sits (bench/heap_probe.py)")
    args = ap.parse_args()
    if args.whole:
        from soak_memory_whole import run_whole  # bench/ is on sys.path as the script's folder

        return run_whole(duration_s=args.duration, window_s=args.window_s,
                         rate=args.rate, trace=args.tracemalloc, probe_s=args.heap_probe,
                         timeout_s=args.request_timeout, checkpoint_s=args.checkpoint_s)
    r = run(args.requests, args.window, args.sample_every)
    print(f"{r['requests']:,} requests in {r['windows']} windows, {r['elapsed_s']:.1f} s "
          f"({r['requests_per_s']:,.0f} requests/s through join + scoring + window aggregation)")
    print(f"RSS after the first window {r['rss_start_mib']:.1f} MiB, end {r['rss_end_mib']:.1f} MiB, "
          f"peak {r['rss_peak_mib']:.1f} MiB")
    print("| figure | measured | goal | measured / goal |")
    print("|---|---|---|---|")
    print(f"| RSS slope, MiB per 100,000 requests | {r['slope_mib_per_100k']:+.3f} | {GOAL_MIB_PER_100K} | "
          f"{abs(r['slope_mib_per_100k']) / GOAL_MIB_PER_100K:.3f} |")
    print(f"| RSS first-vs-last median growth, MiB per 100,000 requests | {r['growth_mib_per_100k']:+.3f} | "
          f"{GOAL_MIB_PER_100K} | {abs(r['growth_mib_per_100k']) / GOAL_MIB_PER_100K:.3f} |")
    print(f"| RSS slope, MiB per hour at {NOMINAL_RPS:g} requests/s | {r['slope_mib_per_h_nominal']:+.3f} | "
          f"{GOAL_MIB_PER_100K * NOMINAL_RPS * 36 / 1000:.2f} | "
          f"{abs(r['slope_mib_per_h_nominal']) / (GOAL_MIB_PER_100K * NOMINAL_RPS * 0.036):.3f} |")
    print(f"| RSS slope, MiB per hour at the stream's {r['requests_per_s']:,.0f} requests/s | "
          f"{r['slope_mib_per_h_stream']:+.2f} | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The soak's early stop (orchestrator/soak/early_stop.py) on seeded series: false stops over every look of a
default 8-hour soak (96 windows of 5 minutes), and when leaks and error rates users care about stop it.

Memory: tests/orchestrator/sampled_series.py's noise model (AR(1) noise and 5-minute wander at phi, a GC sawtooth,
2 % spikes or heavy-tailed Pareto spikes; `wander 6`: twice the wander the rule states), judged as a look judges
(99.9 %), from the 60 s warmup to each window's close. Errors: tests/orchestrator/stop_looks.py's error process
(each window's rate lognormal, AR(1) 0.8 across windows, log-sd 1; heavy-tailed bursts in 5 % of windows), at
5,000 requests a window (17 requests/s).

    .venv/bin/python bench/soak_early_stop.py [--seeds 200] [--hours 8] [--compare 0.98]

`--compare C`: the memory false stops again with every look at C instead (0.98: looking at the final verdict's
own level, which is what an early stop without a look-spending rule would do).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "orchestrator"))

from stop_looks import error_stop, memory_stop  # tests/orchestrator: the shared noise models

WINDOW_S = 300.0
CASES = (("phi 0", 0.0, False, 3.0), ("phi 0.5", 0.5, False, 3.0), ("phi 0.8", 0.8, False, 3.0),
         ("phi 0.95", 0.95, False, 3.0), ("phi 0.5, heavy tails", 0.5, True, 3.0), ("phi 0.8, wander 6", 0.8, False, 6.0))
LEAKS = (80.0, 400.0, 3000.0)  # MiB/h: 10x the limit; issue 49's leak at 2 and at 17 requests/s
ERROR_RATES = (0.0005, 0.001, 0.01, 1.0)


def _when(stops: list[int | None]) -> str:
    hit = sorted(s for s in stops if s is not None)
    if not hit:
        return f"{0:>6.1%} stopped"
    median = hit[len(hit) // 2]
    p95 = hit[min(len(hit) - 1, int(0.95 * len(stops)))] if len(hit) >= 0.95 * len(stops) else None
    return (f"{len(hit) / len(stops):>6.1%} stopped; median at window {median} ({median * WINDOW_S / 60:.0f} min)"
            + (f", 95 % by window {p95} ({p95 * WINDOW_S / 60:.0f} min)" if p95 else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--hours", type=float, default=8.0)
    ap.add_argument("--compare", type=float, default=None)
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    duration = args.hours * 3600
    looks = int(duration // WINDOW_S)
    started = time.perf_counter()
    print(f"{args.seeds} seeds per case; {args.hours:g} h soaks, {looks} looks (5-minute windows); memory from the "
          "60 s warmup, [soak] defaults (64 MiB cap, 8 MiB/h, stated wander 3 MiB per 5 min)\n")
    if not args.skip_memory:
        print("memory, false stops (clean series), over every look")
        for name, phi, heavy, wander in CASES:
            stops = [memory_stop(s, duration_s=duration, phi=phi, heavy=heavy, wander=wander) for s in range(args.seeds)]
            line = f"  {name:<22} {_when(stops)}"
            if args.compare is not None:
                other = [memory_stop(s, duration_s=duration, phi=phi, heavy=heavy, wander=wander,
                                     confidence=args.compare) for s in range(args.seeds)]
                line += f"   | every look at {args.compare:g}: {_when(other)}"
            print(line, flush=True)
        print("\nmemory, power (phi 0.8): when a leak stops the soak (looks over the first 2 hours)")
        for leak in LEAKS:
            stops = [memory_stop(s, duration_s=duration, phi=0.8, slope_per_h=leak, looks_s=7200.0)
                     for s in range(args.seeds)]
            print(f"  {leak:>6g} MiB/h          {_when(stops)}", flush=True)
    print("\nerrors (5,000 requests a window; limit 0.1 %), over every look")
    for rate in ERROR_RATES:
        # Every request failing: no drift. (A typed dict of floats: mypy would match it against `limits` too.)
        steady: dict[str, Any] = {"sigma": 0.0, "burst_chance": 0.0} if rate == 1.0 else {}
        stops = [error_stop(s, duration_s=duration, per_window=5000, rate=rate, **steady) for s in range(args.seeds)]
        print(f"  rate {rate:>7.2%}         {_when(stops)}", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""Where the sweep's narrowing runs go, and whether a smooth boundary's interval is wider than its evidence:
seeded simulated servers of known capacity (tests/orchestrator/capacity_servers.py, the tests' noise model).

`--placement`: after the search has crossed the limit, each batch of two 60-request runs goes (a) both to the
estimate, as the sweep does (next_load), (b) one each at estimate / f and estimate x f, or (c) one each at the
interval's two ends; smooth boundaries, the same seeds for each. `--runs`: the sweep's placement and the
straddling ones with 12 and 48 narrowing runs, to see the interval narrow as its requests grow (1/sqrt(n) would
halve it for 4x) and whether it still covers.

    .venv/bin/python bench/sweep_narrowing.py --placement [--seeds 200] [--factors 1.15]
    .venv/bin/python bench/sweep_narrowing.py --runs [--seeds 200] [--factors 1.1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "orchestrator"))

from capacity_servers import RPP, Place, at_estimate, coverage  # tests/orchestrator: the one noise model

from orchestrator.events import CapacityEstimate
from orchestrator.sweep.capacity import next_load


def _around(f: float) -> Place:
    def place(est: CapacityEstimate, loads: list[float]) -> list[tuple[float, int]]:
        x = next_load(est, loads, mode="rate")
        if x is None or est.shape != "smooth":
            return at_estimate(est, loads)
        return [(float(f"{x / f:.3g}"), RPP), (float(f"{x * f:.3g}"), RPP)]
    return place


def _ends(est: CapacityEstimate, loads: list[float]) -> list[tuple[float, int]]:
    if est.shape != "smooth" or est.low is None or est.high is None or next_load(est, loads, mode="rate") is None:
        return at_estimate(est, loads)
    return [(float(f"{est.low:.3g}"), RPP), (float(f"{est.high:.3g}"), RPP)]


def _line(name: str, seeds: int, extra_runs: int, place: Place) -> None:
    t0 = time.process_time()
    cover, width, reached = coverage(False, seeds, extra_runs=extra_runs, place=place)
    print(f"| {name} | {extra_runs} | {cover:.1%} | ±{width:.1%} | {reached:.1%} | {time.process_time() - t0:.0f} s |",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--placement", action="store_true")
    what.add_argument("--runs", action="store_true")
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--factors", type=float, nargs="*", default=[1.15])
    args = ap.parse_args()
    print("| placement | narrowing runs | covered | median half-width | ±10 % reached | CPU |")
    print("|---|---|---|---|---|---|")
    if args.placement:
        _line("both at the estimate (the sweep's)", args.seeds, 12, at_estimate)
        for f in args.factors:
            _line(f"estimate / {f:g} and x {f:g}", args.seeds, 12, _around(f))
        _line("the interval's two ends", args.seeds, 12, _ends)
    else:
        for runs in (12, 48):
            _line("both at the estimate (the sweep's)", args.seeds, runs, at_estimate)
            for f in args.factors:
                _line(f"estimate / {f:g} and x {f:g}", args.seeds, runs, _around(f))


if __name__ == "__main__":
    main()

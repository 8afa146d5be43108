"""The per-generation aiperf_rss rule (orchestrator/judge/generations.py) on seeded synthetic generations:
how often it FAILs flat series (false alarms), a leak carried across generations, and a runaway in one
process. `PYTHONPATH=$PWD python bench/aiperf_generations.py [--seeds 200]`."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "orchestrator"))

from sampled_series import generation_series  # tests/orchestrator: the one noise model

from orchestrator.judge.generations import Generation, GenerationRule, judge_generations


def outcomes(seeds: int, seconds: int, kw: dict[str, float], rule: GenerationRule) -> Counter[str]:
    counts: Counter[str] = Counter()
    for seed in range(seeds):
        gens = [Generation(pid=pid, start_s=s, times_s=list(t), values=list(y))
                for pid, s, t, y in generation_series(np.random.default_rng(seed), seconds, **kw)]  # type: ignore[arg-type]
        counts[judge_generations(gens, rule).outcome] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--across", choices=("ols", "theil-sen"), default=GenerationRule().across)
    args = ap.parse_args()
    cases: list[tuple[str, int, dict[str, float]]] = [
        ("flat, 1 h, handover ~3 min, scatter 20 MiB", 3600, {}),
        ("flat, 35 min, handover ~3 min", 2100, {}),
        ("flat, 35 min, handover ~5 min", 2100, {"every_s": 300.0}),
        ("flat, 35 min, ~3 min, scatter 10 MiB", 2100, {"scatter": 10.0}),
        ("flat, 1 h, handover ~5 min", 3600, {"every_s": 300.0}),
        ("flat, 2 h, handover ~5 min", 7200, {"every_s": 300.0}),
        ("flat, 1 h, scatter 40 MiB", 3600, {"scatter": 40.0}),
        ("flat, 1 h, phi 0.95", 3600, {"phi": 0.95}),
        ("flat, 1 h, 1 in 4 successors +100-250 MiB", 3600, {"outliers": 0.25}),
        ("flat, 2 h, ~5 min, 1 in 4 +100-250 MiB", 7200, {"every_s": 300.0, "outliers": 0.25}),
        ("leak +10 MiB/generation, 1 h, ~3 min", 3600, {"step": 10.0}),
        ("leak +5 MiB/generation, 1 h, ~3 min", 3600, {"step": 5.0}),
        ("leak +2 MiB/generation, 2 h, ~5 min", 7200, {"every_s": 300.0, "step": 2.0}),
        ("leak +10 MiB/gen, 1 h, 1 in 4 +100-250 MiB", 3600, {"step": 10.0, "outliers": 0.25}),
        ("runaway +100 MiB in one process, 1 h", 3600, {"runaway": 100.0}),
    ]
    print(f"{'case':44} {'FAIL':>6} {'PASS':>6} {'INC':>6}   ({args.seeds} seeds, across: {args.across})")
    for name, seconds, kw in cases:
        t0 = time.perf_counter()
        c = outcomes(args.seeds, seconds, kw, GenerationRule(across=args.across))
        n = args.seeds
        print(f"{name:44} {c['fail'] / n:6.1%} {c['pass'] / n:6.1%} {c['inconclusive'] / n:6.1%}   "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()

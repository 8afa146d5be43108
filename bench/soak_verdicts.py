"""Soak drift verdicts, old rule beside new, on seeded synthetic windows: false fails and detection power.

Old: `orchestrator.soak.verdicts.fit_trend` as the soak applied it before (least-squares slope and first-vs-last median growth both over
the limit, from 2 windows; latency from each window's raw p99). New: `orchestrator.judge` (Theil-Sen slope
with Sen's Kendall-tau interval, at least 6 windows over 10 minutes; latency as the per-window median of
each request over its own item's baseline; memory with a growth cap). Both see the same windows (no
warmup discarded) from the same seeds. Workload: see `_latency` and `_memory` below.

    .venv/bin/python bench/soak_verdicts.py [--seeds 1000] [--max-windows 36]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.judge.latency import item_ratios
from orchestrator.judge.memory import MemoryRule, judge_memory_medians
from orchestrator.judge.trend import judge_trend
from orchestrator.soak.verdicts import fit_trend

WINDOW_S = 300
RSS_LIMIT = 8.0  # MiB/h, [soak] default
LATENCY_LIMIT = 10.0  # %/h, [soak] default
PER_WINDOW = 100
SIGNAL_ITEMS, SPEECH_ITEMS = 40, 20
IDS = [f"item-{k}" for k in range(SIGNAL_ITEMS + SPEECH_ITEMS)]


def _times_h(n: int) -> np.ndarray:
    return (np.arange(n) + 0.5) * WINDOW_S / 3600


def _latency(rng: np.random.Generator, n: int, window_sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Items (n, 100) and flat latencies (ms): 40 signal items ~50 ms, 20 speech items 1-3 s; lognormal
    jitter 0.2, 3 % of requests x(1 + Pareto(1.5)), a per-window load factor lognormal `window_sigma`."""
    base = np.concatenate([50 * np.exp(rng.normal(0, 0.3, SIGNAL_ITEMS)), rng.uniform(1000, 3000, SPEECH_ITEMS)])
    items = rng.integers(0, base.size, (n, PER_WINDOW))
    jitter = np.exp(rng.normal(0, 0.2, (n, PER_WINDOW)))
    tail = np.where(rng.random((n, PER_WINDOW)) < 0.03, 1 + rng.pareto(1.5, (n, PER_WINDOW)), 1.0)
    load = np.exp(rng.normal(0, window_sigma, (n, 1)))
    return items, base[items] * jitter * tail * load


def _memory(rng: np.random.Generator, n: int, window_sigma_mib: float) -> np.ndarray:
    """Flat per-window median RSS (MiB) of 1 Hz samples: GC sawtooth 0-20 MiB, 2 % spikes of 20-80 MiB,
    a per-window offset of `window_sigma_mib`; shape (n, 300), one sample a second."""
    offset = rng.normal(0, window_sigma_mib, (n, 1))
    period = rng.uniform(20, 40)
    second = np.arange(n * WINDOW_S).reshape(n, WINDOW_S)
    sawtooth = 20 * ((second + rng.uniform(0, period)) % period) / period
    spikes = np.where(rng.random((n, WINDOW_S)) < 0.02, rng.uniform(20, 80, (n, WINDOW_S)), 0.0)
    return np.asarray(480 + offset + sawtooth + spikes)


def _old_fails(values: Sequence[float], limit: float, *, relative: bool) -> bool:
    """The old drift rule (before issue 15): fail when the least-squares slope and the first-vs-last median
    growth both exceed the limit, from 2 windows on; times are the windows' mid-points."""
    if len(values) < 2:
        return False
    times = [(i + 0.5) * WINDOW_S / 3600 for i in range(len(values))]
    trend = fit_trend(times, list(values))
    slope, growth = trend.slope_per_h, trend.growth_per_h
    if relative:
        if trend.first_median <= 0:
            return False
        slope, growth = slope / trend.first_median * 100, growth / trend.first_median * 100
    return slope > limit and growth > limit


def _old(rss_mib: Sequence[float], p99_ms: Sequence[float]) -> tuple[bool, bool]:
    """(rss failed, p99 failed) under the old rule (`fit_trend`, kept in orchestrator.soak.verdicts)."""
    return (_old_fails(rss_mib, RSS_LIMIT, relative=False),
            _old_fails(p99_ms, LATENCY_LIMIT, relative=True))


def simulate(seeds: int, max_n: int, multiples: Sequence[float], lat_sigma: float,
             mem_sigma: float) -> dict[tuple[str, str, float], np.ndarray]:
    """Fail indicators, keyed (rule, metric, slope multiple), shape (seeds, max_n + 1): [s, n] = seed s
    failed when judged on its first n windows. Slopes share each seed's noise (common random numbers)."""
    out = {(rule, metric, m): np.zeros((seeds, max_n + 1), dtype=bool)
           for rule in ("old", "new") for metric in ("latency", "memory") for m in multiples}
    times = _times_h(max_n)
    mem_rule = MemoryRule(limit_mib_per_h=RSS_LIMIT, growth_limit_mib=64.0)
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        items, flat_ms = _latency(rng, max_n, lat_sigma)
        flat_mib = _memory(rng, max_n, mem_sigma)
        sample_h = np.arange(max_n * WINDOW_S).reshape(max_n, WINDOW_S) / 3600
        for m in multiples:
            lat_ms = flat_ms * (1 + m * LATENCY_LIMIT / 100 * times[:, None])
            rss = np.median(flat_mib + m * RSS_LIMIT * sample_h, axis=1)
            p99 = np.quantile(lat_ms, 0.99, axis=1)
            pairs = [list(zip([IDS[k] for k in items[w]], lat_ms[w].tolist(), strict=True)) for w in range(max_n)]
            ratios = np.array(item_ratios(pairs).medians, dtype=float) * 100
            for n in range(2, max_n + 1):
                series = ratios[:n] if n >= 3 else np.array(item_ratios(pairs[:n]).medians, dtype=float) * 100
                out["new", "latency", m][seed, n] = judge_trend(times[:n], series, LATENCY_LIMIT,
                                                                unit="%/h").outcome == "fail"
                out["new", "memory", m][seed, n] = judge_memory_medians(times[:n], rss[:n],
                                                                        mem_rule).outcome == "fail"
                old_rss, old_p99 = _old(rss[:n].tolist(), p99[:n].tolist())
                out["old", "memory", m][seed, n] = old_rss
                out["old", "latency", m][seed, n] = old_p99
    return out


def _windows_needed(fails: np.ndarray, share: float) -> str:
    rates = fails.mean(axis=0)
    hits = [n for n in range(2, rates.size) if rates[n] >= share]
    return str(hits[0]) if hits else f">{rates.size - 1}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--max-windows", type=int, default=36)
    parser.add_argument("--latency-window-sigma", type=float, default=0.02,
                        help="lognormal sigma of the per-window load factor shared by a window's requests")
    parser.add_argument("--memory-window-sigma-mib", type=float, default=3.0,
                        help="sd of the per-window RSS offset in MiB")
    args = parser.parse_args()
    started = time.perf_counter()
    multiples = (0.0, 2.0, 3.0, 5.0)
    fails = simulate(args.seeds, args.max_windows, multiples, args.latency_window_sigma,
                     args.memory_window_sigma_mib)
    print(f"{args.seeds} seeds, 5-minute windows, {PER_WINDOW} requests/window; latency window sigma "
          f"{args.latency_window_sigma:g}, memory window sd {args.memory_window_sigma_mib:g} MiB; limits "
          f"{LATENCY_LIMIT:g} %/h and {RSS_LIMIT:g} MiB/h")
    print("\nfalse-fail rate on flat series (share of seeds that FAIL), by judged windows")
    shown = [n for n in (2, 3, 4, 6, 8, 12, 24, 36) if n <= args.max_windows]
    print(f"{'metric':<8} {'rule':<4} " + " ".join(f"{f'n={n}':>7}" for n in shown))
    for metric in ("latency", "memory"):
        for rule in ("old", "new"):
            rates = fails[rule, metric, 0.0].mean(axis=0)
            print(f"{metric:<8} {rule:<4} " + " ".join(f"{rates[n]:>7.1%}" for n in shown))
    print("\ndetection power: fewest windows at which >= 95 % of seeds FAIL (and the share failing at 12)")
    print(f"{'metric':<8} {'rule':<4} " + " ".join(f"{f'{m:g}x limit':>18}" for m in multiples[1:]))
    for metric in ("latency", "memory"):
        for rule in ("old", "new"):
            cells = [f"{_windows_needed(fails[rule, metric, m], 0.95):>5} ({fails[rule, metric, m][:, 12].mean():6.1%})"
                     for m in multiples[1:]]
            print(f"{metric:<8} {rule:<4} " + " ".join(f"{c:>18}" for c in cells))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

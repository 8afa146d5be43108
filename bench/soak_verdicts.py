"""Soak drift verdicts, old rule beside new, on seeded synthetic windows: false fails and detection power.

Old: `orchestrator.soak.verdicts.fit_trend` as the soak applied it before (least-squares slope and first-vs-last median growth both over
the limit, from 2 windows; latency from each window's raw p99). New: `orchestrator.judge` (Theil-Sen slope
with Sen's Kendall-tau interval, at least 6 windows over 10 minutes; latency as the per-window median of
each request over its own item's baseline; memory with a growth cap). Both see the same windows (no
warmup discarded) from the same seeds. Workload: see `_latency` and `_memory` below.

    .venv/bin/python bench/soak_verdicts.py [--seeds 1000] [--max-windows 36]

`--sampled` (issue 29) instead judges memory on every 1 Hz sample (orchestrator.judge.sampled_trend, the
[soak] defaults, 60 s warmup) under tests/orchestrator/sampled_series.py's noise model: false fails of flat
series by AR(1) coefficient (heavy-tailed spikes too), the power curve by multiple of the 8 MiB/h limit
against judged minutes, and the smallest slope that would FAIL at 30 and 60 minutes:

    .venv/bin/python bench/soak_verdicts.py --sampled [--seeds 500] [--wander 3]

(`--wander 6`: the series wander at twice the scatter the rule states; 1x in the tables: a slope at the
limit, where a FAIL is a false one too.)

`--latency` (issue 29) judges latency drift on each request's ratio to its own item's baseline
(orchestrator.soak.ratios, the sampled trend rule at 10 %/h with the wander floor each series shows) under
tests/orchestrator/latency_requests.py's noise model: false fails and passes with no drift by AR(1)
coefficient (the item mix changing halfway, and steady), the power curve by multiple of the limit against
judged minutes, and the smallest drift that would FAIL at 30 and 60 minutes:

    .venv/bin/python bench/soak_verdicts.py --latency [--seeds 200] [--rate 1] [--no-floor]

`--cap` judges the 64 MiB growth cap over the whole judged span across the first pass's end, through
judge_soak: steps of 32-128 MiB across the cut (early, mid-span, late) and leaks whose two sides of the cut
each grow under the cap:

    .venv/bin/python bench/soak_verdicts.py --cap [--seeds 100]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "orchestrator"))

from orchestrator.judge.latency import item_ratios
from orchestrator.judge.memory import MemoryRule, judge_memory_medians
from orchestrator.judge.sampled_trend import SampledTrendRule, judge_sampled_trend, power_slope_per_h, wander_sd_per_h
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
                out["new", "latency", m][seed, n] = judge_trend(times[:n].tolist(), series.tolist(), LATENCY_LIMIT,
                                                                unit="%/h").outcome == "fail"
                out["new", "memory", m][seed, n] = judge_memory_medians(times[:n].tolist(), rss[:n].tolist(),
                                                                        mem_rule).outcome == "fail"
                old_rss, old_p99 = _old(rss[:n].tolist(), p99[:n].tolist())
                out["old", "memory", m][seed, n] = old_rss
                out["old", "latency", m][seed, n] = old_p99
    return out


def _windows_needed(fails: np.ndarray, share: float) -> str:
    rates = fails.mean(axis=0)
    hits = [n for n in range(2, rates.size) if rates[n] >= share]
    return str(hits[0]) if hits else f">{rates.size - 1}"


SAMPLED_MINUTES = (5, 10, 14, 15, 16, 17, 18, 20, 30, 45, 60)  # judged minutes: 14 is a 15-minute soak
SAMPLED_MULTIPLES = (0.0, 2.0, 3.0, 5.0, 10.0, 30.0)
MEMORY_MULTIPLES = (0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)  # 1x: a slope at the limit, the null's edge
PHIS = (0.0, 0.5, 0.8, 0.95)
WARMUP_S = 60


def sampled(seeds: int, wander: float = 3.0) -> None:
    """The sampled memory rule's error rates and power (see the module docstring); `wander`: the noise
    model's level sd per 5 minutes (the rule keeps the stated 3 MiB)."""
    from sampled_series import block_medians, memory_series  # tests/orchestrator: the one noise model

    rule = SampledTrendRule()
    started = time.perf_counter()
    fails: dict[tuple[str, float, int], int] = {}
    detectable: dict[tuple[str, int], list[float]] = {}
    cases = [(f"phi {phi:g}", phi, False) for phi in PHIS] + [("phi 0.5, heavy tails", 0.5, True)]
    for name, phi, heavy in cases:
        for seed in range(seeds):
            t, flat = memory_series(np.random.default_rng(seed), SAMPLED_MINUTES[-1] * 60 + WARMUP_S, phi=phi,
                                    heavy=heavy, wander=wander)
            for m in MEMORY_MULTIPLES if not heavy else (0.0,):
                bt, by = block_medians(t, flat + m * RSS_LIMIT * t / 3600)
                for minutes in SAMPLED_MINUTES:
                    keep = (bt >= WARMUP_S) & (bt < WARMUP_S + minutes * 60)
                    v = judge_sampled_trend(bt[keep], by[keep], rule)
                    fails[name, m, minutes] = fails.get((name, m, minutes), 0) + (v.outcome == "fail")
                    if m == 0 and v.detectable_per_h is not None:
                        detectable.setdefault((name, minutes), []).append(v.detectable_per_h)
    head = " ".join(f"{f'{n} min':>8}" for n in SAMPLED_MINUTES)
    print(f"{seeds} seeds per case; 1 Hz samples, 10 s block medians, 60 s warmup; limit {RSS_LIMIT:g} MiB/h, cap "
          f"64 MiB, 98 % two-sided, stated wander {rule.wander:g} MiB per {rule.wander_s:g} s; the series' wander "
          f"{wander:g} MiB; minutes are judged minutes (14: a 15-minute soak)")
    for what, m in (("false fails, flat series", 0.0), ("false fails, a slope at the limit (8 MiB/h)", 1.0)):
        print(f"\n{what} (share of seeds that FAIL), by judged minutes\n{'case':<22} {head}")
        for name, _, _ in cases:
            if (name, m, SAMPLED_MINUTES[0]) in fails:
                print(f"{name:<22} " + " ".join(f"{fails[name, m, n] / seeds:>8.1%}" for n in SAMPLED_MINUTES))
    for name in [f"phi {phi:g}" for phi in PHIS]:
        print(f"\npower, {name}: share of seeds that FAIL, by multiple of the limit and judged minutes\n"
              f"{'multiple':<22} {head}")
        for m in MEMORY_MULTIPLES[2:]:
            print(f"{f'{m:g}x ({m * RSS_LIMIT:g} MiB/h)':<22} "
                  + " ".join(f"{fails[name, m, n] / seeds:>8.1%}" for n in SAMPLED_MINUTES))
    print("\nsmallest slope that would FAIL (MiB/h): median over flat seeds [95th percentile]; the plan's figure "
          "(stated wander alone)")
    for minutes in (30, 60):
        z = 2.3263  # the 98 % two-sided rule's one-sided quantile
        plan = RSS_LIMIT + z * wander_sd_per_h(minutes * 60, rule)
        cells = [f"{name}: {np.median(detectable[name, minutes]):.3g} [{np.quantile(detectable[name, minutes], 0.95):.3g}]"
                 for name, _, _ in cases]
        print(f"{minutes} min: plan {plan:.3g}; " + "; ".join(cells))
    from orchestrator.soak.plan import PLAN_RSS_SCATTER_MIB, span_for_power
    need = span_for_power(10 * RSS_LIMIT, rule)
    print(f"\nthe plan: at a sample scatter of {PLAN_RSS_SCATTER_MIB:g} MiB per minute, 95 % of soaks FAIL "
          + ", ".join(f"{power_slope_per_h(n * 60 - 10, rule, PLAN_RSS_SCATTER_MIB):.3g} MiB/h over {n} judged min"
                      for n in (14, 30, 60))
          + (f"; 10x the limit needs {need / 60:.1f} judged min" if need else ""))
    print(f"\n{time.perf_counter() - started:.0f} s")



CAP_STEPS = (32.0, 48.0, 60.0, 96.0, 128.0)  # MiB; the [soak] cap is 64
CAP_CUTS = (240, 630, 1000)  # s into a 20-minute soak where the first pass ends: early, mid-span, late


def cap(seeds: int) -> None:
    """The growth cap over the whole judged span, across the first pass's end, through judge_soak as the soak
    runs it: a step rising over 2 minutes centred on the cut, then flat, in a 20-minute soak; and a leak
    whose two sides of the cut each grow under the cap in a 5-minute soak cut at 3 minutes."""
    from sampled_series import memory_series  # tests/orchestrator: the one noise model

    from orchestrator.events import SoakLimits
    from orchestrator.soak.samples import SampleSeries
    from orchestrator.soak.verdicts import FirstPass, SoakEvidence, judge_soak

    t0, ns = 1_800_000_000 * 10**9, 10**9

    def outcome(seed: int, seconds: int, phi: float, cut_s: int, step: float, slope: float) -> str:
        t, y = memory_series(np.random.default_rng(seed), seconds, phi=phi, slope_per_h=slope)
        y = y + step * np.clip((t - cut_s + 60) / 120, 0, 1)
        series = SampleSeries()
        for ti, yi in zip(t, y, strict=True):
            series.add(t0 + int(ti * ns), float(yi))
        verdicts = judge_soak(SoakEvidence(windows=[], samples={"server_rss": series},
                                           load_span_ns=(t0, t0 + seconds * ns),
                                           first_pass=FirstPass(requests=416, end_ns=t0 + cut_s * ns)), SoakLimits())
        return next(v.outcome for v in verdicts if v.metric == "server_rss")

    started = time.perf_counter()
    print(f"{seeds} seeds per cell; share of seeds that FAIL server_rss (cap 64 MiB, [soak] defaults)")
    print("\na step across the first pass's end, 20-minute soak (judged 19 min)\n"
          f"{'step, cut at':<22} " + " ".join(f"{f'{c} s, phi {p:g}':>16}" for c in CAP_CUTS for p in (0.0, 0.95)))
    for step in CAP_STEPS:
        cells = [sum(outcome(seed, 1200, p, c, step, 0.0) == "fail" for seed in range(seeds)) / seeds
                 for c in CAP_CUTS for p in (0.0, 0.95)]
        print(f"{f'{step:g} MiB':<22} " + " ".join(f"{x:>16.0%}" for x in cells))
    print("\na leak from the start, 5-minute soak cut at 3 minutes (judged 2 + 2 min)\n"
          f"{'leak':<22} " + " ".join(f"{f'phi {p:g}':>10}" for p in PHIS))
    for slope in (900.0, 1800.0, 3600.0):
        cells = [sum(outcome(seed, 300, p, 180, 0.0, slope) == "fail" for seed in range(seeds)) / seeds for p in PHIS]
        print(f"{f'{slope:g} MiB/h ({slope * 4 / 60:g} MiB)':<22} " + " ".join(f"{x:>10.0%}" for x in cells))
    print(f"\n{time.perf_counter() - started:.0f} s")


LATENCY_LIMIT = 10.0  # [soak] p99_latency_limit_pct_per_h: the drift limit, % of baseline per hour
LATENCY_MINUTES = (10, 15, 20, 30, 45, 60, 90)
LATENCY_BASELINE_S = 120.0


def latency(seeds: int, rate: float, floor: bool = True) -> None:
    """The same-item latency drift rule's error rates and power (see the module docstring)."""
    from latency_requests import latency_requests, ratio_series  # tests/orchestrator: the one noise model

    from orchestrator.events import SoakLimits
    from orchestrator.judge.sampled_trend import estimate_wander
    from orchestrator.soak.verdicts import LATENCY_WANDER_S, drift_rule

    limits = SoakLimits()
    started = time.perf_counter()
    outcomes: dict[tuple[str, float, int], list[str]] = {}
    detectable: dict[tuple[str, int], list[float]] = {}
    # (name, phi, mix change, host-load bumps and cold first requests, drift multiples judged)
    cases = [(f"phi {phi:g}", phi, True, False, SAMPLED_MULTIPLES) for phi in PHIS] + [
        ("phi 0.5, steady mix", 0.5, False, False, (0.0,))] + [
        (f"phi {phi:g}, bumps, cold", phi, True, True, (0.0, 10.0)) for phi in (0.0, 0.8, 0.95)]
    seconds = WARMUP_S + LATENCY_MINUTES[-1] * 60
    for name, phi, mix, rough, multiples in cases:
        for seed in range(seeds):
            starts, items, flat = latency_requests(np.random.default_rng(seed), seconds, phi=phi, rate=rate,
                                                   mix_change=mix, bumps=rough, cold_first=rough)
            for m in multiples:
                series = ratio_series(starts, items, flat, warmup_s=WARMUP_S, baseline_s=LATENCY_BASELINE_S,
                                      drift_pct_per_h=m * LATENCY_LIMIT)
                assert series.judged_from_ns is not None
                for minutes in LATENCY_MINUTES:
                    t, y, _ = series.series.between(series.judged_from_ns, series.judged_from_ns + minutes * 60 * 10**9)
                    rule = drift_rule(limits, *estimate_wander(t, y, LATENCY_WANDER_S)) if floor else drift_rule(limits)
                    v = judge_sampled_trend(t, y, rule, unit="%")
                    outcomes.setdefault((name, m, minutes), []).append(v.outcome)
                    if m == 0 and v.detectable_per_h is not None:
                        detectable.setdefault((name, minutes), []).append(v.detectable_per_h)
    head = " ".join(f"{f'{n} min':>8}" for n in LATENCY_MINUTES)
    print(f"{seeds} seeds per case; {rate:g} requests/s, each item's baseline over its first {LATENCY_BASELINE_S:g} "
          f"s after a {WARMUP_S} s warmup, 10 s block medians of the ratios; limit {LATENCY_LIMIT:g} %/h, 98 % "
          f"two-sided, {'the wander floor estimated from each series' if floor else 'no wander floor'}; minutes "
          f"are judged minutes after the warmup; 'bumps, cold': host-load bumps and slow first requests")
    for what, outcome in (("false fails, no drift (share of seeds that FAIL)", "fail"),
                          ("no drift: share of seeds that PASS", "pass")):
        print(f"\n{what}\n{'case':<22} {head}")
        for name, *_ in cases:
            print(f"{name:<22} " + " ".join(f"{outcomes[name, 0.0, n].count(outcome) / seeds:>8.1%}"
                                            for n in LATENCY_MINUTES))
    for name in ("phi 0.5", "phi 0.95", "phi 0.8, bumps, cold"):
        print(f"\npower, {name}: share of seeds that FAIL (PASS in brackets), by multiple of the limit and judged "
              f"minutes\n{'multiple':<22} {head}")
        for m in [m for m in SAMPLED_MULTIPLES[1:] if (name, m, LATENCY_MINUTES[0]) in outcomes]:
            cells = [f"{outcomes[name, m, n].count('fail') / seeds:.0%} [{outcomes[name, m, n].count('pass') / seeds:.0%}]"
                     for n in LATENCY_MINUTES]
            print(f"{f'{m:g}x ({m * LATENCY_LIMIT:g} %/h)':<22} " + " ".join(f"{c:>8}" for c in cells))
    print("\nsmallest drift that would FAIL (%/h): median over flat seeds [95th percentile]")
    for minutes in (30, 60):
        cells = [f"{name}: {np.median(detectable[name, minutes]):.3g} [{np.quantile(detectable[name, minutes], 0.95):.3g}]"
                 for name, *_ in cases]
        print(f"{minutes} min: " + "; ".join(cells))
    print(f"\n{time.perf_counter() - started:.0f} s")


def main() -> None:
    if "--latency" in sys.argv:
        parser = argparse.ArgumentParser(description="the same-item latency drift rule (issue 29)")
        parser.add_argument("--latency", action="store_true")
        parser.add_argument("--seeds", type=int, default=200)
        parser.add_argument("--rate", type=float, default=1.0, help="requests per second")
        parser.add_argument("--no-floor", action="store_true", help="judge without the wander floor (as before)")
        args = parser.parse_args()
        latency(args.seeds, args.rate, floor=not args.no_floor)
        return
    # The modes that take only --seeds: (flag, what it judges, default seeds, the function).
    for flag, what, seeds, mode in (("--cap", "the growth cap across the first pass's end", 100, cap),
                                    ("--sampled", "the sampled memory rule", 500, sampled)):
        if flag in sys.argv:
            parser = argparse.ArgumentParser(description=f"{what} (issue 29)")
            parser.add_argument(flag, action="store_true")
            parser.add_argument("--seeds", type=int, default=seeds)
            if mode is sampled:
                parser.add_argument("--wander", type=float, default=3.0,
                                    help="the series' level sd per 5 minutes, MiB (the rule states 3)")
            args = parser.parse_args()
            sampled(args.seeds, args.wander) if mode is sampled else mode(args.seeds)
            return
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

"""What a soak's plan can decide, said before the load starts: one TrendPlan per trend verdict, from the
settings alone (duration, warmup, limits, the stated wander). Measures nothing; pure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from statistics import NormalDist

from orchestrator.base.figures import figure
from orchestrator.events import SoakLimits, TrendPlan
from orchestrator.judge.sampled_trend import (
    SampledTrendRule,
    batch_count,
    power_slope_per_h,
    t_quantile,
    wander_sd_per_h,
)
from orchestrator.soak.verdicts import drift_rule, sampled_rule
from orchestrator.spine.ports import ResourceSampler

__all__ = ["PLAN_RATIO_SCATTER_PCT", "PLAN_RSS_SCATTER_MIB", "LEAK_MULTIPLE", "plan_trends", "span_for_power", "host_has_gpu"]

# Assumed sd of one minute's mean of the same-item latency ratios, in % of baseline: the synthetic noise model of
# tests/orchestrator/latency_requests.py at 1 request/s, AR(1) load up to phi 0.8. The checkpoints measure it.
PLAN_RATIO_SCATTER_PCT = 8.0
# Assumed sd of one minute's mean of the 10 s block medians about the line, without wander:
# tests/orchestrator/sampled_series.py gives 1.0-1.7 MiB for AR(1) phi 0-0.95.
PLAN_RSS_SCATTER_MIB = 1.5
# The leak, in multiples of the memory limit, whose time to a FAIL in 95 % of soaks the plan states (issue 29).
LEAK_MULTIPLE = 10.0

_MEMORY = ("server_rss", "orchestrator_rss", "aiperf_rss")


def host_has_gpu(new_sampler: Callable[[], ResourceSampler]) -> bool:
    """Whether the server's sampler sees a GPU on this host (one sample of this process; blocks)."""
    sampler = new_sampler()
    try:
        sample = sampler.sample(os.getpid())
        return bool(sample is not None and sample.gpus)
    finally:
        sampler.close()


def plan_trends(duration_s: float, limits: SoakLimits, window_s: float | None = None, *, cycle_requests: int = 0,
                request_rate: float | None = None, gpu: bool = False) -> list[TrendPlan]:
    """Each memory verdict's plan over the judged span (duration minus warmup), then, given `window_s`,
    each latency trend's. `cycle_requests`: the requests after which AIPerf's input comes round to the
    same items again (an item's second request is its first ratio); with `request_rate`, its time. `gpu`: the
    host has a GPU, so server_gpu_memory is planned too (after the other memory verdicts).

    Memory's detectable slope comes from the stated wander. The slope it FAILs in 95 % of soaks, and the judged
    minutes a leak of LEAK_MULTIPLE x the limit needs for that (judge.sampled_trend.power_slope_per_h), come from
    the stated wander and the assumed `PLAN_RSS_SCATTER_MIB`. At the [soak] defaults that is 17.7 judged
    minutes; seeded, 10x FAILs a 15-minute soak (14 judged minutes) in 78 % of seeds at phi 0 and 97 % after 18
    judged minutes (bench/RESULTS.md).
    """
    rule = sampled_rule(limits)
    span = max(0.0, duration_s - limits.warmup_s)
    growth = batch_count(span, rule) >= 3
    # The slope is judged after the first pass over the input (a process may step up while it first sees
    # the items); in rate mode its time is known, in concurrency mode it is the server's pace.
    pass_s = cycle_requests / request_rate if cycle_requests and request_rate else None
    steady = max(0.0, duration_s - max(limits.warmup_s, pass_s or 0.0))
    slope = batch_count(steady, rule) >= 3 and steady >= rule.min_span_s
    z = NormalDist().inv_cdf(0.5 + rule.confidence / 2)
    detectable = rule.limit_per_h + z * wander_sd_per_h(steady, rule) if slope else None
    power = power_slope_per_h(steady, rule, PLAN_RSS_SCATTER_MIB) if slope else None
    leak = LEAK_MULTIPLE * rule.limit_per_h
    need = span_for_power(leak, rule)
    at = max(limits.warmup_s, pass_s or 0.0)
    # In concurrency mode the pass's end is the server's pace: the minutes count from it.
    soak = "after the first pass" if cycle_requests and not pass_s else f"a soak of {(at + (need or 0)) / 60:.1f} min"
    ten = (f"; a leak of {LEAK_MULTIPLE:g}x the limit ({leak:g} MiB/h) needs {(need or 0) / 60:.1f} judged min "
           f"for that ({soak})") if need is not None else ""
    first = ""
    if cycle_requests:
        first = (f"; the slope is judged after the first pass over the input's {cycle_requests} requests ("
                 + (f"{pass_s / 60:.1f} min at {request_rate:g}/s" if pass_s else "when the server's pace has sent "
                    "them") + f"), before it only growth beyond {rule.growth_limit:g} MiB can FAIL")
    out = []
    for metric in _MEMORY + (("server_gpu_memory",) if gpu else ()):
        if slope:
            text = (f"{metric}: judges {span / 60:.1f} min after a {limits.warmup_s:g} s warmup; at the stated wander "
                    f"({rule.wander:g} MiB per {rule.wander_s:g} s) a slope of {figure(detectable)} MiB/h or more can FAIL "
                    f"(limit {rule.limit_per_h:g}), more where the samples are noisier; at a sample scatter of "
                    f"{PLAN_RSS_SCATTER_MIB:g} MiB per minute (assumed) a slope of {figure(power)} MiB/h or more FAILs in 95 % "
                    f"of soaks{ten}{first}")
        elif growth:
            text = (f"{metric}: judges {span / 60:.1f} min, under the {rule.min_span_s / 60:g} min a slope needs"
                    + (" after the first pass over the input" if pass_s and steady < span else "")
                    + f": only growth beyond {rule.growth_limit:g} MiB can decide (FAIL); the slope stays inconclusive")
        else:
            text = (f"{metric}: judges {span:.0f} s after a {limits.warmup_s:g} s warmup, under the "
                    f"{3 * rule.min_batch_s:g} s any verdict needs: it cannot decide")
        if metric == "server_gpu_memory":
            text += ("; the same rule on the GPU memory NVML gives for the server's processes (device-wide, with a "
                     "notice, where a PID namespace hides them), if the server uses a GPU")
        if metric == "aiperf_rss":
            text += ("; after a handover it is judged per AIPerf process instead (docs/soak.md): each one's growth "
                     f"within against {rule.growth_limit:g} MiB, and the levels of 4 or more successors over "
                     f"{rule.min_span_s / 60:g} min or more across")
        out.append(TrendPlan(metric=metric, judged_span_s=span, slope_decides=slope, growth_decides=growth,
                             detectable_slope=detectable, power_slope=power, limit=rule.limit_per_h, unit="MiB/h",
                             text=text))
    if window_s:
        cycle_s = cycle_requests / request_rate if cycle_requests and request_rate else None
        drift = _drift_plan(duration_s, limits, cycle_requests, cycle_s) if limits.latency_drift_rule == "sampled" \
            else _tail_plan(duration_s, window_s, limits, "latency_drift")
        out += [drift, _tail_plan(duration_s, window_s, limits)]
    return out


def span_for_power(slope_per_h: float, rule: SampledTrendRule, power: float = 0.95) -> float | None:
    """The shortest judged span (s, to 10 s) over which the rule FAILs a slope of `slope_per_h` in `power` of
    soaks at the stated wander and `PLAN_RSS_SCATTER_MIB`: at least `min_span_s`; None where none up to two
    days does."""
    if slope_per_h <= rule.limit_per_h:
        return None
    lo, hi = max(rule.min_span_s, 3 * rule.min_batch_s), 2 * 86400.0
    if power_slope_per_h(hi, rule, PLAN_RSS_SCATTER_MIB, power) > slope_per_h:
        return None
    if power_slope_per_h(lo, rule, PLAN_RSS_SCATTER_MIB, power) <= slope_per_h:
        return lo
    while hi - lo > 10:  # the power slope falls with the span once it holds its batches
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power_slope_per_h(mid, rule, PLAN_RSS_SCATTER_MIB, power) <= slope_per_h else (mid, hi)
    return math.ceil(hi / 10) * 10


def _drift_plan(duration_s: float, limits: SoakLimits, cycle_requests: int, cycle_s: float | None) -> TrendPlan:
    """`latency_drift` judges ratios from the first items' second requests to the end: after the warmup and
    the longer of the baseline and (where the rate says it) the time the input takes to come round.

    Its wander floor is estimated from the ratios themselves, unknown before the load, so the detectable drift
    is stated with no wander, at the assumed `PLAN_RATIO_SCATTER_PCT`; a batch of b seconds is taken to scatter
    by that x sqrt(60 / b). The soak's checkpoints give the figure at the scatter it measures.
    """
    rule = drift_rule(limits)
    wait = max(limits.latency_baseline_s, cycle_s or 0.0)
    span = max(0.0, duration_s - limits.warmup_s - wait)
    k = batch_count(span, rule)
    decides = k >= 3 and span >= rule.min_span_s
    why = f"each item's {limits.latency_baseline_s:g} s baseline" if wait == limits.latency_baseline_s else \
        f"the {wait:.0f} s the {cycle_requests} requests of the input take to come round to an item again"
    start = f"judges ratios over {span / 60:.1f} min (after the {limits.warmup_s:g} s warmup and {why})"
    if cycle_requests and cycle_s is None:
        start += (f"; an item's first ratio is its next request after its baseline, so at a pace slower than "
                  f"{cycle_requests} requests per {limits.latency_baseline_s:g} s the ratios start later")
    if not decides:
        text = (f"latency_drift: {start}, under the {rule.min_span_s / 60:g} min its slope needs: it cannot decide")
        return TrendPlan(metric="latency_drift", judged_span_s=span, slope_decides=False, growth_decides=False,
                         limit=rule.limit_per_h, unit="%/h", text=text)
    # Equally spaced batch means: the slope's se is the batch scatter over sqrt(sum of squared deviations).
    span_h, batch_s = span / 3600, span / k
    sxx = span_h**2 * (k * k - 1) / (12 * k)
    scatter = PLAN_RATIO_SCATTER_PCT * math.sqrt(60 / batch_s)
    detectable = rule.limit_per_h + t_quantile(0.5 + rule.confidence / 2, k - 2) * scatter / math.sqrt(sxx)
    text = (f"latency_drift: {start}; at a same-item ratio scatter of {PLAN_RATIO_SCATTER_PCT:g} % per minute "
            f"(assumed; checkpoints give the measured figure) and no wander a drift of {figure(detectable)} %/h or more "
            f"can FAIL (limit {rule.limit_per_h:g}); the wander floor the ratios show raises it (a busy host's "
            f"minutes-long load bumps several-fold)")
    return TrendPlan(metric="latency_drift", judged_span_s=span, slope_decides=True, growth_decides=False,
                     detectable_slope=detectable, limit=rule.limit_per_h, unit="%/h", text=text)


def _tail_plan(duration_s: float, window_s: float, limits: SoakLimits,
               metric: str = "server_p99_latency") -> TrendPlan:
    """A per-window trend (the tail; the drift under `latency_drift_rule = "window"`): enough judged windows,
    and their mid-points far enough apart."""
    windows = max(0, math.ceil(duration_s / window_s - 1e-9) - limits.warmup_windows)
    span = max(0.0, (windows - 1) * window_s)
    decides = windows >= limits.min_trend_windows and span >= limits.min_trend_span_s
    if decides:
        why = f"judges {windows} windows spanning {span / 60:.1f} min: it can decide"
    else:
        why = (f"judges {windows} window(s) spanning {span / 60:.1f} min, under the {limits.min_trend_windows} "
               f"windows over {limits.min_trend_span_s / 60:g} min it needs: it cannot decide")
    return TrendPlan(metric=metric, judged_span_s=span, slope_decides=decides, growth_decides=False,
                     limit=limits.p99_latency_limit_pct_per_h, unit="%/h", text=f"{metric}: {why}")

"""What a soak's plan can decide, said before the load starts: one TrendPlan per trend verdict.

From the settings alone (duration, warmup, limits, the stated wander); measures nothing. Memory's detectable
slope comes from the stated wander. Latency drift's wander floor is estimated from the ratios themselves,
unknown before the load, so its detectable drift is stated with no wander, at an assumed scatter, `PLAN_RATIO_SCATTER_PCT`: the sd of one minute's mean of the same-item ratios, in % of
baseline (8 %: the synthetic noise model of tests/orchestrator/latency_requests.py at 1 request/s, AR(1)
load up to phi 0.8). A batch of b seconds is taken to scatter by that x sqrt(60 / b). The soak's
checkpoints give the figure at the scatter it measures. Pure.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from orchestrator.events import SoakLimits, TrendPlan
from orchestrator.judge.sampled_trend import batch_count, t_quantile, wander_sd_per_h
from orchestrator.soak.verdicts import drift_rule, sampled_rule

__all__ = ["PLAN_RATIO_SCATTER_PCT", "plan_trends"]

PLAN_RATIO_SCATTER_PCT = 8.0

_MEMORY = ("server_rss", "orchestrator_rss", "aiperf_rss")


def plan_trends(duration_s: float, limits: SoakLimits, window_s: float | None = None, *, cycle_requests: int = 0,
                request_rate: float | None = None) -> list[TrendPlan]:
    """Each memory verdict's plan over the judged span (duration minus warmup), then, given `window_s`,
    each latency trend's. `cycle_requests`: the requests after which AIPerf's input comes round to the
    same items again (an item's second request is its first ratio); with `request_rate`, its time."""
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
    first = ""
    if cycle_requests:
        first = (f"; the slope is judged after the first pass over the input's {cycle_requests} requests ("
                 + (f"{pass_s / 60:.1f} min at {request_rate:g}/s" if pass_s else "when the server's pace has sent "
                    "them") + f"), before it only growth beyond {rule.growth_limit:g} MiB can FAIL")
    out = []
    for metric in _MEMORY:
        if slope:
            text = (f"{metric}: judges {span / 60:.1f} min after a {limits.warmup_s:g} s warmup; at the stated wander "
                    f"({rule.wander:g} MiB per {rule.wander_s:g} s) a slope of {detectable:.3g} MiB/h or more can FAIL "
                    f"(limit {rule.limit_per_h:g}), more where the samples are noisier{first}")
        elif growth:
            text = (f"{metric}: judges {span / 60:.1f} min, under the {rule.min_span_s / 60:g} min a slope needs"
                    + (" after the first pass over the input" if pass_s and steady < span else "")
                    + f": only growth beyond {rule.growth_limit:g} MiB can decide (FAIL); the slope stays inconclusive")
        else:
            text = (f"{metric}: judges {span:.0f} s after a {limits.warmup_s:g} s warmup, under the "
                    f"{3 * rule.min_batch_s:g} s any verdict needs: it cannot decide")
        out.append(TrendPlan(metric=metric, judged_span_s=span, slope_decides=slope, growth_decides=growth,
                             detectable_slope=detectable, limit=rule.limit_per_h, unit="MiB/h", text=text))
    if window_s:
        cycle_s = cycle_requests / request_rate if cycle_requests and request_rate else None
        drift = _drift_plan(duration_s, limits, cycle_requests, cycle_s) if limits.latency_drift_rule == "sampled" \
            else _tail_plan(duration_s, window_s, limits, "latency_drift")
        out += [drift, _tail_plan(duration_s, window_s, limits)]
    return out


def _drift_plan(duration_s: float, limits: SoakLimits, cycle_requests: int, cycle_s: float | None) -> TrendPlan:
    """`latency_drift` judges ratios from the first items' second requests to the end: after the warmup and
    the longer of the baseline and (where the rate says it) the time the input takes to come round."""
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
            f"(assumed; checkpoints give the measured figure) and no wander a drift of {detectable:.3g} %/h or more "
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

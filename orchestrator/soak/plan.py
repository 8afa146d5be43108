"""What a soak's plan can decide, said before the load starts: one TrendPlan per trend verdict.

From the settings alone (duration, warmup, limits, the stated wander); measures nothing. Pure.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from orchestrator.events import SoakLimits, TrendPlan
from orchestrator.judge.sampled_trend import batch_count, wander_sd_per_h
from orchestrator.soak.verdicts import sampled_rule

__all__ = ["plan_trends"]

_MEMORY = ("server_rss", "orchestrator_rss", "aiperf_rss")


def plan_trends(duration_s: float, limits: SoakLimits, window_s: float | None = None) -> list[TrendPlan]:
    """Each memory verdict's plan over the judged span (duration minus warmup), then, given `window_s`,
    each latency trend's over its judged windows."""
    rule = sampled_rule(limits)
    span = max(0.0, duration_s - limits.warmup_s)
    growth = batch_count(span, rule) >= 3
    slope = growth and span >= rule.min_span_s
    z = NormalDist().inv_cdf(0.5 + rule.confidence / 2)
    detectable = rule.limit_per_h + z * wander_sd_per_h(span, rule) if growth else None
    out = []
    for metric in _MEMORY:
        if slope:
            text = (f"{metric}: judges {span / 60:.1f} min after a {limits.warmup_s:g} s warmup; at the stated wander "
                    f"({rule.wander:g} MiB per {rule.wander_s:g} s) a slope of {detectable:.3g} MiB/h or more can FAIL "
                    f"(limit {rule.limit_per_h:g}), more where the samples are noisier")
        elif growth:
            text = (f"{metric}: judges {span / 60:.1f} min, under the {rule.min_span_s / 60:g} min a slope needs: only "
                    f"growth beyond {rule.growth_limit:g} MiB can decide (FAIL); the slope stays inconclusive")
        else:
            text = (f"{metric}: judges {span:.0f} s after a {limits.warmup_s:g} s warmup, under the "
                    f"{3 * rule.min_batch_s:g} s any verdict needs: it cannot decide")
        out.append(TrendPlan(metric=metric, judged_span_s=span, slope_decides=slope, growth_decides=growth,
                             detectable_slope=detectable, limit=rule.limit_per_h, unit="MiB/h", text=text))
    if window_s:
        out += _latency_plans(duration_s, window_s, limits)
    return out


def _latency_plans(duration_s: float, window_s: float, limits: SoakLimits) -> list[TrendPlan]:
    """Latency trends are judged per window: enough judged windows, and their mid-points far enough apart."""
    windows = max(0, math.ceil(duration_s / window_s - 1e-9) - limits.warmup_windows)
    span = max(0.0, (windows - 1) * window_s)
    decides = windows >= limits.min_trend_windows and span >= limits.min_trend_span_s
    if decides:
        why = f"judges {windows} windows spanning {span / 60:.1f} min: it can decide"
    else:
        why = (f"judges {windows} window(s) spanning {span / 60:.1f} min, under the {limits.min_trend_windows} "
               f"windows over {limits.min_trend_span_s / 60:g} min it needs: it cannot decide")
    return [TrendPlan(metric=m, judged_span_s=span, slope_decides=decides, growth_decides=False,
                      limit=limits.p99_latency_limit_pct_per_h, unit="%/h", text=f"{m}: {why}")
            for m in ("latency_drift", "server_p99_latency")]

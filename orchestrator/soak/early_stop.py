"""When a soak is decided before its end: the look-spending rule judged at every window's close, and the plan
that says when each verdict that can end a soak may first decide. Pure: the loop halts the load.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist, fmean, stdev

import msgspec

from orchestrator.events import SoakLimits, StopPlan, WindowStats
from orchestrator.judge.intervals import wilson_interval
from orchestrator.judge.outcome import FAIL
from orchestrator.judge.sampled_trend import batch_count, t_quantile
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.verdicts import sampled_rule

__all__ = ["STOP_BUDGET", "LOOK_CONFIDENCE", "MEMORY_METRICS", "STOPPING_METRICS", "look_confidence",
           "look_limits", "error_rate_stop", "decisive", "plan_stops", "planned_looks"]

# The share of soaks that the looks together may stop where no leak or error rate beyond its limit exists, over
# and above the final verdicts' own false FAILs: the level the seeded tests hold the rule to.
STOP_BUDGET = 0.01
# Each look judges the stopping verdicts at this stricter level than the final verdicts' (Haybittle-Peto, as the
# sweep's point watch and ab's boundaries): 99.9 % two-sided, z 3.29; the final verdicts keep their stated levels.
LOOK_CONFIDENCE = 0.999
MEMORY_METRICS = ("server_rss", "server_gpu_memory", "orchestrator_rss", "aiperf_rss")
STOPPING_METRICS = (*MEMORY_METRICS, "error_rate", "restarts")


def planned_looks(duration_s: float, window_s: float) -> int:
    """The windows a soak plans: one look at each close."""
    return max(1, math.ceil(duration_s / window_s - 1e-9))


def look_confidence(nominal: float) -> float:
    """The two-sided level every look judges at: LOOK_CONFIDENCE, or the final verdicts' `nominal` where higher.

    The same at every look, however many. The looks are not independent (each judges the same series, a window
    longer), so their false stops do not add up as a Bonferroni sum would: seeded, over the 96 looks of an 8-hour
    soak, clean memory series stop at most STOP_BUDGET (1 %) of soaks (tests/orchestrator/soak/
    test_soak_early_stop.py, bench/soak_early_stop.py). A Bonferroni level (1 - 2 % / 96: t 5.7 instead of 4.6 at
    10 batch degrees of freedom) would have held the bound by construction, at the cost of about a quarter more
    growth before a leak stops a soak.
    """
    return max(nominal, LOOK_CONFIDENCE)


def look_limits(limits: SoakLimits) -> SoakLimits:
    """The [soak] limits as a look applies them: the same limits at the look's level."""
    return msgspec.structs.replace(limits, trend_confidence=look_confidence(limits.trend_confidence))


def error_rate_stop(windows: Sequence[WindowStats], limit: float, confidence: float,
                    warmup_windows: int) -> MetricVerdict | None:
    """A FAIL of `error_rate` when the judged windows (after `warmup_windows`) put the error rate beyond
    `limit` at `confidence` by both bounds, else None. Needs two judged windows.

    The two bounds: the pooled count's Wilson bound (binomial noise), and the judged windows' mean rate less
    Student's t times its standard error, widened by the windows' own lag-1 autocorrelation (errors that come in
    bursts or drift: each window's rate is one observation, so a burst counts as one window's scatter, not as
    thousands of independent requests, and a rate that wanders for many windows is not read as a rate beyond
    the limit).
    """
    judged = [w for w in sorted(windows, key=lambda w: w.index)[warmup_windows:] if w.issued]
    if len(judged) < 2:
        return None
    issued, errors = sum(w.issued for w in judged), sum(w.errors for w in judged)
    pooled = wilson_interval(issued - errors, issued, confidence=confidence).upper
    rates = [w.errors / w.issued for w in judged]
    mean = fmean(rates)
    t = t_quantile(0.5 + confidence / 2, len(rates) - 1)
    lower = mean - t * stdev(rates) / math.sqrt(len(rates)) * _drift_factor(rates)
    if pooled is None or 1.0 - pooled <= limit or lower <= limit:
        return None
    return MetricVerdict(
        metric="error_rate", outcome=FAIL,
        reason=f"beyond the limit at {confidence * 100:.4g}% per look: {errors}/{issued} = {errors / issued:.3%} over "
               f"{len(judged)} window(s); pooled lower bound {1.0 - pooled:.3%}, windows' lower bound {lower:.3%}, "
               f"both above the {limit:.3%} limit")


def _drift_factor(rates: Sequence[float]) -> float:
    """How much wider a mean's standard error is when consecutive windows' rates move together: sqrt((1 + r) /
    (1 - r)) for their lag-1 autocorrelation r (AR(1)'s variance of a mean), r clipped to [0, 0.9]; 1 below
    three windows, where r cannot be read."""
    if len(rates) < 3:
        return 1.0
    m = fmean(rates)
    dev = [x - m for x in rates]
    den = sum(d * d for d in dev)
    r = sum(a * b for a, b in zip(dev, dev[1:], strict=False)) / den if den > 0 else 0.0
    r = min(0.9, max(0.0, r))
    return math.sqrt((1 + r) / (1 - r))


def decisive(look: Sequence[MetricVerdict], windows: Sequence[WindowStats], limits: SoakLimits) -> list[MetricVerdict]:
    """The verdicts of one look (judged at `look_limits`) that end the soak: a memory or restarts FAIL, and
    the error rate's own stopping rule (error_rate_stop), in that order. Restarts have no noise: a FAIL stops at
    once."""
    out = [v for v in look if v.failed and v.metric in (*MEMORY_METRICS, "restarts")]
    errors = error_rate_stop(windows, limits.max_error_rate, look_confidence(limits.trend_confidence),
                             limits.warmup_windows)
    return out + ([errors] if errors else [])


def plan_stops(duration_s: float, window_s: float, limits: SoakLimits, *, cycle_requests: int = 0,
               request_rate: float | None = None, enabled: bool = True) -> list[StopPlan]:
    """When each verdict that can end the soak may first decide: the window at whose close, its time from the
    load's first request, and the level each look judges at. From the settings alone."""
    looks = planned_looks(duration_s, window_s)
    level = look_confidence(limits.trend_confidence)
    rule = sampled_rule(limits)
    z = NormalDist().inv_cdf(0.5 + level / 2)

    def first_window(after_s: float) -> int | None:
        k = max(1, math.ceil(after_s / window_s - 1e-9))
        return k if k <= looks else None

    def line(metric: str, after_s: float, what: str) -> StopPlan:
        k = first_window(after_s)
        at = min(duration_s, k * window_s) if k else None
        when = (f"from window {k}'s close ({at / 60:.0f} min)" if k and at is not None
                else "never before the end (the soak is too short)")
        text = (f"{metric}: can end the soak {when}: {what}" if enabled
                else f"{metric}: judged at every window's close, never ends the soak (--no-stop-early)")
        return StopPlan(metric=metric, window=k, after_s=at, confidence=level, text=text)

    # Growth needs three 15 s batches after the warmup; the slope also min_trend_span_s after the first pass.
    growth_s = limits.warmup_s + max(45.0, 3 * 15.0)
    while batch_count(growth_s - limits.warmup_s, rule) < 3 and growth_s < duration_s:
        growth_s += 15.0
    pass_s = cycle_requests / request_rate if cycle_requests and request_rate else 0.0
    slope_s = max(limits.warmup_s, pass_s) + limits.min_trend_span_s
    half = f"at {level * 100:.4g}% per look (z {z:.2f}), not the final {limits.trend_confidence * 100:.4g}%"
    out = [line("server_rss", growth_s,
                f"growth beyond {limits.rss_growth_limit_mib:g} MiB {half}; the slope beyond "
                f"{limits.rss_limit_mib_per_h:g} MiB/h from "
                + (f"{slope_s / 60:.0f} min" if pass_s or not cycle_requests else "the first pass's end + "
                   f"{limits.min_trend_span_s / 60:.0f} min")
                + " (also server_gpu_memory, orchestrator_rss, aiperf_rss)"),
           line("error_rate", (limits.warmup_windows + 2) * window_s,
                f"two judged windows after {limits.warmup_windows} warmup window(s), both bounds of the rate above "
                f"{limits.max_error_rate:.3%} {half}"),
           line("restarts", window_s, "at the first window's close after a restart the policy does not allow")]
    return out

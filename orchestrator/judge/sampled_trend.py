"""The sampled trend rule: a memory slope per hour from every sample of a judged span, with an interval that
holds under autocorrelation, judged against a slope limit and a growth cap. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import msgspec
import numpy as np
from scipy.stats import chi2

from orchestrator.base.figures import figure
from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS, Outcome

__all__ = ["METHOD", "SampledTrendRule", "SampledTrend", "judge_sampled_trend", "wander_sd_per_h",
           "batch_count", "t_quantile", "estimate_wander", "wander_covariance", "power_slope_per_h"]

METHOD = "batch-means least-squares slope, Student t on K-2 df, stated wander (exact slope variance)"
# The one-sided confidence to which an estimated wander (latency's floor) is raised (estimate_wander).
WANDER_UPPER = 0.9
_S_PER_H = 3600.0


class SampledTrendRule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The limits and evidence of the sampled trend rule (judge_sampled_trend gives the method).

    `confidence` is two-sided: 0.98 puts a flat series' chance of a FAIL at 1 % or less (one side).
    `growth_limit` may be infinite (no cap).
    `wander` 3 MiB: the scatter of 5-minute medians of the clean reference server's 2-hour soak after its
    first 10 minutes (successive differences' sd / sqrt 2)."""

    limit_per_h: float = 8.0
    growth_limit: float = 64.0
    min_span_s: float = 600.0
    confidence: float = 0.98
    max_batches: int = 12
    min_batch_s: float = 15.0
    wander: float = 3.0
    wander_s: float = 300.0

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"SampledTrendRule.confidence must lie in [0.5, 1) (got {self.confidence})")
        if self.max_batches < 3 or self.min_batch_s <= 0 or self.wander < 0 or self.wander_s <= 0:
            raise ValueError("SampledTrendRule needs max_batches >= 3, min_batch_s > 0, wander >= 0, wander_s > 0")


class SampledTrend(msgspec.Struct, frozen=True, kw_only=True):
    """One sampled trend verdict and its numbers (per hour in the series' unit; None where not computable)."""

    outcome: Outcome
    reason: str
    slope_per_h: float | None
    interval_per_h: tuple[float, float] | None
    growth: float | None
    growth_interval: tuple[float, float] | None
    detectable_per_h: float | None
    span_s: float
    level_rise: float | None = None
    level_interval: tuple[float, float] | None = None
    samples: int
    batch_times_h: list[float]
    batch_values: list[float]
    confidence: float
    method: str = METHOD


def _t_cdf_small(x: float, df: int) -> float:
    """Student's t cdf in closed form for df 3 and 4."""
    if df == 3:
        return 0.5 + (x / (math.sqrt(3) * (1 + x * x / 3)) + math.atan(x / math.sqrt(3))) / math.pi
    u = x * x / 4
    return 0.5 + 0.375 * x / math.sqrt(1 + u) * (1 - x * x / (12 * (1 + u)))


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (p in (0.5, 1)): exact for df 1 and 2, by bisection of the closed-form cdf for
    df 3 and 4, else the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5; within 1e-3 for df >= 5)."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    if df <= 4:
        lo, hi = 0.0, 50.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _t_cdf_small(mid, df) < p else (lo, mid)
        return (lo + hi) / 2
    z = NormalDist().inv_cdf(p)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def batch_count(span_s: float, rule: SampledTrendRule) -> int:
    """Batches a span is cut into: one per `min_batch_s`, at most `max_batches` (under 3: no verdict)."""
    return int(min(rule.max_batches, span_s // rule.min_batch_s)) if span_s > 0 else 0


def _wander_h(d: np.ndarray, wander: float, wander_s: float) -> np.ndarray:
    """The second antiderivative of the stated wander's covariance, int_0^|d| (|d| - v) c(v) dv, with
    c(v) = wander^2 max(0, 1 - v / wander_s): cubic up to `wander_s`, linear after."""
    x = np.abs(d)
    inside = x * x / 2 - x**3 / (6 * wander_s)
    beyond = wander_s * wander_s / 3 + wander_s / 2 * (x - wander_s)
    return np.asarray(wander**2 * np.where(x <= wander_s, inside, beyond))


def wander_covariance(starts_s: np.ndarray, ends_s: np.ndarray, rule: SampledTrendRule) -> np.ndarray:
    """The covariance matrix of the stated wander's means over the batches [starts_s[i], ends_s[i]]: the
    double integral of the covariance over two batches, over their lengths (judge_sampled_trend gives the model)."""
    a1, b1 = starts_s[:, None], ends_s[:, None]
    a2, b2 = starts_s[None, :], ends_s[None, :]

    def h(d: np.ndarray) -> np.ndarray:
        return _wander_h(d, rule.wander, rule.wander_s)

    total = h(b1 - a2) - h(a1 - a2) - h(b1 - b2) + h(a1 - b2)
    return np.asarray(total / ((b1 - a1) * (b2 - a2)))


def _wander_var(x_h: np.ndarray, starts_s: np.ndarray, ends_s: np.ndarray, rule: SampledTrendRule) -> float:
    """The stated wander's variance in the least-squares slope (per hour^2) of batch means at the centred
    times `x_h` (hours) over the batches [starts_s, ends_s]."""
    if rule.wander == 0:
        return 0.0
    weights = x_h / float(np.sum(x_h * x_h))
    return max(0.0, float(weights @ wander_covariance(starts_s, ends_s, rule) @ weights))


def wander_sd_per_h(span_s: float, rule: SampledTrendRule) -> float:
    """The slope sd (per hour) the stated wander alone gives over `span_s`, cut into the batches the rule
    would cut it into (3 where it would cut fewer)."""
    if span_s <= 0:
        return math.inf
    k = max(3, batch_count(span_s, rule))
    edges = span_s * np.arange(k + 1) / k
    mids = (edges[:-1] + edges[1:]) / 2
    x = (mids - mids.mean()) / _S_PER_H
    return math.sqrt(_wander_var(x, edges[:-1], edges[1:], rule))


def power_slope_per_h(span_s: float, rule: SampledTrendRule, scatter: float = 0.0, power: float = 0.95) -> float:
    """The slope the rule FAILs with probability `power` over `span_s` (equal batches), where one minute's
    mean of the points scatters by `scatter` about the line with no wander (a batch of b s by scatter x
    sqrt(60 / b)) and the wander is the stated one: the limit, plus the half-width the rule would give at
    the batch residuals' expected scatter (the noise's and the share of the wander the line leaves), plus
    the `power` normal quantile of the slope's sd (the noise's and the wander's). The soak's plan states it."""
    k = max(3, batch_count(span_s, rule)) if span_s > 0 else 0
    if k == 0:
        return math.inf
    edges = span_s * np.arange(k + 1) / k
    mids = (edges[:-1] + edges[1:]) / 2
    x = (mids - mids.mean()) / _S_PER_H
    sxx = float(np.sum(x * x))
    noise = scatter**2 * 60 / (span_s / k)
    wander = _wander_var(x, edges[:-1], edges[1:], rule)
    if rule.wander > 0:
        design = np.column_stack([np.ones(k), x])
        residual = np.eye(k) - design @ np.linalg.solve(design.T @ design, design.T)
        left = float(np.trace(residual @ wander_covariance(edges[:-1], edges[1:], rule))) / (k - 2)
    else:
        left = 0.0
    half = _half_width(math.sqrt((noise + left) / sxx), k - 2, wander, rule)
    return rule.limit_per_h + half + NormalDist().inv_cdf(power) * math.sqrt(noise / sxx + wander)


def estimate_wander(times_s: Sequence[float] | np.ndarray, values: Sequence[float] | np.ndarray,
                    wander_s: float, *, upper: float = WANDER_UPPER) -> tuple[float, float]:
    """The level wander a series shows at the time scale `wander_s`, from its own variation: the means of
    consecutive `wander_s` segments of the span (shorter, span / 4, when the span holds fewer than 4), and
    the sd of their successive differences around the differences' mean, over sqrt 2 (a level sd: a
    difference of two independent levels has twice its variance). Centring the differences leaves a linear
    trend out (it adds the same amount to each), so a drift does not raise its own floor. A short span has
    few differences and the sd is then often far too low, so the estimate is raised to its one-sided
    `upper` confidence bound (chi-square on the differences' degrees of freedom; 0.9 by default). Returns
    (level sd, the segment length used, s); (0, wander_s) with fewer than 3 segments holding points."""
    t = np.asarray(times_s, dtype=float)
    y = np.asarray(values, dtype=float)
    if t.size < 3:
        return 0.0, wander_s
    length = min(wander_s, float(t[-1] - t[0]) / 4) or wander_s
    segment = np.minimum(((t - t[0]) // length).astype(int), max(0, int((t[-1] - t[0]) // length) - 1))
    counts = np.bincount(segment)
    means = np.bincount(segment, weights=y)[counts > 0] / counts[counts > 0]
    if means.size < 3:
        return 0.0, length
    df = means.size - 2  # successive differences, less their mean
    sd = float(np.std(np.diff(means), ddof=1) / math.sqrt(2))
    return sd * math.sqrt(df / float(chi2.ppf(1.0 - upper, df))), length


def _half_width(se_batch: float, df: int, wander_var: float, rule: SampledTrendRule) -> float:
    # The estimated part takes t (its variance has df degrees of freedom), the stated wander z.
    p = 0.5 + rule.confidence / 2
    return math.hypot(t_quantile(p, df) * se_batch, NormalDist().inv_cdf(p) * math.sqrt(wander_var))


def _level_rise(by: np.ndarray, span_s: float, rule: SampledTrendRule) -> tuple[float, tuple[float, float]]:
    """The last batch mean less the first, and its two-sided interval at `rule.confidence`."""
    rise = float(by[-1] - by[0])
    d = np.diff(by)
    # 1.4826 x MAD: a normal sd; over sqrt 2: a difference of two batch means has twice a mean's variance.
    sd = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2)
    p = 0.5 + rule.confidence / 2
    # Two end levels apart by the span wander apart by up to twice the stated level variance.
    wander = rule.wander * math.sqrt(2 * min(1.0, span_s / rule.wander_s))
    half = math.hypot(t_quantile(p, by.size - 2) * sd * math.sqrt(2), NormalDist().inv_cdf(p) * wander)
    return rise, (rise - half, rise + half)


def judge_sampled_trend(times_s: Sequence[float] | np.ndarray, values: Sequence[float] | np.ndarray,
                        rule: SampledTrendRule, *,
                        unit: str = "MiB") -> SampledTrend:
    """Judge a sampled series (`times_s` seconds, any origin, ascending; `values` in `unit`: raw samples or,
    as the soak passes them, 10 s block medians, called points) under `rule`.

    Raises ValueError on mismatched lengths or non-finite input.

    Method: nonoverlapping batch means for a regression slope. The samples (already reduced to short block medians,
    which drop single-sample spikes) are cut into K equal-time batches (K = span / `min_batch_s`, at most
    `max_batches`); the least-squares slope of the batch means on their mid-times has a standard error from the batch
    residuals, and the interval uses Student's t with K - 2 degrees of freedom. Batch means of a weakly dependent
    series are close to independent and normal once a batch is long against the correlation time (a GC sawtooth, AR(1)
    noise at 1 Hz), and with K fixed the t quantile is the right (fixed-b) critical value for this variance estimator
    (a HAC estimator with K groups; Ibragimov & Mueller 2010). Chosen over Newey-West with a data-chosen bandwidth,
    which undercovers on short, strongly correlated series, and over a block bootstrap, which needs many more blocks
    than a 10-minute span has.

    Slow wander (a level that shifts from minute to minute as load and allocators move) is what no span can tell from
    a trend when it is longer than the span. Its variance cannot be estimated from such a span, so it is stated, as a
    model: a level with sd `wander` MiB that moves to an independent value every `wander_s` seconds at a random phase
    (the clean reference soak's 5-minute medians, from their successive differences). Two instants d apart share a
    level with probability max(0, 1 - d / wander_s), so the wander's covariance is wander^2 max(0, 1 - d / wander_s).
    Its variance in the slope is computed exactly for the batches the span is cut into: the batch means' covariance S
    (the double integral of that triangle over two batches, in closed form) put through the least-squares weights, a'
    S a with a = x / Sxx. Until 2026-12-03 it was the bound 12 wander^2 min(wander_s, T) / T^3 (independent levels
    every `wander_s`, the large-T limit of the same model): 24 % too wide in sd at T = 14 min, the span of a 15-minute
    soak, where the wander is most of the interval (z x 21.9 MiB/h of a half-width near 54), and several-fold too wide
    under `wander_s`.

    The wander part takes the normal quantile (it is stated, not estimated), the batch part Student's t; the two are
    added in quadrature. That counts the wander twice, in part: the batch residuals hold the share of the span's
    wander the line does not absorb, tr(M S) with M the residual projection. Subtracting that share (a moment estimate
    of the noise alone) would buy about 4 points of power at 14 judged minutes and is not done: the batch residuals
    are the only evidence of wander slower or larger than the stated one. The noise model's wander with AR(1) phi 0.8
    between 5-minute levels (a correlation time near 25 minutes) already FAILs a slope at the limit 4 % of the time
    over 60 judged minutes (as it did before this change); with the subtraction, 6 %. Assumptions, then: batches long
    against the sample noise's correlation time, and no wander beyond the stated one that the batches cannot show. At
    twice the stated wander the rule FAILs up to 5 % of flat series over 14-20 judged minutes (bench/RESULTS.md).

    What the stated wander costs at short spans is stated, not tuned away. Over 14 judged minutes the least-squares
    slope has an sd near 22 MiB/h from the wander and the sample noise, so even with its variance known a test that
    FAILs a slope at the limit at most 1 % of the time detects 80 MiB/h (10x the [soak] limit) in only about 83 % of
    seeds at phi 0; the generalised least-squares slope under the same covariance (sd about 19.6) in about 91 %. The
    rule reaches 95 % after 18 judged minutes at phi 0, 14 at 0.95. `power_slope_per_h` gives the slope the rule FAILs
    in 95 % of soaks over a span at the stated wander and a sample scatter; the soak's plan states it.

    Decision: growth over the span (slope x span) whose interval lies wholly above `growth_limit` FAILs at any span of
    3 batches or more. So does a level rise (the last batch's mean less the first's) whose interval lies wholly above
    it: slope x span reads a one-time step at fraction f of the span as 6 f (1 - f) of its height, so a step beyond
    the cap near either end would pass the growth check. The rise's noise is the batch means' scatter from their
    successive differences (median absolute deviation: one step moves one difference, a trend moves all alike), with
    Student's t on K - 2 df, plus the stated wander between the two end levels. The slope decides only over
    `min_span_s` or more: FAIL when its interval lies wholly above the limit, PASS when wholly below (and the growth's
    interval wholly below its cap), else inconclusive. `detectable` is the smallest slope that would FAIL at the noise
    seen. Pure: no I/O, no clock.
    """
    t = np.asarray(times_s, dtype=float)
    y = np.asarray(values, dtype=float)
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError(f"judge_sampled_trend needs equally long 1-d times and values, got {t.shape} and {y.shape}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        raise ValueError("judge_sampled_trend needs finite times and values")
    span_s = float(t[-1] - t[0]) if t.size else 0.0
    k = batch_count(span_s, rule)
    level = f"{rule.confidence * 100:.4g}%"  # 98%, 99.9% (a look at a stricter level)
    per_h = f"{unit}/h"

    def verdict(outcome: Outcome, reason: str, **numbers: object) -> SampledTrend:
        fields: dict[str, object] = dict(slope_per_h=None, interval_per_h=None, growth=None, growth_interval=None,
                                         detectable_per_h=None, batch_times_h=[], batch_values=[],
                                         level_rise=None, level_interval=None)
        fields.update(numbers)
        return SampledTrend(outcome=outcome, reason=reason, span_s=span_s, samples=int(t.size),
                            confidence=rule.confidence, **fields)  # type: ignore[arg-type]

    if k < 3:
        return verdict(INCONCLUSIVE, f"not enough evidence: {t.size} point(s) over {span_s:.0f} s, "
                                     f"{3 * rule.min_batch_s:g} s at least")
    edges = t[0] + span_s * np.arange(1, k) / k
    which = np.searchsorted(edges, t, side="right")
    counts = np.bincount(which, minlength=k)
    keep = counts > 0  # a gap in the samples can leave a batch empty: only the batches that hold some
    bt = np.bincount(which, weights=t, minlength=k)[keep] / counts[keep]
    by = np.bincount(which, weights=y, minlength=k)[keep] / counts[keep]
    starts = (t[0] + span_s * np.arange(k) / k)[keep]
    ends = (t[0] + span_s * np.arange(1, k + 1) / k)[keep]
    k = int(bt.size)
    if k < 3:
        return verdict(INCONCLUSIVE, f"not enough evidence: samples in {k} of the span's batches")
    th = (bt - t[0]) / _S_PER_H
    x = th - th.mean()
    sxx = float(np.sum(x * x))
    slope = float(np.sum(x * (by - by.mean())) / sxx)
    resid = by - by.mean() - slope * x
    se = math.sqrt(float(np.sum(resid * resid)) / (k - 2) / sxx)
    half = _half_width(se, k - 2, _wander_var(x, starts, ends, rule), rule)
    interval = (slope - half, slope + half)
    span_h = span_s / _S_PER_H
    growth = slope * span_h
    g_interval = (interval[0] * span_h, interval[1] * span_h)
    detectable = rule.limit_per_h + half
    rise, rise_interval = _level_rise(by, span_s, rule) if math.isfinite(rule.growth_limit) else (None, None)
    numbers: dict[str, object] = dict(
        slope_per_h=slope, interval_per_h=interval, growth=growth, growth_interval=g_interval,
        detectable_per_h=detectable, batch_times_h=[round(float(v), 6) for v in th],
        batch_values=[round(float(v), 6) for v in by], level_rise=rise, level_interval=rise_interval)
    # An infinite cap (latency drift has none) leaves the growth out of the text.
    capped = (f"; growth {figure(growth, signed=True)} {unit} [{figure(g_interval[0], signed=True)}, {figure(g_interval[1], signed=True)}] (cap "
              f"{rule.growth_limit:g} {unit})") if math.isfinite(rule.growth_limit) else ""
    how = (f"slope {figure(slope, signed=True)} {per_h}, {level} interval [{figure(interval[0], signed=True)}, {figure(interval[1], signed=True)}] {per_h}; "
           f"limit {rule.limit_per_h:g} {per_h}{capped} over {span_s / 60:.1f} min, {t.size} "
           f"points in {k} batches; at this noise a slope of {figure(detectable)} {per_h} or more would FAIL")
    if g_interval[0] > rule.growth_limit:
        return verdict(FAIL, f"grows beyond the cap: the growth's interval lies wholly above it: {how}", **numbers)
    if rise_interval is not None and rise is not None and rise_interval[0] > rule.growth_limit:
        return verdict(FAIL, f"grows beyond the cap: the level rose {figure(rise, signed=True)} {unit} from the first batch to the "
                             f"last, {level} interval [{figure(rise_interval[0], signed=True)}, {figure(rise_interval[1], signed=True)}] {unit}, "
                             f"wholly above the {rule.growth_limit:g} {unit} cap: {how}", **numbers)
    if span_s < rule.min_span_s:
        return verdict(INCONCLUSIVE, f"slope not judged: span {span_s / 60:.1f} min of "
                                     f"{rule.min_span_s / 60:g} min: {how}", **numbers)
    if interval[0] > rule.limit_per_h:
        return verdict(FAIL, f"drifts: the interval lies wholly above the limit: {how}", **numbers)
    if interval[1] < rule.limit_per_h and g_interval[1] <= rule.growth_limit and \
            (rise_interval is None or rise_interval[1] <= rule.growth_limit):
        return verdict(PASS, f"flat: the interval lies wholly below the limit: {how}", **numbers)
    return verdict(INCONCLUSIVE, f"undecided: the interval contains the limit: {how}", **numbers)

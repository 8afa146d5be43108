"""The drift rule: a Theil-Sen slope per hour with Sen's distribution-free interval, judged against a limit.
Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist

import msgspec
import numpy as np

from orchestrator.base.figures import figure
from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS, Outcome

__all__ = [
    "DEFAULT_RULE",
    "METHOD",
    "SlopeEstimate",
    "TrendRule",
    "TrendVerdict",
    "judge_relative_trend",
    "judge_trend",
    "theil_sen",
]

METHOD = "Theil-Sen slope, Kendall-tau interval (Sen 1968)"
_EXACT_MAX_N = 60


class TrendRule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How much evidence a trend verdict needs, and the interval's two-sided confidence level.

    `min_windows` counts judged windows (after warmup). `min_span_s` is the time between the first and
    last judged windows' mid-points: 600 s by default, because a per-hour slope from a shorter span
    multiplies each window's noise by more than 6 when extrapolated to an hour. `confidence` 0.95: at
    0.90 the first six windows of issue #23's clean hour (RSS rising, then back at window 7) would fail.
    """

    min_windows: int = 6
    min_span_s: float = 600.0
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.min_windows < 3:
            raise ValueError(f"TrendRule.min_windows must be at least 3 (got {self.min_windows}): "
                             f"an interval needs three or more points")
        if self.min_span_s < 0:
            raise ValueError(f"TrendRule.min_span_s must be 0 or more (got {self.min_span_s})")
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"TrendRule.confidence must lie in [0.5, 1) (got {self.confidence})")


DEFAULT_RULE = TrendRule()


class SlopeEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """A Theil-Sen slope and its interval; `interval` is None when too few points reach the confidence."""

    slope: float
    interval: tuple[float, float] | None
    pairs: int


class TrendVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One trend verdict with the numbers behind it; slope and interval are None when not computable."""

    outcome: Outcome
    slope_per_h: float | None
    interval_per_h: tuple[float, float] | None
    limit_per_h: float
    unit: str
    n_windows: int
    span_s: float
    confidence: float
    reason: str
    method: str = METHOD


def _tie_term(values: np.ndarray) -> float:
    """Sum of t(t-1)(2t+5) over groups of equal values (Kendall's variance tie correction)."""
    ordered = np.sort(values)
    if np.all(ordered[1:] != ordered[:-1]):
        return 0.0
    _, counts = np.unique(ordered, return_counts=True)
    counts = counts[counts > 1].astype(float)
    return float(np.sum(counts * (counts - 1) * (2 * counts + 5)))


@functools.lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n, k=1)
    return i, j


@functools.lru_cache(maxsize=256)
def _exact_rank(n: int, confidence: float) -> int:
    """Hollander & Wolfe's exact rank M for n untied points: the interval [S(M), S(N+1-M)] misses the
    slope below with probability P(K >= N - 2M + 2) = P(inversions <= M - 1) <= (1 - confidence) / 2,
    K being Kendall's statistic under independence. 0: no interval reaches the confidence."""
    dist = np.array([1.0])
    for k in range(2, n + 1):  # inversions of a random permutation: a sum of uniforms on 0..k-1
        dist = np.convolve(dist, np.full(k, 1.0 / k))
    cdf = np.cumsum(dist)
    return int(np.count_nonzero(cdf <= (1 - confidence) / 2 * (1 + 1e-12)))


def theil_sen(times_h: Sequence[float], values: Sequence[float], confidence: float = 0.95) -> SlopeEstimate:
    """Theil-Sen slope of `values` over `times_h` (units per hour) and Sen's two-sided interval.

    Pairs with equal times carry no slope and are left out. The interval is [S(M), S(N+1-M)] over the N
    sorted pairwise slopes: M from Kendall's exact null distribution for up to 60 untied points, else
    M = round((N - z * sd(K)) / 2) with Kendall's tie-corrected variance (the large-sample form).
    Raises ValueError on mismatched lengths, non-finite input, or fewer than two distinct times.

    Method: Theil-Sen slope (median of the pairwise slopes) and its confidence interval from Kendall's tau (Sen 1968,
    "Estimates of the regression coefficient based on Kendall's tau", JASA 63; as given in Hollander & Wolfe,
    "Nonparametric Statistical Methods", the Kendall-based interval for the slope), with the tie correction of
    Kendall's variance. Chosen over a block bootstrap over windows because a soak judges 6 to a few dozen windows: a
    bootstrap over so few blocks underestimates its own spread (too few distinct resamples, intervals too narrow),
    while Sen's interval is exact in its ranks for independent windows and needs no resampling, so a verdict is
    reproducible and costs O(n^2) for n windows. Its assumption is independent window noise around the trend; slow
    wander (autocorrelation) widens the true spread beyond the interval, which the minimum span and window count
    partly guard against.
    """
    t = np.asarray(times_h, dtype=float)
    y = np.asarray(values, dtype=float)
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError(f"theil_sen needs equally long 1-d times and values, got {t.shape} and {y.shape}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        raise ValueError("theil_sen needs finite times and values")
    i, j = _pairs(t.size)
    dt = t[j] - t[i]
    keep = dt != 0
    slopes = np.sort((y[j] - y[i])[keep] / dt[keep])
    n_pairs = int(slopes.size)
    if n_pairs == 0:
        raise ValueError("theil_sen needs at least two distinct times")
    half = n_pairs // 2  # slopes are sorted: the median is the middle one (or the mean of the middle two)
    slope = float(slopes[half]) if n_pairs % 2 else float((slopes[half - 1] + slopes[half]) / 2)
    ties = _tie_term(t) + _tie_term(y)
    n = t.size
    if ties == 0 and n <= _EXACT_MAX_N:
        rank = _exact_rank(n, confidence)
    else:
        var_s = (n * (n - 1) * (2 * n + 5) - ties) / 18
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        # var_s is 0 only when every value is equal: every pairwise slope is then 0, and so is the interval.
        rank = round((n_pairs - z * math.sqrt(var_s)) / 2) if var_s > 0 else 1
    interval = (float(slopes[rank - 1]), float(slopes[n_pairs - rank])) if rank >= 1 else None
    return SlopeEstimate(slope=slope, interval=interval, pairs=n_pairs)


def _fmt(x: float) -> str:
    return figure(x, signed=True)


def judge_trend(times_h: Sequence[float], values: Sequence[float], limit_per_h: float, *, unit: str,
                rule: TrendRule = DEFAULT_RULE) -> TrendVerdict:
    """Judge a per-window series: fail when the interval lies wholly above `limit_per_h`, pass when wholly
    below, otherwise inconclusive. Below `rule`'s windows or span it is inconclusive and names what is
    missing. `times_h` are the judged windows' mid-points in hours (any origin), in any order.
    """
    n = len(values)
    if len(times_h) != n:
        raise ValueError(f"judge_trend needs one time per value, got {len(times_h)} times and {n} values")
    span_s = (max(times_h) - min(times_h)) * 3600 if n else 0.0
    estimate = theil_sen(times_h, values, rule.confidence) if n >= 2 and span_s > 0 else None
    slope = estimate.slope if estimate else None
    interval = estimate.interval if estimate else None

    def verdict(outcome: Outcome, reason: str) -> TrendVerdict:
        return TrendVerdict(outcome=outcome, slope_per_h=slope, interval_per_h=interval, limit_per_h=limit_per_h,
                            unit=unit, n_windows=n, span_s=span_s, confidence=rule.confidence, reason=reason)

    level = f"{rule.confidence:.0%}"
    how = "no slope" if slope is None else f"slope {_fmt(slope)} {unit}"
    if interval is not None:
        how += f", {level} interval [{_fmt(interval[0])}, {_fmt(interval[1])}] {unit}"
    how += f"; limit {limit_per_h:g} {unit}"
    missing = []
    if n < rule.min_windows:
        missing.append(f"{n} of {rule.min_windows} windows")
    if span_s < rule.min_span_s:
        missing.append(f"span {span_s / 60:.1f} min of {rule.min_span_s / 60:g} min")
    if missing:
        return verdict(INCONCLUSIVE, f"not enough evidence ({', '.join(missing)}): {how}")
    if interval is None:
        return verdict(INCONCLUSIVE, f"no {level} interval from {n} windows: {how}")
    if interval[0] > limit_per_h:
        return verdict(FAIL, f"drifts: the interval lies wholly above the limit: {how}")
    if interval[1] < limit_per_h:
        return verdict(PASS, f"flat: the interval lies wholly below the limit: {how}")
    return verdict(INCONCLUSIVE, f"undecided: the interval contains the limit: {how}")


def judge_relative_trend(times_h: Sequence[float], values: Sequence[float], limit_pct_per_h: float, *,
                         baseline_windows: int = 3, rule: TrendRule = DEFAULT_RULE) -> TrendVerdict:
    """`judge_trend` on a series expressed in % of its baseline (median of its first `baseline_windows`
    values, in time order); unit %/h. Inconclusive when the baseline is not positive.
    """
    if baseline_windows < 1:
        raise ValueError(f"baseline_windows must be at least 1 (got {baseline_windows})")
    order = sorted(range(len(values)), key=lambda k: times_h[k])
    baseline = float(np.median([values[k] for k in order[:baseline_windows]])) if order else 0.0
    if not baseline > 0:
        span_s = (max(times_h) - min(times_h)) * 3600 if times_h else 0.0
        return TrendVerdict(outcome=INCONCLUSIVE, slope_per_h=None, interval_per_h=None,
                            limit_per_h=limit_pct_per_h, unit="%/h", n_windows=len(values), span_s=span_s,
                            confidence=rule.confidence,
                            reason=f"no positive baseline: median of the first {baseline_windows} windows "
                                   f"is {baseline:g}")
    pct = [100.0 * v / baseline for v in values]
    return judge_trend(times_h, pct, limit_pct_per_h, unit="%/h", rule=rule)

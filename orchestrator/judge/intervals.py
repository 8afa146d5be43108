"""Confidence intervals for the changes `aqbench compare` reports, and their classification: pure, no I/O.
With the default 90% two-sided intervals each direction errs at most 5%.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

import msgspec
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from orchestrator.judge.noninferiority import PairedCounts
from orchestrator.judge.tango import score_bounds

__all__ = [
    "MIN_SAMPLES",
    "MIN_TAIL",
    "Change",
    "QuantileChange",
    "RateChange",
    "RateInterval",
    "RatioChange",
    "classify_change",
    "clustered_quantile_changes",
    "item_ratio_change",
    "paired_quantile_change",
    "paired_rate_change",
    "quantile_change",
    "rate_change",
    "tail_share_change",
    "wilson_interval",
]

Change = Literal["improved", "regressed", "unchanged", "inconclusive"]
# Fewer samples than this on either side make any figure inconclusive.
MIN_SAMPLES = 10
# A quantile needs this many samples beyond it on each side (p99: 500 samples, p90: 50, p50: 10):
# the percentile bootstrap of an extreme order statistic is unreliable with fewer.
MIN_TAIL = 5
_CHUNK_CELLS = 4_000_000  # resample rows per chunk in the paired bootstrap: bounds memory to ~32 MB


class QuantileChange(msgspec.Struct, frozen=True, kw_only=True):
    """A quantile on both sides and the change, candidate minus baseline, with its bootstrap interval.

    ``relative*`` are candidate / baseline - 1 (None when the baseline quantile is not positive).
    ``n_*`` count samples (requests, or items when paired); ``enough_samples`` applies MIN_SAMPLES and
    MIN_TAIL.
    """

    quantile: float
    baseline: float
    candidate: float
    difference: float
    lower: float
    upper: float
    relative: float | None
    relative_lower: float | None
    relative_upper: float | None
    confidence: float
    resamples: int
    n_baseline: int
    n_candidate: int
    enough_samples: bool
    method: str


class RateInterval(msgspec.Struct, frozen=True, kw_only=True):
    """A pass rate (fraction) with its Wilson score interval; ``rate`` is None when n is 0."""

    successes: int
    n: int
    rate: float | None
    lower: float
    upper: float
    confidence: float
    method: str = "wilson"


class RateChange(msgspec.Struct, frozen=True, kw_only=True):
    """Candidate rate minus baseline rate (fractions) with its interval."""

    baseline: float | None
    candidate: float | None
    difference: float
    lower: float
    upper: float
    confidence: float
    n_baseline: int
    n_candidate: int
    enough_samples: bool
    method: str


def _check_confidence(confidence: float) -> float:
    if not 0.5 <= confidence < 1.0:
        raise ValueError(f"confidence must lie in [0.5, 1), got {confidence}")
    return (1.0 - confidence) / 2.0


def _rank(quantile: float, n: int) -> int:
    """1-based rank of the order-statistic quantile (numpy's ``inverted_cdf``): ceil(q n), within 1..n."""
    return min(n, max(1, math.ceil(quantile * n - 1e-9)))


def _enough(quantile: float, n: int) -> bool:
    return n >= MIN_SAMPLES and n * min(quantile, 1.0 - quantile) >= MIN_TAIL


def _sorted_sample(values: ArrayLike, side: str) -> NDArray[np.float64]:
    array = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if array.size == 0:
        raise ValueError(f"the {side} sample is empty: a quantile needs at least one value")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"the {side} sample holds a NaN or infinite value")
    return array


def _bootstrap_order_statistic(ordered: NDArray[np.float64], quantile: float, resamples: int,
                               rng: np.random.Generator) -> NDArray[np.float64]:
    """``resamples`` draws of the resampled quantile, each distributed exactly as resampling n values."""
    n = ordered.size
    r = _rank(quantile, n)
    u = rng.beta(r, n - r + 1, size=resamples)
    index = np.clip(np.ceil(n * u).astype(np.int64), 1, n) - 1
    return ordered[index]


def _summarise(quantile: float, base: float, cand: float, base_draws: NDArray[np.float64],
               cand_draws: NDArray[np.float64], tail: float, resamples: int, n_base: int, n_cand: int,
               enough: bool, method: str, confidence: float) -> QuantileChange:
    difference_draws = cand_draws - base_draws
    lower, upper = np.quantile(difference_draws, [tail, 1.0 - tail])
    relative = relative_lower = relative_upper = None
    if base > 0.0 and np.all(base_draws > 0.0):
        relative = cand / base - 1.0
        rel_low, rel_high = np.quantile(cand_draws / base_draws - 1.0, [tail, 1.0 - tail])
        relative_lower, relative_upper = float(rel_low), float(rel_high)
    return QuantileChange(quantile=quantile, baseline=base, candidate=cand, difference=cand - base,
                          lower=float(lower), upper=float(upper), relative=relative, relative_lower=relative_lower,
                          relative_upper=relative_upper, confidence=confidence, resamples=resamples,
                          n_baseline=n_base, n_candidate=n_cand, enough_samples=enough, method=method)


# Quantile of two independent samples: percentile bootstrap (Efron 1979) of the order-statistic quantile, drawn
# exactly and in O(resamples) per side: the r-th order statistic of a resample is `x[ceil(n U) - 1]` with `U ~ Beta(r,
# n - r + 1)` (Hutson 1999; the bootstrap law of an order statistic, Efron 1982 ch. 5).
def quantile_change(baseline: ArrayLike, candidate: ArrayLike, quantile: float, *, confidence: float = 0.90,
                    resamples: int = 4000, seed: int = 0) -> QuantileChange:
    """Change of a quantile between two independent samples (requests of two runs).

    The quantile is the order statistic of rank ceil(q n); each side is resampled independently.
    Costs one sort per side plus O(resamples): two samples of 100,000 values take ~20 ms.
    """
    tail = _check_confidence(confidence)
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    base_sorted, cand_sorted = _sorted_sample(baseline, "baseline"), _sorted_sample(candidate, "candidate")
    rng = np.random.default_rng(seed)
    base_draws = _bootstrap_order_statistic(base_sorted, quantile, resamples, rng)
    cand_draws = _bootstrap_order_statistic(cand_sorted, quantile, resamples, rng)
    base = float(base_sorted[_rank(quantile, base_sorted.size) - 1])
    cand = float(cand_sorted[_rank(quantile, cand_sorted.size) - 1])
    enough = _enough(quantile, base_sorted.size) and _enough(quantile, cand_sorted.size)
    return _summarise(quantile, base, cand, base_draws, cand_draws, tail, resamples, base_sorted.size,
                      cand_sorted.size, enough, "bootstrap-order-statistic", confidence)


# Quantile paired by dataset item: per-item medians on each side, items resampled jointly (cluster bootstrap, Davison
# & Hinkley 1997 2.4), the difference of the per-item-median quantiles. item_ratio_change: the quantile (median) of
# per-item candidate / baseline ratios, items as the bootstrap units; clustered_quantile_changes: the quantile over
# requests with items resampled jointly (every request of a drawn item, both sides), so the tail is the requests' and
# the workload mix is held equal.
def paired_quantile_change(baseline: Mapping[Hashable, Sequence[float]], candidate: Mapping[Hashable, Sequence[float]],
                           quantile: float, *, confidence: float = 0.90, resamples: int = 2000,
                           seed: int = 0) -> QuantileChange:
    """Change of a quantile paired by dataset item: the workload mix is held equal on both sides.

    Each item answered on both sides becomes one pair (its median per side); a resample draws items
    with replacement and takes the same items on both sides; the statistic is the candidate's quantile
    of item medians minus the baseline's. Items on one side only are left out. O(resamples x items):
    2,000 resamples of 1,000 items take ~50 ms, 1,000 resamples of 100,000 items ~2 s.
    """
    tail = _check_confidence(confidence)
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    shared = [item for item in baseline if item in candidate and len(baseline[item]) and len(candidate[item])]
    if not shared:
        raise ValueError("no dataset item has answers on both sides: a paired comparison needs shared items")
    base_medians = np.array([np.median(np.asarray(baseline[item], dtype=np.float64)) for item in shared])
    cand_medians = np.array([np.median(np.asarray(candidate[item], dtype=np.float64)) for item in shared])
    m = len(shared)
    r = _rank(quantile, m)
    # Partitioning int32 ranks is about 2.5x faster than gathering and partitioning the floats.
    base_order, cand_order = np.argsort(base_medians, kind="stable"), np.argsort(cand_medians, kind="stable")
    base_rank, cand_rank = np.empty(m, dtype=np.int32), np.empty(m, dtype=np.int32)
    base_rank[base_order] = np.arange(m, dtype=np.int32)
    cand_rank[cand_order] = np.arange(m, dtype=np.int32)
    rng = np.random.default_rng(seed)
    base_draws, cand_draws = np.empty(resamples), np.empty(resamples)
    rows = max(1, _CHUNK_CELLS // m)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        picked = rng.integers(0, m, size=(stop - start, m), dtype=np.int32)
        base_draws[start:stop] = base_medians[base_order[np.partition(base_rank[picked], r - 1, axis=1)[:, r - 1]]]
        cand_draws[start:stop] = cand_medians[cand_order[np.partition(cand_rank[picked], r - 1, axis=1)[:, r - 1]]]
    base = float(base_medians[base_order[r - 1]])
    cand = float(cand_medians[cand_order[r - 1]])
    return _summarise(quantile, base, cand, base_draws, cand_draws, tail, resamples, m, m,
                      _enough(quantile, m), "paired-item-bootstrap", confidence)


class RatioChange(msgspec.Struct, frozen=True, kw_only=True):
    """A quantile of per-item candidate / baseline ratios (the median: the typical item's slowdown)
    with its bootstrap interval; ``relative*`` are the ratio minus 1."""

    quantile: float
    ratio: float
    lower: float
    upper: float
    relative: float
    relative_lower: float
    relative_upper: float
    confidence: float
    resamples: int
    items: int
    enough_samples: bool
    method: str = "item-ratio-bootstrap"


def item_ratio_change(baseline: Mapping[Hashable, Sequence[float]], candidate: Mapping[Hashable, Sequence[float]],
                      *, quantile: float = 0.5, confidence: float = 0.90, resamples: int = 4000,
                      seed: int = 0) -> RatioChange:
    """How much slower each item got: the quantile over shared items of (candidate median / baseline
    median), items resampled with replacement (exact order-statistic draws, O(resamples)).

    Each item is its own control, so the spread of item costs (the workload mix) leaves the interval;
    this is the most sensitive paired latency figure. Values must be positive.
    """
    tail = _check_confidence(confidence)
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    shared = [item for item in baseline if item in candidate and len(baseline[item]) and len(candidate[item])]
    if not shared:
        raise ValueError("no dataset item has answers on both sides: a paired comparison needs shared items")
    base = np.array([np.median(np.asarray(baseline[item], dtype=np.float64)) for item in shared])
    cand = np.array([np.median(np.asarray(candidate[item], dtype=np.float64)) for item in shared])
    if np.any(base <= 0.0) or np.any(cand <= 0.0) or not np.all(np.isfinite(base)) or not np.all(np.isfinite(cand)):
        raise ValueError("per-item ratios need positive, finite values on both sides")
    ratios = np.sort(cand / base)
    draws = _bootstrap_order_statistic(ratios, quantile, resamples, np.random.default_rng(seed))
    ratio = float(ratios[_rank(quantile, ratios.size) - 1])
    lower, upper = (float(x) for x in np.quantile(draws, [tail, 1.0 - tail]))
    return RatioChange(quantile=quantile, ratio=ratio, lower=lower, upper=upper, relative=ratio - 1.0,
                       relative_lower=lower - 1.0, relative_upper=upper - 1.0, confidence=confidence,
                       resamples=resamples, items=ratios.size, enough_samples=_enough(quantile, ratios.size))


def _shared_items(baseline: Mapping[Hashable, Sequence[float]], candidate: Mapping[Hashable, Sequence[float]]
                  ) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    shared = [item for item in baseline if item in candidate and len(baseline[item]) and len(candidate[item])]
    if not shared:
        raise ValueError("no dataset item has answers on both sides: a paired comparison needs shared items")
    return ([np.asarray(baseline[item], dtype=np.float64) for item in shared],
            [np.asarray(candidate[item], dtype=np.float64) for item in shared])


def _weights(rng: np.random.Generator, rows: int, m: int) -> NDArray[np.int32]:
    """Bootstrap multiplicities of m items for `rows` resamples (each row sums to m)."""
    picked = rng.integers(0, m, size=(rows, m)) + (np.arange(rows) * m)[:, None]
    return np.bincount(picked.ravel(), minlength=rows * m).reshape(rows, m).astype(np.int32)


def _weighted_quantile_draws(groups: list[NDArray[np.float64]], weights: NDArray[np.int32],
                             quantiles: Sequence[float]) -> NDArray[np.float64]:
    """Per row of item weights, the order-statistic quantiles of every request, each weighted by its item
    (rows x quantiles). One cumulative sum per row serves every quantile."""
    values = np.concatenate(groups)
    item = np.repeat(np.arange(len(groups)), [g.size for g in groups])
    order = np.argsort(values, kind="stable")
    values, item = values[order], item[order]
    out = np.empty((weights.shape[0], len(quantiles)))
    rows = max(1, _CHUNK_CELLS // max(1, values.size))
    largest = max(g.size for g in groups)
    for start in range(0, weights.shape[0], rows):
        block = weights[start:start + rows]
        # One running total over the rows laid end to end (sorted, as weights are >= 0): row r's cumulative
        # weight at i is it less the total before the row, so one binary search per row and quantile counts
        # what a scan of the row would (the scans were most of the bootstrap's time). In int32 where the
        # chunk's total surely fits (rows x items x the largest item's requests): half the memory traffic.
        dtype = np.int32 if block.shape[0] * block.shape[1] * largest < 2**31 - 1 else np.int64
        # np.take lays the gathered weights out in C order (fancy indexing on axis 1 does not, and the
        # running total would then copy them).
        running = np.take(block, item, axis=1).astype(dtype, copy=False).ravel()
        np.cumsum(running, out=running)
        row = np.arange(block.shape[0], dtype=np.int64)
        ends = running[(row + 1) * values.size - 1]
        before = np.concatenate([np.zeros(1, dtype=dtype), ends[:-1]])
        totals = ends - before
        for j, q in enumerate(quantiles):
            # numpy's inverted_cdf: the first value whose cumulative weight reaches q of the total.
            target = q * totals - 1e-9
            # An integer weight lies below target exactly when it lies below ceil(target); rows before
            # this one all lie below (or, at a target of 0, the count is 0). The keys in the running
            # total's own dtype: another would make searchsorted convert the whole array.
            keys = before + np.ceil(target).astype(dtype)
            below = np.searchsorted(running, keys) - row * values.size
            out[start:start + rows, j] = values[np.minimum(np.maximum(below, 0), values.size - 1)]
    return out


def clustered_quantile_changes(baseline: Mapping[Hashable, Sequence[float]],
                               candidate: Mapping[Hashable, Sequence[float]], quantiles: Sequence[float], *,
                               confidence: float = 0.90, resamples: int = 2000,
                               seed: int = 0) -> list[QuantileChange]:
    """Changes of quantiles over requests, paired by dataset item: a resample draws items with replacement
    and takes every request of the drawn items on both sides (a cluster bootstrap with items as units).

    Requests, not item medians, make the quantile, so a minority of slow requests moves p90 and p99; the
    same items on both sides hold the workload mix equal. Items on one side only are left out.
    O(resamples x requests): 2,000 resamples of 2,000 requests a side take ~0.1 s for all quantiles.
    """
    tail = _check_confidence(confidence)
    if not all(0.0 < q < 1.0 for q in quantiles):
        raise ValueError(f"quantiles must lie in (0, 1), got {list(quantiles)}")
    base_groups, cand_groups = _shared_items(baseline, candidate)
    for side, groups in (("baseline", base_groups), ("candidate", cand_groups)):
        if not all(np.all(np.isfinite(g)) for g in groups):
            raise ValueError(f"the {side} sample holds a NaN or infinite value")
    m = len(base_groups)
    weights = _weights(np.random.default_rng(seed), resamples, m)
    base_draws = _weighted_quantile_draws(base_groups, weights, quantiles)
    cand_draws = _weighted_quantile_draws(cand_groups, weights, quantiles)
    base_all, cand_all = np.sort(np.concatenate(base_groups)), np.sort(np.concatenate(cand_groups))
    out = []
    for j, q in enumerate(quantiles):
        base = float(base_all[_rank(q, base_all.size) - 1])
        cand = float(cand_all[_rank(q, cand_all.size) - 1])
        enough = m >= MIN_SAMPLES and _enough(q, base_all.size) and _enough(q, cand_all.size)
        out.append(_summarise(q, base, cand, base_draws[:, j], cand_draws[:, j], tail, resamples, base_all.size,
                              cand_all.size, enough, "item-cluster-bootstrap", confidence))
    return out


# Tail share: the share of candidate requests beyond their item's baseline p90, less the share expected when both
# sides are exchangeable ((n - k + 1) / (n + 1) for the k-th of n baseline values); items as the bootstrap units. It
# sees a minority of slow items and a minority of slow requests that medians miss.
def tail_share_change(baseline: Mapping[Hashable, Sequence[float]], candidate: Mapping[Hashable, Sequence[float]],
                      *, quantile: float = 0.9, confidence: float = 0.90, resamples: int = 2000,
                      seed: int = 0) -> RateChange:
    """The share of candidate requests beyond their item's baseline quantile (p90), against the share
    expected when both sides are exchangeable: ``baseline`` is that expected share, ``candidate`` the
    observed one, the interval bounds observed minus expected (fractions of requests).

    Distribution-free (ranks within items only) and blind to the spread of item costs, it reacts to a
    minority of items gone slow and to a minority of requests gone slow alike. A tie with the baseline
    value counts half (mid-rank), so identical values on both sides read as no change. Items are the
    bootstrap units; O(resamples x items).
    """
    tail = _check_confidence(confidence)
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    base_groups, cand_groups = _shared_items(baseline, candidate)
    beyond, expected, sent = (np.empty(len(base_groups)) for _ in range(3))
    for i, (b, c) in enumerate(zip(base_groups, cand_groups, strict=True)):
        n = b.size
        k = _rank(quantile, n)
        threshold = np.partition(b, k - 1)[k - 1]
        beyond[i] = np.count_nonzero(c > threshold) + 0.5 * np.count_nonzero(c == threshold)
        expected[i] = c.size * (n - k + 1) / (n + 1)
        sent[i] = c.size
    weights = _weights(np.random.default_rng(seed), resamples, len(base_groups))
    draws = (weights @ beyond - weights @ expected) / (weights @ sent)
    lower, upper = (float(x) for x in np.quantile(draws, [tail, 1.0 - tail]))
    share, null = float(beyond.sum() / sent.sum()), float(expected.sum() / sent.sum())
    n_base = sum(b.size for b in base_groups)
    return RateChange(baseline=null, candidate=share, difference=share - null, lower=lower, upper=upper,
                      confidence=confidence, n_baseline=n_base, n_candidate=int(sent.sum()),
                      enough_samples=len(base_groups) >= MIN_SAMPLES, method="tail-share-item-bootstrap")


def _wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # Clamp at the exact ends: at 0 or n successes the bound on that side is exactly 0 or 1.
    lower = 0.0 if successes == 0 else max(0.0, centre - half)
    upper = 1.0 if successes == n else min(1.0, centre + half)
    return lower, upper


def _check_counts(successes: int, n: int, side: str) -> None:
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"the {side} rate needs 0 <= successes <= n, got {successes} of {n}")


# A pass rate: Wilson (1927) score interval; two independent rates (rate_change): Newcombe (1998) hybrid score
# interval (method 10); the same items on both sides (paired_rate_change): Tango's (1998) paired score interval.
def wilson_interval(successes: int, n: int, *, confidence: float = 0.90) -> RateInterval:
    """A pass rate with its Wilson score interval (two-sided at ``confidence``)."""
    z = float(norm.ppf(1.0 - _check_confidence(confidence)))
    _check_counts(successes, n, "pass")
    lower, upper = _wilson(successes, n, z)
    return RateInterval(successes=successes, n=n, rate=successes / n if n else None, lower=lower, upper=upper,
                        confidence=confidence)


def rate_change(baseline_successes: int, baseline_n: int, candidate_successes: int, candidate_n: int, *,
                confidence: float = 0.90) -> RateChange:
    """Candidate minus baseline rate of two independent samples: Newcombe's hybrid score interval."""
    z = float(norm.ppf(1.0 - _check_confidence(confidence)))
    _check_counts(baseline_successes, baseline_n, "baseline")
    _check_counts(candidate_successes, candidate_n, "candidate")
    p_b = baseline_successes / baseline_n if baseline_n else None
    p_c = candidate_successes / candidate_n if candidate_n else None
    if p_b is None or p_c is None:
        return RateChange(baseline=p_b, candidate=p_c, difference=0.0, lower=-1.0, upper=1.0, confidence=confidence,
                          n_baseline=baseline_n, n_candidate=candidate_n, enough_samples=False, method="newcombe-hybrid")
    l_b, u_b = _wilson(baseline_successes, baseline_n, z)
    l_c, u_c = _wilson(candidate_successes, candidate_n, z)
    difference = p_c - p_b
    lower = difference - math.sqrt((p_c - l_c) ** 2 + (u_b - p_b) ** 2)
    upper = difference + math.sqrt((u_c - p_c) ** 2 + (p_b - l_b) ** 2)
    return RateChange(baseline=p_b, candidate=p_c, difference=difference, lower=max(-1.0, lower), upper=min(1.0, upper),
                      confidence=confidence, n_baseline=baseline_n, n_candidate=candidate_n,
                      enough_samples=min(baseline_n, candidate_n) >= MIN_SAMPLES, method="newcombe-hybrid")


def paired_rate_change(counts: PairedCounts, *, confidence: float = 0.90) -> RateChange:
    """Candidate minus baseline rate over the same items (``counts``: baseline as the reference side):
    Tango's score interval at the normal quantile of ``confidence``."""
    z = float(norm.ppf(1.0 - _check_confidence(confidence)))
    n = counts.n
    if n == 0:
        return RateChange(baseline=None, candidate=None, difference=0.0, lower=-1.0, upper=1.0, confidence=confidence,
                          n_baseline=0, n_candidate=0, enough_samples=False, method="tango-score")
    # Tango bounds R = baseline - candidate; the change is its negative.
    r_lower, r_upper = score_bounds(counts.reference_only, counts.candidate_only, n, z)
    base = (counts.both_right + counts.reference_only) / n
    cand = (counts.both_right + counts.candidate_only) / n
    return RateChange(baseline=base, candidate=cand, difference=cand - base, lower=-r_upper, upper=-r_lower,
                      confidence=confidence, n_baseline=n, n_candidate=n, enough_samples=n >= MIN_SAMPLES,
                      method="tango-score")


def classify_change(lower: float, upper: float, tolerance: float, higher_is_worse: bool = True, *,
                    enough_samples: bool = True) -> Change:
    """Classify a change from its interval [lower, upper] (same units as ``tolerance`` >= 0).

    ``unchanged`` when the interval lies within [-tolerance, +tolerance]; ``regressed`` when it lies
    wholly beyond +tolerance on the worse side; ``improved`` wholly beyond it on the better side;
    ``inconclusive`` otherwise, and always when ``enough_samples`` is False (see MIN_SAMPLES, MIN_TAIL).
    """
    if tolerance < 0.0 or lower > upper or math.isnan(lower) or math.isnan(upper):
        raise ValueError(f"classify_change needs tolerance >= 0 and lower <= upper, got "
                         f"tolerance={tolerance}, interval=[{lower}, {upper}]")
    if not enough_samples:
        return "inconclusive"
    worse_low, worse_high = (lower, upper) if higher_is_worse else (-upper, -lower)
    if -tolerance <= worse_low and worse_high <= tolerance:
        return "unchanged"
    if worse_low > tolerance:
        return "regressed"
    if worse_high < -tolerance:
        return "improved"
    return "inconclusive"

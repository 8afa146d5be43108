"""Paired non-inferiority of a candidate against its reference (native) model: pure decisions, no I/O.
Semantics mirror TRTMC ``apps/aiperf_qual`` (its DESIGN.md 4.1-4.3).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS
from orchestrator.judge.tango import (
    CUTOFFS,
    GRID_ALPHA,
    exact_cutoff,
    score_bounds,
    score_statistic,
)

__all__ = [
    "ALPHA",
    "NOT_COMPARABLE",
    "Decision",
    "Margin",
    "PairedCounts",
    "Verdict",
    "ZeroDiscordanceSizes",
    "Detectable",
    "POWER",
    "decide_binary",
    "detectable_regression",
    "decide_corpus",
    "decide_sampled",
    "pair_counts",
    "resolve_margin",
    "zero_discordance_sizes",
]

ALPHA = 0.05  # one-sided, per bound
POWER = 0.8  # the chance of a FAIL at which a true regression counts as detectable
Verdict = Literal["pass", "fail", "inconclusive", "not-comparable"]
NOT_COMPARABLE: Verdict = "not-comparable"
# items_needed beyond this many items is reported as None ("not within reach").
ITEMS_NEEDED_CAP = 10_000_000
# items_needed uses exact cutoffs up to this many items and the cutoff at this size beyond (exact
# cutoffs cost ~0.1 s here and seconds at 10,000; they differ by < 0.1 between 1,000 and 10,000 items,
# so N is then an estimate within about 10%).
_EXACT_ITEMS_LIMIT = 1_000


class Margin(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A non-inferiority gate as the owners write it: ``margin`` in points, ``relative_margin`` a
    fraction of the reference score; the larger of the two applies."""

    margin: float = 0.0
    relative_margin: float = 0.0

    def __post_init__(self) -> None:
        if self.margin < 0.0 or self.relative_margin < 0.0 or (self.margin == 0.0 and self.relative_margin == 0.0):
            raise ValueError(
                f"a non-inferiority gate needs margin > 0 points or relative_margin > 0 (both >= 0), "
                f"got margin={self.margin}, relative_margin={self.relative_margin}")


class PairedCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Right/wrong pairs by item: ``reference_only`` is b, ``candidate_only`` is c."""

    both_right: int
    reference_only: int
    candidate_only: int
    both_wrong: int

    @property
    def n(self) -> int:
        return self.both_right + self.reference_only + self.candidate_only + self.both_wrong


class Detectable(msgspec.Struct, frozen=True, kw_only=True):
    """What a decision over `n` pairs at its margin could have detected (a FAIL), where the model loses
    only problems the reference got right (c = 0): `fail_from_b` problems, an observed regression of
    `observed` points; and a true regression of `power_regression` points fails with probability POWER."""

    n: int
    fail_from_b: int
    observed: float
    power_regression: float


# The regression `R` is positive when the candidate is worse, in the metric's points (percentage points for accuracy).
# `pass` when the one-sided 95% upper bound of R is below the margin, `fail` when the one-sided 95% lower bound
# exceeds it, `inconclusive` otherwise; `not-comparable` when a relative margin meets a reference score of 0.
class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """One benchmark's non-inferiority decision; scores, R, bounds and margin in the metric's points.

    ``lower``/``upper`` are one-sided 95% bounds of R (None where undefined: fewer than 2 problems).
    ``n`` counts pairs (binary), problems (sampled) or units (corpus); ``items_needed`` estimates the
    total count (clusters for the corpus method) that would decide at the observed rates (it may exceed
    the smallest such count by a few percent), ``n`` when already decided, None when never (R equals
    the margin) or beyond ITEMS_NEEDED_CAP.
    """

    outcome: Verdict
    method: str
    estimate: float
    lower: float | None
    upper: float | None
    margin: float
    reference_score: float
    candidate_score: float
    n: int
    b: int | None = None
    c: int | None = None
    cutoff: float | None = None
    clusters: int | None = None
    resamples: int | None = None
    items_needed: int | None = None
    reason: str = ""
    detectable: Detectable | None = None


# The margin is `max(margin, relative_margin * |reference score|)` (the owners' rule).
def resolve_margin(margin: Margin, reference_score: float) -> float | None:
    """The margin in points at this reference score; None (not comparable) when a relative margin
    meets a reference score of 0."""
    if margin.relative_margin > 0.0 and reference_score == 0.0:
        return None
    return max(margin.margin, margin.relative_margin * abs(reference_score))


def pair_counts(reference: Iterable[bool], candidate: Iterable[bool]) -> PairedCounts:
    """Count right/wrong pairs from per-item results given in the same item order on both sides."""
    ref, cand = list(reference), list(candidate)
    if len(ref) != len(cand):
        raise ValueError(f"paired results need one answer per item on both sides, got {len(ref)} reference "
                         f"and {len(cand)} candidate answers")
    cells = [0, 0, 0, 0]
    for r, c in zip(ref, cand, strict=True):
        cells[(0 if r else 2) + (0 if c else 1)] += 1
    return PairedCounts(both_right=cells[0], reference_only=cells[1], candidate_only=cells[2], both_wrong=cells[3])


def _not_comparable(method: str, estimate: float, reference: float, candidate: float, n: int,
                    b: int | None = None, c: int | None = None) -> Decision:
    return Decision(outcome=NOT_COMPARABLE, method=method, estimate=estimate, lower=None, upper=None,
                    margin=0.0, reference_score=reference, candidate_score=candidate, n=n, b=b, c=c,
                    reason="the reference score is 0, so a relative margin is undefined")


def _binary_items_needed(b: int, c: int, n: int, delta: float, cutoff: float) -> int | None:
    """Total items deciding at the observed discordance rates: Z scales as sqrt(N) at fixed rates, so
    iterate N = (k(N) / z1)^2 from the current cutoff until the cutoff at N is met."""
    z1 = score_statistic(b / n, c / n, 1, delta)
    if z1 == 0.0:
        return None
    k = cutoff if math.isfinite(cutoff) else CUTOFFS[0]
    needed = n
    for _ in range(6):
        needed = max(n + 1, math.floor((k / abs(z1)) ** 2) + 1)
        if needed > ITEMS_NEEDED_CAP:
            return None
        k_needed = exact_cutoff(min(needed, _EXACT_ITEMS_LIMIT), delta)
        if math.sqrt(needed) * abs(z1) > k_needed:
            return needed
        k = k_needed if math.isfinite(k_needed) else CUTOFFS[-1]
    return needed


# Right/wrong pairs: Tango (1998) paired score test at the margin with an exact cutoff (`tango`).
def decide_binary(counts: PairedCounts, margin: Margin) -> Decision:
    """Right/wrong pairs: Tango's score statistic at the margin against the exact cutoff k(n, margin).

    Pass iff Z < -k, fail iff Z > k; the bounds invert the same statistic at the same k, so pass is
    exactly ``upper < margin`` and fail ``lower > margin``. Blocks for up to seconds on a first n above
    a few thousand (the cutoff's exact enumeration; cached after).
    """
    method = "tango-score-exact"
    n, b, c = counts.n, counts.reference_only, counts.candidate_only
    reference = 100.0 * (counts.both_right + b) / n if n else 0.0
    candidate = 100.0 * (counts.both_right + c) / n if n else 0.0
    estimate = 100.0 * (b - c) / n if n else 0.0
    points = resolve_margin(margin, reference)
    if points is None:
        return _not_comparable(method, estimate, reference, candidate, n, b=b, c=c)
    if not 0.0 < points < 100.0:
        raise ValueError(f"a right/wrong margin must lie between 0 and 100 points, got {points}")
    if n == 0:
        return Decision(outcome=INCONCLUSIVE, method=method, estimate=0.0, lower=-100.0, upper=100.0,
                        margin=points, reference_score=0.0, candidate_score=0.0, n=0, b=0, c=0,
                        reason="no pairs were judged")
    delta = round(points / 100.0, 9)  # one cache key per margin, whatever float noise it carries
    cutoff = exact_cutoff(n, delta)
    z = score_statistic(b, c, n, delta)
    outcome = PASS if z < -cutoff else FAIL if z > cutoff else INCONCLUSIVE
    lower, upper = score_bounds(b, c, n, cutoff)
    needed = n if outcome != INCONCLUSIVE else _binary_items_needed(b, c, n, delta, cutoff)
    if math.isinf(cutoff):
        return Decision(outcome=INCONCLUSIVE, method=method, estimate=estimate, lower=-100.0, upper=100.0,
                        margin=points, reference_score=reference, candidate_score=candidate, n=n, b=b, c=c,
                        items_needed=needed, reason=f"no cutoff keeps both error rates at or below "
                        f"{GRID_ALPHA} for n = {n} at a {points}-point margin")
    reason = "" if outcome != INCONCLUSIVE else (
        f"Z = {z:.3f} lies within +/-{cutoff} at n = {n}; "
        + ("R equals the margin: more items cannot decide" if needed is None
           else f"about {needed} items would decide at the observed discordance"))
    return Decision(outcome=outcome, method=method, estimate=estimate, lower=100.0 * lower, upper=100.0 * upper,
                    margin=points, reference_score=reference, candidate_score=candidate, n=n, b=b, c=c,
                    cutoff=cutoff, items_needed=needed, reason=reason, detectable=detectable_regression(n, points))


def detectable_regression(n: int, margin_points: float) -> Detectable | None:
    """The smallest regression that `n` pairs at this margin FAIL (Tango's test at its exact cutoff), when
    the model loses only problems the reference got right (c = 0, the plainest regression): the smallest b
    with Z(b, 0) > k, and the true regression R (b ~ Binomial(n, R)) failing with probability POWER.
    None when no b up to n fails (too few pairs, or no cutoff controls the error rates at this n)."""
    if n <= 0 or not 0.0 < margin_points < 100.0:
        return None
    delta = round(margin_points / 100.0, 9)
    cutoff = exact_cutoff(n, delta)
    if math.isinf(cutoff) or score_statistic(n, 0, n, delta) <= cutoff:
        return None
    lo, hi = 0, n  # Z(b, 0) grows with b: the first b that fails
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if score_statistic(mid, 0, n, delta) <= cutoff else (lo, mid)
    b = lo
    from scipy.optimize import brentq  # here: scipy.stats and scipy.optimize take ~1 s to import
    from scipy.stats import binom

    def shortfall(r: float) -> float:
        return float(binom.sf(b - 1, n, r)) - POWER

    power = 1.0 if shortfall(1.0 - 1e-12) < 0 else float(brentq(shortfall, 1e-12, 1.0 - 1e-12, xtol=1e-9))
    return Detectable(n=n, fail_from_b=b, observed=100.0 * b / n, power_regression=100.0 * power)


class ZeroDiscordanceSizes(msgspec.Struct, frozen=True, kw_only=True):
    """Dataset sizes at which a candidate agreeing with its reference on every item passes.

    Exact cutoffs jump with n, so passing is not monotone at first: ``first_pass`` is the smallest n
    that passes, ``passes_from`` the smallest n from which every larger n passes (size datasets by it).
    """

    margin: float
    first_pass: int
    passes_from: int


def zero_discordance_sizes(margin_points: float) -> ZeroDiscordanceSizes:
    """Sizes for b = c = 0, where Z = -sqrt(n delta / (1 - delta)); cutoffs lie in [1.645, 2.24] (or
    none controls, which never passes), so n beyond (2.24 / ...)^2 always passes and the scan stops there."""
    if not 0.0 < margin_points < 100.0:
        raise ValueError(f"a right/wrong margin must lie between 0 and 100 points, got {margin_points}")
    delta = round(margin_points / 100.0, 9)

    def passes(n: int) -> bool:
        return math.sqrt(n * delta / (1.0 - delta)) > exact_cutoff(n, delta)

    low = max(1, math.floor(CUTOFFS[0] ** 2 * (1.0 - delta) / delta))
    high = math.ceil(CUTOFFS[-1] ** 2 * (1.0 - delta) / delta) + 1
    first = next(n for n in range(low, high + 1) if passes(n))
    passes_from = next((n + 1 for n in range(high, first - 1, -1) if not passes(n)), first)
    return ZeroDiscordanceSizes(margin=margin_points, first_pass=first, passes_from=passes_from)


# Sampled models: per-problem seed means, one-sided Student-t bounds over problems (Student 1908).
def decide_sampled(reference: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]], margin: Margin,
                   *, higher_is_better: bool = True) -> Decision:
    """Sampled models: per problem, each side's seed scores (points) are averaged; R's bounds are
    ``mean(d) +/- t(0.95, n-1) sd(d) / sqrt(n)`` over the per-problem regressions d. Needs 2 problems."""
    method = "paired-t-seed-means"
    if len(reference) != len(candidate):
        raise ValueError(f"sampled scores need the same problems on both sides, got {len(reference)} "
                         f"reference and {len(candidate)} candidate problems")
    if any(len(seeds) == 0 for seeds in (*reference, *candidate)):
        raise ValueError("every problem needs at least one seed score on each side")
    ref_means = [statistics.fmean(seeds) for seeds in reference]
    cand_means = [statistics.fmean(seeds) for seeds in candidate]
    sign = 1.0 if higher_is_better else -1.0
    d = [sign * (r - c) for r, c in zip(ref_means, cand_means, strict=True)]
    n = len(d)
    ref_score = statistics.fmean(ref_means) if n else 0.0
    cand_score = statistics.fmean(cand_means) if n else 0.0
    estimate = statistics.fmean(d) if n else 0.0
    points = resolve_margin(margin, ref_score)
    if points is None:
        return _not_comparable(method, estimate, ref_score, cand_score, n)
    if n < 2:
        return Decision(outcome=INCONCLUSIVE, method=method, estimate=estimate, lower=None, upper=None,
                        margin=points, reference_score=ref_score, candidate_score=cand_score, n=n,
                        reason=f"{n} problem(s): the t bound needs at least 2")
    sd = statistics.stdev(d)
    from scipy.stats import t as student_t  # here: scipy.stats takes ~1 s to import

    half = float(student_t.ppf(1.0 - ALPHA, n - 1)) * sd / math.sqrt(n)
    lower, upper = estimate - half, estimate + half
    outcome = PASS if upper < points else FAIL if lower > points else INCONCLUSIVE
    needed: int | None = n
    if outcome == INCONCLUSIVE:
        needed = _t_items_needed(abs(estimate - points), sd, n)
    reason = "" if outcome != INCONCLUSIVE else (
        f"the 95% bounds [{lower:.3f}, {upper:.3f}] straddle the margin {points:.3f}")
    return Decision(outcome=outcome, method=method, estimate=estimate, lower=lower, upper=upper, margin=points,
                    reference_score=ref_score, candidate_score=cand_score, n=n, items_needed=needed, reason=reason)


def _t_items_needed(gap: float, sd: float, n: int) -> int | None:
    """Smallest N > n with t(0.95, N-1) sd / sqrt(N) < gap (the half-width falls with N)."""
    if gap == 0.0:
        return None
    from scipy.stats import t as student_t  # here: scipy.stats takes ~1 s to import

    def decides(size: int) -> bool:
        return float(student_t.ppf(1.0 - ALPHA, size - 1)) * sd / math.sqrt(size) < gap

    hi = n + 1
    while not decides(hi):
        hi *= 2
        if hi > ITEMS_NEEDED_CAP:
            return None
    lo = n + 1
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decides(mid) else (mid + 1, hi)
    return lo


CorpusStatistic = Callable[[NDArray[np.int64]], tuple[float, float]]


# Corpus metrics (WER, chrF): paired percentile bootstrap over independent clusters (Efron & Tibshirani 1993, ch. 13;
# Davison & Hinkley 1997, 2.4 for clusters) of `R - margin(reference)`.
def decide_corpus(statistic: CorpusStatistic, clusters: Sequence[Hashable], margin: Margin, *,
                  higher_is_better: bool, resamples: int = 2000, seed: int = 0) -> Decision:
    """Corpus metrics: paired percentile bootstrap over independent clusters.

    ``statistic(units)`` returns (candidate score, reference score) in points over the units at
    ``units`` (indices into ``clusters``, repeats allowed), recomputed on every resample. Each resample
    draws whole clusters with replacement (numpy Generator seeded by ``seed``). Pass iff the 95th
    percentile of ``R - margin(reference)`` is below 0, fail iff its 5th percentile is above 0.
    Calls ``statistic`` ``resamples + 1`` times.
    """
    method = "cluster-bootstrap-percentile"
    if resamples < 20:
        raise ValueError(f"the bootstrap needs at least 20 resamples for a 5% tail, got {resamples}")

    def regression(units: NDArray[np.int64]) -> tuple[float, float, float]:
        cand, ref = statistic(units)
        cand, ref = float(cand), float(ref)  # plain floats journal as JSON whatever the caller returns
        return (ref - cand if higher_is_better else cand - ref), ref, cand

    every = np.arange(len(clusters), dtype=np.int64)
    estimate, ref_score, cand_score = regression(every)
    points = resolve_margin(margin, ref_score)
    if points is None:
        return _not_comparable(method, estimate, ref_score, cand_score, len(clusters))
    groups: dict[Hashable, list[int]] = {}
    for index, cluster in enumerate(clusters):
        groups.setdefault(cluster, []).append(index)
    if len(groups) < 2:
        return Decision(outcome=INCONCLUSIVE, method=method, estimate=estimate, lower=None, upper=None,
                        margin=points, reference_score=ref_score, candidate_score=cand_score, n=len(clusters),
                        clusters=len(groups), reason=f"{len(groups)} cluster(s): the bootstrap needs at least 2")
    order = np.fromiter((i for members in groups.values() for i in members), dtype=np.int64, count=len(clusters))
    sizes = np.fromiter((len(members) for members in groups.values()), dtype=np.int64, count=len(groups))
    starts = np.cumsum(sizes) - sizes
    rng = np.random.default_rng(seed)
    regressions = np.empty(resamples)
    excesses = np.empty(resamples)
    for draw in range(resamples):
        picked = rng.integers(0, len(groups), size=len(groups))
        lengths = sizes[picked]
        # Unit positions of the picked clusters, laid end to end (vectorised concatenation).
        offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        units = order[np.repeat(starts[picked], lengths) + offsets]
        r, ref, _ = regression(units)
        regressions[draw] = r
        excesses[draw] = r - max(margin.margin, margin.relative_margin * abs(ref))
    low_rank, high_rank = int(ALPHA * resamples), int((1.0 - ALPHA) * resamples) - 1
    excess_low, excess_high = (float(x) for x in np.sort(excesses)[[low_rank, high_rank]])
    r_sorted = np.sort(regressions)
    lower, upper = float(r_sorted[low_rank]), float(r_sorted[high_rank])
    outcome = PASS if excess_high < 0.0 else FAIL if excess_low > 0.0 else INCONCLUSIVE
    observed_excess = estimate - points
    needed: int | None = len(groups)
    if outcome == INCONCLUSIVE:
        # Interval half-widths shrink as 1/sqrt(clusters): scale the side that must clear 0.
        half = excess_high - observed_excess if observed_excess < 0.0 else observed_excess - excess_low
        needed = None if observed_excess == 0.0 else max(
            len(groups) + 1, math.ceil(len(groups) * (half / abs(observed_excess)) ** 2))
        if needed is not None and needed > ITEMS_NEEDED_CAP:
            needed = None
    reason = "" if outcome != INCONCLUSIVE else (
        f"the 90% interval of R - margin [{excess_low:.3f}, {excess_high:.3f}] contains 0")
    return Decision(outcome=outcome, method=method, estimate=estimate, lower=lower, upper=upper, margin=points,
                    reference_score=ref_score, candidate_score=cand_score, n=len(clusters), clusters=len(groups),
                    resamples=resamples, items_needed=needed, reason=reason)

"""Tango's score test for the difference of two paired proportions, with cutoffs exact for n and margin.
Pure computation, no I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln, xlogy

__all__ = [
    "CUTOFFS",
    "GRID_ALPHA",
    "exact_cutoff",
    "exact_sizes",
    "score_bounds",
    "score_statistic",
]

# Cutoffs searched (the asymptotic one-sided 95% quantile and up), as the owners' harness does.
CUTOFFS: tuple[float, ...] = tuple(round(1.645 + 0.005 * step, 3) for step in range(120))
# The size is exact on grid points only; 0.001 below 0.05 covers the rise between them.
GRID_ALPHA = 0.049
# Discordance q = P(b) + P(c) covered: from the margin (no c cell) up to margin + 0.4 (the owners'
# admissible range; conversions with more disagreement than that are not "numerical noise").
DISCORDANCE_SPAN = 0.4
# Probability mass of (b, c) beyond this many standard deviations (plus 5) is below 1e-14: not enumerated.
_BAND_SD = 8.0
# exact_cutoff's grid points computed in one pass hold at most this many array elements (~8 MB each; a c
# band is at most n + 1 wide, so a pass over one grid point is never cut).
_BATCH_ELEMENTS = 1_000_000


def _restricted_t(b: NDArray[np.float64], c: NDArray[np.float64], n: int, delta: float) -> NDArray[np.float64]:
    """Restricted MLE of P(c cell) under R = delta >= 0 (the positive root, in a cancellation-free form)."""
    a = 2.0 * n
    bb = -(b + c) + (2.0 * n - b + c) * delta
    minus_cc = c * delta * (1.0 - delta)  # -C >= 0 when delta >= 0
    root = np.sqrt(bb * bb + 4.0 * a * minus_cc)
    with np.errstate(divide="ignore", invalid="ignore"):
        stable = np.where(bb > 0.0, 2.0 * minus_cc / (bb + root), (root - bb) / (2.0 * a))
    return np.where((bb > 0.0) & (bb + root == 0.0), 0.0, stable)


def _z_array(b: NDArray[np.float64], c: NDArray[np.float64], n: int, delta: float) -> NDArray[np.float64]:
    """Vectorised score statistic; R = delta < 0 is the mirror image (swap b and c, negate)."""
    if delta < 0.0:
        return -_z_array(c, b, n, -delta)
    t = _restricted_t(b, c, n, delta)
    variance = n * (2.0 * t + delta * (1.0 - delta))
    numerator = b - c - n * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        z = numerator / np.sqrt(variance)
    # Zero variance only at delta = 0 with no discordance (then R is exactly 0), or at delta = 1.
    return np.where(variance > 0.0, z, np.where(numerator == 0.0, 0.0, np.copysign(np.inf, numerator)))


# Method: Tango, T. (1998), "Equivalence test and confidence interval for the difference in proportions for the
# paired-sample design", Statistics in Medicine 17(8):891-908. The statistic at a hypothesised difference `delta`
# (fractions) is `Z = (b - c - n delta) / sqrt(n (2 t + delta (1 - delta)))` with `t` the restricted
# maximum-likelihood estimate of the `c` cell's probability under `R = delta`.
def score_statistic(b: float, c: float, n: int, delta: float) -> float:
    """Tango's Z for R = delta (fractions); negative when the observed R is below delta.

    ``b`` counts pairs only the reference got right, ``c`` pairs only the candidate got right, ``n`` all
    pairs; counts may be fractional (expected counts). ``delta`` lies in (-1, 1).
    """
    if n <= 0:
        raise ValueError(f"score_statistic needs n >= 1 pairs, got n={n}")
    return float(_z_array(np.asarray(float(b)), np.asarray(float(c)), n, delta))


def _first_true(start: NDArray[np.int64], stop: NDArray[np.int64],
                pred: Callable[[NDArray[np.int64]], NDArray[np.bool_]]) -> NDArray[np.int64]:
    """Smallest integer in [start, stop) where the monotone predicate turns true (stop when never)."""
    lo, hi = start.copy(), stop.copy()
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        active = lo < hi
        truth = pred(np.minimum(mid, stop - 1))
        hi = np.where(active & truth, mid, hi)
        lo = np.where(active & ~truth, mid + 1, lo)
    return lo


def _thresholds(n: int, delta: float, cutoffs: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per cutoff and b: the first c with Z < -k (pass region c >= it) and the last c with Z > k (fail
    region c <= it). Z falls as c grows for fixed b, so each region is one run of c."""
    b = np.arange(n + 1, dtype=np.int64)[None, :]
    k = cutoffs[:, None]
    shape = (len(cutoffs), n + 1)
    lo = np.zeros(shape, dtype=np.int64)
    hi = np.broadcast_to(n - b + 1, shape).astype(np.int64)
    bf = b.astype(np.float64)

    def passes(c: NDArray[np.int64]) -> NDArray[np.bool_]:
        return _z_array(bf, c.astype(np.float64), n, delta) < -k

    def not_failing(c: NDArray[np.int64]) -> NDArray[np.bool_]:
        return _z_array(bf, c.astype(np.float64), n, delta) <= k

    first_pass = _first_true(lo, hi, passes)
    last_fail = _first_true(lo, hi, not_failing) - 1
    return first_pass, last_fail


@functools.lru_cache(maxsize=8)
def _log_factorials(n: int) -> NDArray[np.float64]:
    return np.asarray(gammaln(np.arange(n + 1, dtype=np.float64) + 1.0))


def _band(n: int, p: float) -> tuple[int, int]:
    """Counts of a Binomial(n, p) marginal that hold all but a negligible mass."""
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    return max(0, math.floor(mean - _BAND_SD * sd - 5)), min(n, math.ceil(mean + _BAND_SD * sd + 5))


def exact_sizes(n: int, delta: float, cutoffs: tuple[float, ...], p_b: float, p_c: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact probabilities of pass and of fail, per cutoff, when (b, c) is trinomial with cell
    probabilities (p_b, p_c) and the test is run at margin ``delta``."""
    ks = np.asarray(cutoffs, dtype=np.float64)
    first_pass, last_fail = _thresholds(n, delta, ks)
    return _sizes_from_thresholds(n, first_pass, last_fail, p_b, p_c)


def _grid(n: int, b_band: tuple[int, int], c_band: tuple[int, int]) -> tuple[
        NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """log k! for k <= n, the b and c counts of the bands, the rest n - b - c on their grid (0 where negative)
    and where it is not negative."""
    log_factorial = _log_factorials(n)
    b = np.arange(b_band[0], b_band[1] + 1)
    c = np.arange(c_band[0], c_band[1] + 1)
    rest = n - b[:, None] - c[None, :]
    valid = rest >= 0
    return log_factorial, b, c, np.where(valid, rest, 0), valid


def _sizes_from_thresholds(n: int, first_pass: NDArray[np.int64], last_fail: NDArray[np.int64], p_b: float,
                           p_c: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    b_lo, b_hi = _band(n, p_b)
    c_lo, c_hi = _band(n, p_c)
    log_factorial, b, c, rest, valid = _grid(n, (b_lo, b_hi), (c_lo, c_hi))
    p_rest = max(1.0 - p_b - p_c, 0.0)
    row = log_factorial[n] - log_factorial[b] + xlogy(b, p_b)
    column = -log_factorial[c] + xlogy(c, p_c)
    log_p = row[:, None] + column[None, :] - log_factorial[rest] + xlogy(rest, p_rest)
    probability = np.where(valid, np.exp(log_p), 0.0)
    # Column 0 = nothing summed, so index j + 1 holds P(c <= c_lo + j) for each b row.
    cumulative = np.concatenate([np.zeros((probability.shape[0], 1)), np.cumsum(probability, axis=1)], axis=1)
    width = c_hi - c_lo + 1
    rows = np.arange(probability.shape[0])[None, :]
    below_pass = np.clip(first_pass[:, b_lo:b_hi + 1] - c_lo, 0, width)  # P(c < first_pass) column
    up_to_fail = np.clip(last_fail[:, b_lo:b_hi + 1] - c_lo + 1, 0, width)
    totals = cumulative[:, -1][None, :]
    pass_probability = np.sum(totals - cumulative[rows, below_pass], axis=1)
    fail_probability = np.sum(cumulative[rows, up_to_fail], axis=1)
    return pass_probability, fail_probability


def _worst_sizes(n: int, delta: float, first_pass: NDArray[np.int64],
                 last_fail: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per cutoff, the largest pass and fail probabilities over the discordance grid."""
    worst_pass = np.zeros(first_pass.shape[0])
    worst_fail = np.zeros(first_pass.shape[0])
    cells = [((q + delta) / 2.0, max((q - delta) / 2.0, 0.0)) for q in discordance_grid(delta)]
    # Neighbouring grid points mostly share their b band: one numpy pass over each run of them (at small n
    # numpy's per-call overhead, paid once per grid point, was most of the cost).
    start = 0
    while start < len(cells):
        b_band = _band(n, cells[start][0])
        cells_per_point = (b_band[1] - b_band[0] + 1) * max(n + 2, first_pass.shape[0])
        stop = start + 1
        while (stop < len(cells) and _band(n, cells[stop][0]) == b_band
               and (stop + 1 - start) * cells_per_point <= _BATCH_ELEMENTS):
            stop += 1
        pass_p, fail_p = _batch_sizes(n, first_pass, last_fail, b_band, cells[start:stop])
        worst_pass = np.maximum(worst_pass, pass_p.max(axis=0))
        worst_fail = np.maximum(worst_fail, fail_p.max(axis=0))
        start = stop
    return worst_pass, worst_fail


def _batch_sizes(n: int, first_pass: NDArray[np.int64], last_fail: NDArray[np.int64], b_band: tuple[int, int],
                 cells: list[tuple[float, float]]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """`_sizes_from_thresholds` for grid points (p_b, p_c) sharing the b band, bit for bit (rows of the
    results): the same elementwise operations in the same order; each point's c band laid on the union of
    theirs with exact zeros outside its own (a cumulative sum adds those exactly), and each sum over b
    over the same b band as one point's call sums."""
    b_lo, b_hi = b_band
    c_bands = [_band(n, p_c) for _p_b, p_c in cells]
    c_lo, c_hi = min(lo for lo, _hi in c_bands), max(hi for _lo, hi in c_bands)
    log_factorial, b, c, rest, valid = _grid(n, (b_lo, b_hi), (c_lo, c_hi))
    own = np.array(c_bands)
    in_band = valid[None, :, :] & ((c[None, :] >= own[:, :1]) & (c[None, :] <= own[:, 1:]))[:, None, :]
    p_b = np.array([p_b for p_b, _p_c in cells])[:, None]
    p_c = np.array([p_c for _p_b, p_c in cells])[:, None]
    p_rest = np.array([max(1.0 - p_b - p_c, 0.0) for p_b, p_c in cells])[:, None]
    row = log_factorial[n] - log_factorial[b][None, :] + xlogy(b[None, :], p_b)
    column = -log_factorial[c][None, :] + xlogy(c[None, :], p_c)
    # xlogy(rest, p_rest) depends on rest = n - b - c only: computed once per value (0..n) and looked up,
    # each the same number as computed in place (the logarithms were the pass's largest cost).
    rest_term = xlogy(np.arange(n + 1)[None, :], p_rest)
    points = np.arange(len(cells))[:, None, None]
    log_p = (row[:, :, None] + column[:, None, :] - log_factorial[rest][None, :, :]
             + np.take(rest_term, points * (n + 1) + rest[None, :, :]))
    width = c_hi - c_lo + 1
    cumulative = np.empty((len(cells), b.size, width + 1))
    cumulative[:, :, 0] = 0.0
    np.cumsum(np.where(in_band, np.exp(log_p), 0.0), axis=2, out=cumulative[:, :, 1:])
    below_pass = np.minimum(np.maximum(first_pass[:, b_lo:b_hi + 1] - c_lo, 0), width)
    up_to_fail = np.minimum(np.maximum(last_fail[:, b_lo:b_hi + 1] - (c_lo - 1), 0), width)
    # Flat positions in `cumulative` (point, b row, column): np.take returns them in C order, which the
    # sums over b need to group their terms as the per-point call's contiguous rows do.
    offsets = (points * b.size + np.arange(b.size)[None, None, :]) * (width + 1)
    flat = cumulative.ravel()
    totals = cumulative[:, :, -1][:, None, :]
    pass_probability = (totals - np.take(flat, offsets + below_pass[None, :, :])).sum(axis=2)
    fail_probability = np.take(flat, offsets + up_to_fail[None, :, :]).sum(axis=2)
    return pass_probability, fail_probability


def discordance_grid(delta: float) -> list[float]:
    """The nuisance values searched: total discordance q from delta to delta + DISCORDANCE_SPAN."""
    near = [delta + 0.0005 * i for i in range(100)]
    top = min(delta + DISCORDANCE_SPAN, 1.0)
    far = [delta + 0.05 + 0.005 * i for i in range(round((top - delta - 0.05) / 0.005) + 1)]
    return sorted({round(q, 12) for q in near + far if q <= 1.0 + 1e-12})


# The cutoff `k(n, delta)` is the smallest value on a 0.005 grid from 1.645 whose exact pass (`Z < -k`) and fail (`Z >
# k`) probabilities at `R = delta` stay at or below 0.049 on the discordance grid TRTMC's `apps/aiperf_qual` uses
# (`delta` to `delta + 0.4`: 0.0005 steps for the first 0.05, then 0.005), enumerated over the trinomial of (b, c,
# concordant).
@functools.lru_cache(maxsize=512)
def exact_cutoff(n: int, delta: float) -> float:
    """The smallest cutoff in CUTOFFS whose worst pass and fail probabilities at R = delta, over the
    discordance grid, are both <= GRID_ALPHA; ``math.inf`` (never decide) when none is.

    ``delta`` is the margin as a fraction in (0, 1). Cached per (n, delta); costs about a second at
    n = 10,000 on one core, milliseconds below n = 500.
    """
    if n <= 0:
        return math.inf
    if not 0.0 < delta < 1.0:
        raise ValueError(f"the margin must lie strictly between 0 and 1 as a fraction, got {delta}")
    ks = np.asarray(CUTOFFS, dtype=np.float64)
    first_pass, last_fail = _thresholds(n, delta, ks)
    worst_pass, worst_fail = _worst_sizes(n, delta, first_pass, last_fail)
    controlled = (worst_pass <= GRID_ALPHA) & (worst_fail <= GRID_ALPHA)
    # Rejection regions shrink as k grows, so the first controlled cutoff is the smallest.
    return float(ks[int(np.argmax(controlled))]) if controlled.any() else math.inf


def score_bounds(b: float, c: float, n: int, cutoff: float) -> tuple[float, float]:
    """One-sided bounds (lower, upper) of R as fractions: the deltas where Z equals +cutoff and -cutoff.

    Inverting the test at the same cutoff makes ``upper < margin`` the same event as ``Z(margin) < -k``.
    An infinite cutoff gives the whole range (-1, 1).
    """
    from scipy.optimize import brentq  # here: scipy.optimize takes ~0.3 s to import, and few callers need it

    if n <= 0 or math.isinf(cutoff):
        return -1.0, 1.0
    estimate = (b - c) / n
    edge = 1.0 - 1e-12

    def upper_root(delta: float) -> float:
        return score_statistic(b, c, n, delta) + cutoff

    def lower_root(delta: float) -> float:
        return score_statistic(b, c, n, delta) - cutoff

    upper = edge if upper_root(edge) >= 0.0 else brentq(upper_root, estimate, edge, xtol=1e-12)
    lower = -edge if lower_root(-edge) <= 0.0 else brentq(lower_root, -edge, estimate, xtol=1e-12)
    return float(lower), float(upper)

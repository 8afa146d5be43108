"""How much evidence a point's requests carry, and what a point can detect before it runs: pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy.special import betainc, ndtr, ndtri

from orchestrator.config import SloConfig
from orchestrator.events.sweep import SloPower

__all__ = ["binom_upper", "binom_lower", "decide", "needed", "latency_design_effect", "failure_design_effect",
           "lag1", "plan_power", "plan"]

_MAX_R = 0.98  # beyond this the series says nothing about independent evidence; clip rather than divide by ~0


def binom_upper(k: float, n: float, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), continuous in k and n (regularized incomplete beta)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return float(betainc(k, n - k + 1.0, p))


def binom_lower(k: float, n: float, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), continuous in k and n."""
    if k >= n:
        return 1.0
    if k < 0:
        return 0.0
    return float(betainc(n - k, k + 1.0, 1.0 - p))


# Requests in one run are not independent: a server that is slow now is slow for the next request too (a batch, a
# queue, a garbage collection), and failures come in bursts (server_busy while a queue is full). Counting them as
# independent makes a binomial test too sure of itself both ways: on a seeded AR(1) latency with lag-1 correlation 0.9
# and its true p99 at the limit, a plain test failed 19% of points and passed 45% where 10% each was claimed. So each
# count is first shrunk by its design effect, the variance of the count relative to independent requests, and the
# binomial test runs on the effective n and k:
#
# - latency beyond a limit: the latencies in start order are taken as a Gaussian copula with AR(1) correlation r
#   (estimated from their normal scores, lag 1), and the beyond-the-limit indicator's own correlations at the share
#   the limit claims follow from it (bivariate normal orthant probabilities);
# - failures: a two-state Markov chain, whose indicator correlation at lag h is r^h; deff = (1+r)/(1-r).
#
# Drift within a point raises r too, so it also costs evidence rather than producing false verdicts.
def decide(k: int, n: int, share: float, alpha: float, deff: float = 1.0) -> str:
    """fail when k beyond is too many for `share`, pass when too few to hide more, else inconclusive; the
    counts shrunk by the design effect `deff` (1: independent requests)."""
    if n == 0:
        return "inconclusive"
    if share <= 0.0:  # a limit of zero: any one beyond fails; none beyond is all the evidence there can be
        return "fail" if k else "pass"
    n_eff, k_eff = n / deff, k / deff
    if share >= 1.0:
        return "pass" if k < n else "inconclusive"
    if k and binom_upper(k_eff, n_eff, share) <= alpha:
        return "fail"
    if binom_lower(k_eff, n_eff, share) <= alpha:
        return "pass"
    return "inconclusive"


def needed(share: float, alpha: float, deff: float = 1.0) -> int:
    """Requests a pass needs with none beyond the limit: the least n with (1-share)^(n/deff) <= alpha."""
    return math.ceil(deff * math.log(alpha) / math.log1p(-share)) if 0.0 < share < 1.0 else 1


def lag1(series: Sequence[float] | np.ndarray) -> float:
    """The lag-1 autocorrelation of `series`, clipped to [0, 0.98] (0 for fewer than 8 values or no spread)."""
    x = np.asarray(series, dtype=float)
    if len(x) < 8:
        return 0.0
    x = x - x.mean()
    denom = float(np.dot(x, x))
    if denom <= 0.0:
        return 0.0
    return min(max(float(np.dot(x[:-1], x[1:])) / denom, 0.0), _MAX_R)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their mean rank (scipy.stats.rankdata's "average"; scipy.stats alone takes
    ~0.5 s to import, a sweep's only use of it)."""
    ranks = np.empty(len(x))
    ranks[np.argsort(x, kind="stable")] = np.arange(1, len(x) + 1)
    _, tie, counts = np.unique(x, return_inverse=True, return_counts=True)
    return np.asarray(np.bincount(tie, weights=ranks) / counts)[tie]


def _normal_scores(values: Sequence[float]) -> np.ndarray:
    ranks = _average_ranks(np.asarray(values, dtype=float))  # ties share a score: no false trend
    return np.asarray(ndtri((ranks - 0.5) / len(values)))


@lru_cache(maxsize=4096)
def _indicator_corr(rho: float, share: float) -> float:
    """Correlation of the indicators {Z1 > t}, {Z2 > t} for standard normals of correlation rho, with
    P(Z > t) = share: (P(both) - share^2) / (share (1-share)), P(both) integrated over Z1 > t."""
    if rho <= 0.0:
        return 0.0
    t = float(ndtri(1.0 - share))
    x = np.linspace(t, t + 9.0, 721)
    dens = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    s = math.sqrt(max(1.0 - rho * rho, 1e-12))
    tail = ndtr((rho * x - t) / s)
    both = float(np.trapezoid(dens * tail, x))
    return max(0.0, (both - share * share) / (share * (1.0 - share)))


def latency_design_effect(values_in_start_order: Sequence[float], share: float) -> tuple[float, float]:
    """(deff, r) of the beyond-the-limit count at the share the limit claims, for latencies in start order."""
    n = len(values_in_start_order)
    r = lag1(_normal_scores(values_in_start_order)) if n >= 8 else 0.0
    if r <= 0.0 or not 0.0 < share < 1.0:
        return 1.0, r
    total, h, rho = 0.0, 1, r
    while rho >= 0.005 and h < n:
        total += (1.0 - h / n) * _indicator_corr(round(rho, 3), share)
        h += 1
        rho *= r
    return 1.0 + 2.0 * total, r


def failure_design_effect(failed_in_start_order: Sequence[bool]) -> tuple[float, float]:
    """(deff, r) of the failure count, its indicator taken as a two-state Markov chain (bursts)."""
    if sum(failed_in_start_order) < 2:
        return 1.0, 0.0  # one failure or none shows no burst; a pass on none is the independent test's
    r = lag1([1.0 if f else 0.0 for f in failed_in_start_order])
    return (1.0 + r) / (1.0 - r), r


def _fail_at(n: int, share: float, alpha: float) -> int | None:
    """The least count beyond the limit that fails at n independent requests (None: none can)."""
    for k in range(1, n + 1):
        if binom_upper(k, n, share) <= alpha:
            return k
    return None


def _detected_share(n: int, fail_at: int, power: float) -> float:
    """The least true share beyond the limit that reaches `fail_at` with probability `power` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2.0
        if binom_upper(fail_at, n, mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def plan_power(slo: str, n: int, share: float, confidence: float, power: float = 0.9) -> SloPower:
    """What a point of n requests can decide for one SLO, assuming independent requests (correlated ones
    need more): how many a pass needs, how many beyond fail it, and the share beyond it detects with
    `power`. `share` is what the limit allows beyond it (p99: 0.01; an error rate: itself; answers: 0)."""
    alpha = 1.0 - confidence
    if share <= 0.0:  # exact evidence: one beyond fails; m compared detect a per-request rate 1-(1-power)^(1/m)
        detects = 1.0 - (1.0 - power) ** (1.0 / n) if n else None
        statement = (f"{slo} at {n} requests: one bad answer fails; {n} compared detect a {detects:.1%} rate of bad "
                     f"answers with {power:.0%} power" if detects is not None else f"{slo}: nothing to compare")
        return SloPower(slo=slo, n=n, pass_needs=1, fail_at=1, detects_share=detects, statement=statement)
    need = needed(share, alpha)
    fail_at = _fail_at(n, share, alpha)
    detects = _detected_share(n, fail_at, power) if fail_at is not None else None
    beyond = "failed" if slo == "error_rate" else "beyond the limit"
    can_pass = f"can pass (needs {need})" if n >= need else f"cannot pass (needs {need} with none {beyond})"
    fails = (f"fails at {fail_at} of {n} {beyond}, detecting a true {detects:.1%} {beyond} with {power:.0%} power"
             if fail_at is not None and detects is not None else "cannot fail")
    return SloPower(slo=slo, n=n, pass_needs=need, fail_at=fail_at, detects_share=detects,
                    statement=f"{slo} at {n} requests: {can_pass}; {fails} (independent requests; correlated "
                    "ones need more)")


def plan(slo: SloConfig, n: int) -> list[SloPower]:
    """What a point of n profiling requests can decide for each SLO [slo] sets (stated before the sweep)."""
    out = []
    for key, name, share in (("p99_latency_ms", "p99_latency", 0.01), ("p90_latency_ms", "p90_latency", 0.10),
                             ("p99_model_call_ms", "p99_model_call", 0.01)):
        if getattr(slo, key) is not None:
            out.append(plan_power(name, n, share, slo.confidence))
    out.append(plan_power("error_rate", n, slo.max_error_rate, slo.confidence))
    if slo.answers:
        out.append(plan_power("answers", n, 0.0, slo.confidence))
    if slo.complete_outputs:
        out.append(plan_power("complete_outputs", n, 0.0, slo.confidence))
    return out

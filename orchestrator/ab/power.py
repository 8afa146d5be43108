"""What an `aqbench ab` plan can detect, stated before the first block; pure."""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy.stats import t as student_t

from orchestrator.ab.plan import MIN_PAIRS, t_quantile
from orchestrator.ab.sequential import Boundary, critical_values
from orchestrator.events import AbPower
from orchestrator.judge.intervals import MIN_TAIL

__all__ = ["describe_power", "INSTANCE_ALLOWANCE", "INSTANCE_TAIL_ALLOWANCE", "PLAN_NOISE", "POWER", "detectable_change",
           "noise_of", "pairs_needed", "plan_power", "tail_detectable", "tail_null"]

# The pair noise the plan assumes, as sd x sqrt(block requests) of a pair's log p50 change: 0.6 for
# independent request noise (t, 3 df, 20 % spread) and 0.8-0.9 when neighbouring requests share their luck
# (AR 0.5), the synthetic model the seeded tests use (tests/orchestrator/ab_support.py); real reference
# server A/A runs in bench/RESULTS.md.
PLAN_NOISE = 0.9
POWER = 0.95
# Both servers running all session: what two identically configured reference server processes differed by
# in a real A/A on this 2-core shared host (bench/RESULTS.md: model-call p50 [-40.6 %, -28.7 %] in one
# session; the pairing cancels drift, not a difference between the two processes). Every latency interval of
# such a session widens by it in quadrature, so no verdict reads improved or regressed within it;
# --sequential starts a fresh server every block and needs none. Opt-in (default 0): at 0.5 the default plan
# could catch nothing below about +100 % (a planted 30 %-of-requests +1 s tail read inconclusive), and repeats
# without the CPU hog read no instance difference (bench/RESULTS.md); the plan states which it used.
INSTANCE_ALLOWANCE = 0.0  # relative, latency quantiles (0.5 measured in one hogged A/A)
INSTANCE_TAIL_ALLOWANCE = 0.0  # points, tail shares (0.5: a process 35-50 % faster or slower moves them -25 to +59 pt)
WANTED = 0.10  # the change the plan line answers for: would this plan catch a uniform +10 %?
TAIL_WANTED = 0.15  # and for the tail share: 15 % of requests slowed beyond every baseline value
_TAIL_Q = 0.9  # the tail-share figure's quantile (ab/verdict.py, judge/intervals.py tail_share_change)
_MAX_PAIRS = 40  # beyond, the plan line says "more than 40 pairs" (each K costs a critical-value simulation)


def _fewest_pairs(ok: Callable[[int], bool]) -> int | None:
    """The fewest pairs from MIN_PAIRS for which `ok` holds (it holds for every count above one that holds),
    by bisection; None when even _MAX_PAIRS do not."""
    if not ok(_MAX_PAIRS):
        return None
    lo, hi = MIN_PAIRS, _MAX_PAIRS
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def _last_t(pairs: int, confidence: float, boundary: Boundary | None) -> float | None:
    if pairs < MIN_PAIRS:
        return None
    return critical_values(pairs, confidence, boundary)[-1] if boundary else t_quantile(pairs, confidence)


def detectable_change(pairs: int, block_requests: int, tolerance: float, confidence: float,
                      boundary: Boundary | None, noise: float, power: float = POWER,
                      allowance: float = 0.0) -> float | None:
    """The smallest uniform relative change the plan calls `regressed` in `power` of sessions (p50 figure,
    last look; its interval widened in quadrature by the instance `allowance` when both servers run all
    session); None below MIN_PAIRS pairs.

    Method: a uniform slowdown by a factor (1 + d) moves every block quantile's log by log(1 + d). The p50 figure
    calls it `regressed` when the pairs' mean log change less t_K standard errors exceeds log(1 + tolerance), t_K the
    last look's critical t. With pair changes of standard deviation sd, the mean over K pairs exceeds log(1 +
    tolerance) + t_K sd / sqrt(K) in a share `power` of sessions once

    log(1 + d) >= log(1 + tolerance) + (t_K + t_power) sd / sqrt(K), t_power Student's t at `power`, K - 1 df.

    That d is the plan's smallest detectable uniform change. It needs the pair noise sd before any block has run: the
    plan assumes sd = noise / sqrt(block requests), `noise` the spread of one pair's log p50 change scaled to one
    request (`--plan-noise`; the session's own is measured and shown beside it afterwards). The statement is
    conservative: it counts only the last look of one figure, where looks before it and the other figures (p90, tail
    share) can only add chances to catch the change.
    """
    t = _last_t(pairs, confidence, boundary)
    if t is None:
        return None
    se = noise / math.sqrt(block_requests) / math.sqrt(pairs)
    margin = math.hypot(t * se, math.log1p(allowance)) + float(student_t.ppf(power, pairs - 1)) * se
    return math.expm1(math.log1p(tolerance) + margin)


def pairs_needed(change: float, block_requests: int, tolerance: float, confidence: float,
                 boundary: Boundary | None, noise: float, power: float = POWER, allowance: float = 0.0) -> int | None:
    """The fewest pairs whose plan detects `change`; None when even _MAX_PAIRS do not (or change is within the
    tolerance). Binary search: more pairs never detect less."""
    if change <= tolerance:
        return None

    def ok(k: int) -> bool:
        d = detectable_change(k, block_requests, tolerance, confidence, boundary, noise, power, allowance)
        return d is not None and d <= change

    return _fewest_pairs(ok)


def _per_item(block_requests: int, items: int) -> tuple[int, int]:
    """(requests per item a block, items a block): blocks send the same rows in the same order (sequential
    sampling), so both blocks of a pair hold the same items."""
    return max(1, block_requests // items), min(block_requests, items)


def tail_null(block_requests: int, items: int) -> float:
    """The tail-share figure's share under no change: a candidate request lies beyond its item's baseline
    p90 of n requests with probability (n - k + 1)/(n + 1), k its rank (0.5 at n = 1)."""
    n, _m = _per_item(block_requests, items)
    k = min(n, max(1, math.ceil(_TAIL_Q * n - 1e-9)))
    return (n - k + 1) / (n + 1)


# The tail-share figure's own statement: with n requests per item a block its null share is (n - k + 1)/(n + 1), k =
# ceil(0.9 n), so 0.5 at one request an item (each item's baseline "p90" is its one request, and the figure compares
# coin flips), and a share s of requests slowed beyond every baseline value moves it by s (1 - null). Its pair sd
# under no change is exact for exchangeable sides.
def tail_detectable(pairs: int, block_requests: int, items: int, tolerance: float, confidence: float,
                    boundary: Boundary | None, power: float = POWER, allowance: float = 0.0) -> float | None:
    """The smallest tail-share change (points, the figure's scale) called regressed in `power` of sessions
    (last look; `allowance` in points, in quadrature); None below MIN_PAIRS pairs.

    Pair sd under no change: an item's n candidate requests share one threshold, whose exceedance share is
    Beta-distributed with variance null (1 - null)/(n + 2), so var(share) = null (1 - null)(1 + (n - 1)/(n + 2))/(m n)
    over m items."""
    t = _last_t(pairs, confidence, boundary)
    if t is None:
        return None
    n, m = _per_item(block_requests, items)
    p0 = tail_null(block_requests, items)
    se = math.sqrt(p0 * (1.0 - p0) * (1.0 + (n - 1) / (n + 2)) / (m * n)) / math.sqrt(pairs)
    return tolerance + math.hypot(t * se, allowance) + float(student_t.ppf(power, pairs - 1)) * se


def _tail_pairs_needed(share: float, block_requests: int, items: int, tolerance: float, confidence: float,
                       boundary: Boundary | None, allowance: float) -> int | None:
    """The fewest pairs whose tail-share figure catches `share` of requests slowed beyond every baseline value;
    None when even _MAX_PAIRS do not."""
    moved = share * (1.0 - tail_null(block_requests, items))

    def ok(k: int) -> bool:
        d = tail_detectable(k, block_requests, items, tolerance, confidence, boundary, allowance=allowance)
        return d is not None and d <= moved

    return _fewest_pairs(ok)


def plan_power(pairs: int, block_requests: int, tolerance: float, confidence: float, boundary: Boundary | None,
               noise: float = PLAN_NOISE, allowance: float = 0.0, *, items: int = 0, tail_tolerance: float = 0.05,
               tail_allowance: float = 0.0) -> AbPower:
    """The statement for a plan (CPU: a few critical-value simulations, cached; well under a second each).
    `allowance`: the plan's instance allowance (both servers running all session), 0 with --sequential.
    `items`: the rows a block cycles through (dataset items x arms); 0 leaves the tail share unstated."""
    stated = items > 0
    tail_args = (block_requests, items, tail_tolerance, confidence, boundary)
    return AbPower(noise=noise, power=POWER, wanted=WANTED, allowance=allowance,
                   detectable=detectable_change(pairs, block_requests, tolerance, confidence, boundary, noise,
                                                allowance=allowance),
                   pairs_for_wanted=pairs_needed(WANTED, block_requests, tolerance, confidence, boundary, noise,
                                                 allowance=allowance),
                   pairs_for_wanted_400=pairs_needed(WANTED, 400, tolerance, confidence, boundary, noise,
                                                     allowance=allowance),
                   tail_null=tail_null(block_requests, items) if stated else None, tail_wanted=TAIL_WANTED,
                   tail_detectable=tail_detectable(pairs, *tail_args, allowance=tail_allowance) if stated else None,
                   pairs_for_tail_wanted=_tail_pairs_needed(TAIL_WANTED, *tail_args, tail_allowance) if stated else None,
                   pairs_for_tail_wanted_400=_tail_pairs_needed(TAIL_WANTED, 400, *tail_args[1:], tail_allowance)
                   if stated else None)


def noise_of(changes: list[float], block_requests: int) -> float | None:
    """The session's own pair noise on the plan's scale (sd of the pair log changes x sqrt(block requests))."""
    if len(changes) < 2:
        return None
    mean = sum(changes) / len(changes)
    sd = math.sqrt(sum((c - mean) ** 2 for c in changes) / (len(changes) - 1))
    return sd * math.sqrt(block_requests)


def describe_tail(p: AbPower, block_requests: int) -> str:
    """The tail-share figure's statement: what it can catch, or that it cannot decide the wanted tail and what
    that would need; "" where the plan did not state it (older journals)."""
    if p.tail_null is None or p.tail_detectable is None:
        return ""
    moved = 1.0 - p.tail_null
    caught = p.tail_detectable / moved
    wanted = f"{p.tail_wanted * 100:g} %"
    need = (f"about {p.pairs_for_tail_wanted} pairs of {block_requests} requests" if p.pairs_for_tail_wanted else
            f"more than {_MAX_PAIRS} pairs of {block_requests} requests") + (
        f" (or {p.pairs_for_tail_wanted_400} pairs of 400)" if p.pairs_for_tail_wanted_400 and block_requests < 400
        else "")
    verdict = (f"{wanted} of requests slowed that far is detectable" if caught <= p.tail_wanted else
               f"it cannot decide {wanted} of requests slowed that far: that needs {need}")
    p90 = math.ceil(MIN_TAIL / (1.0 - _TAIL_Q) - 1e-9)
    return (f"tail share: its null share is {p.tail_null * 100:.0f} % at {block_requests} requests a block"
            + (" (one request per item: each item's baseline p90 is that request)" if p.tail_null >= 0.5 else "")
            + f", so it catches +{p.tail_detectable * 100:.1f} pt: "
            + (f"{caught * 100:.0f} % of requests slowed beyond every baseline value" if caught <= 1.0 else
               "more than every request slowed beyond every baseline value")
            + f"; {verdict}"
            + (f"; the p90 figures need {p90} requests a block (--block-requests)" if block_requests < p90 else ""))


def describe_power(p: AbPower, block_requests: int) -> str:
    """One sentence for the plan line and the console (the latency quantiles, then the tail share)."""
    tail = describe_tail(p, block_requests)
    return _describe_latency(p, block_requests) + (f". {tail[0].upper()}{tail[1:]}" if tail else "")


def _describe_latency(p: AbPower, block_requests: int) -> str:
    if p.detectable is None:
        return "too few pairs to detect anything"
    wanted = f"+{p.wanted * 100:g} %"
    if p.allowance and p.pairs_for_wanted is None and p.pairs_for_wanted_400 is None:
        return (f"smallest uniform slowdown caught in {p.power:.0%} of sessions: +{p.detectable * 100:.1f} % "
                f"(assumed pair noise {p.noise:g}/sqrt(block requests), --plan-noise; both servers running all "
                f"session, so beyond the ±{p.allowance * 100:g} % two server processes may differ by); a uniform "
                f"{wanted} is NOT detectable with both servers running all session at any size: without "
                f"--keep-servers every pair has fresh servers and no instance allowance")
    verdict = (f"a uniform {wanted} is detectable" if p.detectable <= p.wanted else
               f"a uniform {wanted} is NOT detectable: it needs "
               + (f"about {p.pairs_for_wanted} pairs of {block_requests} requests" if p.pairs_for_wanted else
                  f"more than {_MAX_PAIRS} pairs of {block_requests} requests")
               + (f" (or {p.pairs_for_wanted_400} pairs of 400)" if p.pairs_for_wanted_400 and block_requests < 400
                  else ""))
    return (f"smallest uniform slowdown caught in {p.power:.0%} of sessions: +{p.detectable * 100:.1f} % "
            f"(assumed pair noise {p.noise:g}/sqrt(block requests), --plan-noise); {verdict}")

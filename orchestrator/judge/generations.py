"""The load generator's memory judged per process generation: AIPerf hands its load over to a fresh process
(orchestrator/soak/handover_cue.py), so its resident memory is a sawtooth, one tooth per process ("generation").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import msgspec
import numpy as np

from orchestrator.base.figures import figure
from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS, Outcome
from orchestrator.judge.sampled_trend import t_quantile
from orchestrator.judge.trend import theil_sen

__all__ = ["METHOD", "Generation", "GenerationRule", "GenerationSummary", "GenerationsVerdict", "judge_generations"]

METHOD = ("per AIPerf generation: level = median of the minute after a 60 s settle; within: sustained 60 s growth "
          "over the level vs the cap; across: Theil-Sen slope of the successors' levels, Kendall-tau interval")
_OLS_METHOD = METHOD.replace("Theil-Sen slope", "least-squares slope").replace("Kendall-tau interval", "Student t on n-2 df")
_S_PER_H = 3600.0


class Generation(msgspec.Struct, frozen=True, kw_only=True):
    """One AIPerf process's points: `times_s` (s, any common origin, ascending) and `values` (MiB);
    `start_s` its first request's time on the same clock (None: its first point); `requests` sent, if known."""

    pid: int
    times_s: list[float]
    values: list[float]
    start_s: float | None = None
    requests: int = 0


class GenerationRule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Limits and evidence (judge_generations gives the method); the soak fills them from [soak]."""

    limit_per_h: float = 8.0
    growth_limit: float = 64.0
    min_span_s: float = 600.0
    confidence: float = 0.98
    wander: float = 3.0
    settle_s: float = 60.0
    level_s: float = 60.0
    sustain_s: float = 60.0
    min_successors: int = 4
    across: str = "theil-sen"

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1 or self.min_successors < 3 or min(self.level_s, self.sustain_s) <= 0 \
                or self.across not in ("ols", "theil-sen"):
            raise ValueError("GenerationRule needs confidence in [0.5, 1), min_successors >= 3, level_s and "
                             "sustain_s > 0")


class GenerationSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One generation as judged: `start_s` (the rule's clock), its level (MiB; None: not settled) and that
    level's time, its peak sustained growth over the level (MiB) with its outcome, its points and requests."""

    pid: int
    start_s: float
    level: float | None
    level_time_s: float | None
    peak_growth: float | None
    outcome: Outcome
    points: int
    requests: int = 0


class GenerationsVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The per-generation verdict: the generations, and the across-generation slope (MiB/h), its interval,
    the growth over the successors' span and its interval, the detectable slope, the span (s)."""

    outcome: Outcome
    reason: str
    generations: list[GenerationSummary]
    successors: int
    slope_per_h: float | None = None
    interval_per_h: tuple[float, float] | None = None
    growth: float | None = None
    growth_interval: tuple[float, float] | None = None
    detectable_per_h: float | None = None
    span_s: float = 0.0
    confidence: float = 0.98
    method: str = METHOD


def _summary(g: Generation, rule: GenerationRule, z: float) -> GenerationSummary:
    t = np.asarray(g.times_s, dtype=float)
    y = np.asarray(g.values, dtype=float)
    if t.shape != y.shape or t.ndim != 1 or not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        raise ValueError(f"generation {g.pid}: needs equally long 1-d finite times and values")
    start = g.start_s if g.start_s is not None else (float(t[0]) if t.size else 0.0)

    def unsettled() -> GenerationSummary:
        return GenerationSummary(pid=g.pid, start_s=start, level=None, level_time_s=None, peak_growth=None,
                                 outcome=INCONCLUSIVE, points=int(t.size), requests=g.requests)

    lo, hi = start + rule.settle_s, start + rule.settle_s + rule.level_s
    in_level = (t >= lo) & (t <= hi)
    # The level minute must be mostly covered: 3 points at least, the last 3/4 of the way through it or beyond.
    if int(in_level.sum()) < 3 or float(t[-1]) < lo + 0.75 * rule.level_s:
        return unsettled()
    level = float(np.median(y[in_level]))
    ts, ys = t[t >= lo], y[t >= lo]
    peak = -math.inf
    for i in range(ts.size):
        j = int(np.searchsorted(ts, ts[i] + rule.sustain_s, side="right"))
        if j - i >= 3 and ts[j - 1] - ts[i] >= 0.8 * rule.sustain_s:
            peak = max(peak, float(ys[i:j].min()) - level)
    if not math.isfinite(peak):
        return unsettled()
    half = z * rule.wander * math.sqrt(2)
    outcome = FAIL if peak - half > rule.growth_limit else PASS if peak + half < rule.growth_limit else INCONCLUSIVE
    return GenerationSummary(pid=g.pid, start_s=start, level=level, level_time_s=(lo + hi) / 2, peak_growth=peak,
                             outcome=outcome, points=int(t.size), requests=g.requests)


def _across(x_h: np.ndarray, y: np.ndarray, rule: GenerationRule,
            p: float) -> tuple[tuple[float, float], float, float]:
    """The successors' levels' slope (MiB/h) and its two-sided interval at `rule.confidence`, by
    `rule.across`; the third figure is the interval's half-width above the slope (for `detectable`)."""
    if rule.across == "theil-sen":
        est = theil_sen([float(v) for v in x_h], [float(v) for v in y], rule.confidence)
        if est.interval is None:
            return (-math.inf, math.inf), est.slope, math.inf
        return est.interval, est.slope, est.interval[1] - est.slope
    x = x_h - x_h.mean()
    sxx = float(np.sum(x * x))
    slope = float(np.sum(x * (y - y.mean())) / sxx)
    resid = y - y.mean() - slope * x
    half = t_quantile(p, y.size - 2) * math.sqrt(float(np.sum(resid * resid)) / (y.size - 2) / sxx)
    return (slope - half, slope + half), slope, half


def judge_generations(generations: Sequence[Generation], rule: GenerationRule) -> GenerationsVerdict:
    """Judge the generations (in their order) under `rule`. Raises ValueError on malformed points.

    Method. Each generation's points (the soak's 10 s block medians of the sending tree's RSS, or raw samples) are
    judged from its first request (its first point where no request was seen):

    - Settle: its first `settle_s` (60 s) are its start-up climb and are not judged. Its LEVEL is the median of the
      points in the next `level_s` (60 s), the minute the handover cue reads. A generation whose level minute is not
      (mostly) covered is "not settled" and is left out of both parts below.
    - Within: its growth is the highest level it holds for `sustain_s` (60 s: the minimum of every 60 s run of points,
      so a single spike or a GC sawtooth's peaks count for nothing) less its level. The growth's interval is that
      figure +- z x wander x sqrt 2 (two levels minutes apart each move by the stated wander; z at `confidence`,
      two-sided). Wholly above the cap (`growth_limit`, [soak] `rss_growth_limit_mib`): FAIL; wholly below: bounded;
      else undecided. Taking the maximum over the runs biases the figure up under noise (it is the peak, not a mean),
      so a flat process reads a few MiB of growth; the cap is tens of MiB above.
    - Across: the successors' levels (the first generation left out: it starts on a cold host and page cache and
      settles 30-80 MiB lower, so it would read as a step) against their times: the Theil-Sen slope (the median of the
      pairwise slopes) with Sen's Kendall-tau interval (judge.trend.theil_sen), at `confidence`. Levels are minutes
      apart, each a median of a minute, so they are taken as independent; the level scatter between processes (tens of
      MiB: each new worker and dataset manager reaches its own high-water mark, and in a real 36-minute soak two of
      six successors settled 100-250 MiB above the rest) is heavy-tailed, which is why a rank interval is used: a
      least-squares slope with a Student t interval (`across = "ols"`, kept for comparison) FAILs 2 % of flat series
      with such outliers, Theil-Sen 0.5 % (bench/aiperf_generations.py). FAIL when the growth over the successors'
      span (slope x span) lies wholly above the cap, or, over `min_span_s` or more, when the slope's interval lies
      wholly above `limit_per_h`; PASS when the growth's interval lies wholly below the cap over `min_span_s` or more;
      else INCONCLUSIVE. Fewer than `min_successors` (4) settled successors: INCONCLUSIVE (so few levels leave no
      interval that can decide). The slope limit per hour is not required for a PASS: handovers bound the in-process
      growth, and what the soak must show is that the levels do not carry growth from one process to the next beyond
      the cap over the soak; a slow trend is caught by the cap as the soak grows longer, and a fast one by the slope.
      `detectable_per_h` is the smallest slope that would FAIL at the scatter seen.

    Overall: FAIL if either part FAILs; PASS when every settled generation is bounded and the across part PASSes; else
    INCONCLUSIVE, saying what is missing. One generation (no handover) is not judged here: the soak keeps the sampled
    trend rule on its single series. Pure: no I/O, no clock.
    """
    p = 0.5 + rule.confidence / 2
    z = NormalDist().inv_cdf(p)
    summaries = [_summary(g, rule, z) for g in generations]
    level_pct = f"{rule.confidence * 100:.4g}%"
    settled = [s for s in summaries if s.level is not None]
    within_fail = [s for s in settled if s.outcome == FAIL]
    within_open = [s for s in settled if s.outcome == INCONCLUSIVE]
    unsettled = len(summaries) - len(settled)
    half_w = z * rule.wander * math.sqrt(2)
    within = (f"{len(settled)} of {len(summaries)} generation(s) settled; peak sustained growth within a process "
              f"{figure(max((s.peak_growth or 0.0) for s in settled), signed=True)} MiB (+-{figure(half_w, 2)}; cap {rule.growth_limit:g} MiB)"
              if settled else f"no generation of {len(summaries)} settled (a level needs {rule.settle_s:g} s + "
                              f"{rule.level_s:g} s after its first request)")
    successors = [s for s in summaries[1:] if s.level is not None and s.level_time_s is not None]
    n = len(successors)
    numbers: dict[str, object] = {}
    across_outcome: Outcome = INCONCLUSIVE
    if n < rule.min_successors:
        across = (f"across generations not judged: {n} settled successor(s) (the first process left out), "
                  f"{rule.min_successors} needed")
    else:
        x_s = np.array([s.level_time_s for s in successors], dtype=float)
        y = np.array([s.level for s in successors], dtype=float)
        span_s = float(x_s[-1] - x_s[0])
        interval, slope, half = _across(x_s / _S_PER_H, y, rule, p)
        span_h = span_s / _S_PER_H
        growth, g_iv = slope * span_h, (interval[0] * span_h, interval[1] * span_h)
        long_enough = span_s >= rule.min_span_s
        per_h_cap = rule.growth_limit / span_h if span_h > 0 else math.inf
        detectable = half + (min(rule.limit_per_h, per_h_cap) if long_enough else per_h_cap)
        numbers = dict(slope_per_h=slope, interval_per_h=interval, growth=growth, growth_interval=g_iv,
                       detectable_per_h=detectable, span_s=span_s)
        how = (f"successors' levels ({n}, first process left out): slope {figure(slope, signed=True)} MiB/h, {level_pct} interval "
               f"[{figure(interval[0], signed=True)}, {figure(interval[1], signed=True)}] (limit {rule.limit_per_h:g} MiB/h), growth over their "
               f"{span_s / 60:.1f} min {figure(growth, signed=True)} MiB [{figure(g_iv[0], signed=True)}, {figure(g_iv[1], signed=True)}] (cap {rule.growth_limit:g} "
               f"MiB); a slope of {figure(detectable)} MiB/h or more would FAIL")
        if g_iv[0] > rule.growth_limit:
            across_outcome, across = FAIL, f"carried across generations beyond the cap: {how}"
        elif long_enough and interval[0] > rule.limit_per_h:
            across_outcome, across = FAIL, f"carried across generations, the slope wholly above the limit: {how}"
        elif not long_enough:
            across = f"across generations not judged: span {span_s / 60:.1f} min of {rule.min_span_s / 60:g}: {how}"
        elif g_iv[1] < rule.growth_limit:
            across_outcome, across = PASS, f"level across generations: {how}"
        else:
            across = f"across generations undecided, the growth's interval holds the cap: {how}"

    def pids(ss: Sequence[GenerationSummary]) -> str:
        return ", ".join(str(s.pid) for s in ss)

    if within_fail:
        worst = max(within_fail, key=lambda s: s.peak_growth or 0.0)
        outcome: Outcome = FAIL
        reason = (f"grows beyond the cap within a process: pid {worst.pid} held {figure(worst.peak_growth, signed=True)} MiB "
                  f"(+-{figure(half_w, 2)}) over its level for {rule.sustain_s:g} s (cap {rule.growth_limit:g} MiB; "
                  f"process(es) {pids(within_fail)}); {across}")
    elif across_outcome == FAIL:
        outcome, reason = FAIL, f"{across}; {within}"
    elif across_outcome == PASS and not within_open and settled:
        outcome, reason = PASS, f"bounded per generation: {within}; {across}"
    else:
        missing = [across] if across_outcome != PASS else []
        if within_open:
            missing.append(f"growth within process(es) {pids(within_open)} neither wholly below nor above the cap")
        outcome, reason = INCONCLUSIVE, "per generation, undecided: " + "; ".join(missing + [within])
    if unsettled:
        reason += f"; {unsettled} generation(s) too short to settle, not judged"
    return GenerationsVerdict(outcome=outcome, reason=reason, generations=summaries, successors=n,
                              confidence=rule.confidence, method=METHOD if rule.across == "theil-sen" else _OLS_METHOD,
                              **numbers)  # type: ignore[arg-type]

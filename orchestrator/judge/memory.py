"""The memory verdict: the trend of each window's median memory, and the growth over the soak against a cap.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

import msgspec
import numpy as np

from orchestrator.base.figures import figure
from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS, Outcome
from orchestrator.judge.trend import TrendRule, TrendVerdict, judge_trend

__all__ = ["DEFAULT_MEMORY_RULE", "MemoryRule", "MemoryVerdict", "judge_memory", "judge_memory_medians"]


class MemoryRule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The memory limits: a slope limit in MiB/h and a cap on the growth over the soak in MiB.

    The cap's default, 64 MiB, is the slope limit's default (8 MiB/h) over the default 8-hour soak: it
    catches growth in steps that levels off before the slope interval can decide.
    """

    limit_mib_per_h: float = 8.0
    growth_limit_mib: float = 64.0
    trend: TrendRule = TrendRule()


DEFAULT_MEMORY_RULE = MemoryRule()


class MemoryVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One memory verdict: the trend verdict, the growth (None with fewer than two windows), the series."""

    outcome: Outcome
    reason: str
    trend: TrendVerdict
    growth_mib: float | None
    growth_limit_mib: float
    medians_mib: list[float]


def _growth(times_h: Sequence[float], medians: Sequence[float]) -> float | None:
    if len(medians) < 2:
        return None
    ordered = [v for _, v in sorted(zip(times_h, medians, strict=True))]
    k = max(1, len(ordered) // 3)
    return float(median(ordered[-k:]) - median(ordered[:k]))


def judge_memory_medians(times_h: Sequence[float], medians_mib: Sequence[float],
                         rule: MemoryRule = DEFAULT_MEMORY_RULE) -> MemoryVerdict:
    """Judge a series of per-window median memory (MiB) at the windows' mid-points `times_h` (hours).

    Combination: below the trend rule's minimum windows or span, inconclusive. Otherwise fail when the slope interval
    lies wholly above the limit or the growth exceeds the cap; pass when the interval lies wholly below the limit and
    the growth is within the cap; else inconclusive. Growth is the median of the last third of the windows' medians
    minus that of the first third (at least one window each), so one odd window moves it little.
    """
    trend = judge_trend(times_h, medians_mib, rule.limit_mib_per_h, unit="MiB/h", rule=rule.trend)
    growth = _growth(times_h, medians_mib)
    cap = rule.growth_limit_mib
    grown = "no growth figure" if growth is None else f"growth {figure(growth, signed=True)} MiB (cap {cap:g} MiB)"

    def verdict(outcome: Outcome, reason: str) -> MemoryVerdict:
        return MemoryVerdict(outcome=outcome, reason=reason, trend=trend, growth_mib=growth,
                             growth_limit_mib=cap, medians_mib=list(medians_mib))

    evidence_short = len(medians_mib) < rule.trend.min_windows or trend.span_s < rule.trend.min_span_s
    if evidence_short or growth is None:
        return verdict(INCONCLUSIVE, f"{trend.reason}; {grown}, not judged")
    if trend.outcome == FAIL or growth > cap:
        return verdict(FAIL, f"{trend.reason}; {grown}" + (" exceeds the cap" if growth > cap else ""))
    if trend.outcome == PASS:
        return verdict(PASS, f"{trend.reason}; {grown}")
    return verdict(INCONCLUSIVE, f"{trend.reason}; {grown}")


def judge_memory(times_h: Sequence[float], samples_mib: Sequence[Sequence[float]],
                 rule: MemoryRule = DEFAULT_MEMORY_RULE) -> MemoryVerdict:
    """`judge_memory_medians` on the median of each window's samples; windows without samples are left
    out (and so count as missing windows)."""
    if len(times_h) != len(samples_mib):
        raise ValueError(f"judge_memory needs one time per window, got {len(times_h)} and {len(samples_mib)}")
    kept = [(t, float(np.median(s))) for t, s in zip(times_h, samples_mib, strict=True) if len(s)]
    return judge_memory_medians([t for t, _ in kept], [m for _, m in kept], rule)

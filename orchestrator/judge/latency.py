"""Latency drift verdicts: the same items against their own baseline, and a tail quantile with enough samples.
Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

import msgspec
import numpy as np

from orchestrator.judge.outcome import INCONCLUSIVE, Outcome
from orchestrator.judge.trend import (
    DEFAULT_RULE,
    TrendRule,
    TrendVerdict,
    judge_relative_trend,
    judge_trend,
)

__all__ = [
    "BASELINE_WINDOWS",
    "ItemDrift",
    "ItemRatios",
    "TailDrift",
    "item_ratios",
    "judge_item_drift",
    "judge_tail_drift",
    "min_tail_samples",
]

BASELINE_WINDOWS = 3


class ItemRatios(msgspec.Struct, frozen=True, kw_only=True):
    """Per window: the median of latency / item baseline (None where no request had a baselined item),
    the requests counted in it, and those left out because their item had no baseline."""

    medians: list[float | None]
    counted: list[int]
    unmatched: list[int]
    baseline_windows: int
    baseline_items: int


class ItemDrift(msgspec.Struct, frozen=True, kw_only=True):
    """The same-item latency verdict: the trend of the per-window median ratio, in % of baseline per hour."""

    outcome: Outcome
    reason: str
    trend: TrendVerdict
    ratios: ItemRatios


class TailDrift(msgspec.Struct, frozen=True, kw_only=True):
    """A tail quantile verdict; `trend` is None when some window holds too few samples for `q`."""

    outcome: Outcome
    reason: str
    q: float
    min_samples: int
    counts: list[int]
    quantiles_ms: list[float | None]
    trend: TrendVerdict | None


# Same-item rule: each request's latency is divided by its item's baseline (the item's median latency over the first
# `baseline_windows` judged windows); the per-window median of those ratios, in % of baseline, is judged by
# `orchestrator.judge.trend`. Dividing by the item's own baseline removes the workload mix (50 ms signal items beside
# 1-3 s speech items) that makes a raw per-window quantile swing from window to window. The baseline defaults to 3
# windows: one window holds only ~2 requests per item, so fewer windows leave a noisy baseline, and more delay the
# first verdict past the 6-window minimum. Pure: no I/O, no clock.
def item_ratios(windows: Sequence[Sequence[tuple[str, float]]], *,
                baseline_windows: int = BASELINE_WINDOWS) -> ItemRatios:
    """Per-window median of each request's latency over its item's baseline (median over the first
    `baseline_windows` windows, or all windows when fewer). `windows` holds (item_id, latency_ms) pairs."""
    if baseline_windows < 1:
        raise ValueError(f"baseline_windows must be at least 1 (got {baseline_windows})")
    pooled: dict[str, list[float]] = {}
    for window in windows[:baseline_windows]:
        for item_id, latency_ms in window:
            pooled.setdefault(item_id, []).append(latency_ms)
    # An item whose baseline is 0 ms cannot scale anything; it is left out like an unseen item.
    baseline = {item: b for item, samples in pooled.items() if (b := float(median(samples))) > 0}
    medians: list[float | None] = []
    counted: list[int] = []
    unmatched: list[int] = []
    for window in windows:
        ratios = [latency_ms / b for item_id, latency_ms in window if (b := baseline.get(item_id, 0.0)) > 0]
        medians.append(float(median(ratios)) if ratios else None)
        counted.append(len(ratios))
        unmatched.append(len(window) - len(ratios))
    return ItemRatios(medians=medians, counted=counted, unmatched=unmatched,
                      baseline_windows=min(baseline_windows, len(windows)), baseline_items=len(baseline))


def judge_item_drift(times_h: Sequence[float], windows: Sequence[Sequence[tuple[str, float]]],
                     limit_pct_per_h: float, *, baseline_windows: int = BASELINE_WINDOWS,
                     rule: TrendRule = DEFAULT_RULE) -> ItemDrift:
    """Judge latency drift on the same items; `times_h` are the windows' mid-points in hours. Windows
    without a baselined request are left out of the series (and so count as missing windows)."""
    if len(times_h) != len(windows):
        raise ValueError(f"judge_item_drift needs one time per window, got {len(times_h)} and {len(windows)}")
    ratios = item_ratios(windows, baseline_windows=baseline_windows)
    kept = [(t, 100.0 * m) for t, m in zip(times_h, ratios.medians, strict=True) if m is not None]
    trend = judge_trend([t for t, _ in kept], [v for _, v in kept], limit_pct_per_h, unit="%/h", rule=rule)
    reason = (f"median latency / own item's baseline ({ratios.baseline_items} items, baseline over "
              f"{ratios.baseline_windows} windows): {trend.reason}")
    return ItemDrift(outcome=trend.outcome, reason=reason, trend=trend, ratios=ratios)


def min_tail_samples(q: float) -> int:
    """Samples a window needs before its q-quantile is judged: ceil(10 / (1 - q)), 1000 for a p99, so
    that about 10 samples lie above the quantile and it is not just the window's largest values."""
    if not 0 < q < 1:
        raise ValueError(f"a quantile must lie in (0, 1), got {q}")
    return math.ceil(round(10 / (1 - q), 6))  # round: 10 / (1 - 0.99) is 999.99...91 in binary


def judge_tail_drift(times_h: Sequence[float], windows: Sequence[Sequence[float]], q: float,
                     limit_pct_per_h: float, *, baseline_windows: int = BASELINE_WINDOWS,
                     rule: TrendRule = DEFAULT_RULE) -> TailDrift:
    """Judge the drift of each window's q-quantile latency in % of its baseline (median of the first
    `baseline_windows` windows' quantiles) per hour; inconclusive unless every window holds at least
    `min_tail_samples(q)` samples."""
    if len(times_h) != len(windows):
        raise ValueError(f"judge_tail_drift needs one time per window, got {len(times_h)} and {len(windows)}")
    need = min_tail_samples(q)
    counts = [len(w) for w in windows]
    name = f"p{q * 100:g}"
    short = [c for c in counts if c < need]
    if short or not windows:
        quantiles: list[float | None] = [float(np.quantile(w, q)) if len(w) else None for w in windows]
        fewest = f" (fewest {min(short)})" if short else ""
        reason = (f"not enough samples: {len(short)} of {len(windows)} windows hold fewer than {need}{fewest}; "
                  f"a {name} is judged only where every window holds at least ceil(10/(1-q)) = {need}")
        return TailDrift(outcome=INCONCLUSIVE, reason=reason, q=q, min_samples=need, counts=counts,
                         quantiles_ms=quantiles, trend=None)
    series = [float(np.quantile(w, q)) for w in windows]
    trend = judge_relative_trend(times_h, series, limit_pct_per_h, baseline_windows=baseline_windows,
                                 rule=rule)
    return TailDrift(outcome=trend.outcome, reason=f"{name} per window, in % of baseline: {trend.reason}", q=q,
                     min_samples=need, counts=counts, quantiles_ms=list(series), trend=trend)

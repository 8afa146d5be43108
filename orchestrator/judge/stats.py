"""Latency statistics shared by reports and ingest: p50/p90/p99/mean over a sample, and a bounded streaming
estimator for live views. Pure; imports only the Summary value type (orchestrator.events).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from orchestrator.events import Summary

__all__ = ["Summary", "percentile", "summarize", "StreamingQuantiles"]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Type-7 percentile of an already sorted, non-empty sequence; q in [0, 100].

    Percentile method: numpy's `linear` (Hyndman & Fan type 7, what AIPerf's aggregates use): for sorted values
    x[0..n-1] and q in [0, 100], h = (n - 1) * q / 100, p = x[floor(h)] + (h - floor(h)) * (x[ceil(h)] - x[floor(h)]).
    """
    if not sorted_values:
        raise ValueError("percentile of an empty sample")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be within [0, 100], got {q}")
    return float(np.percentile(np.asarray(sorted_values, dtype=np.float64), q, method="linear"))


def summarize(values: Iterable[float | None]) -> Summary:
    """Count, mean, p50/p90/p99, min and max of the non-None values (NaN is ignored like None)."""
    xs = np.fromiter((v for v in values if v is not None and v == v), dtype=np.float64)
    if not xs.size:
        return Summary()
    p50, p90, p99 = (float(v) for v in np.percentile(xs, (50, 90, 99), method="linear"))
    return Summary(count=int(xs.size), mean=math.fsum(xs.tolist()) / xs.size, p50=p50, p90=p90, p99=p99,
                   min=float(xs.min()), max=float(xs.max()))


class StreamingQuantiles:
    """Bounded-memory quantile estimate for live views: a log-bucketed histogram.

    Each positive value falls into bucket floor(log(v) / log(1 + rel_error)); a quantile is reported
    as its bucket's geometric midpoint, so the relative error is at most `rel_error / 2` for values in
    [min_value, max_value]. Values below `min_value` (including 0) share one bucket reported as
    `min_value`. Memory is one int per occupied bucket (at most ~log(max/min)/log(1+rel_error)).
    Final numbers never come from here: reports use `summarize` over the journal.
    """

    def __init__(self, *, rel_error: float = 0.02, min_value: float = 1e-3) -> None:
        if not 0.0 < rel_error < 1.0:
            raise ValueError(f"rel_error must be within (0, 1), got {rel_error}")
        self._log_base = math.log1p(rel_error)
        self._gamma = 1.0 + rel_error
        self._min_value = min_value
        self._buckets: dict[int, int] = {}
        self._low = 0
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        """Record one value (negative and NaN values are errors of the caller and are rejected)."""
        if not value >= 0.0:
            raise ValueError(f"StreamingQuantiles takes values >= 0, got {value}")
        self.count += 1
        self.total += value
        if value < self._min_value:
            self._low += 1
            return
        key = math.floor(math.log(value) / self._log_base)
        self._buckets[key] = self._buckets.get(key, 0) + 1

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """Estimated q-th percentile (q in [0, 100]); None before the first value."""
        if not self.count:
            return None
        rank = q / 100.0 * (self.count - 1)
        seen = self._low
        if rank < seen:
            return self._min_value
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if rank < seen:
                return self._gamma ** key * (1.0 + self._gamma) / 2.0
        return self._gamma ** max(self._buckets) * (1.0 + self._gamma) / 2.0

    def summary(self) -> Summary:
        """The estimate as a Summary (min/max are not tracked here and stay None)."""
        return Summary(count=self.count, mean=self.mean, p50=self.quantile(50), p90=self.quantile(90),
                       p99=self.quantile(99))

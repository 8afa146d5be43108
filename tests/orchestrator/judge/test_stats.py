"""orchestrator.judge.stats: type-7 percentiles as numpy computes them, and the bounded streaming estimate."""

from __future__ import annotations

import random

import numpy as np
import pytest

from orchestrator.judge.stats import StreamingQuantiles, Summary, percentile, summarize


class TestSummarize:
    def test_matches_numpy_linear_percentiles(self) -> None:
        """p50/p90/p99 equal numpy.percentile's default (linear) method; mean is exact."""
        rng = random.Random(7)
        xs = [rng.lognormvariate(3, 0.6) for _ in range(1001)]
        s = summarize(xs)
        for q, got in ((50, s.p50), (90, s.p90), (99, s.p99)):
            assert got == pytest.approx(float(np.percentile(xs, q)), rel=1e-12)
        assert s.mean == pytest.approx(sum(xs) / len(xs)) and (s.min, s.max, s.count) == (min(xs), max(xs), 1001)

    def test_small_and_empty_samples(self) -> None:
        """None and NaN are skipped; an empty sample gives an empty Summary."""
        assert summarize([None, float("nan")]) == Summary()
        s = summarize([1.0, None, 3.0])
        assert (s.count, s.p50) == (2, 2.0) and s.p90 == pytest.approx(2.8)
        assert percentile([5.0], 99) == 5.0
        with pytest.raises(ValueError, match="empty sample"):
            percentile([], 50)


class TestStreaming:
    def test_estimate_within_relative_error_and_bounded(self) -> None:
        """The histogram estimate stays within the promised relative error with bounded buckets."""
        rng = random.Random(3)
        xs = [rng.lognormvariate(3, 1.0) for _ in range(50_000)]
        est = StreamingQuantiles(rel_error=0.02)
        for x in xs:
            est.add(x)
        for q in (50, 90, 99):
            exact = float(np.percentile(xs, q))
            assert est.quantile(q) == pytest.approx(exact, rel=0.02)
        assert len(est._buckets) < 1000
        with pytest.raises(ValueError, match=">= 0"):
            est.add(-1.0)

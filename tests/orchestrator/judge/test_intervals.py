"""Intervals and classification for `aqbench compare`: quantiles, pass rates, and change classes."""

from __future__ import annotations

import math
import time
from collections.abc import Hashable

import msgspec
import numpy as np
import pytest
from scipy.stats import binom

from orchestrator.judge.intervals import (
    QuantileChange,
    classify_change,
    item_ratio_change,
    paired_quantile_change,
    paired_rate_change,
    quantile_change,
    rate_change,
    wilson_interval,
)
from orchestrator.judge.noninferiority import PairedCounts


def _false_rate_bound(level: float, repeats: int) -> float:
    """The level plus three Monte Carlo standard errors."""
    return level + 3 * math.sqrt(level * (1 - level) / repeats)


class TestQuantileChange:
    def test_bootstrap_law_of_the_order_statistic_is_exact(self) -> None:
        """Against a constant candidate the interval is the baseline quantile's exact bootstrap law:
        P(resampled r-th order statistic <= x_(j)) = P(Binomial(n, j/n) >= r)."""
        rng = np.random.default_rng(3)
        baseline = np.sort(rng.lognormal(0.0, 1.0, 40))
        n, quantile = baseline.size, 0.9
        r = math.ceil(quantile * n)
        law = np.array([binom.sf(r - 1, n, j / n) for j in range(1, n + 1)])  # CDF at x_(j)
        change = quantile_change(baseline, np.zeros(5), quantile, resamples=200_000, seed=1)
        # difference = 0 - baseline quantile, so the interval's ends mirror the law's 95% and 5% points.
        top, bottom = -change.lower, -change.upper
        for point, level in ((bottom, 0.05), (top, 0.95)):
            j_low = int(np.searchsorted(law, level - 0.01))
            j_high = int(np.searchsorted(law, level + 0.01))
            assert baseline[j_low] <= point <= baseline[min(j_high, n - 1)]

    def test_quantile_is_the_order_statistic_of_rank_ceil_qn(self) -> None:
        """The reported quantiles are numpy's inverted-CDF quantiles."""
        rng = np.random.default_rng(4)
        a, b = rng.normal(10, 2, 333), rng.normal(11, 2, 250)
        change = quantile_change(a, b, 0.9)
        assert change.baseline == np.quantile(a, 0.9, method="inverted_cdf")
        assert change.candidate == np.quantile(b, 0.9, method="inverted_cdf")
        assert change.lower <= change.difference <= change.upper

    def test_two_samples_of_100k_take_well_under_a_second(self) -> None:
        """p99 of two 100,000-value samples with 4,000 resamples."""
        rng = np.random.default_rng(5)
        a, b = rng.lognormal(3, 0.5, 100_000), rng.lognormal(3, 0.5, 100_000)
        start = time.process_time()
        change = quantile_change(a, b, 0.99)
        assert time.process_time() - start < 1.0
        assert change.enough_samples and change.resamples == 4000

    def test_aa_false_regression_rate_within_the_level(self) -> None:
        """Seeded A/A: with tolerance 0, p50 and p90 are called regressed at most ~5% of the time."""
        rng = np.random.default_rng(6)
        repeats = 300
        for quantile in (0.5, 0.9):
            regressed = 0
            for repeat in range(repeats):
                a, b = rng.lognormal(3, 0.6, 400), rng.lognormal(3, 0.6, 400)
                change = quantile_change(a, b, quantile, resamples=2000, seed=repeat)
                regressed += classify_change(change.lower, change.upper, 0.0,
                                             enough_samples=change.enough_samples) == "regressed"
            assert regressed / repeats <= _false_rate_bound(0.05, repeats), quantile

    def test_ab_a_slower_candidate_regresses(self) -> None:
        """A candidate 20% slower regresses against a 5% relative tolerance; the same run is unchanged."""
        rng = np.random.default_rng(7)
        a = rng.lognormal(3, 0.4, 20_000)
        b = rng.lognormal(3, 0.4, 20_000) * 1.2
        slower = quantile_change(a, b, 0.9)
        assert slower.relative_lower is not None and slower.relative_upper is not None
        assert classify_change(slower.relative_lower, slower.relative_upper, 0.05) == "regressed"
        same = quantile_change(a, rng.lognormal(3, 0.4, 20_000), 0.5)
        assert same.relative_lower is not None and same.relative_upper is not None
        assert classify_change(same.relative_lower, same.relative_upper, 0.05) == "unchanged"

    def test_minimum_samples_per_quantile(self) -> None:
        """p99 needs 500 samples per side (5 beyond it), p50 needs 10."""
        rng = np.random.default_rng(8)
        assert not quantile_change(rng.random(499), rng.random(600), 0.99).enough_samples
        assert quantile_change(rng.random(500), rng.random(500), 0.99).enough_samples
        assert not quantile_change(rng.random(9), rng.random(50), 0.5).enough_samples

    def test_result_round_trips_through_json(self) -> None:
        """Plain floats and ints: the result journals as JSON."""
        change = quantile_change([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], 0.5, resamples=100)
        assert msgspec.json.decode(msgspec.json.encode(change), type=QuantileChange) == change

    def test_rejects_empty_and_non_finite_samples(self) -> None:
        """An empty side or a NaN is a caller error, named."""
        with pytest.raises(ValueError, match="the baseline sample is empty"):
            quantile_change([], [1.0], 0.5)
        with pytest.raises(ValueError, match="the candidate sample holds a NaN"):
            quantile_change([1.0], [float("nan")], 0.5)


def _runs_by_item(rng: np.random.Generator, items: int, slowdown: float) -> tuple[dict[Hashable, list[float]],
                                                                                  dict[Hashable, list[float]]]:
    """Two runs over the same items; item costs differ widely (the workload mix), requests add noise."""
    cost = rng.lognormal(3.0, 1.0, items)
    baseline: dict[Hashable, list[float]] = {i: list(cost[i] * rng.lognormal(0.0, 0.1, 3)) for i in range(items)}
    candidate: dict[Hashable, list[float]] = {i: list(cost[i] * slowdown * rng.lognormal(0.0, 0.1, 3)) for i in range(items)}
    return baseline, candidate


class TestPairedQuantileChange:
    def test_aa_false_regression_rate_within_the_level(self) -> None:
        """Seeded A/A over shared items: p90 is called regressed at most ~5% of the time."""
        rng = np.random.default_rng(9)
        repeats, regressed = 200, 0
        for repeat in range(repeats):
            baseline, candidate = _runs_by_item(rng, 200, 1.0)
            change = paired_quantile_change(baseline, candidate, 0.9, resamples=1000, seed=repeat)
            regressed += classify_change(change.lower, change.upper, 0.0) == "regressed"
        assert regressed / repeats <= _false_rate_bound(0.05, repeats)

    def test_pairing_removes_the_workload_mix(self) -> None:
        """A 10% slowdown on 300 items of widely varying cost: the paired quantile interval is narrower
        than the unpaired one, and the per-item ratio calls it regressed beyond 5%."""
        rng = np.random.default_rng(10)
        baseline, candidate = _runs_by_item(rng, 300, 1.10)
        paired = paired_quantile_change(baseline, candidate, 0.5)
        unpaired = quantile_change([v for vs in baseline.values() for v in vs],
                                   [v for vs in candidate.values() for v in vs], 0.5)
        assert paired.relative_lower is not None and paired.relative_upper is not None
        assert unpaired.relative_lower is not None and unpaired.relative_upper is not None
        assert paired.relative_lower < 0.10 < paired.relative_upper
        assert (paired.relative_upper - paired.relative_lower) < 0.75 * (unpaired.relative_upper - unpaired.relative_lower)
        assert classify_change(unpaired.relative_lower, unpaired.relative_upper, 0.05) == "inconclusive"
        assert paired.n_baseline == 300 and paired.method == "paired-item-bootstrap"
        ratio = item_ratio_change(baseline, candidate)
        assert ratio.lower < 1.10 < ratio.upper and ratio.items == 300
        assert classify_change(ratio.relative_lower, ratio.relative_upper, 0.05) == "regressed"

    def test_item_ratio_aa_false_regression_rate_within_the_level(self) -> None:
        """Seeded A/A: the median per-item ratio is called regressed at most ~5% of the time."""
        rng = np.random.default_rng(13)
        repeats, regressed = 300, 0
        for repeat in range(repeats):
            baseline, candidate = _runs_by_item(rng, 100, 1.0)
            ratio = item_ratio_change(baseline, candidate, resamples=2000, seed=repeat)
            regressed += classify_change(ratio.relative_lower, ratio.relative_upper, 0.0) == "regressed"
        assert regressed / repeats <= _false_rate_bound(0.05, repeats)

    def test_items_on_one_side_only_are_left_out(self) -> None:
        """Only shared items pair; none shared is an error."""
        change = paired_quantile_change({"a": [1.0], "b": [2.0], "x": [9.0]}, {"a": [1.0], "b": [2.0], "y": [0.1]},
                                        0.5, resamples=50)
        assert change.n_baseline == 2 and change.baseline == 1.0
        with pytest.raises(ValueError, match="no dataset item has answers on both sides"):
            paired_quantile_change({"a": [1.0]}, {"b": [1.0]}, 0.5)


class TestRates:
    def test_wilson_known_values(self) -> None:
        """Newcombe (1998a) examples at 95%: 81/263 -> 0.2553-0.3662, 15/148 -> 0.0624-0.1605."""
        first = wilson_interval(81, 263, confidence=0.95)
        assert (first.lower, first.upper) == pytest.approx((0.2553, 0.3662), abs=1e-4)
        second = wilson_interval(15, 148, confidence=0.95)
        assert (second.lower, second.upper) == pytest.approx((0.0624, 0.1605), abs=1e-4)
        assert wilson_interval(0, 10).lower == 0.0 and wilson_interval(10, 10).upper == 1.0

    def test_newcombe_known_values(self) -> None:
        """Newcombe (1998b) method 10 at 95%: 56/70 - 48/80 -> 0.0524-0.3339; 0/20 - 0/10 mirrored."""
        change = rate_change(48, 80, 56, 70, confidence=0.95)
        assert change.difference == pytest.approx(0.2)
        assert (change.lower, change.upper) == pytest.approx((0.0524, 0.3339), abs=1e-4)
        zero = rate_change(0, 10, 0, 20, confidence=0.95)
        assert (zero.lower, zero.upper) == pytest.approx((-0.2775, 0.1611), abs=1e-4)

    def test_aa_rate_false_regression_within_the_level(self) -> None:
        """Seeded A/A of pass rates (higher is better): a drop is called regressed at most ~5%."""
        rng = np.random.default_rng(12)
        repeats, regressed = 2000, 0
        for base, cand in rng.binomial(200, 0.85, size=(repeats, 2)):
            change = rate_change(int(base), 200, int(cand), 200)
            regressed += classify_change(change.lower, change.upper, 0.0, higher_is_worse=False) == "regressed"
        assert regressed / repeats <= _false_rate_bound(0.05, repeats)

    def test_paired_rate_change_uses_the_discordant_items(self) -> None:
        """Five newly wrong items of 100 and none newly right: the paired interval lies below 0."""
        counts = PairedCounts(both_right=80, reference_only=5, candidate_only=0, both_wrong=15)
        change = paired_rate_change(counts)
        assert change.difference == pytest.approx(-0.05) and change.upper < 0.0
        assert classify_change(change.lower, change.upper, 0.0, higher_is_worse=False) == "regressed"
        same = paired_rate_change(PairedCounts(both_right=90, reference_only=0, candidate_only=0, both_wrong=10))
        assert same.lower < 0.0 < same.upper and same.method == "tango-score"

    def test_rejects_impossible_counts(self) -> None:
        """More successes than trials is named."""
        with pytest.raises(ValueError, match=r"the candidate rate needs 0 <= successes <= n, got 11 of 10"):
            rate_change(1, 10, 11, 10)


class TestClassifyChange:
    @pytest.mark.parametrize(("lower", "upper", "tolerance", "higher_is_worse", "expected"), [
        (-0.02, 0.03, 0.05, True, "unchanged"),
        (0.06, 0.20, 0.05, True, "regressed"),
        (-0.20, -0.06, 0.05, True, "improved"),
        (0.01, 0.20, 0.05, True, "inconclusive"),
        (-0.20, 0.20, 0.05, True, "inconclusive"),
        (0.06, 0.20, 0.05, False, "improved"),
        (-0.20, -0.06, 0.05, False, "regressed"),
        (0.0, 0.0, 0.0, True, "unchanged"),
        (0.05, 0.10, 0.05, True, "inconclusive"),
    ])
    def test_interval_against_the_tolerance_band(self, lower: float, upper: float, tolerance: float,
                                                 higher_is_worse: bool, expected: str) -> None:
        """Within the band is unchanged; wholly beyond it is regressed or improved by direction."""
        assert classify_change(lower, upper, tolerance, higher_is_worse) == expected

    def test_too_few_samples_is_inconclusive(self) -> None:
        """A clear regression on too small a sample is still inconclusive."""
        assert classify_change(0.5, 0.9, 0.05, enough_samples=False) == "inconclusive"

    def test_rejects_a_reversed_interval(self) -> None:
        """lower above upper is a caller error."""
        with pytest.raises(ValueError, match=r"lower <= upper, got tolerance=0.05, interval=\[0.2, 0.1\]"):
            classify_change(0.2, 0.1, 0.05)

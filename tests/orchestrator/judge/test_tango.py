"""Tango's paired score test: the statistic, the exact cutoffs and the inverted bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, xlogy

from orchestrator.judge.tango import (
    CUTOFFS,
    exact_cutoff,
    exact_sizes,
    score_bounds,
    score_statistic,
)


def _tango_z(b: float, c: float, n: int, delta: float) -> float:
    """Tango (1998) eq. for Z at R = delta, written from the paper independently of the module."""
    a = 2.0 * n
    bb = -(b + c) + (2.0 * n - b + c) * delta
    cc = -c * delta * (1.0 - delta)
    t = (-bb + math.sqrt(bb * bb - 4.0 * a * cc)) / (2.0 * a)
    return (b - c - n * delta) / math.sqrt(n * (2.0 * t + delta * (1.0 - delta)))


def _brute_sizes(n: int, delta: float, k: float, p_b: float, p_c: float) -> tuple[float, float]:
    """P(Z < -k) and P(Z > k) by summing the trinomial over every (b, c) cell."""
    pass_p = fail_p = 0.0
    for b in range(n + 1):
        for c in range(n - b + 1):
            rest = n - b - c
            log_p = (gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(rest + 1)
                     + xlogy(b, p_b) + xlogy(c, p_c) + xlogy(rest, 1.0 - p_b - p_c))
            z = _tango_z(b, c, n, delta)
            if z < -k:
                pass_p += math.exp(log_p)
            elif z > k:
                fail_p += math.exp(log_p)
    return pass_p, fail_p


class TestScoreStatistic:
    def test_matches_the_papers_formula(self) -> None:
        """The module's statistic equals Tango's closed form on assorted counts and margins."""
        for b, c, n, delta in [(0, 0, 100, 0.03), (1, 0, 100, 0.03), (53, 0, 5153, 0.005), (8, 5, 1140, 0.01),
                               (3, 9, 40, 0.1), (20, 20, 50, 0.2)]:
            assert score_statistic(b, c, n, delta) == pytest.approx(_tango_z(b, c, n, delta), rel=1e-10)

    def test_negative_delta_mirrors_the_positive_one(self) -> None:
        """Swapping the discordant cells and negating delta negates Z."""
        assert score_statistic(3, 7, 60, -0.04) == pytest.approx(-score_statistic(7, 3, 60, 0.04), rel=1e-12)

    def test_zero_discordance_has_the_closed_form(self) -> None:
        """With b = c = 0, Z = -sqrt(n delta / (1 - delta)) (the design's n = 100, 3-point example)."""
        assert score_statistic(0, 0, 100, 0.03) == pytest.approx(-1.7586, abs=1e-4)


class TestExactCutoff:
    @pytest.mark.parametrize(("n", "delta", "expected"), [(100, 0.05, 1.84), (287, 0.01, 1.79), (100, 0.03, 1.745),
                                                          (2280, 0.01, 1.73)])
    def test_owners_documented_cutoffs(self, n: int, delta: float, expected: float) -> None:
        """The cutoffs TRTMC's apps/aiperf_qual/DESIGN.md 4.2 states for these counts and margins."""
        assert exact_cutoff(n, delta) == pytest.approx(expected)

    def test_sizes_match_a_brute_force_sum(self) -> None:
        """The banded threshold computation agrees with summing every cell of the trinomial."""
        for n, delta, p_b, p_c in [(17, 0.05, 0.2, 0.15), (30, 0.1, 0.1, 0.0), (25, 0.02, 0.3, 0.28)]:
            pass_p, fail_p = exact_sizes(n, delta, (1.645, 1.9), p_b, p_c)
            for index, k in enumerate((1.645, 1.9)):
                brute_pass, brute_fail = _brute_sizes(n, delta, k, p_b, p_c)
                assert pass_p[index] == pytest.approx(brute_pass, abs=1e-12)
                assert fail_p[index] == pytest.approx(brute_fail, abs=1e-12)

    def test_rejects_margins_outside_the_unit_interval(self) -> None:
        """A margin of 0 or 100 points is not a non-inferiority test."""
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            exact_cutoff(50, 0.0)

    def test_cutoff_grid_starts_at_the_asymptotic_quantile(self) -> None:
        """Cutoffs run from 1.645 in 0.005 steps, as the owners search them."""
        assert CUTOFFS[0] == 1.645 and CUTOFFS[1] == 1.65 and len(CUTOFFS) == 120


class TestScoreBounds:
    def test_bounds_invert_the_test(self) -> None:
        """At the upper bound Z equals -k and at the lower bound +k, and the estimate lies between."""
        b, c, n, k = 7, 2, 120, 1.8
        lower, upper = score_bounds(b, c, n, k)
        assert lower < (b - c) / n < upper
        assert score_statistic(b, c, n, upper) == pytest.approx(-k, abs=1e-8)
        assert score_statistic(b, c, n, lower) == pytest.approx(k, abs=1e-8)

    def test_no_cutoff_gives_the_whole_range(self) -> None:
        """An infinite cutoff (no controlled cutoff) bounds nothing."""
        assert score_bounds(3, 1, 20, math.inf) == (-1.0, 1.0)

    def test_coverage_of_the_asymptotic_interval(self) -> None:
        """Seeded: the one-sided bounds at k = 1.645 miss the true difference at most about 5% each way."""
        rng = np.random.default_rng(7)
        n, p_b, p_c = 200, 0.08, 0.03
        counts = rng.multinomial(n, [p_b, p_c, 1 - p_b - p_c], size=400)
        true_r = p_b - p_c
        misses_up = misses_down = 0
        for b, c, _ in counts:
            lower, upper = score_bounds(int(b), int(c), n, 1.645)
            misses_up += upper < true_r
            misses_down += lower > true_r
        assert misses_up / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)
        assert misses_down / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)

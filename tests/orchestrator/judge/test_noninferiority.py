"""Paired non-inferiority decisions: right/wrong pairs, sampled models and corpus metrics."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.special import gammaln, xlogy
from scipy.stats import t as student_t

from orchestrator.judge.noninferiority import (
    Decision,
    Margin,
    PairedCounts,
    decide_binary,
    decide_corpus,
    decide_sampled,
    detectable_regression,
    pair_counts,
    resolve_margin,
    zero_discordance_sizes,
)
from orchestrator.judge.tango import exact_cutoff, score_statistic

ROOT = Path(__file__).resolve().parents[3]


def _counts(b: int, c: int, n: int, both_wrong: int = 0) -> PairedCounts:
    return PairedCounts(both_right=n - b - c - both_wrong, reference_only=b, candidate_only=c, both_wrong=both_wrong)


def _z_matrix(n: int, delta: float) -> NDArray[np.float64]:
    """Tango's Z over every (b, c) cell (NaN where b + c > n), from the paper's closed form."""
    b = np.arange(n + 1, dtype=float)[:, None]
    c = np.arange(n + 1, dtype=float)[None, :]
    bb = -(b + c) + (2.0 * n - b + c) * delta
    t = (-bb + np.sqrt(bb * bb + 8.0 * n * c * delta * (1.0 - delta))) / (4.0 * n)
    z = (b - c - n * delta) / np.sqrt(n * (2.0 * t + delta * (1.0 - delta)))
    return np.where(b + c <= n, z, np.nan)


def _worst_sizes(n: int, delta: float, k: float, discordances: NDArray[np.float64]) -> tuple[float, float]:
    """The largest exact P(pass) and P(fail) at R = delta over the given total discordances."""
    z = _z_matrix(n, delta)
    b = np.arange(n + 1, dtype=float)[:, None]
    c = np.arange(n + 1, dtype=float)[None, :]
    valid = ~np.isnan(z)
    rest = np.where(valid, n - b - c, 0.0)
    # The multinomial coefficient does not depend on the discordance: computed once (the same terms summed
    # in the same order as the whole expression would).
    coefficient = gammaln(n + 1.0) - gammaln(b + 1.0) - gammaln(c + 1.0) - gammaln(rest + 1.0)
    worst_pass = worst_fail = 0.0
    for q in discordances:
        p_b, p_c = (q + delta) / 2.0, (q - delta) / 2.0
        log_p = coefficient + xlogy(b, p_b) + xlogy(c, p_c) + xlogy(rest, 1.0 - p_b - p_c)
        probability = np.where(valid, np.exp(log_p), 0.0)
        worst_pass = max(worst_pass, float(probability[valid & (z < -k)].sum()))
        worst_fail = max(worst_fail, float(probability[valid & (z > k)].sum()))
    return worst_pass, worst_fail


def _discordances(delta: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Off-grid nuisance values over the owners' admissible span, plus both of its ends."""
    top = min(delta + 0.4, 1.0)
    return np.concatenate([[delta, top], rng.uniform(delta, top, size=20)])


class TestBinaryExactSize:
    def test_pass_and_fail_rates_at_the_margin_stay_at_or_below_5_percent(self) -> None:
        """n = 1..60, margins 1..10 points: exact enumeration at R = margin, worst nuisance, both tails."""
        rng = np.random.default_rng(2026)
        worst = 0.0
        for margin_points in range(1, 11):
            delta = margin_points / 100.0
            for n in range(1, 61):
                k = exact_cutoff(n, delta)
                if math.isinf(k):
                    continue  # never decides: both rates are 0
                pass_rate, fail_rate = _worst_sizes(n, delta, k, _discordances(delta, rng))
                worst = max(worst, pass_rate, fail_rate)
                assert pass_rate <= 0.05, (n, margin_points, k, pass_rate)
                assert fail_rate <= 0.05, (n, margin_points, k, fail_rate)
        assert worst > 0.03  # the cutoffs are not needlessly conservative everywhere

    def test_the_asymptotic_cutoff_alone_would_break_the_level(self) -> None:
        """The same enumeration with k = 1.645 exceeds 5% somewhere: the check can fail."""
        rng = np.random.default_rng(1)
        exceeded = [
            max(_worst_sizes(n, m / 100.0, 1.645, _discordances(m / 100.0, rng))) > 0.05
            for m in (1, 5, 10) for n in (20, 40, 60)
        ]
        assert any(exceeded)

    def test_decisions_follow_the_statistic_against_the_exact_cutoff(self) -> None:
        """decide_binary passes iff Z < -k and fails iff Z > k, and its bounds agree with that."""
        rng = np.random.default_rng(5)
        for _ in range(150):
            n = int(rng.integers(5, 61))
            margin_points = float(rng.integers(1, 11))
            b = int(rng.integers(0, n + 1))
            c = int(rng.integers(0, n - b + 1))
            decision = decide_binary(_counts(b, c, n), Margin(margin=margin_points))
            z = score_statistic(b, c, n, margin_points / 100.0)
            k = exact_cutoff(n, margin_points / 100.0)
            expected = "pass" if z < -k else "fail" if z > k else "inconclusive"
            assert decision.outcome == expected
            assert decision.upper is not None and decision.lower is not None
            assert (decision.upper < margin_points) == (expected == "pass")
            assert (decision.lower > margin_points) == (expected == "fail")


class TestBinaryKnownCases:
    def test_zero_discordance_passes_once_n_is_large_enough_at_5_points(self) -> None:
        """At 5 points a fully agreeing candidate first passes at 59 items, fails to at 63-66 (the exact
        cutoff jumps), and passes at every size from 67 on."""
        sizes = zero_discordance_sizes(5.0)
        assert (sizes.first_pass, sizes.passes_from) == (59, 67)
        outcomes = {n: decide_binary(_counts(0, 0, n), Margin(margin=5.0)).outcome for n in range(50, 121)}
        assert [n for n, outcome in outcomes.items() if outcome != "pass"] == [*range(50, 59), 63, 64, 65, 66]

    @pytest.mark.parametrize(("margin_points", "first_pass", "passes_from"), [(1.0, 302, 397), (2.0, 150, 172)])
    def test_zero_discordance_sizes_at_the_owners_binary_margins(self, margin_points: float, first_pass: int,
                                                                 passes_from: int) -> None:
        """MMLU's 1-point gate and its quantized/sampled 2-point gate: the sizes around each jump, which bench.toml's
        comment and docs/qualify.md quote."""
        def outcome(n: int) -> str:
            return decide_binary(_counts(0, 0, n), Margin(margin=margin_points)).outcome

        assert (outcome(first_pass - 1), outcome(first_pass)) == ("inconclusive", "pass")
        assert (outcome(passes_from - 1), outcome(passes_from)) == ("inconclusive", "pass")
        quoted = {1.0: ("passes from\n# {} pairs at 1 point", "passes from {} paired problems at 1 point"),
                  2.0: ("pairs at 1 point and {} at 2", "paired problems at 1 point and {} at 2")}[margin_points]
        assert quoted[0].format(passes_from) in (ROOT / "bench.toml").read_text(encoding="utf-8")
        assert quoted[1].format(passes_from) in (ROOT / "docs" / "qualify.md").read_text(encoding="utf-8")

    def test_a_candidate_ten_points_worse_fails(self) -> None:
        """10 of 100 items lost (and none won) fails at 5 points; 20 of 200 fails at 1 point."""
        assert decide_binary(_counts(10, 0, 100), Margin(margin=5.0)).outcome == "fail"
        failed = decide_binary(_counts(20, 0, 200), Margin(margin=1.0))
        assert failed.outcome == "fail" and failed.estimate == pytest.approx(10.0)
        assert failed.lower is not None and failed.lower > 1.0

    def test_one_point_worse_at_a_one_point_margin_is_inconclusive(self) -> None:
        """R equal to the margin never decides, however many items: items_needed is None."""
        for b, n in [(1, 100), (10, 1000), (3, 300)]:
            decision = decide_binary(_counts(b, 0, n), Margin(margin=1.0))
            assert decision.outcome == "inconclusive" and decision.items_needed is None
            assert "R equals the margin" in decision.reason

    def test_owners_documented_outcomes(self) -> None:
        """TRTMC apps/aiperf_qual/DESIGN.md 4.2/4.5 cases: 100 items at 3 points, v7's defects and healthy models."""
        assert decide_binary(_counts(0, 0, 100), Margin(margin=3.0)).outcome == "pass"
        assert decide_binary(_counts(1, 0, 100), Margin(margin=3.0)).outcome == "inconclusive"
        assert decide_binary(_counts(65, 3, 1140), Margin(margin=1.0)).outcome == "fail"
        assert decide_binary(_counts(8, 5, 1140), Margin(margin=1.0)).outcome == "pass"

    def test_items_needed_for_zero_discordance_passes(self) -> None:
        """A fully agreeing candidate on 30 items is told a size at which it passes, no smaller than 59."""
        decision = decide_binary(_counts(0, 0, 30), Margin(margin=5.0))
        assert decision.outcome == "inconclusive" and decision.items_needed is not None
        assert decision.items_needed >= 59
        assert decide_binary(_counts(0, 0, decision.items_needed), Margin(margin=5.0)).outcome == "pass"

    def test_items_needed_decides_at_the_observed_rates(self) -> None:
        """At items_needed the statistic at the observed rates clears that size's exact cutoff."""
        decision = decide_binary(_counts(1, 0, 100), Margin(margin=3.0))
        needed = decision.items_needed
        assert decision.outcome == "inconclusive" and needed is not None and needed > 100
        z = score_statistic(needed * 0.01, 0.0, needed, 0.03)
        assert z < -exact_cutoff(needed, 0.03)

    def test_decision_fields_and_json(self) -> None:
        """Scores, counts and bounds are plain numbers and the Decision round-trips through JSON."""
        decision = decide_binary(_counts(4, 1, 80, both_wrong=10), Margin(margin=5.0))
        assert (decision.b, decision.c, decision.n) == (4, 1, 80)
        assert decision.reference_score == pytest.approx(100 * 69 / 80)
        assert decision.candidate_score == pytest.approx(100 * 66 / 80)
        assert decision.method == "tango-score-exact" and decision.margin == 5.0
        assert type(decision.lower) is float and type(decision.cutoff) is float
        assert msgspec.json.decode(msgspec.json.encode(decision), type=Decision) == decision

    def test_no_pairs_is_inconclusive(self) -> None:
        """Zero items cannot decide."""
        assert decide_binary(_counts(0, 0, 0), Margin(margin=1.0)).outcome == "inconclusive"

    def test_pair_counts_cells(self) -> None:
        """Per-item right/wrong lists become the four paired cells."""
        counts = pair_counts([True, True, False, False, True], [True, False, True, False, False])
        assert counts == PairedCounts(both_right=1, reference_only=2, candidate_only=1, both_wrong=1)
        with pytest.raises(ValueError, match="one answer per item on both sides, got 2 reference and 1"):
            pair_counts([True, False], [True])


class TestDetectableRegression:
    def test_the_smallest_failing_b_is_exactly_where_the_decision_turns_to_fail(self) -> None:
        """fail_from_b is the first b (c = 0) whose decision is FAIL: one fewer is not, at every size and margin
        checked; its observed regression is b / n in points."""
        for n, points in ((55, 5.0), (144, 5.0), (144, 3.0), (415, 2.0), (415, 1.0), (200, 2.0)):
            d = detectable_regression(n, points)
            assert d is not None and d.n == n
            assert decide_binary(_counts(d.fail_from_b, 0, n), Margin(margin=points)).outcome == "fail"
            assert decide_binary(_counts(d.fail_from_b - 1, 0, n), Margin(margin=points)).outcome != "fail"
            assert d.observed == pytest.approx(100 * d.fail_from_b / n)

    def test_the_owners_margins_on_audioqa_v2_and_the_issue_s_v1_figure(self) -> None:
        """audioqa-v1's 144 pairs at 5 points needed b >= 13 to fail (the figure the issue quotes); audioqa-v2's
        415 audio pairs at the owners' 2 points fail from b = 14 (3.37 points)."""
        assert detectable_regression(144, 5.0).fail_from_b == 13  # type: ignore[union-attr]
        d = detectable_regression(415, 2.0)
        assert d is not None and d.fail_from_b == 14 and d.observed == pytest.approx(100 * 14 / 415)

    def test_a_true_regression_at_the_power_point_fails_four_times_in_five(self) -> None:
        """Simulated: a model losing each problem the reference got right with probability power_regression
        fails the decision in 80 % of draws (seeded; 4000 draws, within 2.5 points); at the observed
        threshold it fails only about half the time."""
        rng = np.random.default_rng(30)
        d = detectable_regression(415, 2.0)
        assert d is not None and d.power_regression > d.observed
        for r, want in ((d.power_regression / 100, 0.8), (d.observed / 100, None)):
            b = rng.binomial(415, r, size=4000)
            fails = float(np.mean(b >= d.fail_from_b))
            if want is not None:
                assert abs(fails - want) < 0.025
            else:
                assert 0.35 < fails < 0.65

    def test_too_few_pairs_can_detect_nothing(self) -> None:
        """Where no b up to n fails (two pairs at a one-point margin), there is no detectable regression."""
        assert detectable_regression(2, 1.0) is None
        assert detectable_regression(0, 2.0) is None

    def test_binary_decisions_carry_it(self) -> None:
        """decide_binary reports what its own n and margin could detect."""
        decision = decide_binary(_counts(0, 4, 415), Margin(margin=2.0))
        assert decision.outcome == "pass" and decision.detectable == detectable_regression(415, 2.0)


class TestMargins:
    def test_the_larger_of_absolute_and_relative_applies(self) -> None:
        """0.3 points or 5% of the reference: 0.5 at a reference of 10, 0.3 at 2."""
        gate = Margin(margin=0.3, relative_margin=0.05)
        assert resolve_margin(gate, 10.0) == pytest.approx(0.5)
        assert resolve_margin(gate, 2.0) == pytest.approx(0.3)

    def test_relative_margin_with_reference_zero_is_not_comparable(self) -> None:
        """Every method answers not-comparable when a relative margin meets a reference score of 0."""
        gate = Margin(margin=0.0, relative_margin=0.01)
        assert resolve_margin(gate, 0.0) is None
        assert decide_binary(_counts(0, 3, 20, both_wrong=17), gate).outcome == "not-comparable"
        assert decide_sampled([[0.0], [0.0]], [[0.0], [100.0]], gate).outcome == "not-comparable"
        corpus = decide_corpus(lambda units: (0.0, 0.0), [0, 1], gate, higher_is_better=False, resamples=20)
        assert corpus.outcome == "not-comparable" and "reference score is 0" in corpus.reason

    def test_a_gate_needs_a_margin(self) -> None:
        """A gate with neither margin is refused, also when decoded from config."""
        with pytest.raises(ValueError, match="needs margin > 0 points or relative_margin > 0"):
            Margin()
        with pytest.raises(msgspec.ValidationError, match="needs margin > 0 points"):
            msgspec.json.decode(b'{"margin": 0}', type=Margin)


def _sampled_sides(rng: np.random.Generator, problems: int, regression: float,
                   seeds: int = 3) -> tuple[list[list[float]], list[list[float]]]:
    """Right/wrong seeds in points; the candidate's per-problem right rate is lower by ``regression``."""
    rates = rng.uniform(0.3, 0.9, size=problems)
    reference = (rng.random((problems, seeds)) < rates[:, None]) * 100.0
    candidate = (rng.random((problems, seeds)) < (rates - regression / 100.0)[:, None]) * 100.0
    return reference.tolist(), candidate.tolist()


class TestSampled:
    def test_error_rates_at_the_margin_stay_within_5_percent(self) -> None:
        """Seeded: with true R equal to the margin, pass and fail each occur at most ~5% of the time."""
        rng = np.random.default_rng(11)
        repeats, outcomes = 400, {"pass": 0, "fail": 0, "inconclusive": 0}
        for _ in range(repeats):
            reference, candidate = _sampled_sides(rng, 120, regression=5.0)
            outcomes[decide_sampled(reference, candidate, Margin(margin=5.0)).outcome] += 1
        slack = 3 * math.sqrt(0.05 * 0.95 / repeats)
        assert outcomes["pass"] / repeats <= 0.05 + slack
        assert outcomes["fail"] / repeats <= 0.05 + slack

    def test_an_unbiased_candidate_usually_passes(self) -> None:
        """Seeded: no regression on 800 problems passes a 5-point gate in most repeats (power ~0.99)."""
        rng = np.random.default_rng(12)
        passes = sum(decide_sampled(*_sampled_sides(rng, 800, 0.0), Margin(margin=5.0)).outcome == "pass"
                     for _ in range(50))
        assert passes >= 45

    def test_owners_examples(self) -> None:
        """Steady differences pass; a candidate always 100 points worse fails; one problem is inconclusive."""
        diffs = [0.0] * 50 + [50.0, -50.0] * 5
        steady = decide_sampled([[50.0 + d] for d in diffs], [[50.0]] * len(diffs), Margin(margin=5.0))
        assert steady.outcome == "pass" and steady.estimate == 0.0
        assert decide_sampled([[100.0]] * 30, [[0.0]] * 30, Margin(margin=5.0)).outcome == "fail"
        single = decide_sampled([[1.0]], [[0.0]], Margin(margin=5.0))
        assert single.outcome == "inconclusive" and single.lower is None

    def test_bounds_and_items_needed(self) -> None:
        """The bound is mean + t(0.95, n-1) sd / sqrt(n); at items_needed the bound clears the margin."""
        diffs = [100 / 3, -100 / 3] * 10 + [0.0] * 104 + [4.0, 2.0]
        decision = decide_sampled([[50.0 + d] for d in diffs], [[50.0]] * len(diffs), Margin(margin=2.0))
        n, mean, sd = len(diffs), float(np.mean(diffs)), float(np.std(diffs, ddof=1))
        assert decision.upper == pytest.approx(mean + student_t.ppf(0.95, n - 1) * sd / math.sqrt(n))
        assert decision.outcome == "inconclusive" and decision.items_needed is not None
        needed = decision.items_needed

        def half(size: int) -> float:
            return float(student_t.ppf(0.95, size - 1)) * sd / math.sqrt(size)

        assert half(needed) < 2.0 - mean <= half(needed - 1)

    def test_lower_is_better_flips_the_sign(self) -> None:
        """For an error metric the candidate's higher score is the regression."""
        decision = decide_sampled([[10.0], [12.0], [11.0]], [[20.0], [22.0], [21.0]], Margin(margin=1.0),
                                  higher_is_better=False)
        assert decision.estimate == pytest.approx(10.0) and decision.outcome == "fail"


def _mean_statistic(candidate: NDArray[np.float64], reference: NDArray[np.float64]):  # type: ignore[no-untyped-def]
    def statistic(units: NDArray[np.int64]) -> tuple[float, float]:
        return float(candidate[units].mean()), float(reference[units].mean())
    return statistic


def _corpus(rng: np.random.Generator, clusters: int, per_cluster: int,
            regression: float) -> tuple[NDArray[np.float64], NDArray[np.float64], list[int]]:
    """Per-unit scores in points with a shared cluster effect; the candidate is lower by ``regression``."""
    effect = np.repeat(rng.normal(60.0, 10.0, clusters), per_cluster)
    reference = effect + rng.normal(0.0, 5.0, clusters * per_cluster)
    candidate = reference - regression + np.repeat(rng.normal(0.0, 2.0, clusters), per_cluster)
    return candidate, reference, [unit // per_cluster for unit in range(clusters * per_cluster)]


class TestCorpusBootstrap:
    def test_error_rates_at_the_margin_stay_near_5_percent(self) -> None:
        """Seeded: with true R equal to the margin, the cluster bootstrap passes and fails ~5% each."""
        rng = np.random.default_rng(21)
        repeats, passes, fails = 150, 0, 0
        for repeat in range(repeats):
            candidate, reference, clusters = _corpus(rng, 60, 4, regression=1.0)
            decision = decide_corpus(_mean_statistic(candidate, reference), clusters, Margin(margin=1.0),
                                     higher_is_better=True, resamples=400, seed=repeat)
            passes += decision.outcome == "pass"
            fails += decision.outcome == "fail"
        # The percentile bootstrap is first-order accurate: allow its small-sample excess plus Monte Carlo error.
        slack = 3 * math.sqrt(0.05 * 0.95 / repeats) + 0.02
        assert passes / repeats <= 0.05 + slack
        assert fails / repeats <= 0.05 + slack

    def test_decides_clear_cases(self) -> None:
        """An identical candidate passes; one 5 points worse at a 1-point margin fails."""
        rng = np.random.default_rng(22)
        candidate, reference, clusters = _corpus(rng, 80, 3, regression=0.0)
        same = decide_corpus(_mean_statistic(reference, reference), clusters, Margin(margin=1.0),
                             higher_is_better=True, resamples=300)
        assert same.outcome == "pass" and same.clusters == 80 and same.resamples == 300
        candidate, reference, clusters = _corpus(rng, 80, 3, regression=5.0)
        worse = decide_corpus(_mean_statistic(candidate, reference), clusters, Margin(margin=1.0),
                              higher_is_better=True, resamples=300)
        assert worse.outcome == "fail" and worse.lower is not None and worse.lower > 1.0

    def test_resamples_whole_clusters(self) -> None:
        """Every resample holds whole clusters, as many as there are clusters."""
        clusters = ["s1", "s1", "s2", "s3", "s3", "s3"]
        seen: list[list[int]] = []

        def statistic(units: NDArray[np.int64]) -> tuple[float, float]:
            seen.append(sorted(units.tolist()))
            return 1.0, 1.0

        decide_corpus(statistic, clusters, Margin(margin=1.0), higher_is_better=True, resamples=50)
        groups = {"s1": [0, 1], "s2": [2], "s3": [3, 4, 5]}
        assert seen[0] == list(range(6))
        for units in seen[1:]:
            for members in groups.values():
                count = units.count(members[0])
                assert all(units.count(member) == count for member in members)

    def test_seeded_and_repeatable(self) -> None:
        """The same seed gives the same decision."""
        rng = np.random.default_rng(23)
        candidate, reference, clusters = _corpus(rng, 40, 2, regression=0.5)
        statistic = _mean_statistic(candidate, reference)
        first = decide_corpus(statistic, clusters, Margin(margin=1.0), higher_is_better=True, resamples=200, seed=3)
        again = decide_corpus(statistic, clusters, Margin(margin=1.0), higher_is_better=True, resamples=200, seed=3)
        assert first == again

    def test_relative_margin_is_recomputed_for_a_wer_like_metric(self) -> None:
        """A lower-is-better corpus metric within 5% of the reference passes; 30% worse fails."""
        rng = np.random.default_rng(24)
        errors = rng.poisson(2.0, 200).astype(float)
        words = np.full(200, 20.0)
        clusters = [unit // 5 for unit in range(200)]

        def wer(candidate_errors: NDArray[np.float64]):  # type: ignore[no-untyped-def]
            def statistic(units: NDArray[np.int64]) -> tuple[float, float]:
                total = words[units].sum()
                return 100.0 * candidate_errors[units].sum() / total, 100.0 * errors[units].sum() / total
            return statistic

        gate = Margin(margin=0.0, relative_margin=0.05)
        same = decide_corpus(wer(errors), clusters, gate, higher_is_better=False, resamples=300)
        assert same.outcome == "pass" and same.margin == pytest.approx(0.05 * same.reference_score)
        worse = decide_corpus(wer(errors * 1.3), clusters, gate, higher_is_better=False, resamples=300)
        assert worse.outcome == "fail"

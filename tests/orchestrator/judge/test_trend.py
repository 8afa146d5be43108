"""Drift rules on seeded synthetic soak series and on the one-hour soak of issue #23."""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np
import pytest
from trend_series import latency_windows, memory_windows, window_times_h

from orchestrator.judge.latency import (
    ItemDrift,
    item_ratios,
    judge_item_drift,
    judge_tail_drift,
    min_tail_samples,
)
from orchestrator.judge.memory import MemoryRule, judge_memory, judge_memory_medians
from orchestrator.judge.trend import (
    METHOD,
    TrendRule,
    TrendVerdict,
    judge_relative_trend,
    judge_trend,
    theil_sen,
)

SEEDS = range(1000)
LATENCY_LIMIT = 10.0  # %/h, the [soak] default
RSS_LIMIT = 8.0  # MiB/h, the [soak] default


def _latency_outcomes(n: int, slope_pct_per_h: float) -> Counter[str]:
    times = window_times_h(n)
    return Counter(judge_item_drift(times, latency_windows(seed, n, slope_pct_per_h), LATENCY_LIMIT).outcome
                   for seed in SEEDS)


def _memory_outcomes(n: int, slope_mib_per_h: float) -> Counter[str]:
    times = window_times_h(n)
    return Counter(judge_memory(times, memory_windows(seed, n, slope_mib_per_h)).outcome for seed in SEEDS)


class TestTheilSen:
    def test_matches_hand_computed_slopes_and_exact_ranks(self) -> None:
        """Five untied points: slope is the median pairwise slope; the 95 % exact interval is the whole range."""
        est = theil_sen([0, 1, 2, 3, 4], [0.0, 2.0, 1.0, 4.0, 3.0], 0.95)
        pairwise = sorted([2.0, 0.5, 4 / 3, 0.75, -1.0, 1.0, 1 / 3, 3.0, 1.0, -1.0])
        assert est.slope == pytest.approx(float(np.median(pairwise)))
        assert est.pairs == 10
        # n = 5: P(at most 0 inversions) = 1/120 <= 0.025 < P(at most 1) = 5/120, so M = 1.
        assert est.interval == pytest.approx((pairwise[0], pairwise[-1]))

    def test_too_few_points_give_no_interval(self) -> None:
        """Four points cannot reach 95 %: the slope is given, the interval is None."""
        est = theil_sen([0, 1, 2, 3], [1.0, 2.0, 3.0, 4.0], 0.95)
        assert est.slope == pytest.approx(1.0)
        assert est.interval is None

    def test_ties_use_the_tie_corrected_variance(self) -> None:
        """Tied values (coarse RSS readings) still give an interval around the median slope."""
        values = [10.0, 10.0, 11.0, 11.0, 12.0, 12.0, 13.0, 13.0, 14.0, 14.0, 15.0, 15.0]
        est = theil_sen(list(range(12)), values, 0.95)
        assert est.interval is not None
        assert est.interval[0] <= est.slope <= est.interval[1]
        assert est.slope == pytest.approx(0.5)

    def test_equal_times_carry_no_slope(self) -> None:
        """Pairs at the same time are left out; all times equal is an error that says why."""
        assert theil_sen([0, 0, 1], [0.0, 5.0, 1.0]).pairs == 2
        with pytest.raises(ValueError, match="at least two distinct times"):
            theil_sen([1, 1], [0.0, 1.0])

    def test_rejects_non_finite_input(self) -> None:
        """NaN in a series is the caller's bug, not a value to judge."""
        with pytest.raises(ValueError, match="finite"):
            theil_sen([0, 1, 2], [0.0, float("nan"), 1.0])


class TestJudgeTrend:
    def test_fails_only_when_the_interval_lies_above_the_limit(self) -> None:
        """A clean steep rise fails, a clean flat line passes, and a rise near the limit is inconclusive."""
        times = window_times_h(12)
        noise = [0.3, -0.2, 0.1, -0.4, 0.2, 0.0, -0.1, 0.4, -0.3, 0.1, -0.2, 0.3]
        steep = judge_trend(times, [480 + 40 * t + e for t, e in zip(times, noise, strict=True)], 8.0, unit="MiB/h")
        flat = judge_trend(times, [480 + e for e in noise], 8.0, unit="MiB/h")
        near = judge_trend(times, [480 + 8 * t + 5 * e for t, e in zip(times, noise, strict=True)], 8.0,
                           unit="MiB/h")
        assert (steep.outcome, flat.outcome, near.outcome) == ("fail", "pass", "inconclusive")
        assert steep.interval_per_h is not None and steep.interval_per_h[0] > 8.0
        assert flat.interval_per_h is not None and flat.interval_per_h[1] < 8.0
        assert steep.reason.startswith("drifts: the interval lies wholly above the limit: slope +")

    def test_names_the_missing_windows_and_span(self) -> None:
        """Too few windows over too short a span: inconclusive, naming both shortfalls, even for a steep rise."""
        times = [k * 45 / 3600 for k in range(5)]  # 45 s windows: 3.0 min from first to last mid-point
        verdict = judge_trend(times, [100.0, 200, 300, 400, 500], 8.0, unit="MiB/h", rule=TrendRule(min_windows=6))
        assert verdict.outcome == "inconclusive"
        assert verdict.reason.startswith("not enough evidence (5 of 6 windows, span 3.0 min of 10 min): slope +")

    def test_two_windows_never_decide(self) -> None:
        """Two windows, whatever their values: inconclusive, naming the missing windows and span."""
        for values in ([100.0, 10_000.0], [100.0, 100.0], [10_000.0, 100.0]):
            verdict = judge_trend(window_times_h(2), values, 8.0, unit="MiB/h")
            assert verdict.outcome == "inconclusive"
            assert verdict.reason.startswith("not enough evidence (2 of 6 windows, span 5.0 min of 10 min): ")

    def test_a_constant_series_has_a_zero_interval(self) -> None:
        """Every value equal (Kendall's variance 0): slope and interval are 0, so a long enough one passes."""
        verdict = judge_trend(window_times_h(6), [480.0] * 6, 8.0, unit="MiB/h")
        assert (verdict.outcome, verdict.slope_per_h, verdict.interval_per_h) == ("pass", 0.0, (0.0, 0.0))

    def test_verdict_is_a_frozen_struct_that_round_trips(self) -> None:
        """The verdict carries its method, level, windows and span, and survives JSON."""
        verdict = judge_trend(window_times_h(6), [1.0, 2, 3, 4, 5, 6], 8.0, unit="MiB/h")
        assert verdict.method == METHOD
        assert (verdict.n_windows, verdict.confidence) == (6, 0.95)
        assert verdict.span_s == pytest.approx(1500.0)
        assert msgspec.json.decode(msgspec.json.encode(verdict), type=TrendVerdict) == verdict
        with pytest.raises(AttributeError):
            verdict.outcome = "pass"  # type: ignore[misc]

    def test_rule_rejects_settings_that_cannot_work(self) -> None:
        """A rule needs at least 3 windows and a confidence in [0.5, 1)."""
        with pytest.raises(ValueError, match="min_windows must be at least 3"):
            TrendRule(min_windows=2)
        with pytest.raises(ValueError, match="confidence must lie in"):
            TrendRule(confidence=1.0)


class TestItemDrift:
    def test_ratios_remove_the_workload_mix(self) -> None:
        """Each item at its own steady latency: every window's median ratio is 1 whatever the mix."""
        fast = [("signal", 50.0)] * 9 + [("speech", 2000.0)]
        slow = [("signal", 50.0)] + [("speech", 2000.0)] * 9
        ratios = item_ratios([fast, slow, fast, slow], baseline_windows=2)
        assert ratios.medians == [1.0, 1.0, 1.0, 1.0]
        assert ratios.baseline_items == 2

    def test_items_without_a_baseline_are_counted_apart(self) -> None:
        """A request for an item the baseline windows never saw is left out and counted."""
        ratios = item_ratios([[("a", 10.0)], [("a", 20.0), ("b", 5.0)]], baseline_windows=1)
        assert (ratios.medians, ratios.counted, ratios.unmatched) == ([1.0, 2.0], [1, 1], [0, 1])

    def test_flat_two_mode_workload_rarely_fails(self) -> None:
        """1,000 seeds of a flat heavy-tailed two-mode workload at 6 and 12 windows: at most 1 % fail."""
        for n in (6, 12):
            outcomes = _latency_outcomes(n, 0.0)
            assert outcomes["fail"] <= 10, (n, outcomes)

    def test_three_times_the_limit_over_12_windows_fails(self) -> None:
        """A planted drift of 30 %/h (3x the 10 %/h limit) over 12 windows fails in at least 95 % of seeds."""
        outcomes = _latency_outcomes(12, 3 * LATENCY_LIMIT)
        assert outcomes["fail"] >= 950, outcomes

    def test_two_windows_are_inconclusive_even_when_steep(self) -> None:
        """Two windows of a 10x-the-limit drift: inconclusive in every seed."""
        outcomes = Counter(judge_item_drift(window_times_h(2), latency_windows(seed, 2, 10 * LATENCY_LIMIT),
                                            LATENCY_LIMIT).outcome for seed in range(200))
        assert outcomes == Counter({"inconclusive": 200})

    def test_reason_names_items_and_baseline(self) -> None:
        """The reason says the series is per item against its baseline, then the trend's own reason."""
        drift = judge_item_drift(window_times_h(6), latency_windows(1, 6, 0.0), LATENCY_LIMIT)
        assert isinstance(drift, ItemDrift)
        assert drift.reason.startswith("median latency / own item's baseline (60 items, baseline over 3 windows): ")
        assert drift.reason.endswith(drift.trend.reason)


class TestTailDrift:
    def test_sample_rule_is_ten_above_the_quantile(self) -> None:
        """ceil(10 / (1 - q)): 1000 for p99, 100 for p90, 20 for p50."""
        assert [min_tail_samples(q) for q in (0.99, 0.9, 0.5, 0.999)] == [1000, 100, 20, 10_000]

    def test_p99_of_a_short_window_is_inconclusive(self) -> None:
        """935 samples per window (the hour of issue #23) are too few for a p99: inconclusive, saying so."""
        rng = np.random.default_rng(7)
        windows = [rng.lognormal(6, 1, 935).tolist() for _ in range(12)]
        tail = judge_tail_drift(window_times_h(12), windows, 0.99, LATENCY_LIMIT)
        assert tail.outcome == "inconclusive" and tail.trend is None
        assert tail.reason == ("not enough samples: 12 of 12 windows hold fewer than 1000 (fewest 935); a p99 is "
                               "judged only where every window holds at least ceil(10/(1-q)) = 1000")

    def test_p99_with_enough_samples_is_judged(self) -> None:
        """1,000 samples per window: a flat tail passes, a tail growing 50 %/h fails."""
        times = window_times_h(12)
        rng = np.random.default_rng(3)
        flat = [rng.lognormal(6, 0.5, 1000).tolist() for _ in times]
        rising = [(np.asarray(w) * (1 + 0.5 * t)).tolist() for w, t in zip(flat, times, strict=True)]
        assert judge_tail_drift(times, flat, 0.99, 30.0).outcome == "pass"
        assert judge_tail_drift(times, rising, 0.99, LATENCY_LIMIT).outcome == "fail"


class TestMemory:
    def test_flat_memory_rarely_fails(self) -> None:
        """1,000 seeds of flat RSS with a GC sawtooth and spikes, at 6 and 12 windows: at most 1 % fail."""
        for n in (6, 12):
            outcomes = _memory_outcomes(n, 0.0)
            assert outcomes["fail"] <= 10, (n, outcomes)

    def test_three_times_the_limit_over_12_windows_fails(self) -> None:
        """A planted leak of 24 MiB/h (3x the 8 MiB/h limit) over 12 windows fails in at least 95 % of seeds."""
        outcomes = _memory_outcomes(12, 3 * RSS_LIMIT)
        assert outcomes["fail"] >= 950, outcomes

    def test_two_windows_are_inconclusive(self) -> None:
        """Two windows of a steep leak: inconclusive in every seed, growth reported but not judged."""
        verdicts = [judge_memory(window_times_h(2), memory_windows(seed, 2, 200.0)) for seed in range(200)]
        assert {v.outcome for v in verdicts} == {"inconclusive"}
        assert all(v.reason.endswith("MiB (cap 64 MiB), not judged") for v in verdicts)

    def test_a_step_beyond_the_cap_fails_though_the_slope_is_undecided(self) -> None:
        """A 100 MiB step that levels off: the slope interval is wide, the growth over the cap fails it."""
        medians = [480.0, 481, 479, 480, 580, 581, 579, 580, 581, 580, 579, 580]
        verdict = judge_memory_medians(window_times_h(12), medians, MemoryRule(growth_limit_mib=64.0))
        assert verdict.outcome == "fail"
        assert verdict.growth_mib == pytest.approx(100.0)
        assert verdict.reason.endswith("growth +100 MiB (cap 64 MiB) exceeds the cap")

    def test_window_medians_ignore_spikes(self) -> None:
        """Spikes in a minority of a window's samples do not move its median."""
        samples = [[480.0] * 200 + [900.0] * 50 for _ in range(6)]
        verdict = judge_memory(window_times_h(6), samples)
        assert verdict.medians_mib == [480.0] * 6
        assert verdict.outcome == "pass"


class TestIssue23Fixture:
    """The one-hour soak of the clean reference server (issue #23): 12 five-minute windows, warmup 1."""

    RSS_MIB = (478.5, 476.7, 484.3, 489.6, 488.1, 493.0, 478.4, 488.0, 501.4, 509.6, 495.2, 495.0)
    P99_MS = (2682.0, 2656, 2703, 2633, 2884, 2857)
    TIMES_H = tuple(window_times_h(12))

    def test_checkpoint_rss_does_not_fail(self) -> None:
        """At 30 minutes the old rule read +42 MiB/h FAIL; the new rule is inconclusive twice over."""
        judged = judge_memory_medians(self.TIMES_H[1:6], self.RSS_MIB[1:6])  # warmup window 1 discarded
        assert judged.outcome == "inconclusive"
        assert "5 of 6 windows" in judged.reason
        # Even taking all six windows as judged, the 95 % interval [-18.0, +77.4] MiB/h contains the limit.
        all_six = judge_memory_medians(self.TIMES_H[:6], self.RSS_MIB[:6])
        assert all_six.outcome == "inconclusive"
        assert all_six.trend.interval_per_h == pytest.approx((-18.0, 77.4))

    def test_checkpoint_p99_does_not_fail(self) -> None:
        """The old rule read +24.7 %/h FAIL from these six p99s; their 95 % interval spans -12 to +50 %/h."""
        verdict = judge_relative_trend(self.TIMES_H[:6], self.P99_MS, LATENCY_LIMIT)
        assert verdict.outcome == "inconclusive"
        assert verdict.slope_per_h == pytest.approx(21.03, abs=0.01)
        assert verdict.interval_per_h == pytest.approx((-12.08, 50.11), abs=0.01)
        assert verdict.reason.startswith("undecided: the interval contains the limit")

    def test_final_rss_is_inconclusive_after_warmup(self) -> None:
        """Windows 2-12 (the soak's default warmup of one window out): slope +22.8 MiB/h, but the 95 %
        interval [+4.08, +48.9] MiB/h holds the 8 MiB/h limit, so the hour neither shows growth nor flatness."""
        verdict = judge_memory_medians(self.TIMES_H[1:], self.RSS_MIB[1:])
        assert verdict.outcome == "inconclusive"
        assert verdict.trend.slope_per_h == pytest.approx(22.8, abs=0.05)
        assert verdict.trend.interval_per_h == pytest.approx((4.08, 48.9), abs=0.01)
        assert verdict.growth_mib == pytest.approx(10.9)

    def test_final_rss_with_the_warmup_window_lies_above_the_limit(self) -> None:
        """All 12 windows on an exact 5-minute cadence: the interval [+8.10, +42.3] MiB/h lies wholly, if
        barely, above 8 MiB/h, so the rule fails it; the reported cadence (~310 s) brings it to +7.84."""
        verdict = judge_memory_medians(self.TIMES_H, self.RSS_MIB)
        assert verdict.outcome == "fail"
        assert verdict.trend.interval_per_h == pytest.approx((8.10, 42.34), abs=0.01)
        cadence_310 = judge_memory_medians([(k + 0.5) * 310 / 3600 for k in range(12)], self.RSS_MIB)
        assert cadence_310.outcome == "inconclusive"
        assert cadence_310.trend.interval_per_h is not None
        assert cadence_310.trend.interval_per_h[0] == pytest.approx(7.84, abs=0.01)

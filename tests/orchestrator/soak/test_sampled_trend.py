"""The sampled trend rule (orchestrator/judge/sampled_trend.py) on seeded 1 Hz memory series: both error
rates, the growth cap at short spans, and what the data could detect."""

from __future__ import annotations

import numpy as np
import pytest
from sampled_series import block_medians, memory_series

from orchestrator.config.soak import SoakConfig
from orchestrator.events import SoakLimits
from orchestrator.judge.sampled_trend import (
    SampledTrendRule,
    judge_sampled_trend,
    power_slope_per_h,
    t_quantile,
    wander_sd_per_h,
)
from orchestrator.soak.plan import plan_trends, span_for_power
from orchestrator.soak.samples import SampleSeries

RULE = SampledTrendRule()  # the [soak] defaults: 8 MiB/h, 64 MiB, 10 min, 98 %, wander 3 MiB
WARMUP_S = 60


def _outcomes(seconds: int, *, phi: float, slope_per_h: float, seeds: range, heavy: bool = False) -> list[str]:
    out: list[str] = []
    for seed in seeds:
        t, y = memory_series(np.random.default_rng(seed), seconds, phi=phi, slope_per_h=slope_per_h, heavy=heavy)
        bt, by = block_medians(t, y)
        keep = bt >= WARMUP_S
        out.append(judge_sampled_trend(bt[keep], by[keep], RULE).outcome)
    return out


class TestFalseFails:
    @pytest.mark.parametrize("phi", [0.0, 0.5, 0.8, 0.95])
    def test_flat_series_fail_at_most_one_percent(self, phi: float) -> None:
        """Flat series with sawtooth, spikes, 5-minute wander and AR(1) noise at `phi` FAIL in at most 1 % of
        200 seeds, over a 15-minute soak (14 judged minutes, where the wander weighs most), 30 minutes and 60
        (the checkpoints of a default soak)."""
        for seconds in (900, 1800, 3600):
            outcomes = _outcomes(seconds, phi=phi, slope_per_h=0.0, seeds=range(200))
            assert outcomes.count("fail") <= 2, (seconds, outcomes.count("fail"))

    @pytest.mark.parametrize("phi", [0.0, 0.5])
    def test_a_slope_at_the_limit_fails_a_15_minute_soak_at_most_one_percent(self, phi: float) -> None:
        """At the null's edge, 8 MiB/h, over 14 judged minutes: at most 1 % of 300 seeds FAIL (2,000 seeds:
        0.5 % at phi 0, 0.4 % at 0.5). With the stated wander left out, this and the flat tests fail."""
        outcomes = _outcomes(900, phi=phi, slope_per_h=8.0, seeds=range(300))
        assert outcomes.count("fail") <= 3

    def test_heavy_tailed_spikes_fail_a_flat_series_at_most_one_percent(self) -> None:
        """Spikes of 20 x (1 + Pareto(1.5)) MiB (no finite variance) on a flat series: at most 1 % FAIL."""
        outcomes = _outcomes(1800, phi=0.5, slope_per_h=0.0, seeds=range(200), heavy=True)
        assert outcomes.count("fail") <= 2

    def test_a_slope_at_half_the_limit_fails_at_most_one_percent(self) -> None:
        """Drift under the limit (4 MiB/h against 8) is no FAIL either, at the strongest correlation tried."""
        outcomes = _outcomes(3600, phi=0.8, slope_per_h=4.0, seeds=range(200))
        assert outcomes.count("fail") <= 2


class TestPower:
    @pytest.mark.parametrize(("phi", "least"), [(0.0, 70), (0.5, 75), (0.95, 92)])
    def test_ten_times_the_limit_in_a_15_minute_soak(self, phi: float, least: int) -> None:
        """80 MiB/h over 14 judged minutes FAILs in at least `least` of 100 seeds (2,000 seeds: 78 % at phi 0,
        82 % at 0.5, 96 % at 0.95; the bound 12 w^2 W / T^3 the rule used before gave 59, 64 and 74 %). 95 %
        at phi 0 cannot be had at 1 % false fails at the stated wander (see the module docstring)."""
        outcomes = _outcomes(900, phi=phi, slope_per_h=80.0, seeds=range(100))
        assert outcomes.count("fail") >= least, outcomes.count("fail")

    def test_ten_times_the_limit_fails_95_percent_where_the_plan_says(self) -> None:
        """The plan states the judged span after which 10x the limit FAILs in 95 % of soaks (17.7 minutes at
        the [soak] defaults); a soak of a minute more FAILs it in 95 of 100 seeds at phi 0, the stated
        wander's own case (2,000 seeds: 97 % at 18 judged minutes)."""
        need = span_for_power(80.0, RULE)
        assert need is not None and 15 * 60 < need < 19 * 60
        outcomes = _outcomes(int(WARMUP_S + need + 60), phi=0.0, slope_per_h=80.0, seeds=range(100))
        assert outcomes.count("fail") >= 95, outcomes.count("fail")

    def test_ten_times_the_limit_fails_within_30_minutes(self) -> None:
        """80 MiB/h FAILs in at least 95 % of seeds once 29 minutes are judged (a default 30-minute soak)."""
        outcomes = _outcomes(1800, phi=0.8, slope_per_h=80.0, seeds=range(100))
        assert outcomes.count("fail") >= 95

    def test_a_1000_mib_per_hour_leak_fails_a_default_30_minute_soak(self) -> None:
        """Issue 29's case: +333 MiB over 30 minutes is decided (FAIL), not left inconclusive for want of windows."""
        outcomes = _outcomes(1800, phi=0.5, slope_per_h=1000.0, seeds=range(20))
        assert outcomes == ["fail"] * 20

    def test_growth_beyond_the_cap_fails_a_short_span(self) -> None:
        """1 MiB per request at 3 requests/s for 90 judged seconds: growth wholly above 64 MiB FAILs though the
        span is far under the 10 minutes a slope needs."""
        t, y = memory_series(np.random.default_rng(7), 150, phi=0.8, slope_per_h=3 * 3600.0)
        bt, by = block_medians(t, y)
        v = judge_sampled_trend(bt[bt >= WARMUP_S], by[bt >= WARMUP_S], RULE)
        assert v.outcome == "fail" and v.growth_interval is not None and v.growth_interval[0] > 64
        assert v.reason.startswith("grows beyond the cap")


class TestEvidence:
    def test_a_short_clean_span_is_inconclusive_and_says_why(self) -> None:
        """Three clean minutes: no FAIL, no PASS; the reason names the span the slope needs."""
        t, y = memory_series(np.random.default_rng(3), 240, phi=0.5)
        bt, by = block_medians(t, y)
        v = judge_sampled_trend(bt[bt >= WARMUP_S], by[bt >= WARMUP_S], RULE)
        assert v.outcome == "inconclusive"
        assert v.reason.startswith("slope not judged: span 2.8 min of 10 min")

    def test_under_45_seconds_nothing_is_judged(self) -> None:
        """Fewer than three 15-second batches: inconclusive with no figures."""
        v = judge_sampled_trend([0.0, 10.0, 20.0, 30.0], [1.0, 2.0, 3.0, 4.0], RULE)
        assert v.outcome == "inconclusive" and v.slope_per_h is None and "45 s at least" in v.reason

    def test_the_detectable_slope_shrinks_with_the_span(self) -> None:
        """The smallest slope that would FAIL is given at every look and falls as the span grows."""
        t, y = memory_series(np.random.default_rng(11), 7200, phi=0.5)
        bt, by = block_medians(t, y)
        figures = []
        for minutes in (15, 30, 60, 120):
            keep = (bt >= WARMUP_S) & (bt < minutes * 60)
            v = judge_sampled_trend(bt[keep], by[keep], RULE)
            assert v.detectable_per_h is not None and v.detectable_per_h > RULE.limit_per_h
            figures.append(v.detectable_per_h)
        assert figures == sorted(figures, reverse=True)
        assert f"a slope of {figures[-1]:.3g} MiB/h or more would FAIL" in v.reason

    def test_bad_input_is_refused(self) -> None:
        with pytest.raises(ValueError, match="equally long"):
            judge_sampled_trend([0.0, 1.0], [1.0], RULE)
        with pytest.raises(ValueError, match="finite"):
            judge_sampled_trend([0.0, 1.0], [1.0, float("nan")], RULE)

    @pytest.mark.parametrize("span_s", [120.0, 830.0, 1800.0])
    def test_the_wander_variance_is_the_stated_models(self, span_s: float) -> None:
        """The slope sd the stated wander gives (levels of sd 3 MiB, a new one every 300 s at a random phase)
        matches 4,000 simulated pure-wander spans cut into the rule's batches, within 6 %: at 830 s (a
        15-minute soak) 21.9 MiB/h where the bound used before said 27.1, at 120 s several-fold less."""
        rng = np.random.default_rng(5)
        t = np.arange(int(span_s) + 1, dtype=float)
        phase = rng.uniform(0, 300, (4000, 1))
        which = ((t[None, :] + phase) // 300).astype(int)
        levels = rng.normal(0, 3.0, (4000, int(which.max()) + 1))
        y = np.take_along_axis(levels, which, axis=1)
        k = 12 if span_s >= 180 else int(span_s // 15)
        batch = np.minimum((t * k / span_s).astype(int), k - 1)
        means = np.stack([y[:, batch == b].mean(axis=1) for b in range(k)], axis=1)
        x = np.array([t[batch == b].mean() for b in range(k)]) / 3600
        x -= x.mean()
        slopes = means @ x / (x @ x)
        assert wander_sd_per_h(span_s, RULE) == pytest.approx(float(np.std(slopes)), rel=0.06)

    @pytest.mark.parametrize(("p", "df", "want"), [(0.99, 1, 31.821), (0.99, 3, 4.541), (0.99, 4, 3.747),
                                                   (0.99, 10, 2.764), (0.995, 8, 3.355)])
    def test_t_quantiles_match_the_tables(self, p: float, df: int, want: float) -> None:
        assert t_quantile(p, df) == pytest.approx(want, abs=2e-3)


class TestPlan:
    def test_the_plan_says_what_each_duration_can_decide(self) -> None:
        """Before the load: a 4-minute soak judges 3 minutes, where only growth can decide; a 30-minute soak's
        slope decides, with the detectable slope from the stated wander."""
        short, long = plan_trends(240, SoakLimits())[0], plan_trends(1800, SoakLimits())[0]
        assert (short.judged_span_s, short.slope_decides, short.growth_decides) == (180, False, True)
        assert "only growth beyond 64 MiB can decide" in short.text
        assert long.slope_decides and long.detectable_slope is not None and 8 < long.detectable_slope < 40

    def test_the_plan_states_what_fails_in_95_percent_of_soaks(self) -> None:
        """The plan states the slope that FAILs in 95 % of soaks and the judged minutes 10x the limit needs:
        a 15-minute soak cannot promise 80 MiB/h, a 30-minute one can; no wander and no scatter: the limit."""
        quarter, half = plan_trends(900, SoakLimits())[0], plan_trends(1800, SoakLimits())[0]
        assert quarter.power_slope is not None and half.power_slope is not None
        assert half.power_slope < 80 < quarter.power_slope
        need = span_for_power(80.0, RULE)
        assert need is not None and f"needs {need / 60:.1f} judged min for that (a soak of {(need + 60) / 60:.1f} min)" \
            in quarter.text
        assert power_slope_per_h(1800, SampledTrendRule(wander=0.0)) == pytest.approx(8.0)

    def test_the_plan_says_whether_latency_trends_can_decide(self) -> None:
        """Latency drift is judged on ratios: 30 minutes can decide (27 judged minutes after warmup and
        baseline), with the detectable drift stated, and falls with the span; 12 minutes cannot. The p99 is
        still judged per window: 30 minutes of 5-minute windows leave 5, under the 6 needed; an hour can."""
        sampled = SoakLimits(latency_drift_rule="sampled")
        short = {p.metric: p for p in plan_trends(720, sampled, 300)}
        half = {p.metric: p for p in plan_trends(1800, sampled, 300)}
        hour = {p.metric: p for p in plan_trends(3600, sampled, 300)}
        assert not short["latency_drift"].slope_decides and short["latency_drift"].detectable_slope is None
        drift = half["latency_drift"]
        assert drift.slope_decides and drift.judged_span_s == 1620 and drift.detectable_slope is not None
        assert f"a drift of {drift.detectable_slope:.3g} %/h or more can FAIL (limit 10)" in drift.text
        assert hour["latency_drift"].detectable_slope is not None
        assert 10 < hour["latency_drift"].detectable_slope < drift.detectable_slope
        assert not half["server_p99_latency"].slope_decides and "5 window(s)" in half["server_p99_latency"].text
        # At 0.2 requests/s, audioqa-v2's 416 requests take 2,080 s to come round: an hour judges 24 minutes.
        slow = plan_trends(3600, sampled, 300, cycle_requests=416, request_rate=0.2)[3]
        assert slow.judged_span_s == 3600 - 60 - 2080 and "come round to an item again" in slow.text
        assert hour["server_p99_latency"].slope_decides

    def test_the_window_drift_rule_plans_per_window(self) -> None:
        """`latency_drift_rule = "window"`: the drift is planned as the p99 is, per judged window, and the soak
        loop hands the verdicts no per-request ratios. The configuration's default is "sampled" (a journal
        from before the sampled rule, with no rule named, reads as "window")."""
        assert SoakConfig().latency_drift_rule == "sampled" and SoakLimits().latency_drift_rule == "window"
        window = SoakLimits(latency_drift_rule="window")
        half = {p.metric: p for p in plan_trends(1800, window, 300)}
        hour = {p.metric: p for p in plan_trends(3600, window, 300)}
        assert not half["latency_drift"].slope_decides and "5 window(s)" in half["latency_drift"].text
        assert hour["latency_drift"].slope_decides and "judges 11 windows" in hour["latency_drift"].text
        assert hour["latency_drift"].detectable_slope is None


class TestSampleSeries:
    def test_blocks_keep_medians_and_every_sample_is_counted(self) -> None:
        """Ten-second blocks hold each block's median (a spike drops out) and `between` counts every sample."""
        series = SampleSeries()
        for s in range(30):
            series.add(int((1000 + s) * 1e9), 500.0 if s == 5 else float(s // 10))
        times, values, samples = series.between(int(1000e9), int(1030e9))
        assert values == [0.0, 1.0, 2.0] and samples == 30
        assert times == [pytest.approx(1004.5), pytest.approx(1014.5), pytest.approx(1024.5)]
        assert series.between(int(1010e9), int(1020e9))[1] == [1.0]

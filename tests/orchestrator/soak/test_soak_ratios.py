"""Latency drift on each request's ratio to its own item's baseline (orchestrator/soak/ratios.py, judged by
the sampled trend rule through orchestrator/soak/verdicts.py): the series' bookkeeping, both error rates on
seeded synthetic requests, and the verdict SoakEvidence, judge_soak journals."""

from __future__ import annotations

import numpy as np
import pytest
from latency_requests import latency_requests, ratio_series

from orchestrator.events import SampledDriftDetail, SoakLimits
from orchestrator.judge.sampled_trend import judge_sampled_trend
from orchestrator.soak.ratios import ItemRatioSeries
from orchestrator.soak.samples import SampleSeries
from orchestrator.soak.verdicts import SoakEvidence, drift_rule, judge_soak

LIMITS = SoakLimits()  # the [soak] defaults: 10 %/h, 98 %, 10 minutes, 60 s warmup, 120 s baselines
RULE = drift_rule(LIMITS)
S = 10**9


def _outcomes(judged_minutes: int, *, phi: float, drift: float, seeds: range, mix_change: bool = True,
              rough: bool = False, floor: bool = True) -> list[str]:
    """The `latency_drift` verdict of each seed's requests over `judged_minutes` after the warmup (1 request/s),
    through judge_soak as the soak judges it (the wander floor estimated from the ratios); `rough`: host-load
    bumps and slow first requests too; `floor` False: the rule without a floor (as it was)."""
    out: list[str] = []
    end = (60 + judged_minutes * 60) * S
    for seed in seeds:
        starts, items, latency = latency_requests(np.random.default_rng(seed), 60 + judged_minutes * 60, phi=phi,
                                                  mix_change=mix_change, bumps=rough, cold_first=rough)
        series = ratio_series(starts, items, latency, drift_pct_per_h=drift)
        assert series.judged_from_ns == 60 * S
        if floor:
            verdicts = judge_soak(SoakEvidence(windows=[], samples={}, load_span_ns=(0, end),
                                               ratios={"server": series}), LIMITS)
            out.append(next(v.outcome for v in verdicts if v.metric == "latency_drift"))
        else:
            t, y, _ = series.series.between(series.judged_from_ns, end)
            out.append(judge_sampled_trend(t, y, RULE, unit="%").outcome)
    return out


class TestItemRatioSeries:
    def test_warmup_and_baseline_requests_are_not_ratios(self) -> None:
        """Requests before the warmup's end are left out; an item's requests in its first 120 judged seconds
        set its baseline (their median) and are not ratios; later ones are latency / baseline in %."""
        series = ItemRatioSeries(warmup_s=60, baseline_s=120)
        series.start(0)
        series.add(10 * S, "a", 999.0)  # warmup
        for at, ms in ((70, 100.0), (100, 300.0), (150, 200.0)):  # a's baseline span: 70-190 s, median 200
            series.add(at * S, "a", ms)
        series.add(200 * S, "a", 300.0)
        series.add(215 * S, "a", 100.0)
        assert (series.warmup, series.baseline_requests, series.ratios) == (1, 3, 2)
        assert series.baselines["a"] == (200.0, 190 * S)
        assert series.series.between(0, 300 * S)[1] == [150.0, 50.0]

    def test_a_late_request_of_the_baseline_span_is_no_ratio(self) -> None:
        """A request that started in the baseline's span but ended after a later one fixed the baseline is
        counted with the baseline's requests, not judged against it."""
        series = ItemRatioSeries(warmup_s=0, baseline_s=60)
        series.start(0)
        series.add(1 * S, "a", 100.0)
        series.add(70 * S, "a", 110.0)  # fixes a's baseline at 100
        series.add(50 * S, "a", 900.0)  # started at 50 s, in the span, arrived late
        assert (series.baseline_requests, series.ratios) == (2, 1)

    def test_an_item_with_a_zero_baseline_is_counted_unmatched(self) -> None:
        series = ItemRatioSeries(warmup_s=0, baseline_s=10)
        series.start(0)
        series.add(1 * S, "z", 0.0)
        series.add(20 * S, "z", 5.0)
        assert (series.unmatched, series.ratios) == (1, 0)

    def test_the_judged_span_starts_from_the_earliest_first_request(self) -> None:
        """Without start(), the first request added sets the origin; an earlier start() moves it back."""
        series = ItemRatioSeries(warmup_s=60, baseline_s=120)
        series.add(100 * S, "a", 1.0)
        assert series.judged_from_ns == 160 * S
        series.start(50 * S)
        assert series.judged_from_ns == 110 * S
        with pytest.raises(ValueError, match="baseline_s > 0"):
            ItemRatioSeries(warmup_s=0, baseline_s=0)


class TestFalseFails:
    @pytest.mark.parametrize("phi", [0.0, 0.5, 0.8, 0.95])
    def test_no_drift_fails_at_most_one_percent(self, phi: float) -> None:
        """No drift, 200 seeds of 30 judged minutes at 1 request/s: a load level AR(1) at `phi`, Student-t
        noise, 1 % stalls of 3-10 x and the item mix moving from speech to signal items halfway. At most
        1 % FAIL (the 98 % two-sided rule's one side)."""
        outcomes = _outcomes(30, phi=phi, drift=0.0, seeds=range(200))
        assert outcomes.count("fail") <= 2, outcomes.count("fail")

    @pytest.mark.parametrize("phi", [0.0, 0.8, 0.95])
    def test_host_load_bumps_and_cold_first_requests_fail_at_most_one_percent(self, phi: float) -> None:
        """A shared host: besides the noise above, load bumps of 2-8 minutes making every request 1.3-2.5 x
        slower (one every 15 minutes on average) and each item's first request 1.5-3 x slower. With the
        wander floor estimated from the ratios, at most 1 % of 200 seeds FAIL at 20, 30 and 60 judged
        minutes."""
        for minutes in (20, 30, 60):
            outcomes = _outcomes(minutes, phi=phi, drift=0.0, seeds=range(200), rough=True)
            assert outcomes.count("fail") <= 2, (minutes, outcomes.count("fail"))

    def test_without_the_floor_host_load_bumps_fail_a_flat_series_too_often(self) -> None:
        """What the floor is for: the same bumpy series judged without it FAIL more than 1 % of the time."""
        fails = sum(_outcomes(minutes, phi=0.5, drift=0.0, seeds=range(200), rough=True, floor=False).count("fail")
                    for minutes in (30, 60))
        assert fails > 4, fails

    def test_no_drift_over_90_minutes_passes_mostly_and_never_fails_much(self) -> None:
        """At phi 0.5, 90 judged minutes decide: most flat seeds PASS, at most 1 % FAIL (the wander floor
        leaves most of them inconclusive after one hour; bench/RESULTS.md)."""
        outcomes = _outcomes(90, phi=0.5, drift=0.0, seeds=range(100))
        assert outcomes.count("fail") <= 1 and outcomes.count("pass") >= 80

    def test_the_mix_change_alone_would_fail_raw_latency_but_not_the_ratios(self) -> None:
        """The trap the ratios avoid: when the mix moves halfway from 20 % to 70 % of requests on slow
        speech items, the same requests' raw latencies (block medians, same rule) FAIL; the ratios do not."""
        starts, items, latency = latency_requests(np.random.default_rng(4), 1860, phi=0.5, speech_share=(0.2, 0.7),
                                                  order="random")
        raw = SampleSeries()
        for at, value in zip(starts.tolist(), latency.tolist(), strict=True):
            raw.add(int(at * S), value)
        t, y, _ = raw.between(60 * S, 1860 * S)
        assert judge_sampled_trend(t, y, RULE, unit="ms").outcome == "fail"
        series = ratio_series(starts, items, latency)
        t, y, _ = series.series.between(60 * S, 1860 * S)
        assert judge_sampled_trend(t, y, RULE, unit="%").outcome != "fail"


class TestPower:
    def test_ten_times_the_limit_fails_within_an_hour(self) -> None:
        """100 %/h FAILs within 60 judged minutes at 1 request/s in at least 95 % of seeds, at phi 0.8."""
        outcomes = _outcomes(60, phi=0.8, drift=100.0, seeds=range(100))
        assert outcomes.count("fail") >= 95, outcomes.count("fail")

    def test_three_times_the_limit_never_passes(self) -> None:
        """30 %/h is never called flat: no seed PASSes over 30 or 60 judged minutes."""
        for minutes in (30, 60):
            assert "pass" not in _outcomes(minutes, phi=0.8, drift=30.0, seeds=range(50))


class TestVerdict:
    def test_judge_soak_judges_latency_drift_on_the_ratios(self) -> None:
        """Given the ratio series, `latency_drift` is the sampled rule's verdict on the server-timed ratios,
        with its detectable drift in the detail."""
        starts, items, latency = latency_requests(np.random.default_rng(1), 3660, phi=0.5)
        server = ratio_series(starts, items, latency, drift_pct_per_h=200.0)
        client = ItemRatioSeries(warmup_s=60, baseline_s=120)
        verdicts = judge_soak(SoakEvidence(windows=[], samples={}, load_span_ns=(0, 3660 * S),
                                           ratios={"server": server, "client": client}), LIMITS)
        drift = next(v for v in verdicts if v.metric == "latency_drift")
        assert drift.outcome == "fail" and drift.reason.startswith("each request over its own item's baseline")
        assert isinstance(drift.detail, SampledDriftDetail) and drift.detail.source.startswith("server handler_ms")
        assert drift.detail.detectable_slope is not None and drift.detail.ratios == server.ratios
        assert drift.detail.unit == "%/h" and drift.detail.limit == 10.0 and drift.detail.n == 12

    def test_without_ratios_it_is_inconclusive_and_says_why(self) -> None:
        """No request past its item's baseline yet: inconclusive, naming the baseline it waits for."""
        empty = {"server": ItemRatioSeries(warmup_s=60, baseline_s=120),
                 "client": ItemRatioSeries(warmup_s=60, baseline_s=120)}
        verdicts = judge_soak(SoakEvidence(windows=[], samples={}, load_span_ns=(0, 600 * S), ratios=empty), LIMITS)
        drift = next(v for v in verdicts if v.metric == "latency_drift")
        assert drift.outcome == "inconclusive" and drift.reason.startswith("no ratio yet")
        assert isinstance(drift.detail, SampledDriftDetail) and drift.detail.source.startswith("client")

"""A sweep's planned durations, stated before any load: each open-loop point by its schedule, the concurrency-1
baseline window by the capability probe's median latency, nothing where there is nothing to plan by."""

from __future__ import annotations

import pytest

from orchestrator.sweep.planned import baseline_sample, planned_durations


def test_the_baseline_is_planned_by_the_probe_median_and_each_point_by_its_schedule() -> None:
    """64 requests at the probe's median 20 ms: 1.28 s (the slow first answer does not set it); each rate
    point (4 + 60) / rate."""
    baseline, said = planned_durations("rate", [1.0, 2.0, 8.0], requests=60, warmup=4, base=True,
                                       probe_s=[0.2, 0.02, 0.019, 0.021, 0.02])
    assert baseline == pytest.approx(1.28)
    assert said[0] == ("the concurrency-1 baseline window 64 requests x 20 ms (the capability probe's median of 5) "
                       "= 1.3 s")
    assert said[1] == "each point (4 warmup + 60) / rate: 1 req/s 64.0 s, 2 req/s 32.0 s, 8 req/s 8.0 s"


def test_nothing_is_planned_without_a_basis() -> None:
    """No probe latency on the sweep's rows: the baseline is said unplanned (None, not counted); no baseline
    window (concurrency mode from 1): none; a closed-loop point has no schedule."""
    baseline, said = planned_durations("rate", [1.0], requests=10, warmup=0, base=True, probe_s=[])
    assert baseline is None and said[0].endswith("not planned (the probe answered none of the sweep's rows)")
    baseline, said = planned_durations("concurrency", [1.0, 2.0], requests=10, warmup=2, base=False,
                                       probe_s=[0.1])
    assert baseline is None and said == ["a closed-loop point: not planned (its requests take as long as the "
                                         "server takes)"]


def test_a_sample_of_the_baselines_own_rows_plans_it_by_their_mean() -> None:
    """Timed before any load, the baseline's sampled rows plan it (their mean x its requests: the sum's
    estimate); the probe's short clips are then not used."""
    baseline, said = planned_durations("rate", [1.0], requests=60, warmup=4, base=True, probe_s=[0.006, 0.007],
                                       sample_s=[0.03, 0.08, 0.05, 0.04])
    assert baseline == pytest.approx(64 * 0.05)
    assert said[0] == ("the concurrency-1 baseline window 64 requests x 50 ms (the mean of 4 of its own rows, evenly "
                       "spaced, asked one at a time before any load) = 3.2 s")


def test_the_sample_is_spread_evenly_through_the_window_and_never_beyond_it() -> None:
    """8 of 64: one in the middle of each eighth; never more than the window has; none of nothing."""
    assert baseline_sample(64) == [4, 12, 20, 28, 36, 44, 52, 60]
    assert baseline_sample(3) == [0, 1, 2]
    assert baseline_sample(0) == []


def test_the_doublings_beyond_the_grid_are_stated_apart() -> None:
    """The doublings run only while no point has failed: stated after the grid, each by its own schedule, and
    not folded into the baseline; a closed loop names them without a schedule."""
    baseline, said = planned_durations("rate", [1.0, 8.0], requests=60, warmup=4, base=False, probe_s=[],
                                       extensions=[16.0, 32.0])
    assert baseline is None
    assert said == ["each point (4 warmup + 60) / rate: 1 req/s 64.0 s, 8 req/s 8.0 s",
                    "beyond the grid, each only while no point has failed: 16 req/s 4.0 s, 32 req/s 2.0 s"]
    _, said = planned_durations("concurrency", [1.0, 4.0], requests=10, warmup=2, base=False, probe_s=[],
                                extensions=[8.0])
    assert said[-1] == "beyond the grid, each only while no point has failed: concurrency 8"

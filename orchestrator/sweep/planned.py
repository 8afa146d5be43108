"""A sweep's planned durations, stated before any load: pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["BASELINE_SAMPLE", "baseline_sample", "planned_durations"]

BASELINE_SAMPLE = 8  # the baseline's rows timed before any load (~0.3-0.6 s on the reference server)


def baseline_sample(per: int, k: int = BASELINE_SAMPLE) -> list[int]:
    """Positions of `k` of the baseline window's `per` requests, evenly spaced (the middle of each k-th): a
    systematic sample, so that every kind the rows deal round-robin is in it and none is chosen by length."""
    k = max(0, min(k, per))
    return [int((i + 0.5) * per / k) for i in range(k)]


def planned_durations(mode: str, points: Sequence[float], *, requests: int, warmup: int, base: bool,
                      probe_s: Sequence[float], sample_s: Sequence[float] = (),
                      extensions: Sequence[float] = ()) -> tuple[float | None, list[str]]:
    """(the baseline window's planned seconds, or None when there is none or nothing to plan it by; the plan's
    statements, as printed). `sample_s`: the latencies (s) of the baseline's sampled rows (baseline_sample),
    asked at concurrency 1 before any load; `probe_s`: the capability probe's on the sweep's own rows, used
    only without a sample; `extensions`: the doublings above the grid, run only while no point fails.

    A sweep's wall time is set against the sum of its points' planned durations. An open-loop point's is its schedule,
    (warmup + profiling requests) / rate. The concurrency-1 baseline window (the reference answers, run first in rate
    mode) has no schedule: it takes its requests one after another, each as long as the server takes. It is still work
    every such sweep does, so it is planned too, from latencies measured before any load: a sample of the baseline's
    own rows (evenly spaced through them, not picked by length), asked one at a time after the capability probe; their
    mean times the window's requests estimates its sum. Without a sample, the capability probe's median on the sweep's
    rows (its items are short clips: a low estimate). Printed and journaled before the first AIPerf process starts,
    never revised after.
    """
    per = requests + warmup
    out: list[str] = []
    baseline = None
    if base and sample_s:
        each = statistics.fmean(sample_s)
        baseline = round(per * each, 3)
        out.append(f"the concurrency-1 baseline window {per} requests x {each * 1000:.0f} ms (the mean of "
                   f"{len(sample_s)} of its own rows, evenly spaced, asked one at a time before any load) = "
                   f"{baseline:.1f} s")
    elif base and probe_s:
        each = statistics.median(probe_s)
        baseline = round(per * each, 3)
        out.append(f"the concurrency-1 baseline window {per} requests x {each * 1000:.0f} ms (the capability "
                   f"probe's median of {len(probe_s)}) = {baseline:.1f} s")
    elif base:
        out.append("the concurrency-1 baseline window: not planned (the probe answered none of the sweep's rows)")
    if mode == "rate":
        each_point = ", ".join(f"{v:g} req/s {per / v:.1f} s" for v in points)
        out.append(f"each point ({warmup} warmup + {requests}) / rate: {each_point}")
        if extensions:
            out.append("beyond the grid, each only while no point has failed: "
                       + ", ".join(f"{v:g} req/s {per / v:.1f} s" for v in extensions))
    else:
        out.append("a closed-loop point: not planned (its requests take as long as the server takes)")
        if extensions:
            out.append("beyond the grid, each only while no point has failed: concurrency "
                       + ", ".join(f"{v:g}" for v in extensions))
    return baseline, out

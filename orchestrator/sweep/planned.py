"""A sweep's planned durations, stated before any load: pure.

Issue 33 sets a sweep's wall time against the sum of its points' planned durations. An open-loop point's is
its schedule, (warmup + profiling requests) / rate. The concurrency-1 baseline window (the reference answers,
run first in rate mode) has no schedule: it takes its requests one after another, each as long as the server
takes. It is still work every such sweep does, so it is planned too, by the one latency known before any load:
the capability probe's, on the sweep's own rows at concurrency 1 (its median, so one slow first answer does not
set it). Printed and journaled before the first AIPerf process starts, never revised after.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["planned_durations"]


def planned_durations(mode: str, points: Sequence[float], *, requests: int, warmup: int, base: bool,
                      probe_s: Sequence[float]) -> tuple[float | None, list[str]]:
    """(the baseline window's planned seconds, or None when there is none or nothing to plan it by; the plan's
    statements, as printed). `probe_s`: the capability probe's latencies (s) on the sweep's own rows."""
    per = requests + warmup
    out: list[str] = []
    baseline = None
    if base and probe_s:
        each = statistics.median(probe_s)
        baseline = round(per * each, 3)
        out.append(f"the concurrency-1 baseline window {per} requests x {each * 1000:.0f} ms (the capability "
                   f"probe's median of {len(probe_s)}) = {baseline:.1f} s")
    elif base:
        out.append("the concurrency-1 baseline window: not planned (the probe answered none of the sweep's rows)")
    if mode == "rate":
        each_point = ", ".join(f"{v:g} req/s {per / v:.1f} s" for v in points)
        out.append(f"each point ({warmup} warmup + {requests}) / rate: {each_point}")
    else:
        out.append("a closed-loop point: not planned (its requests take as long as the server takes)")
    return baseline, out

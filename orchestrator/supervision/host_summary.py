"""The host's condition over a span (a run, an ab side, a block): HostSampled events summarised; pure.
ab and compare show it beside their figures, so that a change can be laid beside a busier machine."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from orchestrator.events import HostSampled

__all__ = ["HostCondition", "describe_host", "summarize_host"]


class HostCondition(msgspec.Struct, frozen=True, kw_only=True):
    """Means over the span's samples (CPUs: 1.0 = one core busy throughout), and the busiest sample's outside CPU."""

    samples: int
    cpus: int
    load1: float
    outside_cpus: float
    outside_cpus_max: float
    run_cpus: float
    steal_share: float


def summarize_host(samples: Sequence[HostSampled]) -> HostCondition | None:
    """None when nothing was sampled (a run older than the sampler, or a span shorter than its interval)."""
    if not samples:
        return None
    n = len(samples)
    return HostCondition(samples=n, cpus=max(s.cpus for s in samples),
                         load1=round(sum(s.load1 for s in samples) / n, 2),
                         outside_cpus=round(sum(s.outside_cpus for s in samples) / n, 2),
                         outside_cpus_max=round(max(s.outside_cpus for s in samples), 2),
                         run_cpus=round(sum(s.run_cpus for s in samples) / n, 2),
                         steal_share=round(sum(s.steal_share for s in samples) / n, 4))


def describe_host(c: HostCondition | None) -> str:
    """`load 1.2 on 2 CPUs, outside CPU 0.3 (max 1.1), steal 0.0 %` or `not sampled`."""
    if c is None:
        return "not sampled"
    return (f"load {c.load1:.2f} on {c.cpus} CPUs, outside CPU {c.outside_cpus:.2f} (max {c.outside_cpus_max:.2f}), "
            f"run CPU {c.run_cpus:.2f}, steal {c.steal_share * 100:.1f} %")

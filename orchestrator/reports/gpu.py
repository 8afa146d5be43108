"""The GPU figures of one model's server, folded from GpuSampled/GpuIdentified (pure; the report fold feeds it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from orchestrator.events import GpuIdentity, GpuSampled
from orchestrator.reports.schema import GpuFacts

__all__ = ["GpuTally"]


@dataclass(slots=True)
class _Device:
    name: str = ""
    samples: int = 0
    util: list[float] = field(default_factory=list)  # one mean per sample period: bounded by the run's samples
    busy: list[float] = field(default_factory=list)
    power: list[float] = field(default_factory=list)
    temp_max: int | None = None
    clocks: list[int] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    peak_used: int | None = None
    peak_tree: int | None = None


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 1) if xs else None


@dataclass(slots=True)
class GpuTally:
    """Per-GPU running figures of one server, from its samples after readiness; `busy` during AIPerf phases."""

    devices: dict[int, _Device] = field(default_factory=dict)
    scope: str = "tree"

    def add(self, ev: GpuSampled, *, busy_phase: bool) -> None:
        d = self.devices.setdefault(ev.index, _Device(name=ev.name))
        d.samples += 1
        util = ev.utilization_mean_percent if ev.utilization_mean_percent is not None else None
        if util is not None:
            d.util.append(util)
            if busy_phase:
                d.busy.append(util)
        if ev.power_w is not None:
            d.power.append(ev.power_w)
        if ev.temperature_c is not None:
            d.temp_max = max(d.temp_max or ev.temperature_c, ev.temperature_c)
        if ev.sm_clock_mhz is not None:
            d.clocks.append(ev.sm_clock_mhz)
        d.reasons.update(ev.throttle_reasons)
        d.peak_used = max(d.peak_used or 0, ev.memory_used_bytes)
        if ev.tree_memory_bytes is not None:
            d.peak_tree = max(d.peak_tree or 0, ev.tree_memory_bytes)

    def facts(self, identities: dict[int, GpuIdentity]) -> list[GpuFacts]:
        out = []
        for index in sorted(self.devices):
            d = self.devices[index]
            ident = identities.get(index)
            out.append(GpuFacts(
                index=index, name=d.name or (ident.name if ident else ""), uuid=ident.uuid if ident else "",
                samples=d.samples, utilization_mean_percent=_mean(d.util),
                utilization_max_percent=max(d.util) if d.util else None, busy_percent=_mean(d.busy),
                power_mean_w=_mean(d.power), power_max_w=max(d.power) if d.power else None,
                temperature_max_c=d.temp_max, sm_clock_mean_mhz=_mean([float(c) for c in d.clocks]),
                sm_clock_min_mhz=min(d.clocks) if d.clocks else None, throttle_reasons=dict(d.reasons),
                peak_memory_used_bytes=d.peak_used, peak_tree_memory_bytes=d.peak_tree, memory_scope=self.scope))
        return out

    def busy_percent(self) -> float | None:
        """Mean utilisation over the AIPerf phases, over every GPU the server used."""
        return _mean([x for d in self.devices.values() for x in d.busy])

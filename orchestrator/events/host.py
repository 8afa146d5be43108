"""The host's condition while a run runs (orchestrator/supervision/host_sampler.py samples it), so that a change between runs
or between an A/B's sides can be laid beside what else the machine was doing. Imports from the project only
the Event base."""

from __future__ import annotations

from orchestrator.events.base import Event

__all__ = ["HostSampled"]


class HostSampled(Event, frozen=True, kw_only=True):
    """One interval of the whole host: CPU figures are in CPUs (1.0 = one core busy for the whole interval)."""

    interval_s: float
    load1: float  # the 1-minute load average at the interval's end
    cpus: int
    busy_cpus: float  # all processes (user, system, irq; not idle or iowait)
    run_cpus: float  # this run's process tree (aqbench, its servers, AIPerf), reaped children included
    outside_cpus: float  # busy less the run's: what other processes took
    steal_share: float  # of all CPU time, taken by the hypervisor for other guests

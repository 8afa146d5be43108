"""Samples the host's condition while a run runs: load average, CPU steal, and CPU taken by processes outside
the run (HostSampled, every few seconds). A slower build and a busier machine look alike in latencies alone;
these say which machine the numbers came from."""

from __future__ import annotations

import os
from dataclasses import dataclass

import anyio
import psutil
from anyio.abc import TaskStatus

from orchestrator.events import HostSampled
from orchestrator.spine.bus import Bus

__all__ = ["HOST_SAMPLE_INTERVAL_S", "HostReading", "HostSampler", "read_host", "sample_between"]

HOST_SAMPLE_INTERVAL_S = 2.0  # short enough to fall inside an ab block, cheap (one /proc walk of the run's tree)


@dataclass(frozen=True)
class HostReading:
    """Cumulative CPU seconds at one instant: the host's busy, idle and steal, and the run's tree."""

    busy: float
    total: float
    steal: float
    run: float


def _tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of this process, its reaped children, and its live descendants."""
    t = proc.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in proc.children(recursive=True):
        try:
            c = child.cpu_times()
        except psutil.Error:
            continue  # exited while walking: its time reaches children_* once reaped
        total += c.user + c.system
    return float(total)


def read_host(proc: psutil.Process | None = None) -> HostReading:
    """One reading (blocks: reads /proc)."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    steal = getattr(t, "steal", 0.0)
    total = sum(t)
    # guest time is already counted in user on Linux; leave it out of the sum's double count
    total -= getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)
    return HostReading(busy=total - idle - steal, total=total,
                       steal=steal, run=_tree_cpu(proc or psutil.Process()))


def sample_between(before: HostReading, after: HostReading, interval_s: float, load1: float) -> HostSampled:
    """The interval's HostSampled from two readings `interval_s` apart."""
    span = max(interval_s, 1e-9)
    busy = max(0.0, after.busy - before.busy) / span
    run = max(0.0, after.run - before.run) / span
    total = after.total - before.total
    return HostSampled(source="host", interval_s=round(interval_s, 3), load1=round(load1, 2),
                       cpus=psutil.cpu_count() or 1, busy_cpus=round(busy, 3), run_cpus=round(run, 3),
                       outside_cpus=round(max(0.0, busy - run), 3),
                       steal_share=round((after.steal - before.steal) / total, 4) if total > 0 else 0.0)


class HostSampler:
    """`await tg.start(HostSampler(bus).run)`: a HostSampled every `interval_s` until cancelled."""

    def __init__(self, bus: Bus, interval_s: float = HOST_SAMPLE_INTERVAL_S) -> None:
        self.bus = bus
        self.interval_s = interval_s

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        proc = psutil.Process()
        before = await anyio.to_thread.run_sync(read_host, proc)
        started = anyio.current_time()
        task_status.started()
        while True:
            await anyio.sleep_until(started + self.interval_s)
            after = await anyio.to_thread.run_sync(read_host, proc)
            now = anyio.current_time()
            await self.bus.publish(sample_between(before, after, now - started, os.getloadavg()[0]))
            before, started = after, now

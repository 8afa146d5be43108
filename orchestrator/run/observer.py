"""Samples the observer's own side of a run (a soak's, or a live page's): aqbench's process and AIPerf's process tree.
Publishes ProcessSampled (resident memory per tree); judges nothing. The supervisor samples the server's tree.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

import anyio
import psutil
from anyio.abc import TaskStatus

from orchestrator.events import ProcessSampled
from orchestrator.spine.ports import EventSink

__all__ = ["ObserverSampler", "tree_rss"]

Role = Literal["orchestrator", "aiperf"]


def tree_rss(pid: int) -> tuple[int, int] | None:
    """(resident bytes, processes) of `pid` and its descendants; None when `pid` is gone. Blocks (/proc)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    total = counted = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
            counted += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # exited between the listing and the read
    return total, counted


class ObserverSampler:
    """`await tg.start(sampler.run)`: every `period_s`, one ProcessSampled for aqbench itself (after
    `trim`, when given) and one for the AIPerf process `aiperf_pid()` names (none while it names no
    process). Runs until cancelled."""

    def __init__(self, bus: EventSink, *, period_s: float, aiperf_pid: Callable[[], int | None],
                 trim: Callable[[], object] | None = None) -> None:
        self._bus = bus
        self._period_s = period_s
        self._aiperf_pid = aiperf_pid
        self._own_pid = os.getpid()
        self._limiter = anyio.CapacityLimiter(1)
        self._trim = trim
        self.trims = 0

    def _own(self, pid: int) -> tuple[int, int] | None:
        # `trim` first (the soak passes malloc_trim, ~1 ms): aqbench hands back the free pages its allocators
        # kept since the last sample, so its sample is what it holds, not what a moment's churn touched.
        if self._trim is not None:
            self._trim()
            self.trims += 1
        return _own_rss(pid)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            targets: tuple[tuple[Role, int | None], ...] = (("orchestrator", self._own_pid), ("aiperf", self._aiperf_pid()))
            for role, pid in targets:
                if not pid:
                    continue
                # The orchestrator alone, not its children: AIPerf and the server are sampled apart.
                found = await anyio.to_thread.run_sync(self._own if role == "orchestrator" else tree_rss, pid,
                                                       limiter=self._limiter)
                if found is not None:
                    await self._bus.publish(ProcessSampled(source="soak", role=role, pid=pid, rss_bytes=found[0],
                                                           processes=found[1]))
            await anyio.sleep(self._period_s)


def _own_rss(pid: int) -> tuple[int, int] | None:
    try:
        return psutil.Process(pid).memory_info().rss, 1
    except psutil.NoSuchProcess:
        return None

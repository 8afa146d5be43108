"""The page's memory chart for commands without a soak's own sampler (qualify, sweep): aqbench's memory and the
running AIPerf's process tree, sampled while the page is served (ProcessSampled, journaled as a soak's are).
"""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus

from orchestrator.events import AiperfExited, AiperfStarted
from orchestrator.run import RunScope
from orchestrator.run.observer import ObserverSampler

__all__ = ["sample_processes"]

_NAME = "live-aiperf-pids"


async def sample_processes(run: RunScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Every `[server] sample_period_s`: aqbench's RSS, and the newest running AIPerf's tree (its pid from
    AiperfStarted, until its AiperfExited). Runs until cancelled (with the run's task group)."""
    pids: dict[str, int] = {}  # window -> pid of the AIPerf runs going now

    def newest() -> int | None:
        return next(reversed(pids.values()), None)

    async with run.bus.subscribe(_NAME, size=256, lossy=True,
                                                                   kinds=(AiperfStarted, AiperfExited)) as sub, anyio.create_task_group() as tg:
        sampler = ObserverSampler(run.bus, period_s=run.config.server.sample_period_s, aiperf_pid=newest)
        await tg.start(sampler.run)
        task_status.started()
        async for ev in sub:
            if isinstance(ev, AiperfStarted) and ev.pid:
                pids[ev.window] = ev.pid
            elif isinstance(ev, AiperfExited):
                pids.pop(ev.window, None)

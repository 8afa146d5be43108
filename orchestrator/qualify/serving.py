"""A qualify stage's server: supervised until the stage is done, and its bundle's hash.

Shared by the model's own stages and its reference side; starts nothing by itself.
"""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus

from orchestrator.base.errors import ServerError
from orchestrator.spine.ports import EventSink
from orchestrator.supervision.server_spec import ServerSpec
from orchestrator.supervision.supervisor import ServerHandle, supervise

__all__ = ["supervise_to_the_end"]


class _StartedProxy:
    """Remembers whether the task reported readiness, so later failures can be told apart."""

    def __init__(self, task_status: TaskStatus[ServerHandle]) -> None:
        self._task_status = task_status
        self.done = False

    def started(self, value: ServerHandle | None = None) -> None:
        assert value is not None  # the supervisor always hands over its handle
        self.done = True
        self._task_status.started(value)


async def supervise_to_the_end(spec: ServerSpec, bus: EventSink, *,
                               task_status: TaskStatus[ServerHandle] = anyio.TASK_STATUS_IGNORED) -> None:
    """supervise(), except that a server which fails for good after it was ready does not cancel the
    stage in progress: the supervisor journals the failure and sets handle.failure; the stage's own
    requests then fail and are accounted, and the stage is judged with that evidence."""
    proxy = _StartedProxy(task_status)
    try:
        await supervise(spec, bus, task_status=proxy)
    except ServerError:
        if not proxy.done:
            raise

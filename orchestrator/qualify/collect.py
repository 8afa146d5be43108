"""Collect one AIPerf window's correlated requests from the bus, until the correlator's accounting of it: the
stage judges the whole window, never whatever happened to arrive within a fixed pause."""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus

from orchestrator.events import AccountingChecked, NoticeContext, RequestCorrelated, Warned
from orchestrator.spine.bus import Bus

__all__ = ["WindowCollector"]


# The correlator publishes a window's `AccountingChecked` after every `RequestCorrelated` of that window, so
# once the collector has seen it, it has seen them all.
class WindowCollector:
    """A lossless subscriber keeping `window`'s RequestCorrelated events in `events`.

    `await tg.start(collector.run)` before the load starts; after `Correlator.close_window(window)`,
    `await collector.wait_accounted(timeout_s)`; then cancel the task group.
    """

    def __init__(self, bus: Bus, window: str, *, size: int = 65536, name: str = "") -> None:
        self._bus = bus
        self.window = window
        self._size = size
        self._name = name or f"qualify:{window}"
        self.events: list[RequestCorrelated] = []
        self._accounted = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Consume the bus until cancelled or closed. Ready once subscribed."""
        async with self._bus.subscribe(self._name, size=self._size) as sub:
            task_status.started()
            async for ev in sub:
                if isinstance(ev, RequestCorrelated) and ev.window == self.window:
                    self.events.append(ev)
                elif isinstance(ev, AccountingChecked) and ev.window == self.window:
                    self._accounted.set()

    async def wait_accounted(self, timeout_s: float) -> bool:
        """Block until the window's AccountingChecked was seen (True), or `timeout_s` passed: then a
        Warned event says what was collected and False is returned, so the caller judges knowingly."""
        with anyio.move_on_after(timeout_s):
            await self._accounted.wait()
            return True
        await self._bus.publish(Warned(source="qualify", code="window_collection_timed_out", message=(
            f"window {self.window}: the correlator's accounting did not reach the stage within {timeout_s:g} s; "
            f"judging the {len(self.events)} requests collected so far"),
            detail=NoticeContext(model=self.window.split("/", 1)[0])))
        return False

"""A soak step's bus subscription: folds every event in order and lets the steps after it wait until it has."""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus

from orchestrator.events import AnyEvent
from orchestrator.spine.bus import Bus

__all__ = ["EventFold"]


class EventFold:
    """Lossless bus subscriber named `name`: `observe` takes each event; `wait_seen(seq)` returns once every
    event up to `seq` has been observed (or after `timeout_s`)."""

    def __init__(self, bus: Bus, name: str, *, size: int) -> None:
        self._bus = bus
        self._name = name
        self._size = size
        self._seen = anyio.Event()  # set and replaced after each batch: a waiter rechecks its condition
        self.last_seq = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._bus.subscribe(self._name, size=self._size) as sub:
            task_status.started()
            async for batch in sub.batches():
                for ev in batch:
                    self.observe(ev)
                    self.last_seq = max(self.last_seq, ev.seq)
                self._seen.set()
                self._seen = anyio.Event()

    async def next_batch(self) -> None:
        """Block until the next batch of events has been folded (a waiter then rechecks its condition)."""
        await self._seen.wait()

    async def wait_seen(self, seq: int, timeout_s: float = 30.0) -> None:
        """Block until every event up to `seq` has been folded."""
        with anyio.move_on_after(timeout_s):
            while self.last_seq < seq:
                await self.next_batch()

    def observe(self, ev: AnyEvent) -> None:
        """Take one event (a step ignores those of no concern)."""
        raise NotImplementedError

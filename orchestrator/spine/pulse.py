"""A re-arming wake-up: tasks sleep in `wait` until the next `pulse`. No state is carried, so a waiter
checks its own condition before waiting (with no await between) and again after waking."""

from __future__ import annotations

import anyio

__all__ = ["Pulse"]


class Pulse:
    """`pulse()` wakes every current waiter; later waiters wait for the next one. Costs nothing while
    nobody waits (the event is made by the first waiter)."""

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def pulse(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self) -> None:
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

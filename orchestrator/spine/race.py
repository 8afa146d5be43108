"""`first_of`: wait for whichever of several waits ends first, and cancel the rest."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

__all__ = ["first_of"]


async def first_of(*waits: Callable[[], Awaitable[object]]) -> None:
    """Run `waits` side by side until the first of them returns; the others are cancelled (an error in any of
    them is raised, as a task group raises it)."""
    async with anyio.create_task_group() as tg:

        async def one(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            tg.cancel_scope.cancel()

        for wait in waits:
            tg.start_soon(one, wait)

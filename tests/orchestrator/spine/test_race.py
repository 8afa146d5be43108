"""first_of: the first wait to end ends the others."""

from __future__ import annotations

import anyio
import pytest

from orchestrator.spine.race import first_of

pytestmark = pytest.mark.anyio


async def test_the_first_wait_to_end_cancels_the_rest() -> None:
    done, never = anyio.Event(), anyio.Event()
    ended: list[str] = []

    async def quick() -> None:
        await anyio.sleep(0.01)
        ended.append("quick")
        done.set()

    async def slow() -> None:
        await never.wait()
        ended.append("slow")

    with anyio.fail_after(5):
        await first_of(slow, quick)
    assert ended == ["quick"] and done.is_set() and not never.is_set()


async def test_an_error_in_a_wait_is_raised() -> None:
    async def broken() -> None:
        raise ValueError("no")

    with anyio.fail_after(5), pytest.raises(ExceptionGroup) as caught:
        await first_of(broken, anyio.Event().wait)
    assert caught.group_contains(ValueError)

"""Windows close on time: AIPerf's gap-free session numbers tell when a window holds all of its requests."""

from __future__ import annotations

import time

import anyio
import pytest

from orchestrator.events import ClientRecord
from orchestrator.soak.closing import Looks, wait_closable
from orchestrator.soak.progress import LoadProgress
from orchestrator.soak.sessions import SessionLedger
from orchestrator.spine.bus import Bus

S = 1_000_000_000
RUN = "soak/aiperf01"


def _record(session: int, issued_ns: int, phase: str = "profiling") -> ClientRecord:
    return ClientRecord(request_id=f"{phase}-{session}", aiperf_run=RUN, phase=phase, session_num=session,  # type: ignore[arg-type]
                        credit_issued_ns=issued_ns, request_start_ns=issued_ns + 1000, request_end_ns=issued_ns + 2000)


class TestSessionLedger:
    def test_covers_a_boundary_once_the_gap_free_prefix_holds_a_credit_issued_after_it(self) -> None:
        """Requests end out of order: the ledger covers a boundary only when every session number below one
        issued at or after it was seen; a duplicate (tap and export) counts once."""
        ledger = SessionLedger()
        boundary = 10 * S
        for session, issued in ((0, 1 * S), (2, 9 * S), (3, 11 * S), (3, 11 * S)):
            ledger.add(session, issued)
        assert not ledger.covers(boundary) and ledger.missing == 1  # session 1 (issued before 9 s) is open
        ledger.add(1, 5 * S)
        assert ledger.covers(boundary) and ledger.next == 4 and ledger.missing == 0
        assert not ledger.covers(12 * S)

    def test_all_seen_before_the_boundary_is_not_enough_without_a_later_credit(self) -> None:
        """Without a credit issued after the boundary, one issued just before it may still be in flight."""
        ledger = SessionLedger()
        for session in range(5):
            ledger.add(session, session * S)
        assert not ledger.covers(5 * S) and ledger.covers(4 * S)
        ledger.add(None, None)  # a record without a session number (not AIPerf's tap) changes nothing
        assert ledger.next == 5


def _tracker(bus: Bus) -> LoadProgress:
    return LoadProgress(bus)


@pytest.mark.anyio
class TestWaitClosable:
    async def test_a_window_closes_as_soon_as_its_last_request_is_seen(self) -> None:
        """Through the bus and the load's progress: a window whose sessions are all seen and a later credit too closes
        at once (well before its bounded wait ends); warmup sessions (numbered apart) play no part."""
        bus = Bus("closing")
        tracker = _tracker(bus)
        async with anyio.create_task_group() as tg:
            await tg.start(tracker.run)
            end = time.time_ns()
            for ev in (_record(0, end - 3 * S, "warmup"), _record(1, end - S), _record(0, end - 2 * S),
                       _record(2, end + S // 100)):
                await bus.publish(ev)
            began = time.monotonic()
            assert await wait_closable(tracker, RUN, end, done=anyio.Event(), wait_s=5.0)
            assert time.monotonic() - began < 1.0
            tg.cancel_scope.cancel()

    async def test_a_request_still_open_closes_the_window_at_its_bounded_wait(self) -> None:
        """Session 1 (issued before the end) never arrives: the wait ends `wait_s` after the end, not later,
        and says the window may not hold everything (what is open is then carried)."""
        bus = Bus("closing")
        tracker = _tracker(bus)
        async with anyio.create_task_group() as tg:
            await tg.start(tracker.run)
            end = time.time_ns() + S // 5
            for ev in (_record(0, end - 2 * S), _record(2, end + S // 100)):
                await bus.publish(ev)
            assert not await wait_closable(tracker, RUN, end, done=anyio.Event(), wait_s=0.3)
            late_s = (time.time_ns() - end) / 1e9
            assert 0.29 <= late_s < 0.8, late_s
            tg.cancel_scope.cancel()

    async def test_the_run_ending_ends_the_wait(self) -> None:
        bus = Bus("closing")
        tracker = _tracker(bus)
        done = anyio.Event()
        done.set()
        began = time.monotonic()
        assert not await wait_closable(tracker, RUN, time.time_ns() + 10 * S, done=done)
        assert time.monotonic() - began < 1.0


@pytest.mark.anyio
class TestLooks:
    async def test_closes_go_on_while_a_slow_look_runs_and_are_coalesced_into_the_next(self) -> None:
        """A look that takes long never holds a close: three closes asked during it return at once, and one
        look (not three) follows for them; after `end` the looker runs what is due and stops."""
        looks = Looks()
        ran: list[int] = []
        closes_at: list[float] = []
        release = anyio.Event()

        async def looker() -> None:
            while await looks.next():
                ran.append(len(closes_at))
                if len(ran) == 1:
                    await release.wait()  # the first look is slow

        async with anyio.create_task_group() as tg:
            tg.start_soon(looker)
            looks.ask()
            await anyio.wait_all_tasks_blocked()
            began = time.monotonic()
            for _ in range(3):
                looks.ask()  # a close: never waits for the look in progress
                closes_at.append(time.monotonic() - began)
            assert ran == [0] and max(closes_at) < 0.1
            release.set()
            await anyio.wait_all_tasks_blocked()
            assert ran == [0, 3]
            looks.ask()
            looks.end()
        assert ran == [0, 3, 3]

    async def test_end_with_nothing_asked_stops_the_looker(self) -> None:
        """A segment that closed no window on time ends its looker without a look."""
        looks = Looks()
        looks.end()
        assert not await looks.next()

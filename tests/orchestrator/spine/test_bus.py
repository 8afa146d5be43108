"""The bus: ordered delivery, lossless backpressure, lossy drop-oldest, drain on close."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from orchestrator.events import EventsDropped, LogLine, SubscriberFailed
from orchestrator.spine.bus import Bus, BusClosed

pytestmark = pytest.mark.anyio


def line(i: int) -> LogLine:
    return LogLine(stream="test", text=str(i))


class TestBus:
    async def test_stamps_and_orders(self) -> None:
        """Every subscriber sees every event once, in publish order, stamped with run id and seq."""
        bus = Bus("run-1")
        got: dict[str, list[LogLine]] = {"a": [], "b": []}

        async def consume(name: str, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            async with bus.subscribe(name, size=8) as sub:
                task_status.started()
                async for ev in sub:
                    got[name].append(ev)  # type: ignore[arg-type]

        async with anyio.create_task_group() as tg:
            await tg.start(consume, "a")
            await tg.start(consume, "b")
            for i in range(100):
                await bus.publish(line(i))
            await bus.aclose()
        for name in ("a", "b"):
            assert [e.text for e in got[name]] == [str(i) for i in range(100)]
            assert [e.seq for e in got[name]] == list(range(1, 101))
            assert {e.run_id for e in got[name]} == {"run-1"} and all(e.ts_ns > 0 for e in got[name])

    async def test_a_subscriber_of_some_kinds_gets_those_only_in_order(self) -> None:
        """`kinds`: only those events reach the stream, in seq order, on the fast path, the slow path (behind a
        full subscriber) and publish_nowait; `wanted_seq` is the last such event published; a full subscriber
        of other kinds only never drops nor blocks for them."""
        bus = Bus("r")
        drops = bus.subscribe("drops", size=16, kinds=(EventsDropped,))
        lines = bus.subscribe("lines", size=2, kinds=(LogLine,))
        everything = bus.subscribe("all", size=16)
        await bus.publish(line(0))
        await bus.publish(EventsDropped(subscriber="x", dropped=1))
        assert (drops.wanted_seq, lines.wanted_seq) == (2, 1)
        await bus.publish(line(1))  # "lines" is full now
        async with anyio.create_task_group() as tg:
            tg.start_soon(bus.publish, line(2))  # waits for "lines"
            await anyio.wait_all_tasks_blocked()
            assert lines.wanted_seq == 4
            assert [lines.receive_nowait().seq for _ in range(2)] == [1, 3]
        bus.publish_nowait(EventsDropped(subscriber="y", dropped=2))
        assert [drops.receive_nowait().seq for _ in range(2)] == [2, 5] and drops.wanted_seq == 5
        assert lines.receive_nowait().seq == 4 and lines.wanted_seq == 4
        assert [everything.receive_nowait().seq for _ in range(5)] == [1, 2, 3, 4, 5]
        for sub in (drops, lines, everything):
            with pytest.raises(anyio.WouldBlock):
                sub.receive_nowait()
            sub.close()

    async def test_lossless_subscriber_applies_backpressure(self) -> None:
        """A full lossless subscriber makes publish wait; nothing is dropped."""
        bus = Bus("r")
        sub = bus.subscribe("slow", size=2)
        await bus.publish(line(0))
        await bus.publish(line(1))
        with anyio.move_on_after(0.2) as scope:
            await bus.publish(line(2))
        assert scope.cancelled_caught, "publish should have waited for room"
        with pytest.raises(anyio.WouldBlock):
            bus.publish_nowait(line(3))
        assert sub.receive_nowait().text == "0"
        await bus.publish(line(4))
        assert [sub.receive_nowait().text for _ in range(2)] == ["1", "4"]
        sub.close()

    async def test_slow_path_keeps_order_between_publishers(self) -> None:
        """Publishers queued behind a full subscriber deliver in seq order."""
        bus = Bus("r")
        seen: list[int] = []

        async def consume(task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            async with bus.subscribe("c", size=1) as sub:
                task_status.started()
                async for ev in sub:
                    seen.append(ev.seq)
                    await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            await tg.start(consume)
            async with anyio.create_task_group() as publishers:
                for p in range(5):
                    publishers.start_soon(_publish_many, bus, p)
            await bus.aclose()
        assert seen == sorted(seen) and len(seen) == 5 * 50

    async def test_lossy_subscriber_drops_oldest_and_counts(self) -> None:
        """A lossy subscriber never slows publishers: it keeps the newest and counts drops as an event."""
        bus = Bus("r")
        live = bus.subscribe("live", size=3, lossy=True)
        journal = bus.subscribe("journal", size=100)
        for i in range(10):
            bus.publish_nowait(line(i))
        assert [live.receive_nowait().text for _ in range(3)] == ["7", "8", "9"]
        assert live.statistics().dropped == 7
        live.close()
        events = []
        while True:
            try:
                events.append(journal.receive_nowait())
            except anyio.WouldBlock:
                break
        assert isinstance(events[-1], EventsDropped) and events[-1].dropped == 7 and events[-1].subscriber == "live"
        journal.close()

    async def test_close_drains_lossless_and_refuses_publish(self) -> None:
        """aclose returns only after lossless subscribers consumed everything; later publishes fail."""
        bus = Bus("r")
        consumed: list[str] = []

        async def consume(task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            async with bus.subscribe("c", size=1000) as sub:
                task_status.started()
                async for ev in sub:
                    await anyio.sleep(0.001)
                    consumed.append(ev.text)  # type: ignore[attr-defined]

        async with anyio.create_task_group() as tg:
            await tg.start(consume)
            for i in range(50):
                bus.publish_nowait(line(i))
            await bus.aclose()
            assert len(consumed) == 50
        with pytest.raises(BusClosed):
            await bus.publish(line(99))

    async def test_subscribers_come_and_go(self) -> None:
        """A subscriber added mid-run sees only later events; a removed one stops receiving."""
        bus = Bus("r")
        a = bus.subscribe("a", size=10)
        await bus.publish(line(1))
        b = bus.subscribe("b", size=10)
        await bus.publish(line(2))
        a.close()
        await bus.publish(line(3))
        assert b.receive_nowait().text == "2" and b.receive_nowait().text == "3"
        assert [s.name for s in bus.statistics().subscribers] == ["b"]
        b.close()


async def _publish_many(bus: Bus, p: int) -> None:
    for i in range(50):
        await bus.publish(line(p * 1000 + i))


class TestRunEndWithLeakedSubscriber:
    async def test_run_ends_and_journal_closes_despite_a_subscriber_that_never_drains(self, tmp_path) -> None:
        """A lossless subscription whose consumer is gone cannot hang the run's end: the journal is closed
        and replayable, the stuck subscriber is named, and nothing journaled before is lost."""
        from pathlib import Path

        import msgspec

        from orchestrator.config import load_config
        from orchestrator.run import open_run
        from orchestrator.spine.journal import read_journal

        root = Path(__file__).resolve().parents[3]
        cfg = load_config(root / "bench.toml")
        cfg = msgspec.structs.replace(cfg, run=msgspec.structs.replace(cfg.run, output_dir=str(tmp_path)))
        with anyio.fail_after(20):
            async with open_run(cfg, command="test", argv=[], close_timeout_s=0.5) as run:
                leaked = run.bus.subscribe("leaked", size=2)
                for i in range(5):
                    with anyio.move_on_after(0.05):
                        await run.bus.publish(line(i))
                journal = run.journal_path
        assert run.bus.stuck == ["leaked"] and leaked.statistics().delivered == 2
        events, torn = read_journal(journal)
        assert torn is None and type(events[0]).__name__ == "RunStarted"
        assert [e.text for e in events if isinstance(e, LogLine)][:2] == ["0", "1"]


    async def test_run_failure_publish_is_bounded_when_the_bus_is_stuck(self, tmp_path) -> None:
        """A body that fails while a subscriber is stuck: the shielded publish of the failure gives up after
        close_timeout_s (and says so in the log) instead of holding the run open forever."""
        from pathlib import Path

        import msgspec

        from orchestrator.config import load_config
        from orchestrator.run import open_run

        root = Path(__file__).resolve().parents[3]
        cfg = load_config(root / "bench.toml")
        cfg = msgspec.structs.replace(cfg, run=msgspec.structs.replace(cfg.run, output_dir=str(tmp_path)))
        with anyio.fail_after(20), pytest.raises(ExceptionGroup) as raised:
            async with open_run(cfg, command="test", argv=[], close_timeout_s=0.5) as run:
                run.bus.subscribe("stuck", size=1)
                await run.bus.publish(line(0))  # fills the stuck subscriber: the next publish must wait
                raise RuntimeError("body failed")
        assert raised.group_contains(RuntimeError, match="body failed")
        assert "run_failure_not_journaled" in (run.run_dir / "aqbench.log").read_text()


class TestSubscriberFailure:
    async def test_dying_subscriber_is_journaled(self) -> None:
        """A subscriber whose consumer raises publishes SubscriberFailed (name, error) as it unwinds."""
        bus = Bus("run-1")
        probe = bus.subscribe("probe", size=16)
        sub = bus.subscribe("dies", size=16)
        await bus.publish(line(1))
        with pytest.raises(ValueError, match="boom"):
            async with sub:
                async for ev in sub:
                    raise ValueError(f"boom on {ev.text}")  # type: ignore[union-attr]
        got = [probe.receive_nowait() for _ in range(2)]
        failed = got[1]
        assert isinstance(failed, SubscriberFailed)
        assert (failed.subscriber, failed.error, failed.best_effort) == ("dies", "ValueError: boom on 1", False)

    async def test_cancelled_subscriber_is_not_a_failure(self) -> None:
        """Leaving by cancellation (the run stopping) publishes nothing."""
        bus = Bus("run-1")
        probe = bus.subscribe("probe", size=16)
        with anyio.move_on_after(0.05):
            async with bus.subscribe("stops", size=16) as sub:
                async for _ in sub:
                    pass
        with pytest.raises(anyio.WouldBlock):
            probe.receive_nowait()


class TestPublishFromSubscriber:
    async def test_publishing_with_own_queue_full_spills_instead_of_deadlocking(self) -> None:
        """A lossless subscriber that publishes while its own queue is full hands its buffered events to
        its backlog, in order, and its event is delivered."""
        bus = Bus("r")
        sub = bus.subscribe("self", size=2)
        other = bus.subscribe("other", size=10)
        bus.publish_nowait(line(0))
        bus.publish_nowait(line(1))
        backlog: list = []
        with anyio.fail_after(2):
            out = await sub.publish(line(2), spill=backlog.append)
        assert [e.text for e in backlog] == ["0", "1"] and out.seq == 3
        assert sub.receive_nowait().text == "2"
        assert [other.receive_nowait().text for _ in range(3)] == ["0", "1", "2"]
        sub.close()
        other.close()

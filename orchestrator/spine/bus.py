"""In-process publish/subscribe of typed events over anyio memory object streams, one bounded stream per
subscriber; it reads no event, only their types (a subscriber may ask for some kinds only)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from orchestrator.events import AnyEvent, Event, EventsDropped, SubscriberFailed

__all__ = ["Bus", "Subscription", "BusStatistics", "SubscriptionStatistics", "BusClosed"]

E = TypeVar("E", bound=Event)
_replace = msgspec.structs.replace
_FAILURE_PUBLISH_S = 5.0


def _is_failure(exc: BaseException) -> bool:
    """An error, not a stop: cancellation (alone or grouped) and interpreter exits are not failures."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_is_failure(e) for e in exc.exceptions)
    return isinstance(exc, Exception) and not isinstance(exc, anyio.get_cancelled_exc_class())


class BusClosed(RuntimeError):
    """Publishing to a bus that was closed (a programming error: publish only while the run is open)."""


class SubscriptionStatistics(msgspec.Struct, frozen=True):
    name: str
    lossy: bool
    size: int
    buffered: int
    delivered: int
    dropped: int


class BusStatistics(msgspec.Struct, frozen=True):
    published: int
    subscribers: list[SubscriptionStatistics]


class Subscription:
    """One subscriber's stream. Use as `async with bus.subscribe(...) as sub: async for ev in sub: ...`.

    Leaving the `async with` unsubscribes; for a lossless subscriber that is also the signal that it has
    drained everything (Bus.aclose waits for it).
    """

    def __init__(self, bus: Bus, name: str, size: int, lossy: bool,
                 kinds: tuple[type[Event], ...] | None = None) -> None:
        if size < 1:
            raise ValueError(f"subscription {name!r}: size must be >= 1, got {size}")
        self.name = name
        self.size = size
        self.lossy = lossy
        self.kinds = kinds
        # The seq of the last event published that this subscriber wants (delivered or on its way).
        self.wanted_seq = 0
        self.delivered = 0
        self.dropped = 0
        self._bus = bus
        self._send: MemoryObjectSendStream[AnyEvent]
        self._recv: MemoryObjectReceiveStream[AnyEvent]
        self._send, self._recv = anyio.create_memory_object_stream[AnyEvent](size)
        self._done = anyio.Event()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        if exc is not None and _is_failure(exc) and not self._bus.closed:
            # A subscriber that dies says so in the journal before its error unwinds the run. Bounded and
            # shielded: the run may be cancelling, and a full bus must not hold the failure back forever.
            with anyio.CancelScope(shield=True), anyio.move_on_after(_FAILURE_PUBLISH_S):
                await self._bus.publish(SubscriberFailed(
                    source="bus", subscriber=self.name, error=f"{type(exc).__name__}: {exc}", best_effort=self.lossy,
                ))

    def close(self) -> None:
        """Unsubscribe now; events still buffered are discarded (a lossless consumer drains first)."""
        if self._done.is_set():
            return
        self._bus._remove(self)
        self._send.close()
        self._recv.close()
        self._done.set()

    def __aiter__(self) -> AsyncIterator[AnyEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[AnyEvent]:
        try:
            while True:
                yield await self._recv.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return

    async def batches(self, max_batch: int = 1024) -> AsyncIterator[list[AnyEvent]]:
        """Yield lists of events: waits for one, then takes what is already buffered (up to max_batch)."""
        recv = self._recv
        while True:
            try:
                first = await recv.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            batch = [first]
            while len(batch) < max_batch:
                try:
                    batch.append(recv.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
            yield batch

    def receive_nowait(self) -> AnyEvent:
        return self._recv.receive_nowait()

    async def publish(self, event: E, *, spill: Callable[[AnyEvent], None]) -> E:
        """Publish from inside this (lossless) subscriber's own consumer without deadlocking on itself.

        While the bus would block, this subscription's own buffered events are handed to `spill` (the
        consumer's backlog, to process next, in order) so that its queue has room, then it retries.
        """
        while True:
            try:
                return self._bus.publish_nowait(event)
            except anyio.WouldBlock:
                while True:
                    try:
                        spill(self._recv.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                        break
                await anyio.sleep(0.001)

    def statistics(self) -> SubscriptionStatistics:
        return SubscriptionStatistics(
            name=self.name, lossy=self.lossy, size=self.size,
            buffered=self._send.statistics().current_buffer_used,
            delivered=self.delivered, dropped=self.dropped,
        )

    async def wait_drained(self) -> None:
        await self._done.wait()


# Lossless subscribers (journal, correlator) apply backpressure; lossy ones (live views) drop their oldest
# event and count it. The bus stamps run_id, seq and clocks, and delivers every event to every subscriber in
# one order.
class Bus:
    """Publish/subscribe for one run. Publishing is ordered: `seq` is the delivery order everywhere."""

    def __init__(self, run_id: str, *, source: str = "aqbench") -> None:
        self.run_id = run_id
        self.source = source
        self._subs: list[Subscription] = []
        self._lossless: list[Subscription] = []
        self._seq = 0
        self._closed = False
        # Only the slow path (a lossless subscriber is full) takes this FIFO lock; while anyone is on
        # it (`_backlog`), later publishers queue behind, so delivery order stays seq order.
        self._slow = anyio.Lock()
        self._backlog = 0
        # Names of lossless subscribers that had to be force-closed by aclose (a bug to report).
        self.stuck: list[str] = []

    # -- subscribers -------------------------------------------------------------------------------

    def subscribe(self, name: str, *, size: int = 4096, lossy: bool = False,
                  kinds: tuple[type[Event], ...] | None = None) -> Subscription:
        """Add a subscriber; it sees every event published from now on, or with `kinds` only the events of
        those types (in the same order): a task that wants a few kinds is not woken for every event of a
        run. Does not block."""
        if self._closed:
            raise BusClosed(f"cannot subscribe {name!r}: the bus of run {self.run_id} is closed")
        sub = Subscription(self, name, size, lossy, kinds)
        self._subs = [*self._subs, sub]
        if not lossy:
            self._lossless = [*self._lossless, sub]
        return sub

    def _remove(self, sub: Subscription) -> None:
        self._subs = [s for s in self._subs if s is not sub]
        self._lossless = [s for s in self._lossless if s is not sub]
        if sub.lossy and sub.dropped and not self._closed:
            try:
                self.publish_nowait(EventsDropped(source="bus", subscriber=sub.name, dropped=sub.dropped))
            except anyio.WouldBlock:
                pass

    # -- publishing --------------------------------------------------------------------------------

    def _stamp(self, event: E) -> E:
        self._seq += 1
        if event.ts_ns:
            return _replace(event, run_id=event.run_id or self.run_id, seq=self._seq)
        return _replace(
            event,
            run_id=self.run_id,
            seq=self._seq,
            ts_ns=time.time_ns(),
            mono_ns=time.monotonic_ns(),
            source=event.source or self.source,
        )

    def _wanting(self, event: AnyEvent) -> list[Subscription]:
        """The subscribers that want `event` (stamped), each marked as waiting for its seq."""
        subs = [sub for sub in self._subs if sub.kinds is None or isinstance(event, sub.kinds)]
        for sub in subs:
            sub.wanted_seq = event.seq
        return subs

    def _has_room(self) -> bool:
        return all(sub._send.statistics().current_buffer_used < sub.size for sub in self._lossless)

    async def publish(self, event: E) -> E:
        """Stamp and deliver `event` to every subscriber; waits while a lossless subscriber is full.

        Returns the stamped event. Order is global: `seq` is assigned in call order and publishers that
        arrive while one is waiting queue behind it (FIFO lock). Cancellation while waiting leaves the
        event undelivered to the subscribers that had no room yet.
        """
        if self._closed:
            raise BusClosed(f"publish after close on run {self.run_id}: {type(event).__name__}")
        stamped = self._stamp(event)
        subs = self._wanting(stamped)
        if self._backlog:
            await self._deliver_slow(stamped, subs)
            return stamped
        # Fast path: no await from stamping to delivery, so no other publisher can interleave.
        for i, sub in enumerate(subs):
            try:
                sub._send.send_nowait(stamped)
            except anyio.WouldBlock:
                if sub.lossy:
                    self._deliver_one_lossy(sub, stamped)
                    continue
                await self._deliver_slow(stamped, subs[i:])
                return stamped
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                continue
            sub.delivered += 1
        return stamped

    def _deliver_nowait(self, event: AnyEvent) -> None:
        for sub in self._wanting(event):
            if sub.lossy:
                self._deliver_one_lossy(sub, event)
                continue
            try:
                sub._send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                continue
            sub.delivered += 1

    async def _deliver_slow(self, stamped: AnyEvent, subs: list[Subscription]) -> None:
        self._backlog += 1
        try:
            async with self._slow:
                for sub in subs:
                    if sub.lossy:
                        self._deliver_one_lossy(sub, stamped)
                        continue
                    try:
                        await sub._send.send(stamped)
                        sub.delivered += 1
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        continue
        finally:
            self._backlog -= 1

    def _deliver_one_lossy(self, sub: Subscription, event: AnyEvent) -> None:
        try:
            sub._send.send_nowait(event)
        except anyio.WouldBlock:
            try:
                sub._recv.receive_nowait()
            except anyio.WouldBlock:
                pass
            sub.dropped += 1
            sub._send.send_nowait(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        sub.delivered += 1

    def publish_nowait(self, event: E) -> E:
        """Like publish() but never waits; raises anyio.WouldBlock (delivering nothing) when it would."""
        if self._closed:
            raise BusClosed(f"publish after close on run {self.run_id}: {type(event).__name__}")
        if self._backlog or not self._has_room():
            raise anyio.WouldBlock
        stamped = self._stamp(event)
        self._deliver_nowait(stamped)
        return stamped

    # -- lifecycle ---------------------------------------------------------------------------------

    def statistics(self) -> BusStatistics:
        return BusStatistics(published=self._seq, subscribers=[s.statistics() for s in self._subs])

    @property
    def closed(self) -> bool:
        return self._closed

    async def aclose(self, *, timeout_s: float = 60.0) -> None:
        """Close the bus: subscribers see end-of-stream after what is buffered; waits for lossless
        subscribers to finish draining (leave their `async with`), at most `timeout_s`."""
        if self._closed:
            return
        for sub in self._subs:
            if sub.lossy and sub.dropped:
                try:
                    self.publish_nowait(EventsDropped(source="bus", subscriber=sub.name, dropped=sub.dropped))
                except anyio.WouldBlock:
                    pass
        self._closed = True
        lossless = list(self._lossless)
        for sub in list(self._subs):
            sub._send.close()
        with anyio.move_on_after(timeout_s):
            for sub in lossless:
                await sub.wait_drained()
        stuck = [sub for sub in lossless if not sub._done.is_set()]
        for sub in stuck:
            # A subscriber that never drains (its consumer is gone) would hold publishers and the run's
            # end forever: closing its receive side wakes any publisher blocked on it.
            self.stuck.append(sub.name)
            sub._recv.close()
            sub._done.set()

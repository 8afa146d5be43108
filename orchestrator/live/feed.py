"""The live page's feed: a lossy bus subscriber folding events into page changes, kept as server-sent-event
frames in a bounded ring (ring.py); and the page's state from the journal (tail.py, the same fold) for a page
that opens, or falls behind the ring, mid-run. It must not publish on the bus or touch the run's state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import msgspec
from anyio.abc import TaskStatus

from orchestrator.events import AnyEvent
from orchestrator.live.ring import RING_FRAMES, Frame, FrameRing
from orchestrator.live.state import Change, PageFold
from orchestrator.live.tail import JournalTail
from orchestrator.spine.bus import Bus, Subscription
from orchestrator.spine.journal import iter_journal

__all__ = ["LiveFeed", "Frame", "FEED_NAME", "coalesce", "encode_changes"]

FEED_NAME = "live-page"
# A frame at most this often: a person reads a page a few times a second, and each frame costs one write
# per open page (bench/live_page.py: one frame per event made 20 pages slow the run's own subscribers).
FRAME_EVERY_S = 0.1
# With more pages open, fewer frames: the tick stretches by one FRAME_EVERY_S per this many pages, up to
# _TICK_MAX_S, so the run's loop does about the same number of page writes per second however many pages watch.
_PAGES_PER_TICK = 4
_TICK_MAX_S = 1.0
_SUB_SIZE = 4096  # events the bus buffers for the feed before dropping its oldest
_BATCH = 512
_encoder = msgspec.json.Encoder()


def _key(ch: Change) -> tuple[str, str, str]:
    if ch.op == "put":
        return (ch.op, ch.section, getattr(ch.value, "name", ""))
    return (ch.op, ch.section, "")


def coalesce(changes: list[Change]) -> list[Change]:
    """The changes of one batch with only the last `set` per section and `put` per row kept (points all
    kept, in order): a page shows the batch's end, not each step to it."""
    last: dict[tuple[str, str, str], int] = {}
    for i, ch in enumerate(changes):
        if ch.op != "add":
            last[_key(ch)] = i
    return [ch for i, ch in enumerate(changes) if ch.op == "add" or last[_key(ch)] == i]


def encode_changes(seq: int, ts_ns: int, changes: list[Change], scrub: Callable[[object], object]) -> bytes:
    """A `changes` frame's JSON: the batch coalesced, made fit to show by `scrub`."""
    payload = {"seq": seq, "ts_ns": ts_ns, "changes": coalesce(changes)}
    return _encoder.encode(scrub(msgspec.to_builtins(payload)))


class LiveFeed(FrameRing):
    """`await tg.start(feed.run)`; pages read `frames_after`, `wait_after` and `state_json`. Ends when the bus
    closes or on cancellation (then `closed` is set and waiting pages wake)."""

    def __init__(self, bus: Bus, journal: Path, *, scrub: Callable[[object], object],
                 flush: Callable[[], Awaitable[bool]] | None = None, ring: int = RING_FRAMES,
                 sub_size: int = _SUB_SIZE, frame_every_s: float = FRAME_EVERY_S,
                 pages_per_tick: int | None = _PAGES_PER_TICK) -> None:
        super().__init__(ring)
        self.bus = bus
        self.journal = journal
        self._scrub = scrub
        self._flush = flush
        self._limiter = anyio.CapacityLimiter(1)  # one journal read at a time
        self._tail = JournalTail(journal)
        self._sub_size = sub_size
        self.sub: Subscription | None = None
        self.fold = PageFold()
        self._frame_every_s = frame_every_s
        self._pages_per_tick = pages_per_tick  # None: the same tick however many pages (bench/live_page.py)
        self._pending: list[Change] = []
        self._pending_seq = 0
        self._pending_ts = 0
        self._dropped_sent = 0

    @property
    def dropped(self) -> int:
        """Events the bus dropped for this feed (it was behind): the page's numbers may lag the journal's."""
        return self.sub.dropped if self.sub is not None else 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Fold the bus into changes as it delivers, and send them as one frame every `frame_every_s`, until
        the bus closes or this is cancelled (then `finish`)."""
        async with self.bus.subscribe(FEED_NAME, size=self._sub_size, lossy=True) as sub:
            self.sub = sub
            try:
                # Subscribed first, then the journal so far: the fold skips what both hand it (by seq).
                await self._catch_up()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._tick)
                    task_status.started()
                    async for batch in sub.batches(_BATCH):
                        self._take(batch)
                    tg.cancel_scope.cancel()
            finally:
                self.finish()

    async def _tick(self) -> None:
        # One frame per tick however fast the run publishes: pages cost writes per frame, not per event.
        while True:
            await anyio.sleep(self.tick_s())
            self._emit()

    def tick_s(self) -> float:
        """The time between frames now: `frame_every_s`, longer with many pages open."""
        if self._pages_per_tick is None:
            return self._frame_every_s
        stretch = max(1.0, self.readers / self._pages_per_tick)
        return min(max(self._frame_every_s, _TICK_MAX_S), self._frame_every_s * stretch)

    def _take(self, batch: list[AnyEvent]) -> None:
        self._pending += self.fold.add_all(batch)
        self._pending_seq, self._pending_ts = batch[-1].seq, batch[-1].ts_ns

    def finish(self) -> None:
        """Fold and send what the bus already handed over (the run's last verdicts), then close. Synchronous:
        a cancellation cannot cut it short. Idempotent."""
        if self.closed:
            return
        batch: list[AnyEvent] = []
        while self.sub is not None:
            try:
                batch.append(self.sub.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        if batch:
            self._take(batch)
        self._emit()
        self.close()

    async def _catch_up(self) -> None:
        if self._flush is not None:
            await self._flush()
        events = await anyio.to_thread.run_sync(_read_events, self.journal, limiter=self._limiter)
        self.fold.add_all(events)

    def _emit(self) -> None:
        """The changes pending since the last frame, as one frame (nothing when none)."""
        changes, seq = self._pending, self._pending_seq
        if self.dropped != self._dropped_sent and seq:
            self._dropped_sent = self.dropped
            changes.append(Change(seq=seq, op="set", section="live_dropped", value=self.dropped))
        if not changes:
            return
        self._pending = []
        self.push(seq, encode_changes(seq, self._pending_ts, changes, self._scrub))

    async def state_json(self) -> bytes:
        """The page's state as JSON, from the journal (what the journal writer has flushed by now). Blocks while
        the journal's new lines are folded (in a worker thread, one read at a time)."""
        if self._flush is not None:
            await self._flush()
        state = await anyio.to_thread.run_sync(self._tail.state, limiter=self._limiter)
        return _encoder.encode(self._scrub(msgspec.to_builtins(state)))


def _read_events(journal: Path) -> list[AnyEvent]:
    """The journal so far (at the start of a run: a few lines). Blocks."""
    return list(iter_journal(journal, on_torn=lambda _: None)) if journal.exists() else []

"""What a live page reads: a bounded ring of ready-to-send server-sent-event frames, with the waits a stream
needs. A feed (the bus's, feed.py; a campaign's files, campaign_feed.py) fills it and says how to build the
page's whole state (`state_json`)."""

from __future__ import annotations

from collections import deque

import anyio
import msgspec

__all__ = ["FrameRing", "Frame", "RING_FRAMES"]

# Frames kept for pages that reconnect (Last-Event-ID): at one frame per tick, minutes of history. Older than
# that, a page reloads its state.
RING_FRAMES = 2048


class Frame(msgspec.Struct, frozen=True):
    """One server-sent event ready to write: its id (the last event seq it covers) and its bytes."""

    seq: int
    data: bytes


# Never waits on a page: a frame is encoded once, and a page too slow for the ring is told to reload its
# state.
class FrameRing:
    """Frames for pages (`frames_after`, `wait_after`); `closed` once the feed has nothing more to say."""

    def __init__(self, ring: int = RING_FRAMES) -> None:
        self._ring: deque[Frame] = deque(maxlen=ring)
        self._evicted = 0  # the seq of the newest frame the ring let go
        self._changed = anyio.Event()
        self.closed = False
        self.frames = 0
        self.readers = 0  # event streams open now (the page server counts them)

    @property
    def dropped(self) -> int:
        """Updates the feed lost (it was behind): the page's numbers may lag the journal's."""
        return 0

    @property
    def head(self) -> int:
        """The seq of the newest frame (0 before the first)."""
        return self._ring[-1].seq if self._ring else 0

    async def state_json(self) -> bytes:
        """The page's whole state as JSON (what a page loads at `/state`)."""
        raise NotImplementedError

    def finish(self) -> None:
        """Send what is pending, then close. Synchronous; idempotent."""
        self.close()

    def push(self, seq: int, body: bytes) -> None:
        """Append the frame of `body` (a `changes` event's JSON) covering events up to `seq`; wake pages."""
        if len(self._ring) == self._ring.maxlen:
            self._evicted = self._ring[0].seq
        self._ring.append(Frame(seq, b"id: %d\nevent: changes\ndata: %s\n\n" % (seq, body)))
        self.frames += 1
        self._wake()

    def close(self) -> None:
        """No more frames: waiting pages wake and end their streams."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def frames_after(self, seq: int) -> list[Frame] | None:
        """Frames newer than `seq`, or None when the ring no longer holds every frame after it (reload)."""
        if seq < self._evicted:
            return None
        # From the newest back: each page asks after every frame, so this costs the frames it has not seen,
        # not the ring's length (a scan of 2048 frames per page per frame was most of 20 pages' cost).
        out: list[Frame] = []
        for frame in reversed(self._ring):
            if frame.seq <= seq:
                break
            out.append(frame)
        out.reverse()
        return out

    async def wait_closed(self) -> None:
        """Block until the feed closes."""
        while not self.closed:
            await self._changed.wait()

    async def wait_after(self, seq: int, timeout_s: float) -> None:
        """Block until a frame newer than `seq` exists, the feed closes, or `timeout_s` passes."""
        with anyio.move_on_after(timeout_s):
            while self.head <= seq and not self.closed:
                await self._changed.wait()

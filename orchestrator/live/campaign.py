"""The live page of a campaign (`aqbench campaign --serve`): fed by polling the files the synchronous, bus-less
driver writes (campaign_state.py), served from an event loop of its own in a thread beside the driver
(`serve_campaign`). The driver never waits on the page: it reads files the driver has already flushed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import msgspec
from anyio.abc import TaskStatus
from anyio.from_thread import BlockingPortal, start_blocking_portal

from orchestrator.base.errors import AqbenchError
from orchestrator.config import Config
from orchestrator.live.address import ServeAddress
from orchestrator.live.campaign_state import CampaignTail, changes_between
from orchestrator.live.feed import encode_changes
from orchestrator.live.privacy import page_scrubber
from orchestrator.live.ring import RING_FRAMES, FrameRing
from orchestrator.live.server import LivePage
from orchestrator.live.state import PageState, clock, run_info
from orchestrator.spine.logs import get_logger, say

__all__ = ["CampaignFeed", "CampaignPage", "serve_campaign", "POLL_S"]

log = get_logger("aqbench.live")

POLL_S = 0.5  # how often the files are read: a person's pace, and one small read per model
_encoder = msgspec.json.Encoder()


class CampaignFeed(FrameRing):
    """`await tg.start(feed.run)`; `attach(folder, scrub)` once the campaign has a folder (before it, the page
    shows an empty campaign). Polls until `finish` (a last read, then close)."""

    def __init__(self, *, poll_s: float = POLL_S, ring: int = RING_FRAMES) -> None:
        super().__init__(ring)
        self._poll_s = poll_s
        self._tail: CampaignTail | None = None
        self._scrub: Callable[[object], object] = lambda data: data
        self._state = PageState(run=run_info(command="campaign", unit="models"))
        self._reading = threading.Lock()  # one read of the files at a time (worker thread or `finish`)
        self._failed = ""

    def attach(self, folder: Path, scrub: Callable[[object], object]) -> None:
        self._scrub = scrub
        self._tail = CampaignTail(folder)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while not self.closed:
            await anyio.sleep(self._poll_s)
            state = await anyio.to_thread.run_sync(self._read)
            self._publish(state)

    def finish(self) -> None:
        """Read what the driver wrote last (its final rows and CampaignFinished), send it, close. Idempotent."""
        if not self.closed:
            self._publish(self._read())
            self.close()

    def _read(self) -> PageState | None:
        with self._reading:
            if self._tail is None:
                return None
            try:
                return self._tail.state()
            except AqbenchError as exc:  # a bad line: the page keeps what it showed, the log says why (once)
                if str(exc) != self._failed:
                    self._failed = str(exc)
                    log.warning("live_page_read_failed", error=str(exc))
                return None

    def _publish(self, state: PageState | None) -> None:
        if state is None or self.closed or state.seq <= self._state.seq:
            return
        changes = changes_between(self._state, state)
        self._state = state
        if changes:
            self.push(state.seq, encode_changes(state.seq, time.time_ns(), changes, self._scrub))

    async def state_json(self) -> bytes:
        """The state the last frame brought pages to: a page that loads it resumes the stream after its seq."""
        return _encoder.encode(self._scrub(msgspec.to_builtins(self._state)))


class CampaignPage:
    """The running page: `url`, and `attach(folder)` for the driver (any thread) once the campaign has one."""

    def __init__(self, portal: BlockingPortal, feed: CampaignFeed, url: str, config: Config, argv: list[str]) -> None:
        self._portal, self.feed, self.url = portal, feed, url
        self._config, self._argv = config, argv

    def attach(self, folder: Path) -> None:
        scrub = page_scrubber(self._config, folder.name, folder, self._argv)
        self._portal.call(self.feed.attach, folder, scrub)

    def linger(self, linger_s: float) -> None:
        """After the campaign: the page shows its final state, and stays up `linger_s` (said on the terminal)
        or until Ctrl-C. Blocks."""
        self._portal.call(self.feed.finish)
        if linger_s <= 0:
            return
        say(f"live page: {self.url} stays up {clock(linger_s)} with the campaign's final state (Ctrl-C ends it "
            "sooner; --serve-linger 0 to not wait)")
        deadline = time.monotonic() + linger_s
        try:
            while (left := deadline - time.monotonic()) > 0:
                time.sleep(min(left, 1.0))
        except KeyboardInterrupt:
            pass  # Ctrl-C ends the wait; the campaign's exit code stands


@contextmanager
def serve_campaign(config: Config, address: ServeAddress | None, argv: list[str]) -> Iterator[CampaignPage | None]:
    """Serve a campaign's page at `address` (nothing when None) while the block runs, from a thread of its own;
    on leaving, the page shows the files' last state (the campaign's final status), its open streams end and
    the server stops (bounded). A taken port raises UsageError on entering, before the campaign starts."""
    if address is None:
        yield None
        return
    with start_blocking_portal() as portal:
        feed = CampaignFeed()
        page = LivePage(address, feed)
        portal.start_task_soon(feed.run)
        served, url = portal.start_task(page.run)
        try:
            yield CampaignPage(portal, feed, url, config, argv)
        finally:
            portal.call(feed.finish)
            portal.call(page.stop)
            served.result()  # the page's cleanup is bounded (LivePage.run)

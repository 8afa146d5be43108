"""The live page's HTTP server (aiohttp): the page, `/state` (the page rebuilt from the journal) and `/events`
(server-sent events from the feed, resumable with Last-Event-ID). Read-only: GET only.
"""

from __future__ import annotations

from importlib import resources

import anyio
import msgspec
from aiohttp import web
from anyio.abc import TaskStatus

from orchestrator.base.errors import UsageError
from orchestrator.live.address import ServeAddress
from orchestrator.live.render import render_page
from orchestrator.live.ring import FrameRing
from orchestrator.live.state import PageState, run_info
from orchestrator.spine.logs import get_logger, say

__all__ = ["LivePage", "HEARTBEAT_S"]

log = get_logger("aqbench.live")

HEARTBEAT_S = 15.0  # a comment line this often keeps proxies from closing an idle stream
_CLEANUP_S = 5.0
_RETRY_MS = 2000  # how soon a browser reconnects after the stream breaks
_STATIC = ("page.js", "page.css")
_TYPES = {"html": "text/html", "js": "text/javascript", "css": "text/css"}
_encoder = msgspec.json.Encoder()
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; style-src 'self'; img-src 'self' data:"}


def _static() -> dict[str, bytes]:
    folder = resources.files("orchestrator.live") / "static"
    return {name: (folder / name).read_bytes() for name in _STATIC}


class _Waiting(FrameRing):
    """The feed of a page listening before its run has one: an empty state, no frames."""

    async def state_json(self) -> bytes:
        return _encoder.encode(PageState(run=run_info()))


# The page is rendered with the run's state, so it reads right without its script. It listens before the run and
# serves until `stop` (after the run's end and the linger) or cancellation; a page never slows the run (the feed never
# waits on one).
class LivePage:
    """`url = await tg.start(page.run)`: serves at `address` until `stop()` or cancellation; `attach(feed)` once
    the run has a feed (before it, the page shows an empty run). `ended`: the attached feed has closed (the run's
    last word sent). Counts the reloads that pages too far behind the ring were told to do (`reloads`)."""

    def __init__(self, address: ServeAddress, feed: FrameRing | None = None) -> None:
        self.feed: FrameRing = feed or _Waiting()
        self.address = address
        self.reloads = 0
        self.url = ""
        self._files = _static()
        self._stop = anyio.Event()

    def attach(self, feed: FrameRing) -> None:
        """Serve `feed` from now on; streams open on the one before reload the state."""
        previous, self.feed = self.feed, feed
        previous.close()

    @property
    def ended(self) -> bool:
        """The run's feed has closed: the page shows the run's final state."""
        return self.feed.closed and not isinstance(self.feed, _Waiting)

    def stop(self) -> None:
        """End `run` (its cleanup is bounded). Idempotent."""
        self._stop.set()

    @property
    def streams(self) -> int:
        """Event streams open now."""
        return self.feed.readers

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/state", self._state)
        app.router.add_get("/events", self._events)
        for name in _STATIC:
            app.router.add_get(f"/{name}", self._file)
        return app

    async def run(self, *, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until `stop()` or cancellation; `task_status.started(url)` once listening, with the URL said on
        the terminal (whatever the log level: with port 0 it is the only way to find the page). Cleanup is
        shielded and bounded: open streams get the last frames and `end`, then the server stops."""
        runner = web.AppRunner(self.app(), handle_signals=False, access_log=None, shutdown_timeout=_CLEANUP_S)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.address.host, self.address.port, reuse_address=True)
            try:
                await site.start()
            except OSError as exc:
                raise UsageError(f"--serve {self.address.host}:{self.address.port}: cannot listen there ({exc}); "
                                 "choose another port, or 0 for any free one") from exc
            host, port = runner.addresses[0][:2]
            url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
            if self.address.loopback:
                log.info("live_page_serving", url=url)
            else:
                log.warning("live_page_serving_beyond_loopback", url=url, host=self.address.host,
                            note="--serve-public: any machine that reaches this address sees the page")
            self.url = url
            say(f"live page: {url}")
            task_status.started(url)
            await self._stop.wait()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLEANUP_S):
                self.feed.finish()  # open streams get the last frames, then `end`
                await runner.cleanup()

    # ------------------------------------------------------------------------------- handlers

    async def _page(self, request: web.Request) -> web.Response:
        # The state as /state has it (scrubbed), rendered: a page without its script shows the counters too.
        feed = self.feed
        state = msgspec.json.decode(await feed.state_json())
        html = render_page(state, ended=self.ended)
        return web.Response(text=html, content_type="text/html", headers=_HEADERS)

    async def _file(self, request: web.Request) -> web.Response:
        name = request.path.lstrip("/")
        return web.Response(body=self._files[name], content_type=_TYPES[name.rsplit(".", 1)[1]], headers=_HEADERS)

    async def _state(self, request: web.Request) -> web.Response:
        body = await self.feed.state_json()
        wrapped = b'{"live_dropped":%d,"state":%s}' % (self.feed.dropped, body)
        return web.Response(body=wrapped, content_type="application/json", headers=_HEADERS)

    async def _events(self, request: web.Request) -> web.StreamResponse:
        cursor = _since(request)
        feed = self.feed
        resp = web.StreamResponse(headers={**_HEADERS, "Content-Type": "text/event-stream",
                                           "X-Accel-Buffering": "no"})
        await resp.prepare(request)
        feed.readers += 1
        try:
            await resp.write(b"retry: %d\n\n" % _RETRY_MS)
            while True:
                if feed is not self.feed:  # the run's feed replaced the one before it: start over from /state
                    await resp.write(b"event: reload\ndata: {}\n\n")
                    break
                frames = feed.frames_after(cursor)
                if frames is None:
                    # Behind the ring: what it missed is only in the journal. The page reloads /state.
                    self.reloads += 1
                    await resp.write(b"event: reload\ndata: {}\n\n")
                    break
                for frame in frames:
                    await resp.write(frame.data)
                    cursor = frame.seq
                if feed.closed and feed is self.feed:
                    await resp.write(b"event: end\ndata: {}\n\n")
                    break
                await feed.wait_after(cursor, HEARTBEAT_S)
                if feed.head <= cursor and not feed.closed:
                    await resp.write(b": ping\n\n")
        except (ConnectionResetError, ConnectionError):
            pass  # the page went away
        finally:
            feed.readers -= 1
        return resp


def _since(request: web.Request) -> int:
    """Where a stream resumes: the Last-Event-ID a reconnecting browser sends, else `?since=` (the seq of the
    state the page loaded), else 0 (everything the ring holds)."""
    raw = request.headers.get("Last-Event-ID") or request.query.get("since") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        raise web.HTTPBadRequest(text=f"Last-Event-ID / since: expected an event seq (an integer), got {raw!r}") \
            from None

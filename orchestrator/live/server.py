"""The live page's HTTP server (aiohttp): the page and its script, `/state` (the page rebuilt from the journal)
and `/events` (server-sent events from the feed, resumable with Last-Event-ID). Read-only: GET only.

It serves until its feed closes (the bus closed, after RunFinished) or it is cancelled; a page never slows the
run (the feed never waits on one).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import anyio
from aiohttp import web
from anyio.abc import TaskStatus

from orchestrator.errors import UsageError
from orchestrator.live.address import ServeAddress
from orchestrator.live.ring import FrameRing
from orchestrator.logs import get_logger

__all__ = ["LivePage", "HEARTBEAT_S"]

log = get_logger("aqbench.live")

HEARTBEAT_S = 15.0  # a comment line this often keeps proxies from closing an idle stream
_CLEANUP_S = 5.0
_RETRY_MS = 2000  # how soon a browser reconnects after the stream breaks
_STATIC = ("page.html", "page.js", "page.css")
_TYPES = {"html": "text/html", "js": "text/javascript", "css": "text/css"}
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; style-src 'self'; img-src 'self' data:"}


def _static() -> dict[str, bytes]:
    folder = resources.files("orchestrator.live") / "static"
    return {name: (folder / name).read_bytes() for name in _STATIC}


class LivePage:
    """`url = await tg.start(page.run)`: serves `feed` at `address` until the feed closes or it is cancelled. Counts pages served and
    the reloads that pages too far behind the ring were told to do (`reloads`)."""

    def __init__(self, feed: FrameRing, address: ServeAddress) -> None:
        self.feed = feed
        self.address = address
        self.reloads = 0
        self.url = ""
        self._files = _static()

    @property
    def streams(self) -> int:
        """Event streams open now."""
        return self.feed.readers

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/state", self._state)
        app.router.add_get("/events", self._events)
        for name in _STATIC[1:]:
            app.router.add_get(f"/{name}", self._file)
        return app

    async def run(self, *, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until the feed closes or this is cancelled; `task_status.started(url)` once listening. Cleanup
        is shielded and bounded: open streams get the last frames and `end`, then the server stops."""
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
            task_status.started(url)
            await self.feed.wait_closed()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLEANUP_S):
                self.feed.finish()  # open streams get the last frames, then `end`
                await runner.cleanup()

    # ------------------------------------------------------------------------------- handlers

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(body=self._files["page.html"], content_type="text/html", headers=_HEADERS)

    async def _file(self, request: web.Request) -> web.Response:
        name = request.path.lstrip("/")
        return web.Response(body=self._files[name], content_type=_TYPES[name.rsplit(".", 1)[1]], headers=_HEADERS)

    async def _state(self, request: web.Request) -> web.Response:
        body = await self.feed.state_json()
        wrapped = b'{"live_dropped":%d,"state":%s}' % (self.feed.dropped, body)
        return web.Response(body=wrapped, content_type="application/json", headers=_HEADERS)

    async def _events(self, request: web.Request) -> web.StreamResponse:
        cursor = _since(request)
        resp = web.StreamResponse(headers={**_HEADERS, "Content-Type": "text/event-stream",
                                           "X-Accel-Buffering": "no"})
        await resp.prepare(request)
        self.feed.readers += 1
        try:
            await resp.write(b"retry: %d\n\n" % _RETRY_MS)
            while True:
                frames = self.feed.frames_after(cursor)
                if frames is None:
                    # Behind the ring: what it missed is only in the journal. The page reloads /state.
                    self.reloads += 1
                    await resp.write(b"event: reload\ndata: {}\n\n")
                    break
                for frame in frames:
                    await resp.write(frame.data)
                    cursor = frame.seq
                if self.feed.closed:
                    await resp.write(b"event: end\ndata: {}\n\n")
                    break
                await self.feed.wait_after(cursor, HEARTBEAT_S)
                if self.feed.head <= cursor and not self.feed.closed:
                    await resp.write(b": ping\n\n")
        except (ConnectionResetError, ConnectionError):
            pass  # the page went away
        finally:
            self.feed.readers -= 1
        return resp


def _since(request: web.Request) -> int:
    """Where a stream resumes: the Last-Event-ID a reconnecting browser sends, else `?since=` (the seq of the
    state the page loaded), else 0 (everything the ring holds)."""
    raw: Any = request.headers.get("Last-Event-ID") or request.query.get("since") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        raise web.HTTPBadRequest(text=f"Last-Event-ID / since: expected an event seq (an integer), got {raw!r}") \
            from None

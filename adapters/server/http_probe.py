"""The supervisor's plain HTTP GETs (readiness, model listing, requests in flight): ports.HttpProbe, over the
standard library's http.client in a worker thread. Not an HTTP client for anything else (chat is adapters/chat)."""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

import anyio

__all__ = ["PlainHttpProbe", "MAX_ANSWER_BYTES"]

MAX_ANSWER_BYTES = 64 * 2**20
"""A probe's answer is a few KB (a model list, an in-flight listing); more is said instead of read."""


class PlainHttpProbe:
    """A fresh connection per GET (`Connection: close`: a server restarted on the same port never answers on a
    stale one), at most two at a time. http.client rather than aiohttp: aiohttp's import alone cost a
    `run-aiperf` about 0.2 CPU-s, and these GETs are the only HTTP that command makes itself."""

    def __init__(self) -> None:
        self._limiter = anyio.CapacityLimiter(2)

    async def get(self, url: str, timeout_s: float) -> tuple[int, bytes] | str:
        """(status, body), or a sentence naming the URL and why no answer came. Blocks a worker thread; cancelled
        or past `timeout_s`, the thread is left to end by its socket's own timeout (`timeout_s` a read)."""
        deadline = time.monotonic() + timeout_s
        with anyio.move_on_after(timeout_s):
            return await anyio.to_thread.run_sync(_get, url, timeout_s, deadline, limiter=self._limiter,
                                                  abandon_on_cancel=True)
        return _late(url, timeout_s)

    async def aclose(self) -> None:
        """Nothing held between GETs: each closes its connection."""


def _late(url: str, timeout_s: float) -> str:
    return f"GET {url}: no answer within {timeout_s:g} s"


def _get(url: str, timeout_s: float, deadline: float) -> tuple[int, bytes] | str:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return f"GET {url}: not an http:// URL with a host"
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    try:
        try:
            conn.connect()
        except TimeoutError:
            return _late(url, timeout_s)
        except OSError as exc:
            return f"GET {url}: cannot connect ({exc.strerror or exc})"
        conn.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                     headers={"Connection": "close", "Accept-Encoding": "identity"})
        answer = conn.getresponse()
        body = bytearray()
        while chunk := answer.read(65536):
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                return f"GET {url}: the answer is longer than {MAX_ANSWER_BYTES} bytes; a probe reads no more"
            if time.monotonic() > deadline:
                return _late(url, timeout_s)
        if answer.length:  # Content-Length's bytes still owed when the server closed
            return f"GET {url}: IncompleteRead: the answer ended {answer.length} bytes short of its Content-Length"
        return answer.status, bytes(body)
    except TimeoutError:
        return _late(url, timeout_s)
    except (OSError, http.client.HTTPException) as exc:
        return f"GET {url}: {type(exc).__name__}: {exc}"
    finally:
        conn.close()

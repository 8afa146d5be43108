"""The supervisor's plain HTTP GETs (readiness, model listing) over one aiohttp session: ports.HttpProbe."""

from __future__ import annotations

import aiohttp

__all__ = ["AiohttpProbe"]


class AiohttpProbe:
    """One session per supervisor, opened at the first GET, with its own small pool (a fresh connection per
    probe: a server restarted on the same port never answers on a stale one)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    async def get(self, url: str, timeout_s: float) -> tuple[int, bytes] | str:
        """(status, body), or a sentence saying why no answer came (names the URL)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True, limit=4))
        try:
            async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                return resp.status, await resp.read()
        except TimeoutError:
            return f"GET {url}: no answer within {timeout_s:g} s"
        except aiohttp.ClientConnectorError as exc:
            return f"GET {url}: cannot connect ({exc.os_error.strerror or exc.os_error})"
        except aiohttp.ClientError as exc:
            return f"GET {url}: {type(exc).__name__}: {exc}"

    async def aclose(self) -> None:
        """Close the session (and its connections); safe when none was opened."""
        if self._session is not None:
            await self._session.close()

"""A page opened in Debian's headless `chromium`, read through the DevTools protocol (aiohttp's websocket).

A small local stand-in for a shared browser harness: launch, evaluate JavaScript in the page, close. Tests
call `chromium_or_skip()` first: without a chromium binary they skip, saying so.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

__all__ = ["ChromiumPage", "chromium_or_skip"]

_START_S = 30.0


def chromium_or_skip() -> str:
    """The chromium binary, or a pytest skip naming what is missing (`apt-get install chromium`)."""
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    pytest.skip("no chromium on PATH (Debian: apt-get install chromium); the live page's browser test needs one")


class ChromiumPage:
    """`async with ChromiumPage(url) as page: await page.eval("...")`. Kills and reaps chromium on exit."""

    def __init__(self, url: str, *, binary: str | None = None) -> None:
        self.url = url
        self.binary = binary or chromium_or_skip()
        self._ids = itertools.count(1)
        self._tmp = tempfile.TemporaryDirectory(prefix="aqb-chromium-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None

    async def __aenter__(self) -> ChromiumPage:
        profile = Path(self._tmp.name)
        self._proc = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--remote-debugging-port=0", f"--user-data-dir={profile}", self.url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        with anyio.fail_after(_START_S):
            while not (port_file.is_file() and port_file.read_text().strip()):
                if self._proc.poll() is not None:
                    raise RuntimeError(f"chromium exited {self._proc.returncode} before its DevTools port opened")
                await anyio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self._session = aiohttp.ClientSession()
        with anyio.fail_after(_START_S):
            while True:
                async with self._session.get(f"http://127.0.0.1:{port}/json/list") as resp:
                    pages = [t for t in await resp.json() if t.get("type") == "page"]
                if pages:
                    break
                await anyio.sleep(0.1)
        self._ws = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            if self._ws is not None:
                await self._ws.close()
            if self._session is not None:
                await self._session.close()
            if self._proc is not None:
                # Its own session: the renderer and zygote processes go with it, none is left behind.
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(self._proc.pid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        self._proc.wait(timeout=5)
                        break
                    except subprocess.TimeoutExpired:
                        continue
            self._tmp.cleanup()

    async def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        assert self._ws is not None
        call_id = next(self._ids)
        await self._ws.send_str(json.dumps({"id": call_id, "method": "Runtime.evaluate",
                                            "params": {"expression": expression, "returnByValue": True}}))
        while True:
            msg = json.loads(await self._ws.receive_str())
            if msg.get("id") == call_id:
                result = msg["result"]
                if "exceptionDetails" in result:
                    raise RuntimeError(f"{expression!r} raised in the page: {result['exceptionDetails']}")
                return result["result"].get("value")

    async def text(self, element_id: str) -> str:
        """The text of the element with id `element_id` ('' when there is none)."""
        value = await self.eval(f"(document.getElementById({json.dumps(element_id)}) || {{}}).textContent || ''")
        return str(value)

    async def wait_text(self, element_id: str, pred: Any, timeout_s: float) -> str:
        """Poll the element's text until `pred(text)` holds; AssertionError with the last text otherwise."""
        last = ""
        with anyio.move_on_after(timeout_s):
            while True:
                last = await self.text(element_id)
                if pred(last):
                    return last
                await anyio.sleep(0.25)
        raise AssertionError(f"#{element_id} never matched within {timeout_s} s; last text: {last!r}")

    async def screenshot(self, path: Path) -> None:
        """A PNG of the page as shown (the docs' picture)."""
        assert self._ws is not None
        call_id = next(self._ids)
        await self._ws.send_str(json.dumps({"id": call_id, "method": "Page.captureScreenshot",
                                            "params": {"format": "png", "captureBeyondViewport": True}}))
        while True:
            msg = json.loads(await self._ws.receive_str())
            if msg.get("id") == call_id:
                path.write_bytes(base64.b64decode(msg["result"]["data"]))
                return

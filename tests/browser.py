"""Headless Chromium for tests, the project's one browser driver: open a page (an HTML file or a URL) at a set
width and read what a person sees, or keep a tab open on a live page and watch it change.

Drives Debian's `chromium` through Playwright (`executable_path`, no browser download), one browser per test
session on a thread of its own. The `browser` fixture skips, with the reason, where chromium or playwright is
missing. `Seen` holds what the page showed: its text, console errors, horizontal overflow, chart sizes,
overlapping chart texts, clipped boxes and badges broken over two lines, measured by a small script run in the
page. `Browser.tab` is for async tests (a live page served by the test's own event loop): each call hops to the
browser's thread, so the loop keeps serving the page meanwhile.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import psutil
import pytest

__all__ = ["CHROMIUM", "Browser", "Seen", "Tab", "browser", "browser_pids"]

# AQBENCH_CHROMIUM names another build; Debian's package installs /usr/bin/chromium.
CHROMIUM = os.environ.get("AQBENCH_CHROMIUM") or shutil.which("chromium")
_WHY_ABSENT = "headless Chromium is not installed (apt-get install -y chromium; .ci/run installs it where it can)"

# The driver process of the session's browser (and, below it, chromium): alive across tests on purpose.
_SESSION_PIDS: set[int] = set()
T = TypeVar("T")

# Measures the page as laid out: returns the facts `Seen` holds. Texts drawn in one chart must not intersect
# (a legend running into a title); a box whose content is wider than it shows a scroll bar (clipped evidence).
_MEASURE = """() => {
  const box = e => e.getBoundingClientRect();
  const meets = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const say = e => (e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 80);
  const overlaps = [];
  for (const svg of document.querySelectorAll('svg[data-chart]')) {
    const texts = [...svg.querySelectorAll(':scope > text')].filter(t => box(t).width > 0);
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (meets(box(texts[i]), box(texts[j])))
          overlaps.push(`${svg.dataset.chart}: "${say(texts[i])}" overlaps "${say(texts[j])}"`);
  }
  const clipped = [];
  for (const e of document.body.querySelectorAll('*')) {
    const s = getComputedStyle(e);
    if (s.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1)
      clipped.push(`<${e.tagName.toLowerCase()}> ${e.scrollWidth}px of content in ${e.clientWidth}px: ${say(e).slice(0, 60)}`);
  }
  const doc = document.documentElement;
  const wide = [...document.body.querySelectorAll('*')].filter(e => box(e).right > doc.clientWidth + 0.5)
    .map(e => `<${e.tagName.toLowerCase()}> ends at ${Math.round(box(e).right)}px: ${say(e).slice(0, 60)}`);
  return {
    text: document.body.innerText,
    overflow_x: doc.scrollWidth - doc.clientWidth,
    past_right_edge: wide.slice(0, 20),
    charts: [...document.querySelectorAll('svg[data-chart]')].map(s => ({
      chart: s.dataset.chart, empty: s.classList.contains('empty'),
      width: box(s).width, height: box(s).height})),
    overlaps: overlaps,
    clipped: clipped,
    wrapped_badges: [...document.querySelectorAll('.status')].filter(e => e.getClientRects().length > 1)
      .map(e => say(e)),
  };
}"""


@dataclass(frozen=True)
class Chart:
    """One `svg[data-chart]` as laid out."""

    chart: str
    empty: bool
    width: float
    height: float


@dataclass(frozen=True)
class Seen:
    """What a page showed a reader at one width."""

    text: str = field(repr=False)
    overflow_x: int
    past_right_edge: list[str]
    charts: list[Chart]
    overlaps: list[str]
    clipped: list[str]
    wrapped_badges: list[str]
    console_errors: list[str] = field(default_factory=list)

    def layout_problems(self) -> list[str]:
        """Everything a reader would see as broken: console errors, a page wider than the window, charts of
        no size, texts drawn over each other, clipped boxes and wrapped badges (empty when all is well)."""
        out = [f"console error: {e}" for e in self.console_errors]
        if self.overflow_x > 0:
            out.append(f"page is {self.overflow_x}px wider than the window: {self.past_right_edge}")
        out += [f"chart {c.chart} has no size ({c.width}x{c.height})" for c in self.charts
                if not c.empty and (c.width < 1 or c.height < 1)]
        out += self.overlaps + [f"clipped: {c}" for c in self.clipped]
        out += [f"badge wraps: {b}" for b in self.wrapped_badges]
        return out


class Browser:
    """One headless Chromium, driven from a thread of its own: Playwright's sync API keeps an event loop on the
    thread that runs it, which would break the anyio tests that follow on the main thread. Blocks the caller."""

    def __init__(self, worker: _BrowserThread) -> None:
        self._worker = worker

    def open(self, target: Path | str, *, width: int = 1280, height: int = 900, wait_for: str | None = None,
             timeout_s: float = 30.0, javascript: bool = True) -> Seen:
        """Load `target` (a file path or a URL), wait for `wait_for` (a CSS selector) if given, and measure."""
        def measure(page: Any, errors: list[str]) -> Seen:
            facts = page.evaluate(_MEASURE)
            return Seen(text=facts["text"], overflow_x=int(facts["overflow_x"]),
                        past_right_edge=facts["past_right_edge"],
                        charts=[Chart(**c) for c in facts["charts"]], overlaps=facts["overlaps"],
                        clipped=facts["clipped"], wrapped_badges=facts["wrapped_badges"], console_errors=list(errors))

        return self.visit(target, measure, width=width, height=height, wait_for=wait_for, timeout_s=timeout_s,
                          javascript=javascript)

    def visit(self, target: Path | str, action: Callable[[Any, list[str]], T], *, width: int = 1280,
              height: int = 900, wait_for: str | None = None, timeout_s: float = 30.0, javascript: bool = True) -> T:
        """Load `target` in a fresh tab and return `action(page, errors)`, run on the browser's thread with the
        Playwright page and the console and page errors seen so far (a test's own checks: a live page polled
        after an update, say). The tab closes afterwards. `javascript=False`: the page's scripts do not run (what
        a reader without them, or a screenshot tool, sees); the measuring script still does."""
        def job(browser: Any) -> T:
            context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=javascript)
            try:
                page = context.new_page()
                errors: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                url = target.resolve().as_uri() if isinstance(target, Path) else target
                page.goto(url, wait_until="load", timeout=timeout_s * 1000)
                if wait_for:
                    page.wait_for_selector(wait_for, timeout=timeout_s * 1000)
                return action(page, errors)
            finally:
                context.close()

        return self._worker.call(job, timeout_s=timeout_s * 4)

    @asynccontextmanager
    async def tab(self, url: str, *, width: int = 1280, height: int = 900,
                  timeout_s: float = 30.0, javascript: bool = True) -> AsyncIterator[Tab]:
        """`async with browser.tab(url) as tab:` a tab left open on `url` for an async test to watch; closed
        on exit (shielded, so a failing test still closes it). `javascript=False`: the page's own scripts do not
        run (Playwright's evaluate still does, so `text` and `eval` work)."""
        def open_tab(browser: Any) -> tuple[Any, Any, list[str]]:
            context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=javascript)
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            try:
                page.goto(url, wait_until="load", timeout=timeout_s * 1000)
            except BaseException:
                context.close()
                raise
            return context, page, errors

        context, page, errors = await self._run(open_tab, timeout_s * 4)
        try:
            yield Tab(self, page, errors)
        finally:
            with anyio.CancelScope(shield=True):
                await self._run(lambda _browser: context.close(), 60.0)

    async def _run(self, fn: Callable[[Any], T], timeout_s: float) -> T:
        """`fn(browser)` on the browser's thread, awaited from an event loop without blocking it."""
        return await anyio.to_thread.run_sync(lambda: self._worker.call(fn, timeout_s=timeout_s))


class Tab:
    """An open tab for async tests: read the page, poll an element until its text says what the test waits
    for, take a screenshot. `errors` holds the console and page errors seen so far."""

    def __init__(self, browser: Browser, page: Any, errors: list[str]) -> None:
        self._browser, self._page, self.errors = browser, page, errors

    async def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression (or function) in the page (JSON-able values only)."""
        return await self._browser._run(lambda _b: self._page.evaluate(expression), 30.0)

    async def text(self, element_id: str) -> str:
        """The text of the element with id `element_id` ('' when there is none)."""
        value = await self.eval(f"(document.getElementById({json.dumps(element_id)}) || {{}}).textContent || ''")
        return str(value)

    async def wait_text(self, element_id: str, pred: Callable[[str], bool], timeout_s: float) -> str:
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
        """A PNG of the whole page as shown (the docs' picture)."""
        await self._browser._run(lambda _b: self._page.screenshot(path=str(path), full_page=True), 60.0)


class _BrowserThread(threading.Thread):
    """Owns Playwright and the browser; runs jobs one at a time, in order, until given None."""

    def __init__(self, sync_api: Any, executable: str) -> None:
        super().__init__(name="headless-chromium", daemon=True)
        self._sync_api, self._executable = sync_api, executable
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], queue.Queue[tuple[bool, Any]]] | None] = queue.Queue()
        self.started_up: queue.Queue[BaseException | None] = queue.Queue(1)

    def run(self) -> None:
        try:
            with self._sync_api.sync_playwright() as pw:
                # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
                chromium = pw.chromium.launch(executable_path=self._executable, args=["--no-sandbox", "--disable-gpu"])
                self.started_up.put(None)
                try:
                    while (job := self._jobs.get()) is not None:
                        fn, answer = job
                        try:
                            answer.put((True, fn(chromium)))
                        except BaseException as exc:  # handed to the caller's thread, raised there
                            answer.put((False, exc))
                finally:
                    chromium.close()
        except BaseException as exc:
            self.started_up.put(exc)

    def call(self, fn: Callable[[Any], T], *, timeout_s: float) -> T:
        answer: queue.Queue[tuple[bool, Any]] = queue.Queue(1)
        self._jobs.put((fn, answer))
        ok, value = answer.get(timeout=timeout_s)
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def stop(self) -> None:
        self._jobs.put(None)
        self.join(timeout=60)


def browser_pids() -> set[int]:
    """Pids of the session's browser processes (the driver; chromium runs below it), for leak checks."""
    return set(_SESSION_PIDS)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """The session's headless Chromium; skips where chromium or playwright is missing."""
    if CHROMIUM is None:
        pytest.skip(_WHY_ABSENT)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    before = {p.pid for p in psutil.Process().children()}
    worker = _BrowserThread(sync_api, CHROMIUM)
    worker.start()
    failed = worker.started_up.get(timeout=120)
    if failed is not None:
        raise failed
    _SESSION_PIDS.update(p.pid for p in psutil.Process().children() if p.pid not in before)
    try:
        yield Browser(worker)
    finally:
        worker.stop()
        _SESSION_PIDS.clear()

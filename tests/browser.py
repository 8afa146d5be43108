"""Headless Chromium for tests: open a page (an HTML file or a URL) at a set width and read what a person sees.

Drives Debian's `chromium` through Playwright (`executable_path`, no browser download), one browser per test
session. The `browser` fixture skips, with the reason, where chromium or playwright is missing. `Seen` holds
what the page showed: its text, console errors, horizontal overflow, chart sizes, overlapping chart texts,
clipped boxes and badges broken over two lines, measured by a small script run in the page.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

__all__ = ["Browser", "Seen", "browser", "browser_pids", "CHROMIUM"]

# AQBENCH_CHROMIUM names another build; Debian's package installs /usr/bin/chromium.
CHROMIUM = os.environ.get("AQBENCH_CHROMIUM") or shutil.which("chromium")
_WHY_ABSENT = "headless Chromium is not installed (apt-get install -y chromium; .ci/run installs it where it can)"

# The driver process of the session's browser (and, below it, chromium): alive across tests on purpose.
_SESSION_PIDS: set[int] = set()

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
    """One headless Chromium; `open` loads a page in a fresh tab and measures it. Blocks (sync Playwright)."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def open(self, target: Path | str, *, width: int = 1280, height: int = 900, wait_for: str | None = None,
             timeout_s: float = 30.0) -> Seen:
        """Load `target` (a file path or a URL), wait for `wait_for` (a CSS selector) if given, and measure."""
        with self.page(target, width=width, height=height, wait_for=wait_for, timeout_s=timeout_s) as (page, errors):
            facts = page.evaluate(_MEASURE)
            return Seen(text=facts["text"], overflow_x=int(facts["overflow_x"]),
                        past_right_edge=facts["past_right_edge"],
                        charts=[Chart(**c) for c in facts["charts"]], overlaps=facts["overlaps"],
                        clipped=facts["clipped"], wrapped_badges=facts["wrapped_badges"], console_errors=list(errors))

    def page(self, target: Path | str, *, width: int = 1280, height: int = 900, wait_for: str | None = None,
             timeout_s: float = 30.0) -> _OpenPage:
        """A context manager giving (Playwright page, list of console and page errors so far) for a test's own
        evaluation (e.g. a live page polled after an update); the tab closes on exit."""
        return _OpenPage(self._browser, target, width, height, wait_for, timeout_s)


class _OpenPage:
    def __init__(self, browser: Any, target: Path | str, width: int, height: int, wait_for: str | None,
                 timeout_s: float) -> None:
        self._browser, self._target, self._size = browser, target, {"width": width, "height": height}
        self._wait_for, self._timeout_ms = wait_for, timeout_s * 1000
        self._context: Any = None

    def __enter__(self) -> tuple[Any, list[str]]:
        self._context = self._browser.new_context(viewport=self._size)
        page = self._context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        url = self._target.resolve().as_uri() if isinstance(self._target, Path) else self._target
        page.goto(url, wait_until="load", timeout=self._timeout_ms)
        if self._wait_for:
            page.wait_for_selector(self._wait_for, timeout=self._timeout_ms)
        return page, errors

    def __exit__(self, *exc: object) -> None:
        self._context.close()


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
    with sync_api.sync_playwright() as pw:
        _SESSION_PIDS.update(p.pid for p in psutil.Process().children() if p.pid not in before)
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield Browser(chromium)
        finally:
            chromium.close()
    _SESSION_PIDS.clear()

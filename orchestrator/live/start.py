"""The live page's life around a run: listening before it (`serve_live`), following its bus (`start_live_page`),
and staying up after its end for `--serve-linger`, with the run's final state, until the time is up or Ctrl-C.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from orchestrator.live.address import ServeAddress
from orchestrator.live.feed import LiveFeed
from orchestrator.live.observe import sample_processes as sample
from orchestrator.live.privacy import page_scrubber
from orchestrator.live.server import LivePage
from orchestrator.live.state import clock
from orchestrator.run import Interrupt, RunScope
from orchestrator.spine.logs import say

__all__ = ["serve_live", "start_live_page"]


async def serve_live(address: ServeAddress | None, interrupt: Interrupt,
                     body: Callable[[LivePage | None], Awaitable[int]]) -> int:
    """`body(page)` with the live page listening at `address` (None, and no page, without one); returns its exit
    code. The page listens first (a taken port raises UsageError before the run starts; the URL is said on the
    terminal). Once the run has ended, the page stays up `address.linger_s` with its final state, unless the run
    was interrupted; a signal then ends only the wait, and the run's exit code stands."""
    if address is None:
        return await body(None)
    page = LivePage(address)
    rc = 0
    async with anyio.create_task_group() as tg:
        # Shielded: a signal mid-run lets the run end gracefully, and the page shows that end.
        await tg.start(_shielded, page.run)
        try:
            try:
                rc = await body(page)
            except Exception:
                await _linger(page, address.linger_s, interrupt)  # an errored run's page says so, then it goes
                raise
            await _linger(page, address.linger_s, interrupt)
        finally:
            page.stop()
    return rc


async def _linger(page: LivePage, linger_s: float, interrupt: Interrupt) -> None:
    if not page.ended or linger_s <= 0 or interrupt.signum:
        return
    say(f"live page: {page.url} stays up {clock(linger_s)} with the run's final state (Ctrl-C ends it sooner; "
        "--serve-linger 0 to not wait)")
    with anyio.CancelScope() as scope:
        interrupt.linger = scope
        try:
            await anyio.sleep(linger_s)
        finally:
            interrupt.linger = None


async def start_live_page(run: RunScope, page: LivePage | None, *, sample_processes: bool = False) -> None:
    """Feed the run's live page (nothing when None) from its bus until the bus closes, so that the page shows
    RunFinished (the final status). `sample_processes`: also sample aqbench's and AIPerf's memory for the page's
    chart (for commands that do not already, as soak does)."""
    if page is None:
        return
    scrub = page_scrubber(run.config, run.run_id, run.run_dir, list(sys.argv))
    feed = LiveFeed(run.bus, run.journal_path, scrub=scrub, flush=run.flush_journal)
    # In open_run's outer group and shielded, like the journal writer: it ends when the bus closes (after
    # RunFinished), not when the body is cancelled.
    tg = run.after or run.tg
    await tg.start(_shielded, feed.run)
    page.attach(feed)
    if sample_processes:
        await run.tg.start(sample, run)  # it publishes: it stops with the run's task group, before the bus closes


async def _shielded(run: Callable[..., Awaitable[None]], *, task_status: TaskStatus[Any] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.CancelScope(shield=True):
        await run(task_status=task_status)

"""Starting the live page in a run's task group: the one call a command makes (`start_live_page`)."""

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
from orchestrator.run import RunScope

__all__ = ["start_live_page"]


async def start_live_page(run: RunScope, address: ServeAddress | None, *,
                          sample_processes: bool = False) -> LivePage | None:
    """Serve the run's live page at `address` (nothing when None) until the run's bus closes, so that the page
    shows RunFinished (the final status). Blocks until the page listens; a port already taken raises
    UsageError here, before any load starts. `sample_processes`: also sample aqbench's and AIPerf's memory for
    the page's chart (for commands that do not already, as soak does)."""
    if address is None:
        return None
    scrub = page_scrubber(run.config, run.run_id, run.run_dir, list(sys.argv))
    feed = LiveFeed(run.bus, run.journal_path, scrub=scrub, flush=run.flush_journal)
    page = LivePage(feed, address)
    # In open_run's outer group and shielded, like the journal writer: they end when the bus closes (after
    # RunFinished), not when the body is cancelled; the page's own cleanup is bounded.
    tg = run.after or run.tg
    await tg.start(_shielded, feed.run)
    await tg.start(_shielded, page.run)
    if sample_processes:
        await run.tg.start(sample, run)  # it publishes: it stops with the run's task group, before the bus closes
    return page


async def _shielded(run: Callable[..., Awaitable[None]], *, task_status: TaskStatus[Any] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.CancelScope(shield=True):
        await run(task_status=task_status)

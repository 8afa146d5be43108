"""Starting the live page in a run's task group: the one call a command makes (`start_live_page`)."""

from __future__ import annotations

import sys

from orchestrator.live.address import ServeAddress
from orchestrator.live.feed import LiveFeed
from orchestrator.live.privacy import page_scrubber
from orchestrator.live.server import LivePage
from orchestrator.run import RunScope

__all__ = ["start_live_page"]


async def start_live_page(run: RunScope, address: ServeAddress | None) -> LivePage | None:
    """Serve the run's live page at `address` (nothing when None) until the run's task group ends. Blocks
    until the page listens; a port already taken raises OSError here, before any load starts."""
    if address is None:
        return None
    scrub = page_scrubber(run.config, run.run_id, run.run_dir, list(sys.argv))
    feed = LiveFeed(run.bus, run.journal_path, scrub=scrub, flush=run.flush_journal)
    page = LivePage(feed, address)
    await run.tg.start(feed.run)
    await run.tg.start(page.run)
    return page

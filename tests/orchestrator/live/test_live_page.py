"""The live page in headless Chromium against a real aiohttp server and bus (no AIPerf): the page's script
loads the state, applies the changes as they stream, draws its charts, and keeps the last state at the end.
The real soak watched the same way is tests/e2e/test_live.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Browser
from test_live_server import _live, _request

from orchestrator.events import (
    MemoryDetail,
    PhaseStarted,
    PointStats,
    ProcessSampled,
    ResourceSampled,
    ServerRestarting,
    SloCheck,
    SoakPhase,
    SoakVerdict,
    SweepConcluded,
    SweepPointJudged,
)

pytestmark = pytest.mark.anyio


class TestLivePageInABrowser:
    async def test_without_javascript_the_first_html_shows_the_runs_state(self, browser: Browser,
                                                                           tmp_path: Path) -> None:
        """The page's script off (a reader without it, a screenshot tool): the first HTML already shows the
        counters, the run, and why the verdicts table is empty (the first checkpoint's time); a checkpoint
        verdict then shows on the next load, and the screenshot is of that page."""
        async with _live(tmp_path, before=5) as live:
            await live.bus.publish(PhaseStarted(source="soak", phase="soak", detail=SoakPhase(
                duration_s=3600.0, window_s=300.0, checkpoint_every_s=1800.0)))
            await live.bus.publish(_request(5, ok=False))
            await live.flush()
            async with browser.tab(live.page.url, javascript=False) as page:
                assert (await page.text("issued"), await page.text("ok"), await page.text("errors")) == ("6", "5", "1")
                assert await page.text("by-cause") == "timeout 1"
                assert await page.text("status") == "running" and await page.text("command") == "soak"
                assert "0 of 12 windows" in await page.text("progress-text")
                assert "no checkpoint yet: the first at 30:00 under load, the final verdicts at the end" in \
                    await page.text("verdicts")
                assert "no window yet: the first opens once the server is ready and closes 5:00 later" in \
                    await page.text("windows")
                assert await page.eval("!!document.querySelector('noscript')")
            await live.bus.publish(SoakVerdict(
                source="soak", metric="server_rss", passed=True, final=False, outcome="pass", interval=[-1.0, 5.0],
                limit=10.0, unit="MiB/h", detail=MemoryDetail(slope=2.0, interval=[-1.0, 5.0], limit=10.0, unit="MiB/h")))
            await live.flush()
            async with browser.tab(live.page.url, javascript=False) as page:
                assert "server_rssPASScheckpoint-[-1, 5]10MiB/h" in await page.text("verdicts")
                await page.screenshot(tmp_path / "no-js.png")
                assert page.errors == []
        assert (tmp_path / "no-js.png").stat().st_size > 10_000

    async def test_the_numbers_change_as_the_run_goes(self, browser: Browser, tmp_path: Path) -> None:
        """Opened after 5 requests the page shows 5; more requests, a restart, memory samples and a final
        verdict show up without a reload; the end of the feed leaves the last state on the page."""
        async with _live(tmp_path, before=5) as live, browser.tab(live.page.url) as page:
            await page.wait_text("issued", lambda t: t == "5", 30)
            await page.wait_text("link", lambda t: t == "live", 30)
            for i in range(5, 12):
                await live.bus.publish(_request(i, ok=i != 7))
            await page.wait_text("issued", lambda t: t == "12", 30)
            assert await page.text("by-cause") == "timeout 1"
            await live.bus.publish(ServerRestarting(source="supervisor", incarnation=1, attempt=1, backoff_s=1.0,
                                                    reason="exited with SIGKILL"))
            for role in ("orchestrator", "aiperf"):
                await live.bus.publish(ProcessSampled(source="soak", role=role, pid=1, rss_bytes=50 << 20))
            await live.bus.publish(ResourceSampled(source="sampler", incarnation=1, pid=1, rss_bytes=80 << 20))
            await page.wait_text("restarts", lambda t: t == "1", 30)
            assert "exited with SIGKILL" in await page.text("restart-causes")
            await page.wait_text("memory-chart", lambda t: "AIPerf tree RSS (1)" in t, 30)
            assert "client latency (11)" in await page.text("latency-chart")
            # The latency axis ticks on round values (0, 50, 100, 150 ms here), never on fractions of the maximum.
            ticks = await page.eval("[...document.querySelectorAll('#latency-chart text[text-anchor=end]')]"
                                    ".map(t => t.textContent).filter(t => !t.includes('since'))")
            assert ticks == ["0", "50", "100", "150"], ticks
            assert "model_call_ms (server) (11)" in await page.text("latency-chart")
            await live.bus.publish(SoakVerdict(
                source="soak", metric="server_rss", passed=True, final=True, outcome="pass", interval=[-1.0, 5.0],
                limit=10.0, unit="MiB/h", detail=MemoryDetail(slope=2.0, interval=[-1.0, 5.0], limit=10.0, unit="MiB/h")))
            await page.wait_text("verdicts", lambda t: "server_rssPASSfinal" in t, 30)
            live.feed.finish()  # what the run's end does
            await page.wait_text("link", lambda t: "run has ended" in t, 30)
            assert await page.text("status") == "ended"
            assert await page.text("issued") == "12"
            assert await page.eval("document.querySelectorAll('#latency-chart polyline').length") == 2
            assert page.errors == []

    async def test_a_sweeps_points_and_capacity_appear_as_they_are_judged(self, browser: Browser, tmp_path: Path) -> None:
        """No points: no points table. Each judged point shows up with its SLOs' states and why one broke;
        the concluded capacity shows as the final verdict."""

        def point(offered: float, outcome: str, reason: str) -> SweepPointJudged:
            return SweepPointJudged(source="sweep", index=0, mode="rate", offered=offered, outcome=outcome,  # type: ignore[arg-type]
                                    windows=[f"m/rate{offered:g}-1"], stats=PointStats(requests=300, ok=300),
                                    checks=[SloCheck(slo="p99_latency", outcome=outcome, reason=reason)])  # type: ignore[arg-type]

        async with _live(tmp_path) as live, browser.tab(live.page.url) as page:
            await page.wait_text("link", lambda t: t == "live", 30)
            assert await page.eval("document.getElementById('points-section').hidden") is True
            await live.bus.publish(point(1.0, "pass", "p99 500 ms <= 8000 ms"))
            await page.wait_text("points", lambda t: "1 req/sPASS" in t, 30)
            assert await page.eval("document.getElementById('points-section').hidden") is False
            await live.bus.publish(point(2.0, "fail", "p99 9100 ms > 8000 ms"))
            await page.wait_text("points", lambda t: "p99_latency fail" in t and "p99_latency: p99 9100 ms" in t, 30)
            await live.bus.publish(SweepConcluded(source="sweep", outcome="bracketed", mode="rate", unit="req/s",
                                                  capacity=1.0, highest_passing=1.0, lowest_failing=2.0))
            await page.wait_text("verdicts", lambda t: "capacityPASSfinal1[1, 2]" in t, 30)


class TestCampaignPageInABrowser:
    async def test_a_campaigns_models_and_final_status_appear_as_the_driver_writes(self, browser: Browser,
                                                                                  tmp_path: Path) -> None:
        """`campaign --serve` as a person sees it: the campaign table fills with each model's node, state and
        verdicts as the real driver writes its files, its charts draw each model's requests, latency and memory,
        and the badge ends on the campaign's final status."""
        import os
        import threading

        import anyio
        from config_support import make_config
        from test_live_campaign import _drive

        cfg = make_config(models=[{"name": "m1"}, {"name": "m2"}], run={"output_dir": str(tmp_path)},
                          campaign={"max_retries": 1, "max_parallel": 0, "stop_grace_s": 120.0})
        url: list[str] = []
        opened = threading.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, _drive, cfg, url, opened, ["aqbench", "campaign"])
            with anyio.fail_after(30):
                while not url:
                    await anyio.sleep(0.01)
            async with browser.tab(url[0]) as page:
                await page.wait_text("link", lambda t: t == "live", 30)
                assert await page.eval("document.getElementById('campaign-section').hidden") is True
                opened.set()
                await page.wait_text("campaign", lambda t: "aiperf-qualified" in t and "failed" in t, 30)
                await page.wait_text("status", lambda t: t == "failed", 30)
                table = await page.text("campaign")
                assert "m1" in table and "gpu-node-1" in table and "pass 1" in table and "fail 1" in table
                assert await page.eval("document.getElementById('campaign-section').hidden") is False
                assert "2 of 2 models" in await page.text("progress-text")
                assert "m2 accuracyFAIL" in await page.text("verdicts")
                # The campaign's charts: a bar per model, a line per model for latency and for memory.
                bars = await page.text("campaign-progress-chart")
                assert "m1" in bars and "2 ok, 1 errors · aiperf-qualified" in bars and "2 ok, 1 errors · failed" in bars
                for chart in ("campaign-latency-chart", "campaign-memory-chart"):
                    # A line per model (a dot while a model has one sample), the run's own charts hidden.
                    drawn = await page.eval(f"document.querySelectorAll('#{chart} polyline, #{chart} circle').length")
                    assert drawn == 2 and "m1 (" in await page.text(chart), chart
                assert await page.eval("document.getElementById('run-charts').hidden") is True
                if shot := os.environ.get("AQBENCH_LIVE_CAMPAIGN_SCREENSHOT"):  # docs/live-campaign.png
                    await page.screenshot(Path(shot))

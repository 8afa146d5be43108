"""The live page's cost to the run: lag with 20 connected pages against one, side by side in one run.

A publisher puts RequestCorrelated events on a real Bus at a fixed rate, with the journal writer and the live
page's feed and aiohttp server on it (as `--serve` runs them). Two lags are measured per configuration:
- run lag: publish (`ts_ns`) to receipt by a lossless subscriber (standing in for the correlator and judge,
  the run's own live work), p99;
- page lag: publish of a frame's last event to its arrival at a page, p99 (the probe page).
Pages are separate processes (as browsers are), each reading its streams; configurations alternate
(1 page, 21 pages, 1 page, ...) so that the machine's drift falls on both. Each is run with the feed as it
ships (fewer frames per second with many pages) and with a fixed 0.1 s tick (the feed before that change).

Run: .venv/bin/python bench/live_page.py [--rate 200] [--seconds 10] [--pages 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np

from orchestrator.config import load_config
from orchestrator.events import RequestCorrelated, RunStarted
from orchestrator.live.address import ServeAddress
from orchestrator.live.feed import LiveFeed
from orchestrator.live.privacy import page_scrubber
from orchestrator.live.server import LivePage
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import JournalWriter

ROOT = Path(__file__).resolve().parents[1]

# A page process: open N event streams, read them, and (stream 0 only) print each frame's lag in ms.
_PAGES = r"""
import asyncio, json, sys, time
import aiohttp
async def stream(http, url, probe):
    async with http.get(url + "events?since=0", timeout=aiohttp.ClientTimeout(total=None)) as resp:
        async for line in resp.content:
            if probe and line.startswith(b"data: "):
                ts = json.loads(line[6:])["ts_ns"]
                print((time.time_ns() - ts) / 1e6, flush=True)
async def main(url, n, probe):
    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(stream(http, url, probe and i == 0) for i in range(n)))
asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"))
"""


async def _one(folder: Path, *, rate: float, seconds: float, pages: int, adaptive: bool) -> tuple[float, float, int]:
    """(run lag p99 ms, page lag p99 ms, frames seen by the probe) with `pages` pages besides the probe."""
    bus = Bus("bench-live-page")
    writer = JournalWriter(folder / "events.jsonl")
    config = load_config(ROOT / "bench.toml")
    run_lags: list[float] = []
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run, bus)
        await bus.publish(RunStarted(source="run", command="soak", config=config))
        feed = LiveFeed(bus, writer.path, scrub=page_scrubber(config, "bench", folder, ["bench"]),
                        **({} if adaptive else {"pages_per_tick": None}))
        page = LivePage(ServeAddress(port=0), feed)
        await tg.start(feed.run)
        await tg.start(page.run)
        run_sub = bus.subscribe("run-stand-in", size=8192)

        async def consume() -> None:
            async with run_sub:
                async for ev in run_sub:
                    run_lags.append((time.time_ns() - ev.ts_ns) / 1e6)

        tg.start_soon(consume)
        procs = [await anyio.open_process([sys.executable, "-c", _PAGES, page.url, "1", "1"])]
        if pages:
            procs.append(await anyio.open_process([sys.executable, "-c", _PAGES, page.url, str(pages), "0"]))
        with anyio.fail_after(30):
            while page.streams < 1 + pages:
                await anyio.sleep(0.05)
        run_lags.clear()
        period = 1.0 / rate
        start = time.monotonic()
        for i in range(int(rate * seconds)):
            await anyio.sleep(max(0.0, start + i * period - time.monotonic()))
            await bus.publish(RequestCorrelated(source="bench", request_id=f"r{i}", window="soak/w0001", ok=True,
                                                phase="profiling", request_latency_ms=100.0, model_call_ms=80.0))
        await anyio.sleep(0.5)
        probe = procs[0]
        for proc in procs:
            proc.terminate()
        out = b""
        assert probe.stdout is not None
        with anyio.move_on_after(5):
            async for chunk in probe.stdout:
                out += chunk
        for proc in procs:
            await proc.wait()
        tg.cancel_scope.cancel()
    await bus.aclose(timeout_s=5)
    page_lags = [float(x) for x in out.split()]
    return float(np.percentile(run_lags, 99)), float(np.percentile(page_lags, 99)), len(page_lags)


async def main(rate: float, seconds: float, pages: int, rounds: int) -> None:
    modes = {"as shipped (fewer frames with many pages)": True, "fixed 0.1 s tick (before)": False}
    results: dict[tuple[str, int], list[tuple[float, float, int]]] = {(m, n): [] for m in modes for n in (0, pages)}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for mode, adaptive in modes.items():
                for n in (0, pages):
                    folder = Path(tmp) / f"{r}-{adaptive}-{n}"
                    folder.mkdir()
                    results[(mode, n)].append(await _one(folder, rate=rate, seconds=seconds, pages=n, adaptive=adaptive))
    print(json.dumps({f"{m} / {n}": v for (m, n), v in results.items()}))
    print(f"rate {rate:g} events/s for {seconds:g} s, {rounds} rounds (median of the rounds' p99)")
    print(f"| feed | measure | 1 page | {pages + 1} pages | ratio |")
    print("|---|---|---|---|---|")
    for mode in modes:
        med = {(i, n): float(np.median([x[i] for x in results[(mode, n)]])) for i in range(3) for n in (0, pages)}
        for i, what, unit in ((0, "run lag p99 (publish -> lossless subscriber)", " ms"),
                              (1, "page lag p99 (publish -> page)", " ms"), (2, "frames a page got", "")):
            one, many = med[(i, 0)], med[(i, pages)]
            print(f"| {mode} | {what} | {one:.2f}{unit} | {many:.2f}{unit} | {many / one:.2f} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    anyio.run(main, a.rate, a.seconds, a.pages, a.rounds)

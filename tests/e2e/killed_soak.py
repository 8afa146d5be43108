"""One short real soak whose server is SIGKILLed in window 2 while a request is in flight, run with `--serve` and,
where there is a browser, watched in headless Chromium as a person would. tests/e2e/test_soak.py judges its
journal (the restart, the accounting of the crashed requests) and tests/e2e/test_live.py what the page showed
(counts moving, the restart and its cause, the final verdicts): one soak, one server and one AIPerf start-up for
both (tests/conftest.py's `killed_soak`)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import anyio
from browser import Browser

from orchestrator.spine.journal import read_lines

REPO = Path(__file__).resolve().parents[2]

# Three 15 s windows with limits that a short soak on two shared cores can meet (tests/e2e/test_soak.py's short
# soaks), every error allowed (the crash makes some); 1.5 s of injected latency per request keeps one in flight
# at almost any moment, so the kill catches one.
_SOAK = """[soak]
duration_s = 45.0
window_s = 15.0
warmup_windows = 1
checkpoint_every_s = 20.0
rss_limit_mib_per_h = 6000.0
p99_latency_limit_pct_per_h = 1000000.0
max_error_rate = 1.0
min_trend_windows = 6
min_trend_span_s = 60.0
rss_growth_limit_mib = 64.0

"""


class Page(NamedTuple):
    """What the live page showed. `failure` says why watching stopped early (None: it saw the run to its end)."""

    failure: str | None
    counted_before_kill: bool  # issued counted up at least twice before the server was killed
    in_flight: str  # the in-flight counter once it read 1 under load ("" if it never did)
    in_flight_source: str  # where that counter comes from, as the page says
    causes: str  # the restart causes shown once the restart was
    counted_after_restart: bool  # issued counted up after the restart
    status: str  # the run's status once it ended
    verdicts: list[list[str]]  # the verdict table's rows (cells' text)


class KilledSoak(NamedTuple):
    returncode: int
    out: str  # stdout and stderr
    run_dir: Path
    events: list[dict[str, Any]]  # the journal, raw
    page: Page | None  # None where no browser watched


def config(tmp_path: Path) -> Path:
    text = (REPO / "bench.toml").read_text()
    text = text.replace('output_dir = "runs"', f'output_dir = "{tmp_path / "runs"}"')
    text = re.sub(r"\[soak\][^\[]*", _SOAK, text).replace("concurrency = 2\n", "concurrency = 1\n")
    # Few items per window: a lower gate than qualify's, so one hard item does not fail a short window.
    text = text.replace("min_pass_rate = 0.9", "min_pass_rate = 0.5").replace("count = 1.0", "count = 0.5")
    text = text.replace('"--replicas", "{replicas}"]', '"--replicas", "{replicas}", "--fault-latency-ms", "1500"]')
    path = tmp_path / "bench.toml"
    path.write_text(text)
    return path


def events_of(tmp_path: Path) -> list[dict[str, Any]]:
    """The soak's journal so far (a torn last line left out)."""
    return [ev for journal in (tmp_path / "runs").glob("*soak-*/events.jsonl*")
            for _, _, ev in read_lines(journal, json.loads)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _int(text: str) -> int:
    return int(text) if text.isdigit() else -1


async def _event(tmp_path: Path, pred: Callable[[dict[str, Any]], bool], timeout_s: float) -> dict[str, Any]:
    with anyio.move_on_after(timeout_s):
        while True:
            for ev in events_of(tmp_path):
                if pred(ev):
                    return ev
            await anyio.sleep(0.2)
    raise AssertionError(f"no matching event within {timeout_s} s")


async def _in_flight(port: int, timeout_s: float = 60.0) -> None:
    """Until the reference server on `port` is answering a request (its /metrics gauge says so)."""
    async with aiohttp.ClientSession() as http:
        with anyio.move_on_after(timeout_s):
            while True:
                async with http.get(f"http://127.0.0.1:{port}/metrics") as resp:
                    if "aqbench_reference_active_requests 0\n" not in await resp.text():
                        return
                await anyio.sleep(0.05)
    raise AssertionError(f"no request in flight on port {port} within {timeout_s} s")


async def _kill_in_window_2(tmp_path: Path, killed: anyio.Event) -> None:
    """SIGKILL to the server just after window 2's first answer, while its next request is in flight."""
    await _event(tmp_path, lambda e: e["kind"] == "soak_window_opened" and e["window"] == "soak/w0002", 240)
    await _event(tmp_path, lambda e: e["kind"] == "request_correlated" and e["window"] == "soak/w0002", 60)
    spawned = [e for e in events_of(tmp_path) if e["kind"] == "server_spawned"]
    await _in_flight(spawned[-1]["port"])
    os.kill(spawned[-1]["pid"], signal.SIGKILL)
    killed.set()


async def _listening(url: str, proc: subprocess.Popen[str], timeout_s: float) -> None:
    async with aiohttp.ClientSession() as http:
        with anyio.fail_after(timeout_s):
            while True:
                assert proc.poll() is None, "the soak ended before its page listened"
                try:
                    async with http.get(url + "state") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientConnectionError:
                    pass
                await anyio.sleep(0.5)


async def _watch(browser: Browser, url: str, proc: subprocess.Popen[str], killed: anyio.Event) -> Page:
    """Read the page as the run goes; an expectation it never meets ends the watch with the reason (the soak and
    its kill go on regardless, for the journal's checks)."""
    seen: dict[str, Any] = {"counted_before_kill": False, "in_flight": "", "in_flight_source": "", "causes": "",
                            "counted_after_restart": False, "status": "", "verdicts": []}
    try:
        await _listening(url, proc, 120)
        async with browser.tab(url) as page:
            first = _int(await page.wait_text("issued", lambda t: _int(t) > 0, 240))
            # In flight is the server's own gauge, live: one request at a time under load.
            seen["in_flight"] = await page.wait_text("in-flight", lambda t: t == "1", 60)
            seen["in_flight_source"] = await page.text("in-flight-source")
            await page.wait_text("issued", lambda t: _int(t) > first, 60)
            seen["counted_before_kill"] = not killed.is_set()
            await killed.wait()
            await page.wait_text("restarts", lambda t: t == "1", 60)
            seen["causes"] = await page.text("restart-causes")
            after = _int(await page.text("issued"))
            await page.wait_text("issued", lambda t: _int(t) > after, 120)
            seen["counted_after_restart"] = True
            await page.wait_text("link", lambda t: "run has ended" in t, 300)
            seen["status"] = await page.text("status")  # RunFinished reached the page before its server stopped
            seen["verdicts"] = await page.eval(
                "[...document.querySelectorAll('#verdicts tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
            if shot := os.environ.get("AQBENCH_LIVE_SCREENSHOT"):
                await page.screenshot(Path(shot))
    except (AssertionError, TimeoutError) as e:
        return Page(failure=f"{type(e).__name__}: {e}", **seen)
    return Page(failure=None, **seen)


async def _run(tmp_path: Path, browser: Browser | None) -> KilledSoak:
    port = _free_port()
    # --no-stop-early: the restart FAILs `restarts` at window 2's close, which would end the soak there; what this
    # soak proves is the restart itself and the requests carried into window 3 (the early stop has its own tests).
    # The server's warm-up stays off (the session's setting, tests/server_env.py): no assertion here judges memory,
    # and both incarnations start 3-5 s of CPU sooner (the restart's comes back sooner within window 2).
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "--log-level", "warning", "soak", "--config",
                             str(config(tmp_path)), "--serve", str(port), "--no-stop-early"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    page: list[Page] = []
    try:
        killed = anyio.Event()
        async with anyio.create_task_group() as tg:
            if browser is not None:
                async def watch() -> None:
                    page.append(await _watch(browser, f"http://127.0.0.1:{port}/", proc, killed))

                tg.start_soon(watch)
            await _kill_in_window_2(tmp_path, killed)
        out, _ = await anyio.to_thread.run_sync(lambda: proc.communicate(timeout=420))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    [run_dir] = sorted((tmp_path / "runs").glob("*soak-*"))
    return KilledSoak(proc.returncode, out, run_dir, events_of(tmp_path), page[0] if page else None)


def run_killed_soak(tmp_path: Path, browser: Browser | None) -> KilledSoak:
    """The soak to its end (the page watched meanwhile where `browser` is given)."""
    return anyio.run(_run, tmp_path, browser)

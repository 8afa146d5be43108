"""A real short soak with `--serve`, watched in headless Chromium as a person would: the numbers move, the
page survives a server restart mid-run, and after the run it shows the final verdicts."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from browser import Browser

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.anyio, pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(480)]

# As tests/e2e/test_soak.py's short soaks: three 15 s windows, limits that a short soak on two shared cores can
# meet; 300 ms of injected latency keeps a request in flight when the server is killed.
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


def _config(tmp_path: Path) -> Path:
    text = (REPO / "bench.toml").read_text()
    text = text.replace('output_dir = "runs"', f'output_dir = "{tmp_path / "runs"}"')
    text = re.sub(r"\[soak\][^\[]*", _SOAK, text).replace("concurrency = 2\n", "concurrency = 1\n")
    text = text.replace("min_pass_rate = 0.9", "min_pass_rate = 0.5").replace("count = 1.0", "count = 0.5")
    text = text.replace('"--replicas", "{replicas}"]', '"--replicas", "{replicas}", "--fault-latency-ms", "300"]')
    path = tmp_path / "bench.toml"
    path.write_text(text)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    out = []
    for journal in (tmp_path / "runs").glob("*soak-*/events.jsonl"):
        for line in journal.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # the line being written
    return out


async def _wait_listening(url: str, proc: subprocess.Popen[str], timeout_s: float) -> None:
    async with aiohttp.ClientSession() as http:
        with anyio.fail_after(timeout_s):
            while True:
                assert proc.poll() is None, proc.communicate()[0][-3000:]
                try:
                    async with http.get(url + "state") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientConnectionError:
                    pass
                await anyio.sleep(0.5)


def _int(text: str) -> int:
    return int(text) if text.isdigit() else -1


class TestLivePage:
    async def test_a_person_watches_a_soak_through_a_restart_to_its_verdicts(self, browser: Browser, tmp_path: Path) -> None:
        """Headless Chromium on `--serve`: issued requests count up, in flight follows the server's own gauge,
        a killed server shows as a restart with its cause while the counts go on, and once the run ends the page
        lists the final verdicts."""
        port = _free_port()
        url = f"http://127.0.0.1:{port}/"
        proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "--log-level", "warning", "soak", "--config",
                                 str(_config(tmp_path)), "--serve", str(port)], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            await _wait_listening(url, proc, 120)
            async with browser.tab(url) as page:
                first = _int(await page.wait_text("issued", lambda t: _int(t) > 0, 240))
                # In flight is the server's own gauge, live: one request at a time under load.
                await page.wait_text("in-flight", lambda t: t == "1", 60)
                assert await page.text("in-flight-source") == "(server gauge)"
                await page.wait_text("issued", lambda t: _int(t) > first, 60)
                spawned = [e for e in _events(tmp_path) if e["kind"] == "server_spawned"]
                os.kill(spawned[-1]["pid"], signal.SIGKILL)
                await page.wait_text("restarts", lambda t: t == "1", 60)
                causes = await page.text("restart-causes")
                # ServerRestarting names the incarnation it starts (2) and why the last one ended.
                assert "incarnation 2 attempt 1" in causes and "killed by SIGKILL" in causes, causes
                after = _int(await page.text("issued"))
                await page.wait_text("issued", lambda t: _int(t) > after, 120)
                await page.wait_text("link", lambda t: "run has ended" in t, 300)
                status = await page.text("status")  # RunFinished reached the page before its server stopped
                verdicts = await page.eval(
                    "[...document.querySelectorAll('#verdicts tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
                if shot := os.environ.get("AQBENCH_LIVE_SCREENSHOT"):
                    await page.screenshot(Path(shot))
            out, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 1, out[-3000:]  # the restart verdict fails: the server was killed
        assert status == "failed", status
        gauge = [e["in_flight"] for e in _events(tmp_path) if e["kind"] == "server_load_sampled"]
        assert 0 in gauge and 1 in gauge and max(gauge) <= 1, gauge  # up and down, never above the concurrency
        shown = {row[0]: row for row in verdicts}
        assert shown["restarts"][1:3] == ["FAIL", "final"], shown
        assert {"server_rss", "error_rate", "accounting"} <= set(shown), shown
        assert all(row[2] == "final" for row in verdicts), verdicts
        # What it can detect: a slope beyond the interval's half-width, or nothing yet (no interval).
        assert re.search(r"^(a slope beyond ±\S+|nothing yet: no interval on the slope) .*MiB/h", shown["server_rss"][7]), \
            shown["server_rss"]

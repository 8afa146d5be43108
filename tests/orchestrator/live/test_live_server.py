"""The live page's HTTP side against a real aiohttp server on a free loopback port: the state a late page
loads from the journal, server-sent events as the bus publishes, Last-Event-ID resumption, reloads when a
page is behind the ring, drop counting, redaction and read-only routes."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from config_support import make_config

from orchestrator.events import MemoryDetail, RequestCorrelated, RunStarted, ServerRestarting, SoakVerdict
from orchestrator.live.address import ServeAddress
from orchestrator.live.feed import LiveFeed
from orchestrator.live.privacy import page_scrubber
from orchestrator.live.server import LivePage
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import JournalWriter

pytestmark = pytest.mark.anyio

SECRET = "hf_live_secret_value_123"


@dataclass
class Live:
    bus: Bus
    writer: JournalWriter
    feed: LiveFeed
    page: LivePage
    run_dir: Path

    async def flush(self) -> bool:
        return await self.writer.wait_written(self.bus.statistics().published, 10.0)


def _request(i: int, *, ok: bool = True) -> RequestCorrelated:
    return RequestCorrelated(source="correlate", request_id=f"r{i}", window="soak/w0001", phase="profiling", ok=ok,
                             cause="ok" if ok else "timeout", request_latency_ms=100.0 + i, model_call_ms=80.0 + i,
                             request_start_ns=1, request_end_ns=2)


@asynccontextmanager
async def _live(tmp_path: Path, *, before: int = 0, ring: int = 2048, sub_size: int = 4096) -> AsyncIterator[Live]:
    """A bus with its journal writer, `before` requests published before the page starts, and the page."""
    run_dir = tmp_path / "run"
    config = make_config(server={"env": {"HF_TOKEN": SECRET}})
    bus = Bus("live-test")
    writer = JournalWriter(run_dir / "events.jsonl")
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run, bus)
        await bus.publish(RunStarted(source="run", command="soak", config=config, run_dir=str(run_dir)))
        for i in range(before):
            await bus.publish(_request(i))
        live = Live(bus, writer, None, None, run_dir)  # type: ignore[arg-type]
        scrub = page_scrubber(config, "live-test", run_dir, ["aqbench", "soak"])
        live.feed = LiveFeed(bus, writer.path, scrub=scrub, flush=live.flush, ring=ring, sub_size=sub_size)
        live.page = LivePage(ServeAddress(port=0), live.feed)
        try:
            await tg.start(live.feed.run)
            await tg.start(live.page.run)
            yield live
        finally:
            tg.cancel_scope.cancel()
            with anyio.CancelScope(shield=True):
                await bus.aclose(timeout_s=5)


async def _sse(resp: aiohttp.ClientResponse, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The next `count` events of a stream: {'id', 'event', 'data'} (comments and retry lines skipped)."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with anyio.fail_after(timeout_s):
        while len(out) < count:
            line = (await resp.content.readline()).decode().rstrip("\n")
            if not line:
                if "event" in current:
                    out.append(current)
                current = {}
            elif line.startswith(":") or line.startswith("retry:"):
                continue
            else:
                field, _, value = line.partition(": ")
                current[field] = json.loads(value) if field == "data" else value
    return out


def _counters(frame: dict[str, Any]) -> dict[str, Any]:
    return next(ch[3] for ch in reversed(frame["data"]["changes"]) if ch[2] == "counters")


class TestLiveState:
    async def test_a_late_page_loads_everything_so_far_from_the_journal(self, tmp_path: Path) -> None:
        """A page opened after 30 requests reads them all in /state, folded from the journal."""
        async with _live(tmp_path, before=30) as live, aiohttp.ClientSession() as http, \
                http.get(live.page.url + "state") as resp:
            body = await resp.json()
        assert body["state"]["counters"]["issued"] == 30
        assert body["state"]["run"]["command"] == "soak"
        assert body["state"]["seq"] >= 31  # RunStarted and the 30 requests
        assert len(body["state"]["latency"]) == 30 and body["state"]["latency"][0][1:] == [100.0, None, 80.0]
        assert body["live_dropped"] == 0

    async def test_the_page_is_read_only(self, tmp_path: Path) -> None:
        """Only GET routes exist: a POST is refused and an unknown path is not found."""
        async with _live(tmp_path) as live, aiohttp.ClientSession() as http:
            async with http.post(live.page.url + "state", data=b"{}") as resp:
                assert resp.status == 405
            async with http.get(live.page.url + "../etc/passwd") as resp:
                assert resp.status == 404
            async with http.get(live.page.url) as resp:
                assert resp.status == 200 and "aqbench" in await resp.text()


class TestLiveEvents:
    async def test_changes_stream_as_the_bus_publishes(self, tmp_path: Path) -> None:
        """A page following from its state's seq gets the counters of each new request, in order."""
        async with _live(tmp_path, before=2) as live, aiohttp.ClientSession() as http:
            async with http.get(live.page.url + "state") as resp:
                seq = (await resp.json())["state"]["seq"]
            async with http.get(live.page.url + f"events?since={seq}") as stream:
                assert stream.headers["Content-Type"] == "text/event-stream"
                await live.bus.publish(_request(2))
                [first] = await _sse(stream, 1)
                await live.bus.publish(_request(3, ok=False))
                [second] = await _sse(stream, 1)
        assert first["event"] == "changes" and int(first["id"]) > seq
        assert _counters(first)["issued"] == 3
        assert _counters(second) | {} == {**_counters(second), "issued": 4, "errors": 1, "by_cause": {"timeout": 1}}
        assert int(second["id"]) > int(first["id"])

    async def test_a_reconnecting_page_resumes_after_its_last_event_id(self, tmp_path: Path) -> None:
        """Reconnecting with Last-Event-ID sends only what came after it: nothing is repeated or lost."""
        async with _live(tmp_path) as live, aiohttp.ClientSession() as http:
            async with http.get(live.page.url + "events?since=0") as stream:
                await live.bus.publish(_request(0))
                [seen] = await _sse(stream, 1)
            for i in range(1, 4):  # published while the page is away
                await live.bus.publish(_request(i))
            await _wait(lambda: live.feed.head >= live.bus.statistics().published)
            async with http.get(live.page.url + "events", headers={"Last-Event-ID": seen["id"]}) as stream:
                frames = await _sse(stream, 1)
                while _counters(frames[-1])["issued"] < 4:
                    frames += await _sse(stream, 1)
        changes = [ch for f in frames for ch in f["data"]["changes"]]
        assert all(ch[0] > int(seen["id"]) for ch in changes)
        latency = [ch[3] for ch in changes if ch[2] == "latency"]
        assert [p[1] for p in latency] == [101.0, 102.0, 103.0]  # each once, in order

    async def test_a_page_behind_the_ring_is_told_to_reload(self, tmp_path: Path) -> None:
        """When the ring no longer holds what a page missed, the stream says `reload` (and the page counts it)."""
        async with _live(tmp_path, ring=2) as live, aiohttp.ClientSession() as http:
            for i in range(6):
                await live.bus.publish(_request(i))
                await _wait(lambda: live.feed.head >= live.bus.statistics().published)
            async with http.get(live.page.url + "events", headers={"Last-Event-ID": "1"}) as stream:
                [reload] = await _sse(stream, 1)
            async with http.get(live.page.url + "state") as resp:
                state = (await resp.json())["state"]
        assert reload["event"] == "reload" and live.page.reloads == 1
        assert state["counters"]["issued"] == 6  # the reload gets everything, from the journal

    async def test_a_slow_feed_counts_its_drops_and_shows_them(self, tmp_path: Path) -> None:
        """Events published faster than the feed reads are dropped, never waited for; the count reaches the page."""
        async with _live(tmp_path, sub_size=2) as live, aiohttp.ClientSession() as http:
            for i in range(50):  # no await between them: the feed cannot read, its buffer holds 2
                live.bus.publish_nowait(_request(i))
            assert live.feed.dropped >= 40
            async with http.get(live.page.url + "events?since=0") as stream:
                frames = await _sse(stream, 1)
                while not any(ch[2] == "live_dropped" for f in frames for ch in f["data"]["changes"]):
                    frames += await _sse(stream, 1)
            async with http.get(live.page.url + "state") as resp:
                body = await resp.json()
        dropped = [ch[3] for f in frames for ch in f["data"]["changes"] if ch[2] == "live_dropped"]
        assert dropped[-1] == live.feed.dropped
        assert body["live_dropped"] == live.feed.dropped
        assert body["state"]["counters"]["issued"] == 50  # the journal lost nothing

    async def test_only_what_publish_lets_through_is_shown(self, tmp_path: Path) -> None:
        """A restart cause naming a secret, the run folder and this host reaches the page with placeholders."""
        async with _live(tmp_path) as live, aiohttp.ClientSession() as http:
            async with http.get(live.page.url + "events?since=0") as stream:
                reason = (f"HF_TOKEN={SECRET} crashed; see {live.run_dir}/server.log on {socket.gethostname()} "
                          f"(Authorization: Bearer abcdefghijk123)")
                await live.bus.publish(ServerRestarting(source="supervisor", incarnation=1, attempt=1, backoff_s=1.0,
                                                        reason=reason))
                [frame] = await _sse(stream, 1)
            async with http.get(live.page.url + "state") as resp:
                state_text = await resp.text()
        for text in (json.dumps(frame["data"]), state_text):
            assert SECRET not in text and str(live.run_dir) not in text and "abcdefghijk123" not in text
            assert socket.gethostname() not in text
        [cause] = frame["data"]["changes"][-1][3]["causes"]
        assert "<run-dir>/server.log" in cause and "<host>" in cause and "<redacted>" in cause

    async def test_the_final_verdicts_reach_the_page_and_the_stream_ends(self, tmp_path: Path) -> None:
        """A final verdict (with its interval and what it can detect) arrives, and closing the feed ends streams."""
        async with _live(tmp_path) as live, aiohttp.ClientSession() as http, \
                http.get(live.page.url + "events?since=0") as stream:
            detail = MemoryDetail(slope=2.0, interval=[-1.0, 5.0], limit=10.0, unit="MiB/h")
            await live.bus.publish(SoakVerdict(source="soak", metric="server_rss", passed=True, final=True,
                                               outcome="pass", slope=2.0, interval=[-1.0, 5.0], limit=10.0,
                                               unit="MiB/h", detail=detail, reason="within the limit"))
            [frame] = await _sse(stream, 1)
            live.feed.close()
            [end] = await _sse(stream, 1)
        verdict = frame["data"]["changes"][-1][3]
        assert verdict["name"] == "server_rss" and verdict["final"] and verdict["interval"] == [-1.0, 5.0]
        assert verdict["detects"] == "a slope beyond ±3 MiB/h (can tell it from the limit 10)"
        assert end["event"] == "end"


async def _wait(pred: Any, timeout_s: float = 10.0) -> None:
    with anyio.fail_after(timeout_s):
        while not pred():
            await anyio.sleep(0.01)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # aiohttp's client honours proxy variables only with trust_env; keep loopback requests local anyway.
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)


class TestServeCommandLine:
    def test_soak_qualify_and_sweep_take_serve_and_refuse_a_public_address_without_the_flag(self) -> None:
        """`--serve` parses on each command; 0.0.0.0 needs --serve-public, and --serve-public alone is an error."""
        from orchestrator.base.errors import UsageError
        from orchestrator.cli import build_parser
        from orchestrator.commands.serve_args import serve_address

        parser = build_parser()
        for command in ("soak", "qualify", "sweep"):
            assert serve_address(parser.parse_args([command, "--serve", "8090"])) == ServeAddress(port=8090)
            with pytest.raises(UsageError, match="Add --serve-public"):
                serve_address(parser.parse_args([command, "--serve", "0.0.0.0:8090"]))
            public = serve_address(parser.parse_args([command, "--serve", "0.0.0.0:8090", "--serve-public"]))
            assert public is not None and not public.loopback
            with pytest.raises(UsageError, match="--serve-public needs --serve"):
                serve_address(parser.parse_args([command, "--serve-public"]))
            assert serve_address(parser.parse_args([command])) is None

    def test_serve_linger_takes_durations_and_defaults_to_0_off_a_terminal(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """`--serve-linger 10m` keeps the page 600 s after the run, `0` not at all; without it, 5 minutes on a
        terminal and 0 off one (a script gets its exit code at once); alone, without --serve, it is refused."""
        import io

        from orchestrator.base.errors import UsageError
        from orchestrator.cli import build_parser
        from orchestrator.commands.serve_args import serve_address

        parser = build_parser()
        for command in ("soak", "qualify", "sweep", "campaign"):
            def linger(*extra: str, cmd: str = command) -> float:
                address = serve_address(parser.parse_args([cmd, "--serve", "0", *extra]))
                assert address is not None
                return address.linger_s

            assert linger("--serve-linger", "10m") == 600.0 and linger("--serve-linger", "90") == 90.0
            assert linger("--serve-linger", "0") == 0.0
            monkeypatch.setattr("sys.stderr", io.StringIO())
            assert linger() == 0.0
            tty = io.StringIO()
            tty.isatty = lambda: True  # type: ignore[method-assign]
            monkeypatch.setattr("sys.stderr", tty)
            assert linger() == 300.0
            monkeypatch.undo()
            with pytest.raises(UsageError, match="--serve-linger needs --serve"):
                serve_address(parser.parse_args([command, "--serve-linger", "5m"]))

    async def test_a_taken_port_stops_before_the_run_with_the_address(self, tmp_path: Path) -> None:
        """Another listener on the port: the page's start raises UsageError naming it, nothing is left serving."""
        from orchestrator.base.errors import UsageError

        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            bus = Bus("live-test")
            feed = LiveFeed(bus, tmp_path / "events.jsonl", scrub=lambda x: x)
            async with anyio.create_task_group() as tg:
                with pytest.raises(UsageError, match=rf"--serve 127.0.0.1:{port}: cannot listen there .*choose "
                                                     r"another port, or 0"):
                    await tg.start(LivePage(ServeAddress(port=port), feed).run)


class TestTheRunsEnd:
    """`serve_live` around a real `open_run` with `start_live_page`: the page listens before the run, outlives
    the run's task group until the bus closes, then lingers as `--serve-linger` says."""

    async def _watch_run(self, tmp_path: Path, *, cancel: bool, linger_s: float = 0.0,
                         after: Any = None) -> tuple[list[dict[str, Any]], str, int]:
        """Run a short run with a page and one stream on it; the frames the stream got, the page's url and the
        exit code. `after(url, interrupt)` runs beside the linger, once the run has ended."""
        from orchestrator.live.start import serve_live, start_live_page
        from orchestrator.run import Interrupt, open_run

        cfg = make_config()
        frames: list[dict[str, Any]] = []
        urls: list[str] = []
        interrupt = Interrupt()

        async def body(page: LivePage | None) -> int:
            assert page is not None
            urls.append(page.url)
            async with open_run(cfg, command="soak", argv=[], run_dir=tmp_path / "run", close_timeout_s=5) as run:
                await start_live_page(run, page)
                http = aiohttp.ClientSession()
                stream = await http.get(page.url + "events?since=0")

                async def read() -> None:
                    try:  # shielded like the page: it reads on while the run is cancelled
                        with anyio.CancelScope(shield=True):
                            while not frames or frames[-1]["event"] != "end":
                                frames.extend(await _sse(stream, 1))
                    finally:
                        stream.close()
                        await http.close()

                run.after.start_soon(read)  # type: ignore[union-attr]
                await run.bus.publish(_request(1))
                run.finish(status="failed", exit_code=1)
                if cancel:
                    outer.cancel()
                    await anyio.sleep_forever()
            if after is not None:
                tg.start_soon(after, page.url, interrupt)
            return run.exit_code

        rc = -1
        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as outer:
                rc = await serve_live(ServeAddress(port=0, linger_s=linger_s), interrupt, body)
        return frames, urls[0], rc

    async def test_the_page_shows_the_final_status_then_stops_serving(self, tmp_path: Path) -> None:
        """The stream's last frame before `end` carries RunFinished's status; with no linger, nothing listens
        once the command returns."""
        frames, url, rc = await self._watch_run(tmp_path, cancel=False)
        assert frames[-1]["event"] == "end" and rc == 1
        runs = [ch[3] for f in frames[:-1] for ch in f["data"]["changes"] if ch[2] == "run"]
        assert runs[-1]["status"] == "failed" and runs[-1]["finished_unix_ns"] > 0
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientConnectionError):
                await http.get(url + "state")

    async def test_an_interrupted_run_says_so_on_the_page(self, tmp_path: Path) -> None:
        """Cancelled mid-run (as SIGINT does), the page still gets RunFinished: status `interrupted`."""
        frames, _, _ = await self._watch_run(tmp_path, cancel=True, linger_s=60)
        runs = [ch[3] for f in frames[:-1] for ch in f["data"]["changes"] if ch[2] == "run"]
        assert frames[-1]["event"] == "end" and runs[-1]["status"] == "interrupted"
        assert runs[-1]["reason"] == "cancelled"

    async def test_the_page_answers_after_the_runs_end_while_it_lingers(self, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
        """With `--serve-linger`, after RunFinished the page still answers: its first HTML holds the final
        status and says the run has ended, /state too; the terminal says how long it stays. A signal then
        (the interrupt's linger scope, as run_main's watcher cancels it) ends the wait at once, and the run's own
        exit code stands."""
        seen: dict[str, Any] = {}

        async def after(url: str, interrupt: Any) -> None:
            with anyio.fail_after(10):
                while interrupt.linger is None:
                    await anyio.sleep(0.01)
            async with aiohttp.ClientSession() as http:
                async with http.get(url) as resp:
                    seen["html"] = await resp.text()
                async with http.get(url + "state") as resp:
                    seen["state"] = (await resp.json())["state"]["run"]
            interrupt.linger.cancel()  # what Ctrl-C does while the page lingers

        with anyio.fail_after(30):  # the linger is 10 minutes: only the signal ends it this soon
            frames, url, rc = await self._watch_run(tmp_path, cancel=False, linger_s=600, after=after)
        assert rc == 1 and frames[-1]["event"] == "end"
        assert 'class="badge failed">failed<' in seen["html"] and "the run has ended" in seen["html"]
        assert seen["state"]["status"] == "failed"
        err = capsys.readouterr().err
        assert f"live page: {url} stays up 10:00 with the run's final state (Ctrl-C ends it sooner" in err
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientConnectionError):
                await http.get(url + "state")

    async def test_the_url_is_said_with_the_port_chosen_for_0(self, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
        """`--serve 0` at any log level: the terminal gets `live page: http://127.0.0.1:<the real port>/` as soon
        as the page listens, and that URL answers."""
        from orchestrator.live.start import serve_live
        from orchestrator.run import Interrupt
        from orchestrator.spine.logs import configure_logging

        configure_logging(fmt="console", level="error")  # the line shows at a level that hides the logs

        async def body(page: LivePage | None) -> int:
            assert page is not None
            said = capsys.readouterr().err
            port = int(page.url.rsplit(":", 1)[1].strip("/"))
            assert port > 0 and f"live page: http://127.0.0.1:{port}/\n" in said, said
            async with aiohttp.ClientSession() as http, http.get(page.url) as resp:
                assert resp.status == 200 and "no verdict yet" in await resp.text()
            return 0

        assert await serve_live(ServeAddress(port=0), Interrupt(), body) == 0


class TestFewerFramesWithManyPages:
    def test_the_tick_stretches_with_the_pages_open_up_to_a_second(self, tmp_path: Path) -> None:
        """One page: a frame every 0.1 s; 20 pages: every 0.5 s; never slower than once a second."""
        feed = LiveFeed(Bus("live-test"), tmp_path / "events.jsonl", scrub=lambda x: x)
        ticks = {}
        for readers in (0, 1, 4, 20, 100):
            feed.readers = readers
            ticks[readers] = feed.tick_s()
        assert ticks == {0: 0.1, 1: 0.1, 4: 0.1, 20: pytest.approx(0.5), 100: 1.0}


class TestMemoryOfQualifyAndSweep:
    async def test_aqbench_and_the_running_aiperfs_memory_reach_the_page(self, tmp_path: Path) -> None:
        """`sample_processes` (qualify, sweep): aqbench's RSS, and that of the process AiperfStarted names (a real
        child process here), reach the page's memory series."""
        import sys

        from orchestrator.events import AiperfStarted
        from orchestrator.live.start import start_live_page
        from orchestrator.run import open_run

        cfg = make_config(server={"sample_period_s": 0.05})
        async with await anyio.open_process([sys.executable, "-c", "import time; time.sleep(60)"]) as child, \
                open_run(cfg, command="qualify", argv=[], run_dir=tmp_path / "run", close_timeout_s=5) as run:
            run.tg.start_soon(_kill_at_exit, child)
            page = LivePage(ServeAddress(port=0))
            await run.tg.start(page.run)
            await start_live_page(run, page, sample_processes=True)
            await run.bus.publish(AiperfStarted(source="aiperf", window="m/aiperf", argv=[], shell="", artifact_dir="",
                                                pid=child.pid))
            roles: set[str] = set()
            async with aiohttp.ClientSession() as http:
                with anyio.fail_after(20):
                    while roles != {"aqbench", "aiperf"}:
                        async with http.get(page.url + "state") as resp:
                            roles = {p[3] for p in (await resp.json())["state"]["memory"]}
                        await anyio.sleep(0.05)


async def _kill_at_exit(proc: anyio.abc.Process) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        proc.kill()

"""The supervisor against real scripted server subprocesses: start, readiness, crash, restart, stop."""

from __future__ import annotations

import os
import signal
import socket
import time

import anyio
import psutil
import pytest
from supervisor_support import MODEL, drain, kinds, make_spec, new_bus

from orchestrator.base.errors import ServerError
from orchestrator.events import PhaseStarted, ResourceSampled, ServerExited
from orchestrator.reports.fold import fold
from orchestrator.supervision.supervisor import ServerHandle, supervise, supervised

pytestmark = pytest.mark.anyio


def states(events: list) -> list[str]:
    return [e.state for e in kinds(events, "ServerStateChanged")]


class TestStartAndStop:
    async def test_ready_then_clean_stop_by_its_own_signal(self, tmp_path):
        """A healthy server is ready with its model listed, and dying of our SIGINT counts as clean."""
        bus, sub = new_bus()
        spec = make_spec(tmp_path)
        async with supervised(spec, bus) as handle:
            assert handle.state == "ready"
            assert handle.base_url == f"http://127.0.0.1:{spec.port}"
            await handle.wait_ready(1.0)
            with anyio.fail_after(10):  # samples 0.2 s apart, one after readiness (the one a peak counts)
                while handle.statistics().samples < 3 or not handle.statistics().peak_rss_bytes:
                    await anyio.sleep(0.02)
            stats = handle.statistics()
        events = drain(sub)
        spawned = kinds(events, "ServerSpawned")[0]
        assert spawned.records_path == str(tmp_path / "server" / MODEL / "records-1.jsonl")
        assert spawned.port == spec.port
        ready = kinds(events, "ServerReady")[0]
        assert [m["id"] for m in ready.models] == [MODEL]
        exited = kinds(events, "ServerExited")
        assert len(exited) == 1
        assert (exited[0].expected, exited[0].during, exited[0].signal) == (True, "stop", "SIGINT")
        assert states(events) == ["starting", "ready", "stopping", "stopped"]
        assert stats.samples >= 2 and stats.peak_rss_bytes > 5_000_000
        sampled = kinds(events, "ResourceSampled")[0]
        assert sampled.pid == spawned.pid and sampled.threads >= 1 and sampled.open_files >= 3
        assert not psutil.pid_exists(spawned.pid) or psutil.Process(spawned.pid).status() == "zombie"

    async def test_the_servers_in_flight_gauge_is_published_when_it_changes(self, tmp_path):
        """A ready server's own gauge of requests in flight (/metrics) is read with each periodic sample and
        published as ServerLoadSampled only when it moved: up and down, never the same value twice in a row."""
        bus, sub = new_bus()
        events: list = []

        def gauge() -> list[int]:
            events.extend(drain(sub))
            return [e.in_flight for e in kinds(events, "ServerLoadSampled")]

        async with supervised(make_spec(tmp_path, "--in-flight", "0,0,2,3,3,1,0"), bus):
            with anyio.fail_after(20):  # samples 0.2 s apart; the script is read once it is ready
                while not (len(gauge()) > 1 and gauge()[-1] == 0):
                    await anyio.sleep(0.05)
        got = gauge()
        assert {e.incarnation for e in kinds(events, "ServerLoadSampled")} == {1}
        # The script's changes in order (a reading that timed out on a loaded machine is skipped, never repeated).
        assert got[0] == 0 and max(got) > 0 and all(a != b for a, b in zip(got, got[1:], strict=False))
        left = iter([0, 2, 3, 1, 0])
        assert all(v in left for v in got), got

    async def test_a_server_without_the_gauge_publishes_no_load(self, tmp_path):
        """No /metrics gauge (404): nothing is published, and the server is judged as before."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path), bus) as handle:
            with anyio.fail_after(10):
                while handle.statistics().samples < 4:
                    await anyio.sleep(0.05)
        events = drain(sub)
        assert not kinds(events, "ServerLoadSampled") and states(events)[-1] == "stopped"

    async def test_output_lines_become_events_and_server_log(self, tmp_path):
        """JSON lines are parsed into fields, text lines stay raw, and both land in server.log."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path), bus):
            pass
        lines = kinds(drain(sub), "LogLine")
        listening = [line for line in lines if line.fields and line.fields.get("event") == "listening"]
        assert listening and listening[0].stream == "stdout" and listening[0].level == "info"
        assert listening[0].incarnation == 1
        raw = [line for line in lines if line.stream == "stderr"]
        assert raw[0].text == "plain text line on stderr" and raw[0].fields is None
        log_text = (tmp_path / "server.log").read_text()
        assert "plain text line on stderr" in log_text and '"event": "listening"' in log_text

    async def test_ignores_sigint_is_killed_after_grace(self, tmp_path):
        """A server that ignores the stop signal is SIGKILLed after stop_grace_s, with a warning."""
        bus, sub = new_bus()
        started = time.monotonic()
        async with supervised(make_spec(tmp_path, "--ignore-stop", stop_grace_s=0.5), bus):
            stop_from = time.monotonic()
        took = time.monotonic() - stop_from
        events = drain(sub)
        exited = kinds(events, "ServerExited")[0]
        assert exited.signal == "SIGKILL" and exited.during == "stop"
        assert 0.5 <= took < 6.0, took  # grace + kill; loose for shared CI cores
        warned = kinds(events, "Warned")
        assert any(w.code == "server_stop_forced" and "0.5 s of SIGINT" in w.message for w in warned)
        assert time.monotonic() - started < 10

    async def test_short_lived_server_peak_is_sampled_ready_never_pre_ready(self, tmp_path):
        """A server that lives under one sample period: its peak comes from the samples taken at readiness
        and just before stop; the sample taken at spawn (before readiness) is flagged and never the peak."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path, "--hold-mib", "64", "--startup-delay", "0.3",
                                        sample_period_s=3600.0), bus) as handle:
            pass
        events = drain(sub)
        samples = kinds(events, "ResourceSampled")
        assert [(s.trigger, s.pre_ready) for s in samples] == [("period", True), ("ready", False), ("stop", False)]
        assert samples[0].rss_bytes < 64 * 2**20 <= min(s.rss_bytes for s in samples[1:])
        assert handle.statistics().peak_rss_bytes == max(s.rss_bytes for s in samples[1:])
        report = fold([PhaseStarted(phase="model", model=MODEL), *events])
        assert report.rows[0].server.peak_rss_bytes == max(s.rss_bytes for s in samples[1:])

    async def test_pre_ready_sample_alone_is_no_peak(self, tmp_path):
        """A report over a journal whose only sample predates readiness shows no peak rather than that one."""
        sampled = ResourceSampled(incarnation=1, pid=1, rss_bytes=7 * 2**20, pre_ready=True, trigger="period")
        report = fold([PhaseStarted(phase="model", model=MODEL), sampled])
        assert report.rows[0].server.peak_rss_bytes is None

    async def test_stop_that_never_finishes_is_bounded_and_warned(self, tmp_path, monkeypatch):
        """A stop whose supervisor never finishes returns after its deadline, and a Warned event says so."""
        import orchestrator.supervision.supervisor as supervisor_module

        monkeypatch.setattr(supervisor_module, "_STOP_MARGIN_S", 0.05)
        bus, sub = new_bus()
        handle = ServerHandle(make_spec(tmp_path, stop_grace_s=0.1))
        handle._sink = bus  # what the supervisor sets; nothing will ever mark this handle done
        with anyio.fail_after(5):
            assert await handle.stop() is False
        [warned] = kinds(drain(sub), "Warned")
        assert warned.code == "server_stop_timed_out" and "within 0.2 s" in warned.message

    async def test_grandchild_in_own_session_is_killed_as_orphan(self, tmp_path):
        """A grandchild that left the process group is found after stop, killed and reported."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path, "--grandchild"), bus):
            pass  # the server starts its grandchild and announces it before it listens, so before ready
        events = drain(sub)
        announced = [line.fields["grandchild_pid"] for line in kinds(events, "LogLine")
                     if line.fields and "grandchild_pid" in line.fields]
        orphans = kinds(events, "OrphanKilled")
        assert [o.pid for o in orphans] == announced
        assert "time.sleep(600)" in " ".join(orphans[0].cmdline)
        gone = not psutil.pid_exists(announced[0]) or psutil.Process(announced[0]).status() == "zombie"
        assert gone

    async def test_orphan_found_by_marker_without_any_sample(self, tmp_path):
        """Even with no resource sample taken, the environment marker finds the escaped grandchild."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path, "--grandchild", sample_period_s=3600.0), bus) as handle:
            # The one sample at spawn may predate the grandchild; the marker scan must not depend on it.
            pass
        assert len(kinds(drain(sub), "OrphanKilled")) == 1
        assert handle.statistics().orphans_killed == 1


class TestStartupFailures:
    async def test_crash_during_startup_fails_fast_with_code_and_last_lines(self, tmp_path):
        """A server exiting before ready raises ServerError with its exit code and last output."""
        bus, sub = new_bus()
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            with pytest.raises(ServerError, match=r"exited during startup \(exit code 3\); last lines:\n"
                                              r"(.|\n)*fatal: cannot load bundle \(scripted crash\)"):
                await tg.start(supervise, make_spec(tmp_path, "--crash-on-start", startup_timeout_s=60.0), bus)
        assert time.monotonic() - started < 20  # not the 60 s start-up timeout
        events = drain(sub)
        exited = kinds(events, "ServerExited")
        assert len(exited) == 1 and exited[0].returncode == 3 and exited[0].during == "startup"
        assert not exited[0].expected
        assert states(events)[-1] == "failed"
        assert not kinds(events, "ServerRestarting")

    async def test_startup_timeout_says_how_long_and_last_probe(self, tmp_path):
        """A server slower than startup_timeout_s is stopped and the error names the wait and last probe."""
        bus, sub = new_bus()
        async with anyio.create_task_group() as tg:
            with pytest.raises(ServerError, match=r"not ready after 1 s \(server.startup_timeout_s, \d+ probes\); "
                                              r"last probe: GET http://127.0.0.1:\d+/health/ready: cannot connect"):
                await tg.start(supervise, make_spec(tmp_path, "--startup-delay", "30", startup_timeout_s=1.0), bus)
        events = drain(sub)
        assert kinds(events, "ServerExited")[0].during == "stop"
        assert states(events) == ["starting", "stopping", "failed"]

    async def test_port_in_use_is_refused_naming_port_and_holder(self, tmp_path):
        """A bound port is refused before spawning, naming the port and this process as holder."""
        bus, sub = new_bus()
        holder = socket.socket()
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        try:
            async with anyio.create_task_group() as tg:
                with pytest.raises(ServerError, match=rf"port {port} on 127.0.0.1 is already in use by pid {os.getpid()} "):
                    await tg.start(supervise, make_spec(tmp_path, port=port), bus)
        finally:
            holder.close()
        assert not kinds(drain(sub), "ServerSpawned")

    async def test_wrong_model_listed_fails(self, tmp_path):
        """A server that does not list the configured model fails start-up naming both."""
        bus, _ = new_bus()
        async with anyio.create_task_group() as tg:
            with pytest.raises(ServerError, match=r"lists \['other'\] but not the configured model 'test-model'"):
                await tg.start(supervise, make_spec(tmp_path, "--listed-model", "other"), bus)


class TestCrashAndRestart:
    async def test_crash_mid_run_is_noticed_fast_and_restarted(self, tmp_path):
        """SIGKILL from outside: ServerExited(expected=False, during=run) at once, then incarnation 2.

        Health probes are an hour apart here, so only awaiting the process can notice the crash; the
        bound is loose (shared CI cores), bench/supervisor.py measures the real figure (~4-11 ms)."""
        bus, sub = new_bus()
        spec = make_spec(tmp_path, health_period_s=3600.0)
        async with supervised(spec, bus) as handle:
            first_pid = handle.pid
            os.kill(first_pid, signal.SIGKILL)
            killed_ns = time.monotonic_ns()
            with anyio.fail_after(5):
                while handle.incarnation < 2 or handle.state != "ready":
                    await anyio.sleep(0.02)
            assert handle.pid != first_pid
        events = drain(sub)
        crash = next(e for e in events if isinstance(e, ServerExited) and e.pid == first_pid)
        assert (crash.expected, crash.during, crash.signal, crash.returncode) == (False, "run", "SIGKILL", -9)
        assert (crash.mono_ns - killed_ns) / 1e6 < 2000
        assert any("listening" in line for line in crash.output_tail)  # pipes interleave freely
        restarting = kinds(events, "ServerRestarting")
        assert [(r.incarnation, r.attempt, r.cause) for r in restarting] == [(2, 1, "exited")]
        spawned = kinds(events, "ServerSpawned")
        assert [s.incarnation for s in spawned] == [1, 2]
        assert spawned[1].port == spawned[0].port
        assert spawned[1].records_path.endswith(f"/{MODEL}/records-2.jsonl")
        assert [r.incarnation for r in kinds(events, "ServerReady")] == [1, 2]
        assert handle.statistics().restarts == 1

    async def test_hang_restarts_after_failure_threshold(self, tmp_path):
        """Health that stops answering turns unhealthy and, past the threshold, restarts the server."""
        bus, sub = new_bus()
        spec = make_spec(tmp_path, "--hang-after", "0.3", restart={"max_restarts": 1})
        async with supervised(spec, bus) as handle:
            with anyio.fail_after(8):
                while handle.incarnation < 2 or handle.state != "ready":
                    await anyio.sleep(0.05)
        events = drain(sub)
        health = kinds(events, "ServerHealthChanged")
        assert health[0].healthy is False and "no answer within 0.5 s" in health[0].detail
        assert "unhealthy" in states(events)
        restarting = kinds(events, "ServerRestarting")[0]
        assert "2 readiness probes failed in a row" in restarting.reason
        assert restarting.cause == "unresponsive"  # no answer at all: a hang, told apart from "not ready"
        first_exit = kinds(events, "ServerExited")[0]
        assert first_exit.during == "stop" and first_exit.expected and first_exit.stopped_for == "unresponsive"

    async def test_restart_limit_reached_fails(self, tmp_path):
        """A server that keeps dying exhausts max_restarts and the supervisor fails with the reason."""
        bus, sub = new_bus()
        spec = make_spec(tmp_path, "--not-ready-after", "0.2", restart={"max_restarts": 1})
        with pytest.raises(ServerError, match=r"(?s)failed: .*readiness probes failed in a row.*; "
                                              r"restart limit reached: 1 restarts within 60 s"):
            async with supervised(spec, bus) as handle:
                with anyio.fail_after(20):  # the restart limit cancels this body long before
                    await anyio.sleep_forever()
        events = drain(sub)
        assert handle.state == "failed"
        assert [s.incarnation for s in kinds(events, "ServerSpawned")] == [1, 2]
        assert states(events)[-1] == "failed"
        health = kinds(events, "ServerHealthChanged")
        assert health[0].status_code == 503 and '"not_ready"' in health[0].detail
        # The restart policy gave up on incarnation 2: its stop still says why it was made.
        assert [(e.incarnation, e.stopped_for) for e in kinds(events, "ServerExited")] == [(1, "unready"),
                                                                                           (2, "unready")]

    async def test_never_policy_fails_on_first_crash(self, tmp_path):
        """With restart policy 'never' a crash mid-run fails the supervisor at once."""
        bus, sub = new_bus()
        spec = make_spec(tmp_path, restart={"policy": "never"})
        with pytest.raises(ServerError, match=r"(?s)exited during run \(killed by SIGTERM\).*restart policy is 'never'"):
            async with supervised(spec, bus) as handle:
                os.kill(handle.pid, signal.SIGTERM)
                with anyio.fail_after(10):  # the crash cancels this body long before
                    await anyio.sleep_forever()
        assert not kinds(drain(sub), "ServerRestarting")

    async def test_degraded_is_its_own_state(self, tmp_path):
        """`degraded: true` with 200 is reported as the degraded state, healthy, without restart."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path, "--degraded-after", "0.1"), bus) as handle:
            with anyio.fail_after(3):
                while handle.state != "degraded":
                    await anyio.sleep(0.05)
            await handle.wait_ready(0.1)
        events = drain(sub)
        # Degraded either after ready (a health change) or already at the readiness probe (slow start).
        assert "degraded" in states(events)
        assert all(c.healthy and c.degraded for c in kinds(events, "ServerHealthChanged"))
        assert not kinds(events, "ServerRestarting")


class TestCancellation:
    async def test_cancelled_scope_stops_server_shielded(self, tmp_path):
        """Cancelling the task group that runs supervise still stops the server and reports it."""
        bus, sub = new_bus()
        async with anyio.create_task_group() as tg:
            handle = await tg.start(supervise, make_spec(tmp_path), bus)
            tg.cancel_scope.cancel()
        events = drain(sub)
        exited = kinds(events, "ServerExited")
        assert exited and exited[0].expected and exited[0].signal == "SIGINT"
        assert handle.state == "stopped"
        assert states(events) == ["starting", "ready", "stopping", "stopped"]
        # The stop is journaled after the spawn and readiness it ends, even though the scope was cancelled.
        order = [type(e).__name__ for e in events if type(e).__name__ in ("ServerSpawned", "ServerReady", "ServerExited")]
        assert order == ["ServerSpawned", "ServerReady", "ServerExited"]
        assert not psutil.pid_exists(handle.pid) or psutil.Process(handle.pid).status() == "zombie"

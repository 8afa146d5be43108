"""The supervisor with the real reference server (`python -m adapters.reference`) from bench.toml."""

from __future__ import annotations

import time
from pathlib import Path

import aiohttp
import anyio
import msgspec
import pytest
from supervisor_support import drain, kinds, new_bus

from adapters.server_kinds import server_parts
from orchestrator.config import load_config
from orchestrator.supervision.supervisor import ServerSpec, supervised

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.servers]
REPO = Path(__file__).resolve().parents[3]


def _spec(tmp_path: Path, *extra: str) -> ServerSpec:
    cfg = load_config(REPO / "bench.toml")
    server = msgspec.structs.replace(
        cfg.server, argv=[*cfg.server.argv, *extra], replicas=1, cwd=str(REPO), health_period_s=0.2,
        health_timeout_s=1.0, health_failure_threshold=2, stop_grace_s=10.0, sample_period_s=0.5,
        restart=msgspec.structs.replace(cfg.server.restart, backoff_s=0.1),
    )
    cfg = msgspec.structs.replace(cfg, server=server)
    return ServerSpec.from_config(cfg, cfg.models[0], tmp_path, parts=server_parts(cfg.server.kind))


async def test_reference_server_ready_crash_restart_and_clean_stop(tmp_path):
    """Ready with its model listed; a crash fault mid-run restarts it on the same port; stop is clean."""
    bus, sub = new_bus()
    spec = _spec(tmp_path, "--fault-crash-after", "0")
    async with supervised(spec, bus) as handle:
        assert handle.state == "ready"
        first_pid = handle.pid
        body = {"model": handle.model, "messages": [{"role": "user", "content": "What is two plus two?"}]}
        async with aiohttp.ClientSession() as http:
            try:
                async with http.post(f"{handle.base_url}/v1/chat/completions", json=body,
                                     timeout=aiohttp.ClientTimeout(total=10)) as resp:
                    await resp.read()
            except aiohttp.ClientError:
                pass  # the fault exits the server while answering: the connection may just drop
        with anyio.fail_after(90):
            while handle.incarnation < 2 or handle.state != "ready":
                await anyio.sleep(0.05)
        assert handle.pid != first_pid
    events = drain(sub)
    ready = kinds(events, "ServerReady")
    assert [r.incarnation for r in ready] == [1, 2]
    assert ready[0].models[0]["id"] == "reference-audioqa"
    exited = kinds(events, "ServerExited")
    crash, stop = exited[0], exited[-1]
    assert (crash.expected, crash.during, crash.returncode) == (False, "run", 70)
    assert (stop.expected, stop.during) == (True, "stop")
    spawned = kinds(events, "ServerSpawned")
    assert spawned[0].records_path == str(tmp_path / "server" / spec.model / "records-1.jsonl")
    assert spawned[1].port == spawned[0].port == spec.port
    assert any(line.text.startswith(time.strftime("%Y")) and " reference ready " in line.text
               for line in kinds(events, "LogLine"))
    assert (tmp_path / "server.log").stat().st_size > 0


async def test_dead_worker_in_a_live_server_is_restarted_by_health(tmp_path):
    """trtmc-server's way of failing: its only worker dies, the process lives on and readiness turns 503.
    Only the health probes can tell; after the failure threshold the supervisor restarts it."""
    bus, sub = new_bus()
    spec = _spec(tmp_path, "--fault-worker-crash-after", "0")
    async with supervised(spec, bus) as handle:
        first_pid = handle.pid
        body = {"model": handle.model, "messages": [{"role": "user", "content": "What is two plus two?"}]}
        async with (aiohttp.ClientSession() as http,
                    http.post(f"{handle.base_url}/v1/chat/completions", json=body,
                              timeout=aiohttp.ClientTimeout(total=30)) as resp):
            assert resp.status == 503 and (await resp.json())["error"]["code"] == "worker_crashed"
        with anyio.fail_after(90):
            while handle.incarnation < 2 or handle.state != "ready":
                await anyio.sleep(0.05)
        assert handle.pid != first_pid
    events = drain(sub)
    unhealthy = [c for c in kinds(events, "ServerHealthChanged") if not c.healthy]
    assert unhealthy and unhealthy[0].incarnation == 1 and unhealthy[0].status_code == 503
    exited = kinds(events, "ServerExited")
    # Stopped cleanly by the supervisor because it was unhealthy (the process never crashed), then the final stop.
    assert [(e.incarnation, e.during, e.expected) for e in exited] == [(1, "stop", True), (2, "stop", True)]
    assert [r.incarnation for r in kinds(events, "ServerRestarting")] == [2]
    assert [r.incarnation for r in kinds(events, "ServerReady")] == [1, 2]



async def test_the_reference_servers_in_flight_gauge_goes_up_and_down(tmp_path):
    """The real server's /metrics gauge through the supervisor: 0 once ready, 1 while a slow chat is answered,
    0 again after it (ServerLoadSampled, published only when it changed)."""
    bus, sub = new_bus()
    spec = _spec(tmp_path, "--fault-latency-ms", "2500")
    events: list = []

    def gauge() -> list[int]:
        events.extend(drain(sub))
        return [e.in_flight for e in kinds(events, "ServerLoadSampled")]

    async with supervised(spec, bus) as handle:
        with anyio.fail_after(10):
            while gauge() != [0]:
                await anyio.sleep(0.1)
        body = {"model": handle.model, "messages": [{"role": "user", "content": "What is two plus two?"}]}
        async with (aiohttp.ClientSession() as http,
                    http.post(f"{handle.base_url}/v1/chat/completions", json=body,
                              timeout=aiohttp.ClientTimeout(total=60)) as resp):
            assert resp.status == 200
        with anyio.fail_after(10):  # the next sample after the answer reads 0
            while gauge()[-1] != 0 or len(gauge()) < 3:
                await anyio.sleep(0.1)
    assert gauge()[:3] == [0, 1, 0]

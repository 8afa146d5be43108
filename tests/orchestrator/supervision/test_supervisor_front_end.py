"""A server that behaves as trtmc-server's front end does (tests/data/servers/trtmc_front.py): its worker in a new
session with the parent-death signal, its own 503 readiness once the worker died, a front end that never exits.
The supervisor restarts it for its probes and says so; the worker that dies with the front end is reaped."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import psutil
import pytest
from supervisor_support import drain, kinds, make_config, new_bus

from adapters.server_kinds import server_parts
from orchestrator.soak.supervision import SupervisionFacts, judge_restarts
from orchestrator.supervision.supervisor import ServerSpec, supervised

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(os.uname().sysname != "Linux", reason="PR_SET_PDEATHSIG and the subreaper are Linux only")]

FRONT = Path(__file__).resolve().parents[2] / "data" / "servers" / "trtmc_front.py"


def _spec(tmp_path: Path, *args: str) -> ServerSpec:
    argv = ["{python}", str(FRONT), "--host", "{host}", "--port", "{port}", "--model-name", "{model}", *args]
    cfg = make_config(tmp_path, argv=argv)
    return ServerSpec.from_config(cfg, cfg.models[0], tmp_path, parts=server_parts(cfg.server.kind))


def _worker_pids(events: list) -> list[int]:
    return [line.fields["worker_pid"] for line in kinds(events, "LogLine") if line.fields and "worker_pid" in line.fields]


def _ours_zombie(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.ppid() == os.getpid() and proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class TestFrontEndWhoseWorkerDies:
    async def test_probe_restart_carries_its_cause_and_fails_restarts(self, tmp_path: Path) -> None:
        """The worker dies, the front end answers 503 and never exits: the supervisor stops it after the failed
        probes and restarts it. The journal says why (stopped_for and cause "unready"), the restarts verdict
        over those events FAILs naming the cause, and the restart is dated by its spawn."""
        bus, sub = new_bus()
        async with supervised(_spec(tmp_path, "--worker-dies-after", "0.3", "--worker-dies-once",
                                    str(tmp_path / "died")), bus) as handle:
            with anyio.fail_after(20):
                while not (handle.incarnation == 2 and handle.state == "ready"):
                    await anyio.sleep(0.05)
        events = drain(sub)
        [restarting] = kinds(events, "ServerRestarting")
        assert (restarting.incarnation, restarting.cause) == (2, "unready")
        first = [e for e in kinds(events, "ServerExited") if e.incarnation == 1]
        assert [(e.expected, e.during, e.stopped_for) for e in first] == [(True, "stop", "unready")]
        facts = SupervisionFacts()
        for ev in events:
            facts.observe(ev)
        verdict = judge_restarts(facts.exits, facts.restarts)
        assert verdict.outcome == "fail"
        assert "incarnation 1 was stopped because readiness probes were answered 'not ready'" in verdict.reason
        assert "incarnation 2 started (readiness probes were answered 'not ready')" in verdict.reason
        spawned = next(e for e in kinds(events, "ServerSpawned") if e.incarnation == 2)
        assert facts.restarts[0].spawned_unix_ns == spawned.ts_ns > facts.restarts[0].decided_unix_ns

    async def test_a_worker_dead_with_its_front_end_is_reaped_and_journaled(self, tmp_path: Path) -> None:
        """Stopping the front end kills its worker by the parent-death signal, in its own session; the worker is
        left to aqbench (the subreaper) as a zombie: it is reaped and journaled as OrphanReaped, never left."""
        bus, sub = new_bus()
        seen: list = []
        async with supervised(_spec(tmp_path), bus) as handle:
            with anyio.fail_after(10):  # a sample has seen the worker (the front end's child)
                while not any(e.children for e in kinds(seen, "ResourceSampled")):
                    seen += drain(sub)
                    await anyio.sleep(0.05)
        events = seen + drain(sub)
        [worker] = _worker_pids(events)
        reaped = kinds(events, "OrphanReaped")
        assert [(r.pid, r.found_by, r.returncode) for r in reaped] == [(worker, "sample", -signal.SIGTERM)]
        assert not kinds(events, "OrphanKilled")
        assert handle.statistics().orphans_reaped == 1
        assert not _ours_zombie(worker)

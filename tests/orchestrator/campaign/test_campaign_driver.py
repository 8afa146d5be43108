"""The campaign driver against a scripted cluster (no Ray): retries after lost nodes, no retry after a
verdict or an error, parallelism cap, stop and force-stop, and what it writes for each model."""

from __future__ import annotations

import io
import signal
import time
from pathlib import Path

import pytest
from cluster_support import FakeCluster, finished
from config_support import make_config

from orchestrator.campaign import CampaignOptions, StopRequest, run_campaign
from orchestrator.campaign.events import (
    AnyTaskMessage,
    AttemptEnded,
    JournalChunk,
    ModelFinished,
    TaskPlaced,
)
from orchestrator.campaign.journal import read_campaign
from orchestrator.campaign.ports import Delivery
from orchestrator.events import RunStarted, ServerExited, ServerSpawned
from orchestrator.spine.journal import encode_event


@pytest.fixture
def cfg(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_config(models=[{"name": "m1"}, {"name": "m2"}, {"name": "m3"}], run={"output_dir": str(tmp_path)},
                       campaign={"max_retries": 1, "max_parallel": 0, "stop_grace_s": 120.0,
                                 "bring_back_mib": 64.0})


def ends(folder: Path) -> list[tuple[str, int, str, bool]]:
    return [(e.model, e.attempt, e.ended, e.retry) for e in read_campaign(folder / "campaign.jsonl")
            if isinstance(e, AttemptEnded)]


def rows(folder: Path) -> dict[str, tuple[str, int]]:
    return {e.model: (e.status, e.attempts) for e in read_campaign(folder / "campaign.jsonl")
            if isinstance(e, ModelFinished)}


class TestDriver:
    def test_lost_node_is_retried_up_to_the_limit_and_errors_are_not(self, cfg, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        """m1 loses its node once then finishes; m2 loses it twice (max_retries 1) and ends node-lost;
        m3's task raises and is not retried. Every model has one final row."""
        placed: list[AnyTaskMessage] = [TaskPlaced(node_id="n1")]
        cluster = FakeCluster({("m1", 1): (placed, "node-lost"), ("m1", 2): (finished("m1", "failed"), None),
                               ("m2", 1): (placed, "node-lost"), ("m2", 2): (placed, "node-lost"),
                               ("m3", 1): (placed, "error")})
        rc, folder = run_campaign(cfg, CampaignOptions(argv=["t"]), cluster, StopRequest(), progress_out=io.StringIO())
        assert rc == 1
        assert sorted(ends(folder)) == [("m1", 1, "node-lost", True), ("m1", 2, "finished", False),
                                        ("m2", 1, "node-lost", True), ("m2", 2, "node-lost", False),
                                        ("m3", 1, "error", False)]
        assert rows(folder) == {"m1": ("failed", 2), "m2": ("node-lost", 2), "m3": ("error", 1)}
        assert (folder / "models" / "m1" / "run" / "aqbench.log").read_text() == "log line\n"
        assert (folder / "models" / "m1" / "report.json").exists()
        assert (folder / "models" / "m1" / "earlier" / "1-events.jsonl").exists()
        assert "m2 | node-lost" in (folder / "report.md").read_text()

    def test_a_server_not_seen_to_stop_on_a_lost_node_is_named(self, cfg) -> None:  # type: ignore[no-untyped-def]
        """When a node is lost after its journal showed a server spawned (and the first one exited), the
        attempt names the server still running there, and the report says it may be left behind."""
        lines = b"".join(encode_event(e) + b"\n" for e in (
            RunStarted(run_id="r", seq=1, ts_ns=time.time_ns(), command="qualify"),
            ServerSpawned(run_id="r", seq=2, ts_ns=time.time_ns(), incarnation=1, pid=4241, argv=["srv"]),
            ServerExited(run_id="r", seq=3, ts_ns=time.time_ns(), incarnation=1, pid=4241, returncode=1),
            ServerSpawned(run_id="r", seq=4, ts_ns=time.time_ns(), incarnation=2, pid=4242, argv=["srv"])))
        cluster = FakeCluster({("m1", 1): ([TaskPlaced(node_id="n1"), JournalChunk(lines=lines)], "node-lost"),
                               ("m1", 2): (finished("m1", "failed"), None)})
        rc, folder = run_campaign(cfg, CampaignOptions(models=["m1"], argv=["t"]), cluster, StopRequest(),
                                  progress_out=io.StringIO())
        assert rc == 1
        [lost, done] = [e for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, AttemptEnded)]
        assert (lost.ended, lost.servers_not_stopped, done.servers_not_stopped) == (
            "node-lost", ["pid 4242 (incarnation 2)"], [])
        assert ("#1 on 10.0.0.1: node-lost (node-lost happened); server pid 4242 (incarnation 2) not seen to stop: "
                "its supervisor's death signals it to stop (SIGTERM) where 10.0.0.1 still runs; if that host cannot "
                "be reached, it is left behind there") in (folder / "report.md").read_text()

    def test_max_parallel_caps_running_attempts(self, cfg) -> None:  # type: ignore[no-untyped-def]
        """--max-parallel 1 never has two attempts in flight."""
        cluster = FakeCluster({(m, 1): (finished(m, "blocked"), None) for m in ("m1", "m2", "m3")})
        rc, folder = run_campaign(cfg, CampaignOptions(max_parallel=1), cluster, StopRequest(),
                                  progress_out=io.StringIO())
        assert rc == 1 and cluster.max_running == 1
        assert rows(folder) == {m: ("blocked", 1) for m in ("m1", "m2", "m3")}

    def test_second_signal_force_cancels_and_unstarted_models_are_interrupted(self, cfg) -> None:  # type: ignore[no-untyped-def]
        """A stop asks every task to stop; models not yet submitted end `interrupted`; a second signal
        force-cancels tasks that have not stopped, and the exit code names the first signal."""
        stop = StopRequest()
        cluster = FakeCluster({(m, 1): ([TaskPlaced(node_id="n1")], None) for m in ("m1", "m2")}, hang={"m1", "m2"})
        original_poll = cluster.poll

        def poll(timeout_s: float) -> list[Delivery]:
            got = original_poll(timeout_s)
            if not got and stop.count == 0:
                stop.set(signal.SIGTERM)
            elif not got and stop.count == 1 and cluster.stopped:
                stop.set(signal.SIGINT)
            return got

        cluster.poll = poll  # type: ignore[method-assign]
        rc, folder = run_campaign(cfg, CampaignOptions(max_parallel=2), cluster, stop, progress_out=io.StringIO())
        assert rc == 143 and cluster.stopped == [signal.SIGTERM] and cluster.killed == 1
        assert rows(folder) == {"m1": ("interrupted", 1), "m2": ("interrupted", 1), "m3": ("interrupted", 0)}
        fin = [e for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, ModelFinished) and e.model == "m3"]
        assert fin[0].reason == "not started: the campaign was stopped by SIGTERM"

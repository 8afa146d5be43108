"""The campaign driver against a scripted cluster (no Ray): retries after lost nodes, no retry after a
verdict or an error, parallelism cap, stop and force-stop, and what it writes for each model."""

from __future__ import annotations

import io
import signal
import tarfile
import time
from collections import deque
from pathlib import Path

import pytest
from config_support import make_config

from orchestrator.campaign import CampaignOptions, StopRequest, run_campaign
from orchestrator.campaign.events import (
    AnyTaskMessage,
    AttemptEnded,
    JournalChunk,
    ModelFinished,
    NodeFacts,
    TaskDone,
    TaskPlaced,
)
from orchestrator.campaign.journal import read_campaign
from orchestrator.campaign.ports import AttemptSpec, Delivery
from orchestrator.events import ModelResult, ResultRow, RunFinished, RunStarted, ServerExited, ServerSpawned
from orchestrator.journal import encode_event


def _tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"log line\n"
        info = tarfile.TarInfo("aqbench.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def finished(model: str, status: str) -> list[AnyTaskMessage]:
    """What a task sends when qualify reaches `status`: placed, its journal, done."""
    lines = b"".join(encode_event(e) + b"\n" for e in (
        RunStarted(run_id="r", seq=1, ts_ns=time.time_ns(), command="qualify"),
        ModelResult(run_id="r", seq=2, ts_ns=time.time_ns(), model=model, status=status,
                    row=ResultRow(qualify_command=f"aqbench qualify --model {model}")),
        RunFinished(run_id="r", seq=3, ts_ns=time.time_ns(), status="failed", exit_code=1)))
    return [TaskPlaced(node_id="n1"), JournalChunk(lines=lines), TaskDone(exit_code=1, folder_tar=_tar())]


class FakeCluster:
    """Plays each (model, attempt)'s script: messages, then optionally an end (`node-lost`, `error`)."""

    address = "fake:1"

    def __init__(self, scripts: dict[tuple[str, int], tuple[list[AnyTaskMessage], str | None]],
                 *, hang: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.scripts = scripts
        self.hang = hang
        self.queues: dict[tuple[str, int], deque[Delivery]] = {}
        self.max_running = 0
        self.stopped: list[int] = []
        self.killed = 0

    def nodes(self) -> list[NodeFacts]:
        return [NodeFacts(node_id="n1", address="10.0.0.1", alive=False)]

    def submit(self, spec: AttemptSpec) -> None:
        msgs, end = self.scripts[(spec.model, spec.attempt)]
        q: deque[Delivery] = deque(Delivery(model=spec.model, attempt=spec.attempt, message=m) for m in msgs)
        if end:
            q.append(Delivery(model=spec.model, attempt=spec.attempt, ended=end, reason=f"{end} happened",  # type: ignore[arg-type]
                              node_id="n1"))
        self.queues[(spec.model, spec.attempt)] = q
        self.max_running = max(self.max_running, self.running())

    def running(self) -> int:
        return len(self.queues)

    def poll(self, timeout_s: float) -> list[Delivery]:
        out = []
        for key, q in list(self.queues.items()):
            if key[0] in self.hang and not self.killed:
                if q and q[0].message is not None and isinstance(q[0].message, TaskPlaced):
                    out.append(q.popleft())
                continue
            if q:
                out.append(q.popleft())
            if not q:
                del self.queues[key]
        return out

    def stop(self, signum: int) -> None:
        self.stopped.append(signum)

    def kill(self) -> None:
        self.killed += 1
        for (model, attempt), q in self.queues.items():
            q.clear()
            q.append(Delivery(model=model, attempt=attempt, ended="interrupted", reason="TaskCancelledError"))

    def close(self) -> None:
        pass


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

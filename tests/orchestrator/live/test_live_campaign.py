"""`aqbench campaign --serve`: the page follows the files a campaign writes (campaign.jsonl and each model's
streamed journal), read incrementally; the real driver writes them here against a scripted cluster (no Ray),
and the page is served from its own thread as the command serves it."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from cluster_support import FakeCluster, _tar
from config_support import make_config
from test_live_server import _sse

from orchestrator.campaign import CampaignOptions, StopRequest, run_campaign
from orchestrator.campaign.events import (
    AnyTaskMessage,
    CampaignStarted,
    JournalChunk,
    ModelSubmitted,
    TaskDone,
    TaskPlaced,
)
from orchestrator.campaign.journal import CampaignJournal
from orchestrator.config import Config
from orchestrator.events import (
    GateEvaluated,
    ModelResult,
    PhaseStarted,
    RequestCorrelated,
    ResourceSampled,
    ResultRow,
    RunFinished,
    RunStarted,
)
from orchestrator.live.address import ServeAddress
from orchestrator.live.campaign import serve_campaign
from orchestrator.live.campaign_state import CampaignTail
from orchestrator.spine.journal import encode_event

pytestmark = pytest.mark.anyio


def _lines(model: str, status: str, *, passed: bool, requests: int = 3) -> bytes:
    """A model's qualify journal: started, a stage, a server memory sample, requests (the i-th ends i s after the
    start, taking 100 * i ms), a gate, its result, finished."""
    now = time.time_ns()
    events: list[Any] = [RunStarted(run_id="r", seq=1, ts_ns=now, command="qualify"),
                         PhaseStarted(run_id="r", seq=2, ts_ns=now, phase="correctness", model=model),
                         ResourceSampled(run_id="r", seq=3, ts_ns=now + 500_000_000, incarnation=1, pid=9,
                                         rss_bytes=(100 + requests) << 20)]
    events += [RequestCorrelated(run_id="r", seq=4 + i, ts_ns=now, request_id=f"q{i}", window=f"{model}/aiperf",
                                 phase="profiling", ok=i != 0, cause="ok" if i else "timeout",
                                 request_latency_ms=100.0 * i, request_end_ns=now + i * 1_000_000_000)
               for i in range(requests)]
    seq = 4 + requests
    events += [GateEvaluated(run_id="r", seq=seq, ts_ns=now, model=model, gate="accuracy", required=0.8,
                             observed=0.9 if passed else 0.5, passed=passed),
               ModelResult(run_id="r", seq=seq + 1, ts_ns=now, model=model, status=status, row=ResultRow()),
               RunFinished(run_id="r", seq=seq + 2, ts_ns=now, status="ok", exit_code=0)]
    return b"".join(encode_event(e) + b"\n" for e in events)


def _script(model: str, status: str, *, passed: bool) -> list[AnyTaskMessage]:
    return [TaskPlaced(node_id="n1", node_address="10.0.0.1", hostname="gpu-node-1"), JournalChunk(lines=_lines(model, status, passed=passed)),
            TaskDone(exit_code=0, folder_tar=_tar())]


def _cluster() -> FakeCluster:
    """m1 qualifies; m2 loses its node once, then fails its gate on the retry."""
    return FakeCluster({("m1", 1): (_script("m1", "aiperf-qualified", passed=True), None),
                        ("m2", 1): ([TaskPlaced(node_id="n1")], "node-lost"),
                        ("m2", 2): (_script("m2", "failed", passed=False), None)})


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    return make_config(models=[{"name": "m1"}, {"name": "m2"}], run={"output_dir": str(tmp_path)},
                       campaign={"max_retries": 1, "max_parallel": 0, "stop_grace_s": 120.0, "bring_back_mib": 64.0})


class TestCampaignTail:
    def test_a_finished_campaign_shows_each_model_its_state_and_verdicts(self, cfg: Config) -> None:
        """The real driver's files: each model's final status, node, attempt, requests and verdicts; the run's
        final status and full progress."""
        _, folder = run_campaign(cfg, CampaignOptions(), _cluster(), StopRequest(), progress_out=io.StringIO())
        st = CampaignTail(folder).state()
        rows = {r.name: r for r in st.campaign}
        assert (rows["m1"].state, rows["m1"].attempt, rows["m1"].node) == ("aiperf-qualified", 1, "gpu-node-1")
        assert (rows["m2"].state, rows["m2"].attempt) == ("failed", 2)
        assert rows["m1"].verdicts == {"pass": 1} and rows["m2"].verdicts == {"fail": 1}
        assert (rows["m2"].stage, rows["m2"].issued, rows["m2"].ok, rows["m2"].errors) == ("done", 3, 2, 1)
        assert {v.name: v.outcome for v in st.verdicts} == {"m1 accuracy": "pass", "m2 accuracy": "fail"}
        assert (st.counters.issued, st.counters.by_cause) == (6, {"timeout": 2})
        assert (st.run.command, st.run.run_id, st.run.status) == ("campaign", folder.name, "failed")
        assert (st.run.done, st.run.total, st.run.finished_unix_ns > 0) == (2, 2, True)
        # The charts: each model's client latency (ok requests) and server memory, on the campaign's clock.
        latency = {s.name: s.points for s in st.model_latency}
        assert [v for _t, v in latency["m1"]] == [100.0, 200.0] == [v for _t, v in latency["m2"]]
        assert all(t > 0 for s in latency.values() for t, _v in s)
        assert latency["m1"][1][0] - latency["m1"][0][0] == pytest.approx(1.0, abs=0.01)
        assert {s.name: [v for _t, v in s.points] for s in st.model_memory} == {"m1": [103.0], "m2": [103.0]}

    def test_reads_only_new_whole_lines_and_starts_over_on_a_retrys_journal(self, tmp_path: Path) -> None:
        """A torn last line waits; a model journal the driver moves aside (a lost node) is read anew."""
        folder = tmp_path / "campaign-x"
        journal = CampaignJournal(folder / "campaign.jsonl")
        journal.write(CampaignStarted(campaign_id="campaign-x", models=["m1"]))
        tail = CampaignTail(folder)
        assert [(r.name, r.state) for r in tail.state().campaign] == [("m1", "queued")]
        journal.write(ModelSubmitted(model="m1", attempt=1))
        mdir = folder / "models" / "m1"
        mdir.mkdir(parents=True)
        whole = _lines("m1", "failed", passed=False)
        cut = whole.index(b"\n", whole.index(b"gate_evaluated")) + 10  # into the ModelResult line
        (mdir / "events.jsonl").write_bytes(whole[:cut])
        st = tail.state()
        seq = st.seq
        assert (st.campaign[0].state, st.campaign[0].stage, st.campaign[0].verdicts) == ("submitted", "correctness", {"fail": 1})
        assert tail.state().seq == seq  # nothing new: the torn line waits
        os.rename(mdir / "events.jsonl", mdir / "1-events.jsonl")  # the driver keeps a lost attempt's journal aside
        (mdir / "events.jsonl").write_bytes(_lines("m1", "aiperf-qualified", passed=True, requests=1))
        st = tail.state()
        assert st.seq > seq and st.campaign[0].verdicts == {"pass": 1} and st.campaign[0].issued == 1


def _drive(cfg: Config, url: list[str], opened: threading.Event, argv: list[str]) -> None:
    """What `aqbench campaign --serve` does: the page first, then the campaign, the page told its folder."""
    with serve_campaign(cfg, ServeAddress(port=0), argv) as page:
        assert page is not None
        url.append(page.url)
        opened.wait(30)
        run_campaign(cfg, CampaignOptions(), _cluster(), StopRequest(), progress_out=io.StringIO(),
                     on_folder=page.attach)


class TestCampaignPageServed:
    async def test_a_stream_follows_the_campaign_to_its_final_status(self, cfg: Config) -> None:
        """Over HTTP: the campaign's rows arrive as the driver writes, the last frame before `end` carries the
        campaign's final status and every model's, and the folder's path never shows."""
        url: list[str] = []
        opened = threading.Event()
        frames: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, _drive, cfg, url, opened, ["aqbench", "campaign", "--serve", "0"])
            with anyio.fail_after(30):
                while not url:
                    await anyio.sleep(0.01)
            async with aiohttp.ClientSession() as http, http.get(url[0] + "events?since=0") as stream:
                opened.set()
                while not frames or frames[-1]["event"] != "end":
                    frames += await _sse(stream, 1, timeout_s=30)
        changes = [ch for f in frames[:-1] for ch in f["data"]["changes"]]
        runs = [ch[3] for ch in changes if ch[2] == "run"]
        rows = {ch[3]["name"]: ch[3] for ch in changes if ch[2] == "campaign"}
        assert runs[-1]["status"] == "failed" and runs[-1]["done"] == 2
        assert rows["m1"]["state"] == "aiperf-qualified" and rows["m2"]["state"] == "failed"
        assert cfg.run.output_dir not in str(frames)


class TestCampaignServeCommandLine:
    def test_campaign_takes_serve_and_refuses_a_public_address_without_the_flag(self) -> None:
        from orchestrator.base.errors import UsageError
        from orchestrator.cli import build_parser
        from orchestrator.commands.serve_args import serve_address

        parser = build_parser()
        assert serve_address(parser.parse_args(["campaign", "--serve", "8090"])) == ServeAddress(port=8090)
        with pytest.raises(UsageError, match="Add --serve-public"):
            serve_address(parser.parse_args(["campaign", "--serve", "0.0.0.0:8090"]))
        assert serve_address(parser.parse_args(["campaign"])) is None

    def test_a_taken_port_stops_before_the_campaign_and_leaves_no_thread(self, cfg: Config) -> None:
        """The page starts first: a taken port raises UsageError naming it, and its thread is gone."""
        import socket

        from orchestrator.base.errors import UsageError

        before = threading.active_count()
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            with pytest.raises(UsageError, match=rf"--serve 127.0.0.1:{port}: cannot listen there"), \
                    serve_campaign(cfg, ServeAddress(port=port), ["aqbench"]):
                pytest.fail("the campaign must not start")
        assert threading.active_count() == before

"""`aqbench campaign` end to end on a simulated two-node Ray cluster on 127.0.0.1 (one CPU per node).

The driver runs as its own process joined to the cluster; models run scripted servers so that each
qualification ends early (capability) in seconds: rows, live streaming, a lost node, SIGINT and --resume;
and the default reference model goes all the way to `aiperf-qualified`, AIPerf running inside its Ray task.
One cluster serves the whole module (starting one costs seconds); each test gets it with two live nodes
and every resource free.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from adapters.ray.loopback import LOOPBACK_ENV, pin_to_loopback

pin_to_loopback()  # before Ray is imported: the simulated nodes listen on 127.0.0.1 only

ray_cluster_utils = pytest.importorskip("ray.cluster_utils")

from test_qualify import MINI_ITEMS, ROOT, config, mini_dataset, results, stub_argv  # noqa: E402

from orchestrator.campaign import fold_campaign  # noqa: E402
from orchestrator.campaign.events import AttemptEnded, AttemptPlaced, CampaignStarted, ModelFinished  # noqa: E402
from orchestrator.campaign.journal import read_campaign  # noqa: E402
from orchestrator.events import AiperfExited, AiperfStarted, ModelResult, RunFinished, RunStarted, ServerSpawned  # noqa: E402
from orchestrator.spine.journal import read_journal  # noqa: E402

SCRIPTED = ROOT / "tests" / "data" / "servers" / "scripted_server.py"
OTHER = ('\n[[models]]\nname = "whisper-like"\nfamily = "whisper"\ncheckpoint = "openai/whisper-tiny"\n'
         'native_task = "speech_transcription"\n[models.correctness]\nmin_pass_rate = 0.9\n')
# Fast failure detection, so that a removed node is declared dead in seconds rather than tens of seconds.
SYSTEM = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}


HEAD = {"num_cpus": 1, "num_gpus": 1, "include_dashboard": False, "_system_config": SYSTEM}
WORKER = {"num_cpus": 1, "num_gpus": 0}


def _children() -> set[int]:
    return {c.pid for c in psutil.Process().children()}


def _started(shared: set[int], start: Callable[[], object]) -> set[int]:
    """Run `start` and register the processes it started under this one (Ray's GCS, raylet, agents, reaper) as
    the module fixture's: the leftover check then accepts them and everything below them (Ray's workers)."""
    before = _children()
    start()
    new = _children() - before
    shared.update(new)
    return new


@pytest.fixture(scope="module")
def ray_cluster(shared_processes: set[int]) -> Iterator[object]:
    """The head node: one CPU and one (simulated) GPU; `cluster` adds the worker node (one CPU)."""
    holder: list[object] = []
    pids = _started(shared_processes, lambda: holder.append(ray_cluster_utils.Cluster(
        initialize_head=True, head_node_args=HEAD)))
    c = holder[0]
    try:
        yield c
    finally:
        c.shutdown()  # type: ignore[attr-defined]
        shared_processes.difference_update(pids | getattr(c, "_test_pids", set()))


@pytest.fixture
def cluster(ray_cluster: object, shared_processes: set[int]) -> object:
    """The module's cluster with two live nodes (a test may have removed the worker) and every resource free
    (a finished campaign's stop actor frees its share once the GCS has seen its driver go)."""
    c = ray_cluster
    if not c.worker_nodes:  # type: ignore[attr-defined]
        added = _started(shared_processes, lambda: c.add_node(**WORKER))  # type: ignore[attr-defined]
        # Kept on the cluster so that the module's teardown unregisters every worker node's processes too.
        c._test_pids = getattr(c, "_test_pids", set()) | added  # type: ignore[attr-defined]
    c.wait_for_nodes()  # type: ignore[attr-defined]
    state = c.global_state  # type: ignore[attr-defined]  # what ray.available_resources() reads, unconnected
    deadline = time.monotonic() + 60
    while (free := state.available_resources()) != (total := state.cluster_resources()) or total.get("CPU") != 2:
        assert time.monotonic() < deadline, f"resources not back to full: {free} of {total}"
        time.sleep(0.1)
    assert total["GPU"] == 1
    return c


def scripted_argv(delay_s: float) -> str:
    """A server that becomes ready after `delay_s` and has no chat route: qualify stops at capability."""
    return json.dumps(["{python}", str(SCRIPTED), "--startup-delay", str(delay_s), "--host", "{host}",
                       "--port", "{port}", "--model-name", "{model}", "--records", "{records}"])


def campaign_config(tmp_path: Path, server_argv: str, *, gpu_model: bool = False) -> Path:
    return config(tmp_path, server_argv=server_argv, kind="trtmc-server", dataset=mini_dataset(tmp_path, MINI_ITEMS),
                  extra_models=OTHER, replace={"gpus = 0": "gpus = 1"} if gpu_model else None)


def start_driver(cfg: Path, address: str | None, *args: str) -> subprocess.Popen[str]:
    """The driver joined to `address`; None: the local default, with none of the test's Ray settings."""
    env = dict(os.environ)
    if address is None:
        for key in ("RAY_ADDRESS", *LOOPBACK_ENV):
            env.pop(key, None)
    return subprocess.Popen([sys.executable, "-m", "orchestrator", "--log-level", "warning", "campaign", "--config",
                             str(cfg), *(["--address", address] if address else []), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def listening(proc: subprocess.Popen[str]) -> set[str]:
    """Addresses that the driver and every process under it (the local Ray's own) listen on."""
    pids = {proc.pid} | {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
    return {c.laddr.ip for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in pids}


def campaign_dir(cfg: Path) -> Path:
    found = sorted((cfg.parent / "runs").glob("campaign-*"))
    assert found, "no campaign folder"
    return found[-1]


def wait_until(what: str, check: Callable[[], bool], proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Re-read the driver's files until `check` holds (the driver is another process: nothing to await)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert proc.poll() is None, f"driver exited ({proc.returncode}) before {what}: {proc.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def spawned(folder: Path, model: str) -> bool:
    journal = folder / "models" / model / "events.jsonl"
    return journal.exists() and b'"kind":"server_spawned"' in journal.read_bytes()


def rows(folder: Path) -> dict[str, ModelFinished]:
    return {e.model: e for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, ModelFinished)}


def our_processes(tmp_path: Path) -> list[str]:
    """Servers and AIPerf runs of this test (their command lines name its folder), the driver excepted."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if str(tmp_path) in cmd and " campaign --config " not in cmd:
            out.append(f"{p.info['pid']} {cmd[:160]}")
    return out


@pytest.mark.slow
def test_two_models_on_two_nodes_end_with_final_rows_and_reports(cluster: object, tmp_path: Path) -> None:
    """Both models run side by side, one per node; each row is final with its reproduce command; the journal
    streamed to the driver is byte for byte the node's (reports fold from it); the GPU model gets Ray's GPU."""
    cfg = campaign_config(tmp_path, stub_argv("reject-audio"), gpu_model=True)
    proc = start_driver(cfg, cluster.address)  # type: ignore[attr-defined]
    started: set[str] = set()  # what the driver started under it: joining, it starts no Ray of its own
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            started |= {c.name() for c in psutil.Process(proc.pid).children(recursive=True)}
        time.sleep(0.1)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err[-3000:]
    assert not {n for n in started if n.startswith(("raylet", "gcs_server", "ray::"))}, started
    folder = campaign_dir(cfg)
    final = rows(folder)
    assert {m: r.status for m, r in final.items()} == {"reference-audioqa": "blocked", "whisper-like": "unsupported"}
    assert final["whisper-like"].reproduce == f"aqbench qualify --config {cfg.resolve()} --model whisper-like"
    events = read_campaign(folder / "campaign.jsonl")
    placed = {e.model: e for e in events if isinstance(e, AttemptPlaced)}
    assert placed["reference-audioqa"].gpu_ids == ["0"]
    for model in final:
        journal = folder / "models" / model / "events.jsonl"
        evs, torn = read_journal(journal)
        assert torn is None and isinstance(evs[0], RunStarted) and isinstance(evs[-1], RunFinished)
        node_copy = next(Path(placed[model].run_folder).glob("*/events.jsonl"))
        assert journal.read_bytes() == node_copy.read_bytes()
        assert [e.status for e in evs if isinstance(e, ModelResult)] == [final[model].status]
        # Folded on the driver from the streamed copy: the very bytes qualify wrote on the node.
        folded = (folder / "models" / model / "report.json").read_bytes()
        assert folded == (folder / "models" / model / "run" / "report.json").read_bytes()
        assert {row["model"]: row["status"] for row in json.loads(folded)["rows"]}[model] == final[model].status
        assert (folder / "models" / model / "run" / "aqbench.log").exists()
    gpu_run = read_journal(folder / "models" / "reference-audioqa" / "events.jsonl")[0][0]
    assert isinstance(gpu_run, RunStarted) and gpu_run.config.server.env["CUDA_VISIBLE_DEVICES"] == "0"
    report = fold_campaign(folder / "campaign.jsonl")
    assert report.accounting.balanced and report.accounting.finished == 2
    assert "campaign: whisper-like: unsupported" in err
    assert (folder / "report.html").read_text().count("<svg") == 1
    assert "| whisper-like | unsupported | capability |" in (folder / "report.md").read_text()


@pytest.mark.slow
def test_events_stream_live_and_a_lost_node_is_retried_elsewhere(cluster: object, tmp_path: Path) -> None:
    """The driver's copy of a model's journal grows while its task runs; removing the worker node mid-task
    ends that attempt `node-lost` and the model runs again on the head node; a failed stage is not retried."""
    cfg = campaign_config(tmp_path, scripted_argv(6.0))
    proc = start_driver(cfg, cluster.address)  # type: ignore[attr-defined]
    worker = cluster.list_all_nodes()[1]  # type: ignore[attr-defined]
    try:
        wait_until("a campaign folder", lambda: bool(list((cfg.parent / "runs").glob("campaign-*/campaign.jsonl"))),
                   proc)
        folder = campaign_dir(cfg)
        on_worker: list[str] = []

        def placed_on_worker_and_spawned() -> bool:
            for e in read_campaign(folder / "campaign.jsonl"):
                if isinstance(e, AttemptPlaced) and e.node_id == worker.node_id and spawned(folder, e.model):
                    on_worker.append(e.model)
                    return True
            return False

        wait_until("a server spawned on the worker node", placed_on_worker_and_spawned, proc)
        lost_model = on_worker[0]
        assert not [e for e in read_campaign(folder / "campaign.jsonl")
                    if isinstance(e, AttemptEnded) and e.model == lost_model]  # streamed while it runs
        cluster.remove_node(worker)  # type: ignore[attr-defined]
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err[-3000:]
    events = read_campaign(folder / "campaign.jsonl")
    ends = [e for e in events if isinstance(e, AttemptEnded) and e.model == lost_model]
    assert [(e.attempt, e.ended, e.retry) for e in ends] == [(1, "node-lost", True), (2, "finished", False)]
    second = [e for e in events if isinstance(e, AttemptPlaced) and e.model == lost_model][-1]
    assert second.node_id != worker.node_id
    final = rows(folder)
    assert {m: (r.status, r.failed_stage, r.attempts) for m, r in final.items()} == {
        lost_model: ("failed", "capability", 2),
        ({"reference-audioqa", "whisper-like"} - {lost_model}).pop(): ("failed", "capability", 1)}
    assert (folder / "models" / lost_model / "earlier" / "1-events.jsonl").exists()
    stream = [e.stream for e in events if isinstance(e, AttemptEnded) and e.ended == "finished"]
    assert all(s["lines"] > 10 and s["lag_p99_ms"] < 1000 for s in stream), stream
    md = (folder / "report.md").read_text()
    assert "#1 on 127.0.0.1: node-lost" in md and "#2 on 127.0.0.1: finished" in md
    report = fold_campaign(folder / "campaign.jsonl")
    assert report.accounting.balanced and any(n.lost for n in report.nodes)
    # The journal ended before the lost node's server exited: the attempt names it ...
    assert ends[0].servers_not_stopped and "not seen to stop" in md
    # ... and the kernel stopped it with its killed supervisor (parent-death signal): nothing is left running.
    deadline = time.monotonic() + 30
    while (left := our_processes(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for line in left:  # never leave them running, even when the assertion below fails
        psutil.Process(int(line.split()[0])).kill()
    assert left == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_every_task_cleanly_and_writes_reports(cluster: object, tmp_path: Path,
                                                              signum: signal.Signals) -> None:
    """SIGINT or SIGTERM on the driver: both running tasks stop their servers (journaled, RunFinished
    interrupted), reports are written, exit 130 or 143, and no server is left on either node."""
    cfg = campaign_config(tmp_path, scripted_argv(120.0))
    proc = start_driver(cfg, cluster.address)  # type: ignore[attr-defined]
    try:
        wait_until("a campaign folder", lambda: bool(list((cfg.parent / "runs").glob("campaign-*/campaign.jsonl"))),
                   proc)
        folder = campaign_dir(cfg)
        wait_until("both servers spawned", lambda: spawned(folder, "reference-audioqa") and
                   spawned(folder, "whisper-like"), proc)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, err[-3000:]
    final = rows(folder)
    assert {m: r.status for m, r in final.items()} == {"reference-audioqa": "interrupted", "whisper-like": "interrupted"}
    for model in final:
        evs, _ = read_journal(folder / "models" / model / "events.jsonl")
        assert isinstance(evs[-1], RunFinished) and evs[-1].status == "interrupted"
        assert evs[-1].reason == f"interrupted by {signum.name}"
        assert (folder / "models" / model / "report.json").exists()
    ends = [e for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, AttemptEnded)]
    assert sorted((e.ended, e.exit_code) for e in ends) == [("interrupted", 128 + signum)] * 2
    assert fold_campaign(folder / "campaign.jsonl").status == "interrupted"
    assert our_processes(tmp_path) == []


@pytest.mark.slow
def test_resume_runs_only_the_models_without_a_final_row(cluster: object, tmp_path: Path) -> None:
    """A campaign of one model on the local default (its own Ray, listening on 127.0.0.1 only), resumed on
    the cluster with both configured: only the missing one runs, and the report holds both rows."""
    cfg = campaign_config(tmp_path, stub_argv("reject-audio"))
    proc = start_driver(cfg, None, "--model", "whisper-like")
    seen: set[str] = set()

    def local_ray_listens() -> bool:
        seen.update(listening(proc))
        return bool(list((cfg.parent / "runs").glob("campaign-*/campaign.jsonl")))

    wait_until("the local Ray and the campaign folder", local_ray_listens, proc)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err[-3000:]
    assert seen and seen <= {"127.0.0.1", "::ffff:127.0.0.1"}, seen
    folder = campaign_dir(cfg)
    assert read_campaign(folder / "campaign.jsonl")[0].address.startswith("127.0.0.1:")
    first_journal = (folder / "models" / "whisper-like" / "events.jsonl").read_bytes()
    proc = start_driver(cfg, cluster.address, "--resume", str(folder))  # type: ignore[attr-defined]
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err[-3000:]
    starts = [e for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, CampaignStarted)]
    assert [(s.models, s.skipped) for s in starts] == [(["whisper-like"], []),
                                                      (["reference-audioqa"], ["whisper-like"])]
    assert starts[1].stale == {}  # the same configuration, dataset and code: whisper-like's row still counts
    assert (folder / "models" / "whisper-like" / "events.jsonl").read_bytes() == first_journal
    report = fold_campaign(folder / "campaign.jsonl")
    assert {r.model: r.status for r in report.rows} == {"reference-audioqa": "blocked", "whisper-like": "unsupported"}
    assert report.sessions == 2 and report.accounting.balanced
    assert [e for e in read_journal(folder / "models" / "reference-audioqa" / "events.jsonl")[0]
            if isinstance(e, ServerSpawned)]


@pytest.mark.aiperf
@pytest.mark.slow
def test_the_default_reference_model_is_aiperf_qualified_through_a_campaign(cluster: object, tmp_path: Path) -> None:
    """The default configuration's reference model (real reference server, real AIPerf, 8 items and 8 profiling
    requests) runs as one Ray task on the cluster and ends `aiperf-qualified`, exit 0: AIPerf ran inside the task
    (its artifacts are in the node's run folder; no Ray, server or AIPerf process ran under the driver), the
    driver's reports fold from the streamed journal to the node's own, and nothing is left running."""
    cfg = config(tmp_path, dataset=mini_dataset(tmp_path, MINI_ITEMS),
                 replace={"requests = 48": "requests = 8", "warmup_requests = 4": "warmup_requests = 2"})
    proc = start_driver(cfg, cluster.address)  # type: ignore[attr-defined]
    started: set[str] = set()
    deadline = time.monotonic() + 480
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            started |= {" ".join(c.cmdline())[:120] for c in psutil.Process(proc.pid).children(recursive=True)}
        time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-4000:]
    # Joined: no Ray of its own under the driver, and the server and AIPerf ran in the task, not here.
    assert not [c for c in started if any(w in c for w in ("raylet", "gcs_server", "aiperf", "adapters.reference"))]
    folder = campaign_dir(cfg)
    final = rows(folder)
    assert {m: (r.status, r.attempts) for m, r in final.items()} == {"reference-audioqa": ("aiperf-qualified", 1)}
    placed = next(e for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, AttemptPlaced))
    assert placed.node_id in {n["NodeID"] for n in cluster.global_state.node_table()}  # type: ignore[attr-defined]
    model = folder / "models" / "reference-audioqa"
    evs, torn = read_journal(model / "events.jsonl")
    assert torn is None and isinstance(evs[-1], RunFinished) and evs[-1].status == "ok"
    aiperf = [e for e in evs if isinstance(e, AiperfStarted)]
    assert len(aiperf) == 1 and [e.classification for e in evs if isinstance(e, AiperfExited)] == ["complete"]
    assert aiperf[0].artifact_dir.startswith(placed.run_folder)  # on the node, under the task's folder
    [node_run] = [p.parent for p in Path(placed.run_folder).glob("*/events.jsonl")]
    assert (model / "events.jsonl").read_bytes() == (node_run / "events.jsonl").read_bytes()
    assert list(Path(aiperf[0].artifact_dir).rglob("profile_export*")), "AIPerf wrote no export on the node"
    assert results(model)["reference-audioqa"].status == "aiperf-qualified"
    assert (model / "report.json").read_bytes() == (model / "run" / "report.json").read_bytes()
    report = fold_campaign(folder / "campaign.jsonl")
    assert report.status == "ok" and report.exit_code == 0 and report.accounting.balanced
    assert "| reference-audioqa | aiperf-qualified |" in (folder / "report.md").read_text()
    assert our_processes(tmp_path) == []

"""The campaign driver: submits one attempt per model to a Cluster, journals what comes back, retries lost nodes.
Writes `campaign.jsonl` and `models/<name>/events.jsonl` as messages arrive; reports are folded from those
journals afterwards, never from this module's memory."""

from __future__ import annotations

import io
import os
import shutil
import signal
import sys
import tarfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import msgspec

from orchestrator.base.errors import AqbenchError, UsageError
from orchestrator.campaign.events import (
    MODEL_STATUSES_FINAL,
    AttemptEnd,
    AttemptEnded,
    AttemptPlaced,
    CampaignFinished,
    CampaignStarted,
    JournalChunk,
    KeptFile,
    ModelFinished,
    ModelSubmitted,
    NodeLost,
    TaskDone,
    TaskPlaced,
)
from orchestrator.campaign.journal import CampaignJournal, read_campaign
from orchestrator.campaign.ports import AttemptSpec, Cluster, Delivery
from orchestrator.campaign.progress import Progress
from orchestrator.campaign.report import write_campaign_reports
from orchestrator.campaign.resume import still_current
from orchestrator.config import Config, ModelConfig
from orchestrator.events import Event, ModelResult, PhaseStarted, RunFinished, ServerExited, ServerSpawned
from orchestrator.reports import write_reports
from orchestrator.run import new_run_id
from orchestrator.runkey.current import current_keys
from orchestrator.spine.journal import decode_event
from orchestrator.spine.logs import get_logger

__all__ = ["CampaignOptions", "StopRequest", "run_campaign", "final_models"]

log = get_logger("aqbench.campaign")

_POLL_S = 0.25
# After a force-cancel, how long to wait for the cluster to report each task's end before giving up on it.
_KILL_WAIT_S = 30.0


class CampaignOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml."""

    models: list[str] = []
    max_parallel: int | None = None
    resume: str = ""
    argv: list[str] = []


class StopRequest:
    """Set from a signal handler; the driver loop reads it between polls. A second signal stops at once
    (force-cancels the tasks instead of waiting for their clean stop)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.count = 0

    def set(self, signum: int) -> None:
        self.signum = self.signum or signum
        self.count += 1


class _Live:
    """What the driver tracks of one model's current attempt while its stream is open."""

    def __init__(self, model: str, attempt: int) -> None:
        self.model, self.attempt = model, attempt
        self.node_id = ""
        self.fh: io.BufferedWriter | None = None
        self.result: ModelResult | None = None
        self.run_finished = False
        self.lags_ns: list[int] = []
        self.servers: dict[int, int] = {}  # pid -> incarnation, spawned and not yet exited


def final_models(campaign_dir: Path) -> dict[str, ModelFinished]:
    """Models of an earlier campaign whose last row is final (qualify reached its own verdict)."""
    last: dict[str, ModelFinished] = {}
    for ev in read_campaign(campaign_dir / "campaign.jsonl"):
        if isinstance(ev, ModelFinished):
            last[ev.model] = ev
    return {m: ev for m, ev in last.items() if ev.status in MODEL_STATUSES_FINAL}


def _select(cfg: Config, names: list[str]) -> list[ModelConfig]:
    known = {m.name: m for m in cfg.models}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"--model {', '.join(unknown)}: not configured in {cfg.source}; "
                         f"configured models: {', '.join(known)}")
    return [known[n] for n in names] if names else list(cfg.models)


# Synchronous on purpose: the cluster's client API blocks, and one loop over `cluster.poll` keeps every
# journal write in one thread.
class _Driver:
    def __init__(self, cfg: Config, opts: CampaignOptions, cluster: Cluster, stop: StopRequest, folder: Path,
                 progress: Progress, models: list[ModelConfig]) -> None:
        self.cfg, self.opts, self.cluster, self.stop, self.folder = cfg, opts, cluster, stop, folder
        self.progress = progress
        self.models = {m.name: m for m in models}
        self.journal = CampaignJournal(folder / "campaign.jsonl")
        self.live: dict[str, _Live] = {}
        self.statuses: dict[str, str] = {}
        self.max_parallel = opts.max_parallel if opts.max_parallel is not None else cfg.campaign.max_parallel

    # ------------------------------------------------------------------------------------- the loop

    def run(self, pending: deque[tuple[str, int]]) -> None:
        stopping_since: float | None = None
        killed_at: float | None = None
        while pending or self.cluster.running():
            if self.stop.signum is not None and stopping_since is None:
                stopping_since = time.monotonic()
                self.cluster.stop(self.stop.signum)
                name = signal.Signals(self.stop.signum).name
                while pending:
                    model, attempt = pending.popleft()
                    self._finish(model, "interrupted", reason=f"not started: the campaign was stopped by {name}",
                                 attempts=attempt - 1)
            if stopping_since is not None and killed_at is None and (
                    self.stop.count > 1 or time.monotonic() - stopping_since > self.cfg.campaign.stop_grace_s):
                log.error("campaign_tasks_force_cancelled", grace_s=self.cfg.campaign.stop_grace_s,
                          signals=self.stop.count)
                self.cluster.kill()
                killed_at = time.monotonic()
            if killed_at is not None and time.monotonic() - killed_at > _KILL_WAIT_S:
                for live in list(self.live.values()):
                    self._close_journal(live)
                    self._finish(live.model, "interrupted", attempts=live.attempt, node_id=live.node_id,
                                 reason=f"force-cancelled; the cluster did not report its end within {_KILL_WAIT_S:.0f} s")
                return
            while pending and (not self.max_parallel or self.cluster.running() < self.max_parallel):
                self._submit(*pending.popleft())
            for delivery in self.cluster.poll(_POLL_S):
                retry = self._handle(delivery, stopping=stopping_since is not None)
                if retry:
                    pending.appendleft((delivery.model, delivery.attempt + 1))
            self.progress.show()
        self.progress.show(force=True)

    def _submit(self, model: str, attempt: int) -> None:
        m = self.models[model]
        node_folder = Path(self.cfg.run.output_dir).resolve() / self.folder.name / "nodes" / model / f"attempt-{attempt}"
        spec = AttemptSpec(campaign_id=self.folder.name, model=model, attempt=attempt, config=self.cfg,
                           resources=m.resources, node_folder=str(node_folder),
                           bring_back_bytes=int(self.cfg.campaign.bring_back_mib * 2**20))
        self.journal.write(ModelSubmitted(model=model, attempt=attempt, resources=m.resources))
        self.cluster.submit(spec)
        self.live[model] = _Live(model, attempt)
        self.progress.update(model, status="submitted" if attempt == 1 else f"retry {attempt - 1}", stage="")

    # --------------------------------------------------------------------------------- deliveries

    def _handle(self, d: Delivery, *, stopping: bool) -> bool:
        """Journal one delivery; True when the model must be submitted again (its node was lost)."""
        live = self.live[d.model]
        msg = d.message
        if isinstance(msg, TaskPlaced):
            live.node_id = msg.node_id
            live.fh = self._open_model_journal(d.model)
            self.journal.write(AttemptPlaced(model=d.model, attempt=d.attempt, node_id=msg.node_id,
                                             node_address=msg.node_address, hostname=msg.hostname,
                                             gpu_ids=msg.gpu_ids, run_folder=msg.run_folder,
                                             started_unix_ns=msg.started_unix_ns, gpus=msg.gpus))
            self.progress.update(d.model, node=msg.node_address or msg.node_id[:12], status="running")
            return False
        if isinstance(msg, JournalChunk):
            self._append(live, msg.lines)
            return False
        if isinstance(msg, TaskDone):
            self._done(live, msg)
            return False
        return self._ended(live, d, stopping=stopping)

    def _open_model_journal(self, model: str) -> io.BufferedWriter:
        mdir = self.folder / "models" / model
        mdir.mkdir(parents=True, exist_ok=True)
        journal = mdir / "events.jsonl"
        if journal.exists():  # an earlier attempt's (or session's) journal is kept beside, never appended to
            earlier = mdir / "earlier"
            earlier.mkdir(exist_ok=True)
            n = len(list(earlier.glob("*events.jsonl"))) + 1
            journal.rename(earlier / f"{n}-events.jsonl")
            for name in ("report.json", "report.md", "report.html"):
                (mdir / name).unlink(missing_ok=True)
            shutil.rmtree(mdir / "run", ignore_errors=True)
        return journal.open("wb")

    def _append(self, live: _Live, lines: bytes) -> None:
        assert live.fh is not None, "journal lines before TaskPlaced"
        live.fh.write(lines)
        live.fh.flush()
        now = time.time_ns()
        for line in lines.splitlines():
            ev: Event = decode_event(line)
            live.lags_ns.append(now - ev.ts_ns)
            if isinstance(ev, PhaseStarted) and ev.model:
                self.progress.update(live.model, stage=ev.phase)
            elif isinstance(ev, ModelResult):
                live.result = ev
                self.progress.update(live.model, status=ev.status)
            elif isinstance(ev, RunFinished):
                live.run_finished = True
            elif isinstance(ev, ServerSpawned):
                live.servers[ev.pid] = ev.incarnation
            elif isinstance(ev, ServerExited):
                live.servers.pop(ev.pid, None)

    def _close_journal(self, live: _Live) -> None:
        if live.fh is not None:
            live.fh.flush()
            os.fsync(live.fh.fileno())
            live.fh.close()
            live.fh = None

    def _lag(self, live: _Live) -> dict[str, float]:
        lags = sorted(live.lags_ns)
        if not lags:
            return {}

        def pick(q: float) -> float:
            return lags[min(len(lags) - 1, int(q * len(lags)))] / 1e6

        return {"lines": float(len(lags)), "lag_p50_ms": pick(0.5), "lag_p99_ms": pick(0.99),
                "lag_max_ms": lags[-1] / 1e6}

    def _done(self, live: _Live, msg: TaskDone) -> None:
        self._close_journal(live)
        mdir = self.folder / "models" / live.model
        with tarfile.open(fileobj=io.BytesIO(msg.folder_tar), mode="r:gz") as tar:
            tar.extractall(mdir / "run", filter="data")
        reason = self._write_reports(live.model)
        r = live.result
        ended: AttemptEnd = "interrupted" if msg.interrupted else "finished"
        status = r.status if r is not None and not msg.interrupted else ("interrupted" if msg.interrupted else "error")
        why = (r.row.reason if r is not None else "") or reason
        if msg.interrupted:
            why = f"stopped by {signal.Signals(msg.exit_code - 128).name}" if msg.exit_code > 128 else "stopped"
        self.journal.write(AttemptEnded(model=live.model, attempt=live.attempt, node_id=live.node_id, ended=ended,
                                        status=status, exit_code=msg.exit_code, reason=why, stream=self._lag(live)))
        self._finish(live.model, status, reason=why, attempts=live.attempt, result=r, kept=msg.kept_on_node,
                     node_id=live.node_id)

    def _write_reports(self, model: str) -> str:
        try:
            write_reports(self.folder / "models" / model / "events.jsonl", self.folder / "models" / model)
        except AqbenchError as exc:
            return f"reports not written: {exc}"
        return ""

    def _ended(self, live: _Live, d: Delivery, *, stopping: bool) -> bool:
        self._close_journal(live)
        assert d.ended is not None
        node_id = d.node_id or live.node_id
        retry = d.ended == "node-lost" and not stopping and live.attempt <= self.cfg.campaign.max_retries
        if d.ended == "node-lost" and node_id:
            facts = next((n for n in self.cluster.nodes() if n.node_id == node_id), None)
            if facts is None or not facts.alive:
                self.journal.write(NodeLost(node_id=node_id, node_address=facts.address if facts else "",
                                            reason=d.reason))
        # A stream that broke before the server's exit was journaled: nobody on the driver saw it stop.
        left = [f"pid {pid} (incarnation {inc})" for pid, inc in sorted(live.servers.items())]
        self.journal.write(AttemptEnded(model=live.model, attempt=live.attempt, node_id=node_id, ended=d.ended,
                                        reason=d.reason, retry=retry, stream=self._lag(live),
                                        servers_not_stopped=left))
        if retry:
            self.progress.update(live.model, status="node lost, retrying")
            return True
        if live.fh is None and (self.folder / "models" / live.model / "events.jsonl").exists():
            self._write_reports(live.model)
        status = {"node-lost": "node-lost", "interrupted": "interrupted"}.get(d.ended, "error")
        self._finish(live.model, status, reason=d.reason, attempts=live.attempt, node_id=node_id)
        return False

    def _finish(self, model: str, status: str, *, reason: str, attempts: int, result: ModelResult | None = None,
                kept: list[KeptFile] | None = None, node_id: str = "") -> None:
        mdir = self.folder / "models" / model
        journal = mdir / "events.jsonl"
        self.journal.write(ModelFinished(
            model=model, status=status, failed_stage=result.failed_stage if result else "", reason=reason,
            attempts=attempts, node_id=node_id,
            reproduce=(result.row.qualify_command if result else "") or f"aqbench qualify --config "
            f"{self.cfg.source or 'bench.toml'} --model {model}",
            journal=str(journal.relative_to(self.folder)) if journal.exists() else "",
            run_folder=str((mdir / "run").relative_to(self.folder)) if (mdir / "run").exists() else "",
            kept_on_node=kept or []))
        self.statuses[model] = status
        self.live.pop(model, None)
        self.progress.update(model, status=status)


def run_campaign(cfg: Config, opts: CampaignOptions, cluster: Cluster, stop: StopRequest, *,
                 progress_out: object = None, on_folder: Callable[[Path], object] | None = None) -> tuple[int, Path]:
    """Run the campaign to its end (or until `stop` is set); returns (exit code, campaign folder). Blocks.
    `on_folder` is told the campaign's folder once campaign.jsonl is started (the live page follows it).

    Exit 0 when every model of this session is aiperf-qualified, 1 otherwise, 128+signum when stopped.
    The campaign's reports are written before it returns, also when stopped.
    """
    models = _select(cfg, opts.models)
    if opts.resume:
        folder = Path(opts.resume)
        if not (folder / "campaign.jsonl").is_file():
            raise UsageError(f"--resume {folder}: no campaign.jsonl there; pass the folder of an earlier campaign "
                             f"(runs/<campaign>)")
        done, stale = still_current(folder, final_models(folder),
                                    current_keys(cfg, [m.name for m in models]))
    else:
        folder = Path(cfg.run.output_dir) / new_run_id("campaign")
        done, stale = {}, {}
    folder.mkdir(parents=True, exist_ok=True)
    todo = [m for m in models if m.name not in done]
    progress = Progress([m.name for m in todo], out=progress_out)  # type: ignore[arg-type]
    driver = _Driver(cfg, opts, cluster, stop, folder, progress, todo)
    driver.journal.write(CampaignStarted(
        campaign_id=folder.name, argv=list(opts.argv or sys.argv), config_path=cfg.source,
        config_sha256=cfg.sha256, address=cluster.address, models=[m.name for m in todo],
        skipped=sorted(m.name for m in models if m.name in done), max_parallel=driver.max_parallel,
        max_retries=cfg.campaign.max_retries, nodes=cluster.nodes(), stale=stale))
    if on_folder is not None:
        on_folder(folder)
    status, reason = "ok", ""
    try:
        driver.run(deque((m.name, 1) for m in todo))
    except BaseException as exc:
        status, reason = "error", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        statuses = driver.statuses
        if stop.signum is not None:
            exit_code, status = 128 + stop.signum, "interrupted"
            reason = f"stopped by {signal.Signals(stop.signum).name}"
        elif status == "error":
            exit_code = 3
        else:
            exit_code = 0 if all(s == "aiperf-qualified" for s in statuses.values()) else 1
            status = "ok" if exit_code == 0 else "failed"
        driver.journal.write(CampaignFinished(status=status, exit_code=exit_code, reason=reason,  # type: ignore[arg-type]
                                              counts={s: sum(v == s for v in statuses.values())
                                                      for s in sorted(set(statuses.values()))}))
        driver.journal.close()
        write_campaign_reports(folder)
    return exit_code, folder

"""`aqbench soak`: one supervised server under consecutive AIPerf windows, judged for leaks and drift.

Composition root: chooses the adapters. Each window is a complete, judged AIPerf run in its own folder
(runs/<id>/windows/wNNNN); per-window aggregates stay in memory (one small struct per window), details
go to the journal. Verdicts are journaled and reports written at every checkpoint and at the end.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from orchestrator.config import Config, ModelConfig
from orchestrator.dataset import (
    Dataset,
    load_dataset,
    parse_session_key,
    prepare_arms,
    resolve_dataset_path,
)
from orchestrator.errors import AqbenchError, ServerError, UsageError
from orchestrator.events import (
    NoticeContext,
    PhaseDetail,
    PhaseFinished,
    PhaseStarted,
    SoakVerdict,
    SoakWindowClosed,
    Warned,
)
from orchestrator.logs import get_logger
from orchestrator.ports import Toolkit
from orchestrator.run import Interrupt, RunScope, new_run_id, open_run
from orchestrator.soak.leftovers import check_processes
from orchestrator.soak.tracker import SoakTracker
from orchestrator.soak.verdicts import (
    MetricVerdict,
    ProcessCheck,
    SoakLimits,
    judge_soak,
)
from orchestrator.soak.window import WindowStats, window_name

__all__ = ["SoakOptions", "soak", "SoakTracker", "check_processes"]

log = get_logger("aqbench.soak")

# Requests per AIPerf window: the window ends by --benchmark-duration, never by this count.
_WINDOW_REQUEST_CAP = 10_000_000
# After a stop request: how long the current window may take to end (SIGINT, files, accounting).
_STOP_BUDGET_S = 60.0


class SoakOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml (None: take bench.toml's value)."""

    duration_s: float | None = None
    window_s: float | None = None
    request_rate: float | None = None
    concurrency: int | None = None
    model: str = ""
    argv: list[str] = []






def _select_model(cfg: Config, name: str) -> ModelConfig:
    if not cfg.models:
        raise UsageError(f"{cfg.source}: no [[models]] configured; a soak needs one")
    if not name:
        return cfg.models[0]
    for m in cfg.models:
        if m.name == name:
            return m
    raise UsageError(f"--model {name}: not configured in {cfg.source}; configured models: "
                     f"{', '.join(m.name for m in cfg.models)}")


class _Settings(msgspec.Struct, frozen=True, kw_only=True):
    duration_s: float
    window_s: float
    checkpoint_every_s: float
    request_rate: float | None
    concurrency: int | None
    warmup_requests: int
    arms: list[str]
    limits: SoakLimits


def _settings(cfg: Config, opts: SoakOptions) -> _Settings:
    from orchestrator.errors import ConfigError

    s, w = cfg.soak, cfg.workload
    duration = opts.duration_s or s.duration_s
    window = opts.window_s or s.window_s
    if window > duration:
        raise ConfigError(f"--window {window:g} s is longer than --duration {duration:g} s")
    if opts.request_rate is not None and opts.concurrency is not None:
        raise UsageError("pass --rate or --concurrency, not both")
    rate, conc = opts.request_rate, opts.concurrency
    if rate is None and conc is None:
        rate, conc = w.request_rate, w.concurrency
    return _Settings(duration_s=duration, window_s=window, checkpoint_every_s=s.checkpoint_every_s,
                     request_rate=rate, concurrency=None if rate is not None else conc,
                     warmup_requests=w.warmup_requests, arms=list(w.arms), limits=SoakLimits.from_config(s))


async def soak(cfg: Config, opts: SoakOptions, interrupt: Interrupt, toolkit: Toolkit) -> int:
    """Run the soak; returns the exit code (0 every verdict passed, 1 a verdict failed, 130/143 interrupted).

    The whole run sits in a shielded scope: a signal (run_main cancels) only sets a stop flag, so the
    current window ends gracefully (AIPerf gets SIGINT, its partial results are judged), the journal
    gets its verdicts and RunFinished, and the reports are written.
    """
    model = _select_model(cfg, opts.model)
    settings = _settings(cfg, opts)
    dataset = await anyio.to_thread.run_sync(load_dataset, resolve_dataset_path(cfg.dataset))
    stop = anyio.Event()
    rc = 0
    async with anyio.create_task_group() as outer:

        async def sentinel() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                stop.set()

        outer.start_soon(sentinel)
        with anyio.CancelScope(shield=True):
            rc = await _soak(cfg, opts, settings, model, dataset, interrupt, stop, toolkit)
        outer.cancel_scope.cancel()
    return rc


async def _soak(cfg: Config, opts: SoakOptions, settings: _Settings, model: ModelConfig, dataset: Dataset,
                interrupt: Interrupt, stop: anyio.Event, toolkit: Toolkit) -> int:
    from orchestrator.view.soak import SoakView

    verdicts: list[MetricVerdict] = []
    # Soak runs are named apart from qualify runs of the same config: runs/soak-<timestamp>, or
    # runs/<name>-soak-<timestamp> when [run] name is set.
    name = cfg.run.name if "soak" in cfg.run.name else f"{cfg.run.name}-soak" if cfg.run.name else "soak"
    run_dir = Path(cfg.run.output_dir) / new_run_id(name)
    async with open_run(cfg, command="soak", argv=opts.argv or sys.argv, interrupt=interrupt,
                        run_dir=run_dir) as run:
        await run.tg.start(SoakView(run.bus, duration_s=settings.duration_s).run)
        await run.bus.publish(PhaseFinished(
            source="soak", phase="dataset", outcome="passed",
            detail=PhaseDetail(name=dataset.name, identity=dataset.identity, path=str(dataset.root),
                               items=len(dataset.items), arms=settings.arms)))
        state = _Soak(run, model, dataset, settings, stop, toolkit)
        try:
            verdicts = await state.run()
        except AqbenchError as exc:
            log.error("soak_failed", error=str(exc))
            raise
        failed = [v for v in verdicts if not v.passed]
        if interrupt.signum:
            reason = f"interrupted by {signal.Signals(interrupt.signum).name} after {state.done} window(s)"
            run.finish(status="interrupted", exit_code=interrupt.exit_code, reason=reason,
                       counts={"windows": state.done})
        else:
            run.finish(status="failed" if failed else "ok", exit_code=1 if failed else 0,
                       reason="; ".join(f"{v.metric}: {v.reason}" for v in failed),
                       counts={"windows": state.done})
    paths = await anyio.to_thread.run_sync(_write_reports, run.journal_path, run.run_dir)
    _print_summary(run.run_dir, verdicts, paths)
    return interrupt.exit_code if interrupt.signum else (1 if any(not v.passed for v in verdicts) else 0)


def _write_reports(journal: Path, run_dir: Path) -> list[Path]:
    """The qualify-shaped report plus the soak report (pictures per window, verdict table). Blocks."""
    from orchestrator.reports import write_reports
    from orchestrator.reports.soak import write_soak_report

    out: list[Path] = []
    try:
        p = write_reports(journal, run_dir)
        out += [p.json, p.markdown, p.html]
    except Exception as exc:  # the soak report must still be written when the shared one cannot be
        log.error("report_failed", error=str(exc))
    out += list(write_soak_report(journal, run_dir))
    return out


def _print_summary(run_dir: Path, verdicts: list[MetricVerdict], paths: list[Path]) -> None:
    print(f"\nsoak: {run_dir}", file=sys.stderr)
    for v in verdicts:
        word = "PASS" if v.passed else "FAIL"
        word = word if v.judged else "n/a "
        print(f"  {word} {v.metric}: {v.reason[:300]}", file=sys.stderr)
    print(f"  reports: {', '.join(str(p) for p in paths)}", file=sys.stderr)


class _Soak:
    """One soak's loop: server, collectors, windows, checkpoints, final verdicts."""

    def __init__(self, run: RunScope, model: ModelConfig, dataset: Dataset, settings: _Settings,
                 stop: anyio.Event, toolkit: Toolkit) -> None:
        self.run_scope = run
        self.toolkit = toolkit
        self.bus = run.bus
        self.cfg = run.config
        self.model = model
        self.dataset = dataset
        self.settings = settings
        self.stop = stop
        self.windows: list[WindowStats] = []
        self.cut_short: set[str] = set()  # windows the stop signalled while their AIPerf ran
        self.done = 0
        self._next_checkpoint = 0.0
        self._last_end_ns: int | None = None  # the last answer of the windows finalised so far
        self.tracker = SoakTracker(run.bus, dataset, model, max_tokens=run.config.workload.max_tokens)
        # AIPerf's ZeroMQ sockets live under TMPDIR and their paths must fit in 107 bytes: a short
        # folder per soak (not the run folder), removed at the end with AIPerf's leftovers.
        self.tmp_dir = Path(tempfile.mkdtemp(prefix="aqb-soak-"))

    async def phase(self, phase: str, outcome: str | None = None, reason: str = "", **detail: Any) -> None:
        if outcome is None:
            await self.bus.publish(PhaseStarted(source="soak", phase=phase, model=self.model.name,
                                                detail=PhaseDetail(**detail)))
        else:
            await self.bus.publish(PhaseFinished(source="soak", phase=phase, model=self.model.name, outcome=outcome,
                                                 reason=reason, detail=PhaseDetail(**detail)))

    async def run(self) -> list[MetricVerdict]:
        from orchestrator.correlate import Correlator
        from orchestrator.supervisor import ServerSpec, supervise

        run, m, s = self.run_scope, self.model, self.settings
        await self.phase("model", checkpoint=m.checkpoint, profile=m.profile, revision=m.revision, family=m.family,
                         native_task=m.native_task, precision=m.precision, bundle=m.bundle or self.cfg.server.bundle)
        install = await anyio.to_thread.run_sync(self.toolkit.aiperf.check_install)
        tokenizer = await anyio.to_thread.run_sync(self.toolkit.aiperf.ensure_tokenizer, m.tokenizer)
        rows = await anyio.to_thread.run_sync(prepare_arms, self.dataset, s.arms, run.run_dir / "wire")
        await run.tg.start(self.toolkit.records_tailer(self.bus).run)
        correlator = Correlator(self.bus, key_parser=parse_session_key, answer_grace_s=2.0)
        await run.tg.start(correlator.run)
        await run.tg.start(self.tracker.run)

        await self.phase("server")
        spec = ServerSpec.from_config(self.cfg, m, run.run_dir, parts=self.toolkit.server_parts(self.cfg.server.kind))
        verdicts: list[MetricVerdict] = []
        started = False
        server_failure = ""
        try:
            async with anyio.create_task_group() as tg:
                try:
                    handle = await tg.start(supervise, spec, self.bus)
                except ServerError as exc:
                    await self.phase("server", "failed", str(exc), argv=list(spec.argv(1)))
                    raise
                started = True
                try:
                    await self.phase("server", "passed", argv=list(spec.argv(1)), base_url=handle.base_url)
                    await self.phase("soak", **msgspec.to_builtins(s))
                    await self._windows(handle, correlator, install, tokenizer, rows)
                finally:
                    with anyio.CancelScope(shield=True):
                        await handle.stop()
                    tg.cancel_scope.cancel()
        except* ServerError as group:
            if not started:
                raise
            # The restart policy gave up: the windows so far are still judged and reported.
            server_failure = "; ".join(str(e) for e in group.exceptions)
            await self.bus.publish(Warned(source="soak", code="soak_server_failed", message=server_failure,
                                          detail=NoticeContext(model=self.model.name)))
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.tmp_dir, ignore_errors=True))
        check = await anyio.to_thread.run_sync(
            lambda: check_processes(run.run_dir, orphans_killed=self.tracker.orphans_killed))
        verdicts = await self._verdicts(final=True, processes=check)
        failed = [v for v in verdicts if not v.passed]
        await self.phase("soak", "failed" if failed else "passed", "; ".join(f"{v.metric}: {v.reason}" for v in failed),
                         windows=self.done)
        await self.phase("model", "soak-failed" if failed else "soak-passed")
        return verdicts

    async def _windows(self, handle: Any, correlator: Any, install: Any, tokenizer: Path, rows: list[Any]) -> None:
        """Consecutive windows with no gap but AIPerf's own exit and start-up: window N+1's AIPerf is
        launched as soon as window N's AIPerf process has exited, while N is finalised (artifacts,
        accounting, aggregation, checkpoint) in its own task. Finalisations run one at a time, in order."""
        aiperf = self.toolkit.aiperf
        from orchestrator.dataset import write_aiperf_input

        s, w = self.settings, self.cfg.workload
        count = max(1, math.ceil(s.duration_s / s.window_s - 1e-9))
        started = time.monotonic()
        self._next_checkpoint = started + s.checkpoint_every_s
        finalised: anyio.Event | None = None
        sent = 0
        loaded_s = 0.0
        async with anyio.create_task_group() as tg:
            for index in range(1, count + 1):
                if self.stop.is_set():
                    break
                # The duration is time under load: AIPerf's start-ups add to the wall time, so the last
                # window is the remainder of the duration (not a stub cut short by the start-ups before it).
                length = min(s.window_s, max(1.0, s.duration_s - loaded_s))
                loaded_s += length
                name = window_name(index)
                folder = self.run_scope.run_dir / "windows" / f"w{index:04d}"
                # AIPerf replays its input from the first row: each window starts where the last one
                # stopped, so that over a soak every item is judged, not only the first few of the file.
                shift = sent % len(rows) if rows else 0
                input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows[shift:] + rows[:shift],
                                                            folder / "inputs.jsonl")
                cmd = aiperf.build_command(w, base_url=handle.base_url, model=self.model.name, input_file=input_file,
                                    artifact_dir=folder / "artifacts", tokenizer=tokenizer,
                                    executable=install.executable, requests=_WINDOW_REQUEST_CAP,
                                    warmup=s.warmup_requests if index == 1 else 0, concurrency=s.concurrency,
                                    request_rate=s.request_rate, tap_dir=folder / "tap", tmp_dir=self.tmp_dir)
                grace = w.request_timeout_s
                extra = ["--benchmark-duration", f"{length:g}", "--benchmark-grace-period", f"{grace:g}"]
                cmd = aiperf.extend_command(cmd, extra)
                await anyio.to_thread.run_sync(cmd.save, folder)
                await handle.wait_ready(self.cfg.server.startup_timeout_s)
                self.tracker.open_window(index, time.time_ns())
                exited, done = _Exit(), anyio.Event()
                tg.start_soon(self._window, aiperf.run_aiperf, cmd, index, name, length + grace + w.deadline_s, install,
                              correlator, exited, finalised, done, count)
                await exited.wait()
                finalised = done
                # Rows this window consumed, as joined so far: its last answers may still be in the join,
                # which shifts the next window's start by a row or two, never skips the rotation.
                acc = self.tracker.window(name)
                sent += (acc.issued + acc.warmup_issued) if acc else 0

    async def _window(self, run_aiperf: Any, cmd: Any, index: int, name: str, deadline_s: float, install: Any,
                      correlator: Any, exited: _Exit, previous: anyio.Event | None, done: anyio.Event,
                      count: int) -> None:
        """Run window `index`'s AIPerf (setting `exited` when its process ends), then finalise the
        window once the previous window's finalisation is `done`."""
        try:
            try:
                outcome = await self._run_window(run_aiperf, cmd, name, deadline_s=deadline_s, install=install,
                                                 exited=exited)
            finally:
                exited.set()  # also on failure: the launch loop must not wait for an exit forever
            if previous is not None:
                await previous.wait()
            await self._finalise(index, name, outcome, correlator, exited, count)
        finally:
            done.set()

    async def _finalise(self, index: int, name: str, outcome: Any, correlator: Any, exited: _Exit,
                        count: int) -> None:
        """Close the window's accounting and aggregates, journal them, and checkpoint when due."""
        accounting = await correlator.close_window(name)
        await self.tracker.wait_seen(accounting.seq)
        acc = self.tracker.window(name)
        first = acc.first_request_ns if acc else None
        gap = (first - self._last_end_ns) / 1e9 if first and self._last_end_ns else None
        stats = self.tracker.close_window(name, time.time_ns(), aiperf_classification=outcome.classification,
                                          accounting_balanced=accounting.balanced, gap_before_s=gap,
                                          aiperf_launch_unix_ns=self.tracker.aiperf_launch_ns.get(name),
                                          aiperf_exit_unix_ns=exited.unix_ns)
        self._last_end_ns = stats.last_request_unix_ns or self._last_end_ns
        self.windows.append(stats)
        self.done = index
        await self.bus.publish(SoakWindowClosed(source="soak", window=name, index=index,
                                                summary=stats.to_summary()))
        if outcome.classification == "failed":
            await self.bus.publish(Warned(source="soak", code="soak_window_failed",
                                          message=f"window {name}: AIPerf run failed: {outcome.reason}",
                                          detail=NoticeContext(model=self.model.name)))
        if time.monotonic() >= self._next_checkpoint and not self.stop.is_set() and index < count:
            self._next_checkpoint += self.settings.checkpoint_every_s
            await self._checkpoint()

    async def _run_window(self, run_aiperf: Any, cmd: Any, name: str, *, deadline_s: float, install: Any,
                          exited: _Exit) -> Any:
        """Run one AIPerf window; returns once its files are judged, having set `exited` as soon as its
        process ended. A stop request sends the running process's group SIGINT (then SIGKILL after the
        grace) so that AIPerf writes and the adapter judges what it has."""
        result: list[Any] = []

        async def pid() -> int:
            # AiperfStarted (with the pid) may still be on its way through the bus.
            while not (found := self.tracker.aiperf_pids.get(name)):
                await anyio.sleep(0.02)
            return found

        async with anyio.create_task_group() as tg:

            async def stopper() -> None:
                await self.stop.wait()
                found = await pid()
                if exited.is_set():
                    return  # ended already: its pid may be another process's by now
                log.info("soak_window_stopping", window=name, pid=found)
                self.cut_short.add(name)
                _killpg(found, signal.SIGINT)
                with anyio.move_on_after(self.cfg.workload.stop_grace_s):
                    await exited.wait()
                if not exited.is_set():
                    _killpg(found, signal.SIGKILL)

            tg.start_soon(stopper)
            with anyio.move_on_after(deadline_s + _STOP_BUDGET_S):
                result.append(await run_aiperf(cmd, self.bus, window=name, deadline_s=deadline_s,
                                               stop_grace_s=self.cfg.workload.stop_grace_s, install=install,
                                               on_exit=exited.set))
            tg.cancel_scope.cancel()
        if not result:
            raise AqbenchError(f"AIPerf window {name} did not end within {deadline_s + _STOP_BUDGET_S:g} s")
        return result[0]

    async def _checkpoint(self) -> None:
        """Checkpoint verdicts, then the reports from the journal so far (an interrupted soak keeps them)."""
        await self._verdicts(final=False)
        try:
            await anyio.to_thread.run_sync(_write_reports, self.run_scope.journal_path, self.run_scope.run_dir)
        except Exception as exc:  # a report bug must not end an eight-hour soak; it is journaled instead
            await self.bus.publish(Warned(source="soak", code="soak_checkpoint_report_failed",
                                          message=f"checkpoint report after window {self.done} failed: {exc!r}"))

    async def _verdicts(self, *, final: bool, processes: ProcessCheck | None = None) -> list[MetricVerdict]:
        verdicts = judge_soak(self.windows, self.settings.limits, exits=self.tracker.exits, processes=processes,
                              cut_short=self.cut_short)
        for v in verdicts:
            await self.bus.publish(SoakVerdict(source="soak", metric=v.metric, passed=v.passed, final=final,
                                               detail={"judged": v.judged, "reason": v.reason,
                                                       "windows_closed": self.done, **v.detail}))
        return verdicts


class _Exit:
    """When one window's AIPerf process ended (wall clock): the cue to launch the next window."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.unix_ns: int | None = None

    def set(self) -> None:
        if not self._event.is_set():
            self.unix_ns = time.time_ns()
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


def _killpg(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass

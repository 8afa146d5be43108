"""`aqbench soak`: starts and stops the soak's steps (records, join, windows, tracker, evidence, verdicts) and
runs its load: AIPerf segments and their handovers."""

from __future__ import annotations

import math
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from orchestrator.base.errors import AqbenchError, ServerError
from orchestrator.config import Config, ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import (
    ArmRequest,
    Dataset,
    interleave_kinds,
    load_dataset,
    parse_session_key,
    prepare_arms,
    resolve_dataset_path,
    write_aiperf_input,
)
from orchestrator.dataset.clip_cache import clip_cache_dir, facts_dir
from orchestrator.events import (
    DatasetPhase,
    ModelPhase,
    NoticeContext,
    PhaseDetail,
    PhaseFinished,
    PhaseStarted,
    ServerPhase,
    SoakPhase,
    SoakStopped,
    Warned,
)
from orchestrator.judge.outcome import INCONCLUSIVE
from orchestrator.live.start import start_live_page
from orchestrator.run import Interrupt, RunScope, new_run_id, open_run
from orchestrator.run.observer import ObserverSampler
from orchestrator.soak.capability import PROBE_PLAN, probe_before_load
from orchestrator.soak.checkpoint import CheckpointReportFailed, write_checkpoint_report
from orchestrator.soak.closing import Looks
from orchestrator.soak.cutter import WindowCutter
from orchestrator.soak.early_stop import look_confidence, plan_stops
from orchestrator.soak.evidence import EvidenceCollector, LoadFacts
from orchestrator.soak.heap import keep_large_blocks_off_heap, trim_heap
from orchestrator.soak.judging import SoakJudge
from orchestrator.soak.leftovers import check_processes
from orchestrator.soak.load_coverage import schedule_allowance
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.plan import host_has_gpu, plan_trends
from orchestrator.soak.progress import LoadProgress
from orchestrator.soak.segment import Cut, Exit, Launch, SegmentRuns, aiperf_run_name
from orchestrator.soak.settings import SoakOptions, SoakSettings, resolve_settings, select_model
from orchestrator.soak.successor import run_handovers
from orchestrator.soak.summary import exit_code, print_summary, write_all_reports
from orchestrator.soak.tracker import SoakTracker
from orchestrator.soak.verdicts import AiperfRunFact
from orchestrator.spine.logs import get_logger, say
from orchestrator.spine.ports import AiperfFacts, AiperfInvocation, AiperfResult, HandoverControl, Toolkit
from orchestrator.spine.race import first_of
from orchestrator.supervision.server_spec import ServerSpec
from orchestrator.supervision.supervisor import ServerHandle, supervise
from orchestrator.view.soak import SoakView

__all__ = ["soak", "aiperf_run_name"]

log = get_logger("aqbench.soak")

# Requests per AIPerf run: the run ends by --benchmark-duration, never by this count.
_WINDOW_REQUEST_CAP = 10_000_000
# Less duration than this left after an AIPerf run ended early: no new one is started.
_MIN_RUN_S = 1.0
_MAX_FAILED_RUNS = 3
# After a stop request: how long the current window may take to end (SIGINT, files, accounting).
_STOP_BUDGET_S = 60.0


async def soak(cfg: Config, opts: SoakOptions, interrupt: Interrupt, toolkit: Toolkit) -> int:
    """Run the soak; returns the exit code (0 no verdict failed, 1 a verdict failed or, with `strict`, was
    inconclusive; 130/143 interrupted).

    The whole run sits in a shielded scope: a signal (run_main cancels) only sets a stop flag, so the
    current window ends gracefully (AIPerf gets SIGINT, its partial results are judged), the journal
    gets its verdicts and RunFinished, and the reports are written.
    """
    model = select_model(cfg, opts.model)
    settings = resolve_settings(cfg, opts)
    keep_large_blocks_off_heap()  # before the soak allocates: the soak judges this process's memory
    dataset = await anyio.to_thread.run_sync(
        lambda: load_dataset(resolve_dataset_path(cfg.dataset), facts=facts_dir(cfg.run)))
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


async def _soak(cfg: Config, opts: SoakOptions, settings: SoakSettings, model: ModelConfig, dataset: Dataset,
                interrupt: Interrupt, stop: anyio.Event, toolkit: Toolkit) -> int:
    verdicts: list[MetricVerdict] = []
    # Soak runs are named apart from qualify runs of the same config: runs/soak-<timestamp>, or
    # runs/<name>-soak-<timestamp> when [run] name is set.
    name = cfg.run.name if "soak" in cfg.run.name else f"{cfg.run.name}-soak" if cfg.run.name else "soak"
    run_dir = Path(cfg.run.output_dir) / new_run_id(name)
    async with open_run(cfg, command="soak", argv=opts.argv or sys.argv, interrupt=interrupt,
                        run_dir=run_dir, compact=cfg.soak.journal == "compact") as run:
        await run.tg.start(SoakView(run.bus, duration_s=settings.duration_s).run)
        await start_live_page(run, opts.serve)
        await run.bus.publish(PhaseFinished(
            source="soak", phase="dataset", outcome="passed",
            detail=DatasetPhase(name=dataset.name, identity=dataset.identity, path=str(dataset.root),
                                items=len(dataset.items), arms=settings.arms)))
        state = _Soak(run, model, dataset, settings, stop, toolkit)
        try:
            verdicts = await state.run()
        except AqbenchError as exc:
            log.error("soak_failed", error=str(exc))
            raise
        failed = [v for v in verdicts if v.failed]
        undecided = [v for v in verdicts if v.outcome == INCONCLUSIVE]
        code = 1 if state.unsupported else exit_code(verdicts, strict=opts.strict)
        if state.unsupported and not interrupt.signum:
            run.finish(status="failed", exit_code=1, reason=state.unsupported, counts={"windows": 0})
        elif interrupt.signum:
            reason = f"interrupted by {signal.Signals(interrupt.signum).name} after {state.windows.done} window(s)"
            run.finish(status="interrupted", exit_code=interrupt.exit_code, reason=reason,
                       counts={"windows": state.windows.done})
        else:
            named = failed + (undecided if opts.strict else [])
            run.finish(status="failed" if code else "ok", exit_code=code,
                       reason="; ".join(f"{v.metric}: {v.outcome}: {v.reason}" for v in named),
                       counts={"windows": state.windows.done, "failed": len(failed), "inconclusive": len(undecided)})
    paths = await anyio.to_thread.run_sync(write_all_reports, run.journal_path, run.run_dir)
    print_summary(run.run_dir, verdicts, paths, strict=opts.strict,
                  interrupted_by=signal.Signals(interrupt.signum).name if interrupt.signum else "",
                  interrupted_exit=interrupt.exit_code)
    return interrupt.exit_code if interrupt.signum else code


class _Soak:
    """One soak's loop: server, collectors, windows, checkpoints, final verdicts."""

    def __init__(self, run: RunScope, model: ModelConfig, dataset: Dataset, settings: SoakSettings,
                 stop: anyio.Event, toolkit: Toolkit) -> None:
        self.run_scope = run
        self.toolkit = toolkit  # the adapters, passed in by the composition root
        self.bus = run.bus
        self.cfg = run.config
        self.model = model
        self.dataset = dataset
        self.settings = settings
        self.stop = stop
        self.stopped_at: dict[str, int] = {}  # AIPerf runs the stop ended: name -> when (unix ns)
        self.runs: list[AiperfRunFact] = []  # the AIPerf runs that have ended, for the accounting verdict
        self.segment = 0  # window schedules (segments) started so far: a new one only after a failure
        self._live: SegmentRuns | None = None  # the current segment's runs
        self.launched = 0  # AIPerf runs started so far (several per segment with handovers)
        self.aiperf_name = ""  # the running AIPerf run's name ("" between runs)
        self._next_checkpoint = 0.0
        self.decided: list[MetricVerdict] = []  # the look's FAILs that ended the soak early (empty: none did)
        self.unsupported = ""  # why the capability probe stopped the soak before its load ("": it did not)
        limits = settings.limits
        # The soak's steps (docs/development.md draws them): the load's progress from the records, the join, the
        # answers per window (tracker), the evidence and the judge (verdicts), and the cutter (windows).
        self.progress = LoadProgress(run.bus)
        self.tracker = SoakTracker(run.bus, dataset, model, max_tokens=run.config.workload.max_tokens)
        self.evidence = EvidenceCollector(run.bus, warmup_s=limits.warmup_s, baseline_s=limits.latency_baseline_s)
        self.correlator = Correlator(run.bus, key_parser=parse_session_key, answer_grace_s=2.0, cut_by_time=True)
        self.judge = SoakJudge(run.bus, self.evidence, limits, stop_early=settings.stop_early,
                               gap_allowance=schedule_allowance(settings.request_rate,
                                                                run.config.workload.arrival_pattern))
        self.windows = WindowCutter(run.bus, self.correlator, self.tracker, self.progress,
                                    window_s=settings.window_s, stopped_at=self.stopped_at)
        # AIPerf's ZeroMQ sockets live under TMPDIR and their paths must fit in 107 bytes: a short
        # folder per soak (not the run folder), removed at the end with AIPerf's leftovers.
        self.tmp_dir = Path(tempfile.mkdtemp(prefix="aqb-soak-"))

    async def phase(self, phase: str, outcome: str | None = None, reason: str = "",
                    detail: PhaseDetail | None = None) -> None:
        if outcome is None:
            await self.bus.publish(PhaseStarted(source="soak", phase=phase, model=self.model.name, detail=detail))
        else:
            await self.bus.publish(PhaseFinished(source="soak", phase=phase, model=self.model.name, outcome=outcome,
                                                 reason=reason, detail=detail))

    async def run(self) -> list[MetricVerdict]:
        run, m, s = self.run_scope, self.model, self.settings
        await self.phase("model", detail=ModelPhase(**m.identity_fields(), bundle=m.bundle or self.cfg.server.bundle))
        install = await anyio.to_thread.run_sync(self.toolkit.aiperf.check_install)
        tokenizer = await anyio.to_thread.run_sync(self.toolkit.aiperf.ensure_tokenizer, m.tokenizer)
        rows = interleave_kinds(await anyio.to_thread.run_sync(lambda: prepare_arms(
            self.dataset, s.arms, run.run_dir / "wire", cache=clip_cache_dir(self.cfg.run))), self.dataset)
        self.evidence.cycle = len(rows)  # the first pass over the input (the memory verdicts' cut)
        await run.tg.start(self.toolkit.records_tailer(self.bus).run)
        correlator = self.correlator
        await run.tg.start(correlator.run)
        await run.tg.start(self.progress.run)
        await run.tg.start(self.tracker.run)
        await run.tg.start(self.evidence.run)
        sampler = ObserverSampler(self.bus, period_s=self.cfg.server.sample_period_s,
                                  aiperf_pid=lambda: self.progress.aiperf_pids.get(self.aiperf_name), trim=trim_heap)
        await run.tg.start(sampler.run)

        await self.phase("server")
        spec = ServerSpec.from_config(self.cfg, m, run.run_dir, parts=self.toolkit.server_parts(self.cfg.server.kind))
        verdicts: list[MetricVerdict] = []
        gpu = await anyio.to_thread.run_sync(host_has_gpu, spec.parts.new_sampler)
        plan = plan_trends(s.duration_s, s.limits, s.window_s, cycle_requests=len(rows), request_rate=s.request_rate,
                           gpu=gpu)
        started = False
        server_failure = ""
        try:
            async with anyio.create_task_group() as tg:
                try:
                    handle = await tg.start(supervise, spec, self.bus)
                except ServerError as exc:
                    await self.phase("server", "failed", str(exc), ServerPhase(argv=list(spec.argv(1))))
                    raise
                started = True
                try:
                    await self.phase("server", "passed",
                                     detail=ServerPhase(argv=list(spec.argv(1)), base_url=handle.base_url))
                    stops = plan_stops(s.duration_s, s.window_s, s.limits, cycle_requests=len(rows),
                                       request_rate=s.request_rate, enabled=s.stop_early)
                    await self.phase("soak", detail=SoakPhase(
                        duration_s=s.duration_s, window_s=s.window_s, checkpoint_every_s=s.checkpoint_every_s,
                        request_rate=s.request_rate, concurrency=s.concurrency, warmup_requests=s.warmup_requests,
                        arms=s.arms, limits=s.limits, plan=plan, stop_early=s.stop_early, stop_plan=stops))
                    say("soak plan:\n" + "\n".join(f"  {line}" for line in [*(p.text for p in plan), *(p.text for p in stops)])
                        + f"\n  {PROBE_PLAN}")
                    self.unsupported = await probe_before_load(run, self.toolkit, m, self.dataset, rows, correlator,
                                                               handle.base_url)
                    if not self.unsupported:
                        await self._segments(handle, install, tokenizer, rows)
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
        if self.unsupported:
            await self.phase("soak", "unsupported", self.unsupported, SoakPhase(windows=0))
            await self.phase("model", "unsupported", self.unsupported)
            return []
        check = await anyio.to_thread.run_sync(
            lambda: check_processes(run.run_dir, orphans_killed=self.evidence.supervision.orphans_killed,
                                    orphans_reaped=self.evidence.supervision.orphans_reaped))
        verdicts = await self.judge.verdicts(self._load_facts(), closed_seq=self.windows.closed_seq,
                                             windows_closed=self.windows.done, final=True, processes=check)
        failed = [v for v in verdicts if v.failed]
        await self.phase("soak", "failed" if failed else "passed", "; ".join(f"{v.metric}: {v.reason}" for v in failed),
                         SoakPhase(windows=self.windows.done))
        await self.phase("model", "soak-failed" if failed else "soak-passed")
        return verdicts

    async def _segments(self, handle: ServerHandle, install: AiperfFacts, tokenizer: Path,
                       rows: list[ArmRequest]) -> None:
        """AIPerf runs one after another, each for the rest of the soak; a new one starts only when one
        ends early (failure), at most _MAX_FAILED_RUNS in a row without a profiling request."""
        s = self.settings
        self._next_checkpoint = time.monotonic() + s.checkpoint_every_s
        remaining = s.duration_s
        failures = 0
        while remaining >= _MIN_RUN_S and not self.stop.is_set() and not self.decided:
            self.segment += 1
            loaded_s, delivered = await self._segment(remaining, handle, install, tokenizer, rows)
            remaining -= loaded_s
            failures = 0 if delivered else failures + 1
            if failures >= _MAX_FAILED_RUNS:
                await self.bus.publish(Warned(
                    source="soak", code="soak_load_failed", detail=NoticeContext(model=self.model.name),
                    message=f"{failures} AIPerf runs in a row ended without a profiling request; the soak stops "
                            f"with {remaining:.0f} s of its duration left (see the AIPerf folders under "
                            f"{self.run_scope.run_dir / 'aiperf'})"))
                break

    # Continuous load: one AIPerf process sends the load (runs/<id>/aiperf/a01) until it hands over to a fresh
    # one without a gap (handover_cue.py: AIPerf's own memory grows per request), and windows are cut by time
    # from the live per-request stream, whatever process sent a request (cutter.py). Chosen over launching
    # each window's AIPerf early because AIPerf's start-up varies (5 s alone, 10 s and more on a busy 2-core
    # host): an early start either leaves a gap or doubles the load while two runs overlap; a gated successor
    # let go as its predecessor halts has neither. A new segment (window schedule) starts only when the load
    # ends early (a failure), for the rest of the duration; its start-up is then a gap, shown and judged
    # (`window_gap`). A handover is no new schedule: its gap is judged too, and `aiperf_rss` samples the
    # process that is sending.
    async def _segment(self, length_s: float, handle: ServerHandle, install: AiperfFacts, tokenizer: Path,
                       rows: list[ArmRequest]) -> tuple[float, bool]:
        """`length_s` of profiling load, cut into windows by time, sent by one AIPerf process or, with
        handovers, by several one after another. Returns (seconds under load, whether it sent a profiling
        request)."""
        s, w, seg = self.settings, self.cfg.workload, self.segment
        launch = Launch(install, tokenizer, rows, handle, self.windows.sent)
        name, folder = self.next_run()
        control = await anyio.to_thread.run_sync(
            lambda: self.toolkit.aiperf.handover_control(folder / "handover", gated=False))
        cmd = await self.command(launch, folder, length_s, warmup=s.warmup_requests if seg == 1 else 0,
                                  control=control, shift=self.windows.sent)
        await handle.wait_ready(self.cfg.server.startup_timeout_s)
        launch_ns = time.time_ns()
        cuts: list[Cut] = []
        await self.windows.open(launch_ns, seg, cuts)
        count = max(1, math.ceil(length_s / s.window_s - 1e-9))
        sg = self._live = SegmentRuns()
        async with anyio.create_task_group() as tg:
            self.start_run(tg, sg, seg, name, cmd, control, install,
                            deadline_s=length_s + w.request_timeout_s + w.deadline_s)
            sg.send(name)
            self.aiperf_name = name
            first = await self._first_profiling(name, sg.done)
            announcer, handing = anyio.CancelScope(), anyio.CancelScope()
            if first is not None:
                cuts[0].end_ns = first + int(s.window_s * 1e9) if count > 1 else first + int(length_s * 1e9)
                sg.end_ns = first + int(length_s * 1e9)
                tg.start_soon(self.windows.announce, announcer, cuts, first, count, length_s, seg)
                if s.handover_mib > 0 or s.handover_every_s > 0:
                    tg.start_soon(run_handovers, self, handing, tg, sg, seg, first, launch)
            looks = Looks()
            async with anyio.create_task_group() as judging:
                # Verdicts and checkpoints run beside the closes: a slow look never makes a close late.
                judging.start_soon(self._looker, looks)
                closed = await self.windows.close_on_time(cuts, count, sg, launch_ns=launch_ns, closed=looks.ask)
                looks.end()  # the looker runs the look still due, then returns
            announcer.cancel()
            handing.cancel()
        name = sg.sending
        result = sg.outcome.get(name)
        exit_ns = sg.exits[name].unix_ns or time.time_ns()
        await self.windows.close_rest(cuts[closed:], name, launch_ns=launch_ns, exit_ns=exit_ns, outcome=result,
                                   closed=self._after_close)
        if first is None:
            return 0.0, False
        complete = result is not None and result.classification == "complete"
        return (length_s if complete else max(0.0, (exit_ns - first) / 1e9)), True

    def next_run(self) -> tuple[str, Path]:
        """The next AIPerf run's name and folder (runs/<id>/aiperf/a01, a02, ...)."""
        self.launched += 1
        return aiperf_run_name(self.launched), self.run_scope.run_dir / "aiperf" / f"a{self.launched:02d}"

    async def command(self, launch: Launch, folder: Path, length_s: float, *, warmup: int,
                       control: HandoverControl, shift: int) -> AiperfInvocation:
        """One AIPerf run's command for `length_s` of profiling load; its input starts `shift` rows in (AIPerf
        replays its input from the first row: a later run goes on where the load stands)."""
        s, w, rows = self.settings, self.cfg.workload, launch.rows
        shift = shift % len(rows) if rows else 0
        input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows[shift:] + rows[:shift],
                                                    folder / "inputs.jsonl")
        cmd = self.toolkit.aiperf.build_command(
            w, base_url=launch.handle.base_url, model=self.model.name, input_file=input_file,
            artifact_dir=folder / "artifacts", tokenizer=launch.tokenizer, executable=launch.install.executable,
            requests=_WINDOW_REQUEST_CAP, warmup=warmup, concurrency=s.concurrency, request_rate=s.request_rate,
            tap_dir=folder / "tap", tmp_dir=self.tmp_dir, worker_gc=True, timing_wait=True, control=control,
            export_level="records")  # hours of load: the raw export would keep ~180 KB per request
        cmd = cmd.extended(["--benchmark-duration", f"{length_s:g}",
                            "--benchmark-grace-period", f"{w.request_timeout_s:g}"])
        await anyio.to_thread.run_sync(cmd.save, folder)
        return cmd

    def start_run(self, tg: TaskGroup, sg: SegmentRuns, seg: int, name: str, cmd: AiperfInvocation,
                   control: HandoverControl, install: AiperfFacts, *, deadline_s: float) -> None:
        """Start AIPerf run `name` in `tg`; once it ends it is accounted (unless abandoned) and, when it
        was the segment's last live run, the segment is done."""
        sg.controls[name] = control
        exited = sg.exits[name] = Exit()
        finished = sg.finished[name] = anyio.Event()
        stop = sg.stops[name] = anyio.Event()
        sg.live.add(name)

        async def runner() -> None:
            try:
                sg.outcome[name] = await self._run_window(cmd, name, install=install, exited=exited,
                                                          deadline_s=deadline_s, stop=stop)
            finally:
                exited.set()
                sg.live.discard(name)
                if name not in sg.abandoned:
                    self._end_run(seg, name, sg.outcome.get(name))
                finished.set()
                if not sg.live:
                    sg.done.set()
            result = sg.outcome[name]
            if result.classification == "failed" and name not in sg.abandoned:
                await self.bus.publish(Warned(source="soak", code="soak_aiperf_failed",
                                              message=f"AIPerf run {name} failed: {result.reason}",
                                              detail=NoticeContext(model=self.model.name)))

        tg.start_soon(runner)

    def _end_run(self, segment: int, name: str, result: AiperfResult | None) -> None:
        """Record AIPerf run `name` as ended, with what it says it issued (the accounting verdict's)."""
        if self.aiperf_name == name:
            self.aiperf_name = ""
        self.runs.append(AiperfRunFact(segment=segment, name=name, issued=dict(result.issued) if result else {},
                                       issued_from=dict(result.issued_from) if result else {}))

    async def _first_profiling(self, name: str, done: anyio.Event) -> int | None:
        """The start of AIPerf run `name`'s first profiling request, or None when it ended without one."""
        await first_of(lambda: self.progress.wait_first_profiling(name), done.wait)
        return self.progress.first_profiling_ns.get(name)

    async def _looker(self, looks: Looks) -> None:
        """The looks the closes ask for, one at a time, several closes coalesced into one look."""
        while await looks.next():
            await self._after_close(False)

    async def _after_close(self, last: bool) -> None:
        """Journal the verdicts so far (and end the soak when decided), and checkpoint when due."""
        if self.stop.is_set() or self.decided:
            return
        await self._look(decide=not last)  # a segment's last window: its load has ended, nothing to halt
        if time.monotonic() >= self._next_checkpoint and not last and not self.decided:
            self._next_checkpoint += self.settings.checkpoint_every_s
            await self._checkpoint()

    async def _look(self, *, decide: bool = True) -> None:
        """At a window's close: journal the verdicts so far (provisional: the live page shows them from the first
        window on), then judge those that can end the soak at the look's level (early_stop.py); a decisive FAIL
        halts the load, so that every open request is still recorded, and the soak ends with what it has."""
        decided = await self.judge.look(self._load_facts(), closed_seq=self.windows.closed_seq,
                                        windows_closed=self.windows.done, decide=decide)
        if not decided:
            return
        self.decided = decided
        s = self.settings
        span = self.evidence.load_span()
        load_s = (span[1] - span[0]) / 1e9 if span else None
        if (sg := self._live) is not None:
            for name in sorted(sg.live):
                if name in sg.names:
                    sg.controls[name].halt()  # issues nothing more; its open requests finish and are recorded
                else:  # a successor still gated mid-handover: it sent nothing, so it is stopped, not accounted
                    sg.abandoned.add(name)
                    sg.stops[name].set()
                    await self.bus.publish(Warned(
                        source="soak", code="soak_handover_failed", detail=NoticeContext(model=self.model.name),
                        message=f"AIPerf run {name} was still gated when the soak was decided: stopped before it "
                                "sent anything"))
        confidence = look_confidence(s.limits.trend_confidence)
        await self.bus.publish(SoakStopped(
            source="soak", windows_closed=self.windows.done, confidence=confidence,
            load_s=None if load_s is None else round(load_s, 3),
            verdicts=[self.judge.event(v, final=False, windows_closed=self.windows.done) for v in decided]))
        what = "; ".join(f"{v.metric}: {v.reason}" for v in decided)
        log.warning("soak_stopped_early", windows=self.windows.done, reason=what)
        say(f"soak: decided after {self.windows.done} window(s)"
            + (f" ({load_s / 60:.1f} min of load)" if load_s is not None else "")
            + f", the load is halted (--no-stop-early runs the whole duration): {what}")

    async def _run_window(self, cmd: AiperfInvocation, name: str, *, deadline_s: float, install: AiperfFacts,
                          exited: Exit, stop: anyio.Event) -> AiperfResult:
        """Run one AIPerf process; returns once its files are judged, having set `exited` as soon as its
        process ended. A stop request reaches AIPerf through its runner (the one owner of its process),
        which ends it gracefully so that what it has is judged."""
        result: list[AiperfResult] = []
        async with anyio.create_task_group() as tg:

            async def mark_cut_short() -> None:
                await self.stop.wait()
                stop.set()  # the soak's stop ends every live run; `stop` alone ends an abandoned successor
                if not exited.is_set():
                    log.info("soak_window_stopping", window=name)
                    self.stopped_at[name] = time.time_ns()

            tg.start_soon(mark_cut_short)
            with anyio.move_on_after(deadline_s + _STOP_BUDGET_S):
                result.append(await self.toolkit.aiperf.run_aiperf(cmd, self.bus, window=name, deadline_s=deadline_s,
                                               stop_grace_s=self.cfg.workload.stop_grace_s, install=install,
                                               on_exit=exited.set, stop=stop))
            tg.cancel_scope.cancel()
        if not result:
            raise AqbenchError(f"AIPerf window {name} did not end within {deadline_s + _STOP_BUDGET_S:g} s")
        return result[0]

    async def _checkpoint(self) -> None:
        """Checkpoint verdicts, then the soak report from the journal so far (an interrupted soak keeps it),
        folded by a child process so that this process, whose memory is judged, never holds the fold. The
        verdicts were journaled at the window's close (_look)."""
        # The verdicts must be in the file the child reads: the journal writer batches.
        await self.run_scope.flush_journal()
        try:
            # The soak report only, marked live ("in progress"): the run-shaped report is written at the end.
            await write_checkpoint_report(self.run_scope.run_dir)
        except CheckpointReportFailed as exc:  # a report bug must not end an eight-hour soak; it is journaled
            await self.bus.publish(Warned(source="soak", code="soak_checkpoint_report_failed",
                                          message=f"checkpoint report after window {self.windows.done} failed: {exc}"))

    def _load_facts(self) -> LoadFacts:
        """What only the loop knows of the load, for the verdicts. A segment with a run still live (a handover's
        predecessor ended, its successor sends) is checked once all its runs have ended: its windows hold both
        runs' requests."""
        live = self._live.live if self._live is not None else set()
        runs = [r for r in self.runs if not (live and r.segment == self.segment)]
        return LoadFacts(runs=runs, running=", ".join(sorted(live)), stopped=frozenset(self.stopped_at),
                         cut_short=frozenset(self.windows.cut_short))

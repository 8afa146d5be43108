"""`aqbench sweep`'s use: one supervised server, one AIPerf run per load point (each its own window,
accounted and correlated as run-aiperf's), every point judged against [slo], and the capacity concluded.

Progress is published on the bus as typed events (SweepPointJudged, SweepConcluded), so a live view can
follow a sweep without reading its state. Reports are folded from the journal at the end.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import msgspec

from orchestrator.config import Config, ModelConfig, config_from_dict, config_to_dict
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
from orchestrator.errors import UsageError
from orchestrator.events import (
    DatasetPhase,
    ModelPhase,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    ResultRow,
    SloCheck,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
)
from orchestrator.judge.answers import judge_answer
from orchestrator.live.address import ServeAddress
from orchestrator.live.start import start_live_page
from orchestrator.logs import get_logger
from orchestrator.ports import AiperfFacts, Toolkit
from orchestrator.qualify.answers import answered_load
from orchestrator.reports import write_reports
from orchestrator.reports.sweep import write_sweep_report
from orchestrator.run import Interrupt, RunScope, open_run
from orchestrator.server_spec import ServerSpec
from orchestrator.supervisor import ServerHandle, supervise
from orchestrator.sweep.judge import Baseline, PointRequest, judge_point, point_stats, saturation_signs, worst
from orchestrator.sweep.search import Judged, conclude, next_point
from orchestrator.sweep.watch import PointWatch

__all__ = ["SweepOptions", "sweep"]

log = get_logger("aqbench.sweep")
_COLLECT_TIMEOUT_S = 30.0
_START_S = 10.0  # AIPerf's start-up and exit, beside a point's planned requests, when planning the sweep's time


class SweepOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml (None: the [sweep] / [slo] value)."""

    model: str = ""
    mode: str | None = None
    points: list[float] | None = None
    requests_per_point: int | None = None
    max_duration_s: float | None = None
    slo: dict[str, float] = {}  # [slo] limits given as flags, by key
    argv: list[str] = []
    match_timeout_s: float = 5.0
    serve: ServeAddress | None = None  # --serve: the live page's address (None: no page)


class _Point(msgspec.Struct, kw_only=True):
    """A point's runs so far (mutable bookkeeping of this use, never journaled as is)."""

    windows: list[str] = []
    requests: list[PointRequest] = []
    span_s: float = 0.0
    balanced: bool = True
    aiperf: list[str] = []
    stopped_early: bool = False
    saturation: list[str] = []


def _resolve(cfg: Config, opts: SweepOptions) -> Config:
    """bench.toml with the flags applied, checked as bench.toml itself is."""
    data = config_to_dict(cfg)
    sweep = data["sweep"]
    for key, value in (("mode", opts.mode), ("points", opts.points), ("requests_per_point", opts.requests_per_point),
                       ("max_duration_s", opts.max_duration_s)):
        if value is not None:
            sweep[key] = value
    data["slo"].update(opts.slo)
    for key in ("source", "sha256"):
        data.pop(key, None)
    resolved = config_from_dict(data, where="the command line and " + (cfg.source or "bench.toml"))
    return msgspec.structs.replace(resolved, source=cfg.source, sha256=cfg.sha256)


async def sweep(cfg: Config, opts: SweepOptions, interrupt: Interrupt, toolkit: Toolkit) -> int:
    """Run the sweep; returns the exit code (0 capacity bracketed or every point held, 1 undecided or no point
    held, 3 an accounting breach). Every sweep writes its reports, an interrupted one too."""
    cfg = _resolve(cfg, opts)
    models = {m.name: m for m in cfg.models}
    if opts.model and opts.model not in models:
        raise UsageError(f"--model {opts.model!r}: not in {cfg.source}; choose one of {', '.join(models)}")
    model = models[opts.model] if opts.model else cfg.models[0]
    install = await anyio.to_thread.run_sync(toolkit.aiperf.check_install)
    tokenizer = await anyio.to_thread.run_sync(toolkit.aiperf.ensure_tokenizer, model.tokenizer)
    dataset = await anyio.to_thread.run_sync(load_dataset, resolve_dataset_path(cfg.dataset))
    opened: list[RunScope] = []
    try:
        async with open_run(cfg, command="sweep", argv=opts.argv or None, interrupt=interrupt) as run:
            opened.append(run)
            await start_live_page(run, opts.serve, sample_processes=True)
            return await _sweep(run, opts, toolkit, model, install, tokenizer, dataset)
    finally:
        if opened:
            with anyio.CancelScope(shield=True), anyio.move_on_after(120):
                await _write_reports(opened[0])


async def _write_reports(run: RunScope) -> None:
    try:
        paths = list(await anyio.to_thread.run_sync(write_reports, run.journal_path, run.run_dir))
        paths += await anyio.to_thread.run_sync(write_sweep_report, run.journal_path, run.run_dir)
    except Exception as exc:  # the run's own outcome stands; a report failure is said, not raised over it
        log.error("report_failed", error=repr(exc))
        return
    print(f"  reports: {', '.join(str(p) for p in paths)}", file=sys.stderr, flush=True)


class _Sweeper:
    """The server, the input rows and the correlator one sweep shares across its points."""

    def __init__(self, run: RunScope, toolkit: Toolkit, model: ModelConfig, install: AiperfFacts, tokenizer: Path,
                 dataset: Dataset, rows: list[ArmRequest], input_file: Path, handle: ServerHandle,
                 correlator: Correlator) -> None:
        self.run, self.toolkit, self.model, self.install = run, toolkit, model, install
        self.tokenizer, self.dataset, self.rows, self.input_file = tokenizer, dataset, rows, input_file
        self.handle, self.correlator = handle, correlator
        self.commands: list[str] = []

    async def load(self, window: str, *, concurrency: int | None, rate: float | None, deadline_s: float,
                   into: _Point, baseline: Baseline | None, early_stop: bool) -> None:
        """One AIPerf run at the given load as `window`; its profiling requests are added to `into`. With
        `early_stop`, the run is stopped (SIGINT) once its requests, pooled with the point's earlier runs',
        clearly break an SLO."""
        cfg = self.run.config
        work = self.run.run_dir / "aiperf" / window.split("/", 1)[1]
        aiperf = self.toolkit.aiperf
        cmd = aiperf.build_command(cfg.workload, base_url=self.handle.base_url, model=self.model.name,
                                   input_file=self.input_file, artifact_dir=work / "artifacts",
                                   tokenizer=self.tokenizer, executable=self.install.executable,
                                   requests=cfg.sweep.requests_per_point, concurrency=concurrency, request_rate=rate)
        self.commands.append(cmd.shell)
        stop = anyio.Event()
        watch = PointWatch(self.run.bus, window, fact=self._fact, slo=cfg.slo, baseline=baseline,
                           criteria=self.model.correctness, earlier=list(into.requests) if early_stop else None,
                           stop=stop)
        async with anyio.create_task_group() as tg:
            await tg.start(watch.run)
            try:
                outcome = await aiperf.run_aiperf(cmd, self.run.bus, window=window, deadline_s=deadline_s,
                                                  stop_grace_s=cfg.workload.stop_grace_s, install=self.install,
                                                  stop=stop)
            except anyio.get_cancelled_exc_class():
                # Interrupted: still journal what the window accounted so far (its open requests as in flight).
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    for ev in self.correlator.joiner.close_window(window):
                        await self.run.bus.publish(ev)
                raise
            acc = await self.correlator.close_window(window, expected=outcome.issued,
                                                     expected_from=outcome.issued_from)
            collected = await watch.wait_accounted(_COLLECT_TIMEOUT_S)
            tg.cancel_scope.cancel()
        into.windows.append(window)
        into.aiperf.append(outcome.classification)
        into.balanced = into.balanced and acc.balanced and collected
        into.requests += watch.requests
        into.span_s += watch.span_s
        into.stopped_early = into.stopped_early or bool(watch.broken)
        into.saturation = saturation_signs(watch.requests, offered_rps=rate, share=cfg.sweep.saturation_share,
                                           queueing_ratio=cfg.sweep.queueing_ratio)

    def _fact(self, c: RequestCorrelated) -> PointRequest:
        """A correlated request as the judge takes it: its answer scored and checked whole against its item."""
        fact = PointRequest(ok=c.ok, cause=c.cause, latency_ms=c.request_latency_ms, model_call_ms=c.model_call_ms,
                            start_ns=c.request_start_ns, end_ns=c.request_end_ns, audio_s=c.audio_seconds,
                            item_id=c.item_id, arm=c.arm)
        if not c.ok or not c.item_id:
            return fact
        item = self.dataset.item(c.item_id)
        criteria = self.model.correctness
        if criteria.scorer != "dataset":
            item = msgspec.structs.replace(item, scoring=criteria.scorer)
        got = answered_load(c)
        if not got.answered:
            return msgspec.structs.replace(fact, kind=item.kind)
        judged = judge_answer(got.text, item, question=item.question, completion_tokens=got.completion_tokens,
                              max_tokens=self.run.config.workload.max_tokens)
        return msgspec.structs.replace(fact, kind=item.kind, answer=got.text,
                                       complete=judged.completeness.complete, verdict=judged.verdict)


def _window(model: str, mode: str, value: float, run: int) -> str:
    return f"{model}/{'rate' if mode == 'rate' else 'c'}{value:g}-{run}"


async def _sweep(run: RunScope, opts: SweepOptions, toolkit: Toolkit, model: ModelConfig, install: AiperfFacts,
                 tokenizer: Path, dataset: Dataset) -> int:
    cfg = run.config
    sw, slo = cfg.sweep, cfg.slo
    started = time.monotonic()
    arms: list[str] = list(cfg.workload.arms)
    await run.bus.publish(PhaseFinished(source="sweep", phase="dataset", outcome="passed",
                                        detail=DatasetPhase(name=dataset.name, identity=dataset.identity,
                                                            path=str(dataset.root), items=len(dataset.items),
                                                            arms=arms)))
    facts = model.identity_fields()
    await run.bus.publish(PhaseStarted(source="sweep", phase="model", model=model.name,
                                       detail=ModelPhase(**facts, bundle=model.bundle or cfg.server.bundle)))
    await run.tg.start(toolkit.records_tailer(run.bus).run)
    correlator = Correlator(run.bus, key_parser=parse_session_key, match_timeout_s=opts.match_timeout_s,
                            answer_grace_s=1.0)
    await run.tg.start(correlator.run)
    spec = ServerSpec.from_config(cfg, model, run.run_dir, parts=toolkit.server_parts(cfg.server.kind))
    handle = await run.tg.start(supervise, spec, run.bus)
    work = run.run_dir / "aiperf"
    rows = interleave_kinds(await anyio.to_thread.run_sync(prepare_arms, dataset, arms, work / "wire"), dataset)
    input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows, work / "inputs.jsonl")
    sweeper = _Sweeper(run, toolkit, model, install, tokenizer, dataset, rows, input_file, handle, correlator)
    limits = {k: float(v) for k, v in msgspec.to_builtins(slo).items()
              if isinstance(v, float | int) and not isinstance(v, bool)}
    await run.bus.publish(PhaseStarted(source="sweep", phase="sweep", model=model.name, detail=SweepPhase(
        mode=sw.mode, points=list(sw.points), requests_per_point=sw.requests_per_point,
        warmup_requests=cfg.workload.warmup_requests, slo=limits, argv=list(opts.argv))))

    def left_s() -> float:
        return (sw.max_duration_s - (time.monotonic() - started)) if sw.max_duration_s else float("inf")

    def deadline() -> float:
        return max(1.0, min(cfg.workload.deadline_s, left_s()))

    # The answers at concurrency 1 are the reference under load: the first point when it is concurrency 1,
    # else a run of its own before the sweep.
    points: dict[float, _Point] = {}
    baseline: Baseline | None = None
    base = _Point()
    if not (sw.mode == "concurrency" and sw.points[0] == 1):
        await sweeper.load(f"{model.name}/baseline", concurrency=1, rate=None, deadline_s=deadline(), into=base,
                           baseline=None, early_stop=False)
        baseline = Baseline.of(base.requests) if base.balanced and base.requests else None
    judged: dict[float, Judged] = {}
    last_run_s = 0.0
    while (value := next_point(sw.points, judged, mode=sw.mode, repeats=sw.repeats, refine=sw.refine)) is not None:
        # A point cut short by the sweep's time loses its requests in flight: one that cannot finish is not started.
        planned_s = ((sw.requests_per_point + cfg.workload.warmup_requests) / value + _START_S
                     if sw.mode == "rate" else last_run_s)
        if planned_s > left_s():
            break
        point = points.setdefault(value, _Point())
        window = _window(model.name, sw.mode, value, len(point.windows) + 1)
        conc, rate = (int(value), None) if sw.mode == "concurrency" else (None, value)
        t0 = time.monotonic()
        await sweeper.load(window, concurrency=conc, rate=rate, deadline_s=deadline(), into=point,
                           baseline=baseline, early_stop=sw.stop_early)
        last_run_s = time.monotonic() - t0
        if baseline is None and sw.mode == "concurrency" and value == 1 and point.balanced:
            baseline = Baseline.of(point.requests)
        checks = judge_point(point.requests, slo, baseline, model.correctness)
        if not point.balanced:
            checks.append(SloCheck(slo="evidence", outcome="inconclusive",
                                   reason="the point's accounting did not balance: its requests are not all known"))
        outcome = worst([c.outcome for c in checks])
        judged[value] = Judged(outcome=outcome, runs=len(point.windows), checks=checks)
        await run.bus.publish(SweepPointJudged(
            source="sweep", index=list(points).index(value), mode=sw.mode, offered=value,
            windows=list(point.windows), outcome=outcome, checks=checks,  # type: ignore[arg-type]
            stats=point_stats(point.requests, checks, point.span_s or None), accounting_balanced=point.balanced,
            aiperf=list(point.aiperf), stopped_early=point.stopped_early, saturation=list(point.saturation)))
    not_run = [v for v in sw.points if v not in judged and not _above_failure(v, judged)]
    concluded = conclude(judged, mode=sw.mode, not_run=not_run)
    await run.bus.publish(msgspec.structs.replace(concluded, source="sweep"))
    await handle.stop()
    balanced = base.balanced and all(p.balanced for p in points.values())
    await run.bus.publish(PhaseFinished(source="sweep", phase="sweep", model=model.name, outcome=concluded.outcome,
                                        reason=concluded.summary, detail=SweepPhase(points_run=len(judged))))
    status = f"sweep-{concluded.outcome}" if balanced else "accounting-breach"
    await run.bus.publish(ModelResult(source="sweep", model=model.name, status=status,
                                      failed_stage="" if balanced else "sweep",
                                      row=ResultRow(**facts, aiperf_command=" ; ".join(sweeper.commands),
                                                    reason=concluded.summary, noninferiority=None, keyed_by=None)))
    await run.bus.publish(PhaseFinished(source="sweep", phase="model", model=model.name, outcome=status,
                                        reason=concluded.summary))
    print(_summary(concluded, judged), file=sys.stderr, flush=True)
    if not balanced:
        run.finish(status="error", exit_code=3, reason="accounting breach at a sweep point")
        return 3
    ok = concluded.outcome in ("bracketed", "all_passed")
    run.finish(status="ok" if ok else "failed", exit_code=0 if ok else 1, reason=concluded.summary,
               counts={"points": len(judged)})
    return 0 if ok else 1


def _above_failure(value: float, judged: dict[float, Judged]) -> bool:
    return any(j.outcome == "fail" and v <= value for v, j in judged.items())


def _summary(concluded: SweepConcluded, judged: dict[float, Judged]) -> str:
    lines = [f"sweep: {concluded.summary}"]
    for value, j in sorted(judged.items()):
        failed = ", ".join(c.slo for c in j.checks if c.outcome != "pass")
        lines.append(f"  {value:g} {concluded.unit}: {j.outcome}" + (f" ({failed})" if failed else "")
                     + (f" after {j.runs} runs" if j.runs > 1 else ""))
    return "\n".join(lines)

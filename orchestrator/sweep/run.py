"""`aqbench sweep`'s use: one supervised server, load points run in batches (one AIPerf process a batch, a phase
a point, each its own window), every point judged against [slo], and the capacity concluded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec

from orchestrator.aiperf_phase.serving import run_phased, serve_correlated
from orchestrator.base.errors import UsageError
from orchestrator.config import Config, ModelConfig, config_from_dict, config_to_dict
from orchestrator.correlate import Correlator
from orchestrator.dataset import (
    ArmRequest,
    Dataset,
    resolve_dataset_path,
    write_aiperf_input,
)
from orchestrator.events import (
    ModelResult,
    PhaseFinished,
    RequestCorrelated,
    ResultRow,
    SloCheck,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
    Warned,
)
from orchestrator.judge.answers import judge_answer
from orchestrator.live.server import LivePage
from orchestrator.live.start import start_live_page
from orchestrator.qualify.answers import answered_load
from orchestrator.reports import write_reports
from orchestrator.reports.sweep import write_sweep_report
from orchestrator.run import Interrupt, RunScope, open_run
from orchestrator.spine.logs import get_logger, say
from orchestrator.spine.ports import AiperfFacts, PhaseGates, PhaseLoad, Toolkit
from orchestrator.supervision.supervisor import ServerHandle
from orchestrator.sweep.batch import batch_rows, parse_batch_key, phase_name
from orchestrator.sweep.budget import Budget
from orchestrator.sweep.capacity import (
    PointEvidence,
    allowed_shares,
    estimate_capacity,
    evidence_of,
    next_load,
    precision_plan,
)
from orchestrator.sweep.judge import Baseline, PointRequest, judge_point, point_stats, saturation_signs, worst
from orchestrator.sweep.planned import baseline_sample, planned_durations
from orchestrator.sweep.power import plan
from orchestrator.sweep.search import Judged, conclude, extensions, gate_runs, gated_tail, next_batch, unit_of
from orchestrator.sweep.start import FirstHold, probe_and_sample, state_plan
from orchestrator.sweep.watch import PointWatch

__all__ = ["SweepOptions", "sweep"]

log = get_logger("aqbench.sweep")
_COLLECT_TIMEOUT_S = 30.0


class SweepOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml (None: the [sweep] / [slo] value)."""

    model: str = ""
    mode: str | None = None
    points: list[float] | None = None
    requests_per_point: int | None = None
    max_duration_s: float | None = None
    precision: float | None = None
    slo: dict[str, float] = {}  # [slo] limits given as flags, by key
    argv: list[str] = []
    match_timeout_s: float = 5.0
    serve: LivePage | None = None  # --serve: the live page, listening since before the run (None: no page)


class _Point(msgspec.Struct, kw_only=True):
    """A point's runs so far (mutable bookkeeping of this use, never journaled as is)."""

    windows: list[str] = []
    requests: list[PointRequest] = []
    span_s: float = 0.0
    balanced: bool = True
    aiperf: list[str] = []
    stopped_early: bool = False
    saturation: list[str] = []


class _Load(msgspec.Struct, kw_only=True):
    """One window of a batch: its load (a concurrency or a rate) and the point its requests go to. A `gated`
    load is a run only a verdict can call for (a rerun, a midpoint, a midpoint's rerun): it waits at its gate
    until every load before it is judged, then runs or is skipped (no window, nothing sent)."""

    window: str
    concurrency: int | None
    rate: float | None
    into: _Point
    value: float = 0.0
    gated: bool = False
    base: bool = False  # the concurrency-1 baseline window (its answers the reference; never stopped early)


# Deciding a gated load waits for the profiling requests of every load before it that ran to be correlated; once
# AIPerf waits at its gate, at most this long beyond the match timeout, then every gated load left is skipped (and
# a run the verdicts call for costs an AIPerf process of its own, as before gates).
_GATE_WAIT_S = 2.0
# Runs a batch spent on narrowing the capacity's interval carries (one AIPerf start-up for them), and the most such
# batches a sweep runs in what --max-duration leaves.
_NARROW_RUNS = 2
_NARROW_BATCHES = 12
_STEER_DRAWS = 500  # a search step's estimate: where to run next; the reported one takes the default 2000


def _resolve(cfg: Config, opts: SweepOptions) -> Config:
    """bench.toml with the flags applied, checked as bench.toml itself is."""
    data = config_to_dict(cfg)
    sweep = data["sweep"]
    for key, value in (("mode", opts.mode), ("points", opts.points), ("requests_per_point", opts.requests_per_point),
                       ("max_duration_s", opts.max_duration_s), ("precision", opts.precision)):
        if value is not None:
            sweep[key] = value
    data["slo"].update(opts.slo)
    for key in ("source", "sha256"):
        data.pop(key, None)
    resolved = config_from_dict(data, where="the command line and " + (cfg.source or "bench.toml"))
    return msgspec.structs.replace(resolved, source=cfg.source, sha256=cfg.sha256)


# Progress is published on the bus as typed events (SweepPointJudged, SweepConcluded), so a live view can follow a
# sweep without reading its state. Reports are folded from the journal at the end.
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
    # The dataset is loaded (0.8 s) while the server starts (serve_correlated); a bad one ends the opened run.
    dataset = resolve_dataset_path(cfg.dataset)
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
    say(f"  reports: {', '.join(str(p) for p in paths)}")


class _Sweeper:
    """The server, the input rows and the correlator one sweep shares across its points."""

    def __init__(self, run: RunScope, toolkit: Toolkit, model: ModelConfig, install: AiperfFacts, tokenizer: Path,
                 dataset: Dataset, rows: list[ArmRequest], input_file: Path, handle: ServerHandle,
                 correlator: Correlator) -> None:
        self.run, self.toolkit, self.model, self.install = run, toolkit, model, install
        self.tokenizer, self.dataset, self.rows, self.input_file = tokenizer, dataset, rows, input_file
        self.handle, self.correlator = handle, correlator
        self.commands: list[str] = []
        self.batches = 0

    async def load_batch(self, loads: list[_Load], *, deadline_s: float,
                         decide: Callable[[_Load, dict[str, list[PointRequest]]], bool] | None = None,
                         match_timeout_s: float = 5.0, hold: FirstHold | None = None,
                         baseline: Baseline | None = None) -> None:
        """The loads as the phases of one AIPerf process (its start-up paid once), each its own window, in order:
        AIPerf starts a load's warmup once the previous load's requests have all returned. With [sweep] stop_early,
        a load whose requests (pooled with its point's earlier runs) clearly break an SLO is halted: its phase
        sends no more, its open requests are recorded, and AIPerf goes on to the next load. `baseline`: the
        reference answers from earlier batches (else this batch's baseline window's, once its requests are in).
        Gated loads (after the planned ones) wait at their gates; each is decided in turn, once the profiling
        requests of every load before it that ran are in: `decide` (given the load and those requests by window)
        says whether it runs. A skipped load leaves no trace in its point. `hold` (the first batch): the planned
        loads wait at their gates too, until released."""
        cfg = self.run.config
        self.batches += 1
        work = self.run.run_dir / "aiperf" / f"batch{self.batches}"
        aiperf, first, rpp = self.toolkit.aiperf, loads[0], cfg.sweep.requests_per_point
        # One copy of the rows per planned load only: a gated load that runs wraps to the first copy (AIPerf's
        # sequential sampler starts over; a skipped one takes none), asking the same items in the same order. Each
        # copy costs AIPerf's start-up its audio read and encoded, and inputs.json its payloads (141 MB for 15
        # loads of audioqa's 64 rows): the gated tail is most of a batch's loads and seldom runs.
        rows = batch_rows(self.rows, sum(1 for load in loads if not load.gated), cfg.workload.warmup_requests + rpp)
        input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows, work / "inputs.jsonl")
        cmd = aiperf.build_command(cfg.workload, base_url=self.handle.base_url, model=self.model.name,
                                   input_file=input_file, artifact_dir=work / "artifacts",
                                   tokenizer=self.tokenizer, executable=self.install.executable, requests=rpp,
                                   concurrency=first.concurrency, request_rate=first.rate,
                                   # No spin at concurrency 1 (the baseline) or any closed-loop point: AIPerf's
                                   # timing manager otherwise takes most of a core from the server it measures.
                                   timing_wait=True)
        names = {phase_name(load.window): load.window for load in loads}
        phases = [PhaseLoad(name=name, requests=rpp, warmup=cfg.workload.warmup_requests, rate=load.rate,
                            concurrency=load.concurrency) for name, load in zip(names, loads, strict=True)]
        gated = [phase_name(load.window) for load in loads if load.gated] if decide is not None else []
        held = [phase_name(load.window) for load in loads if not load.gated] if hold is not None else []
        # The folder always: a load is halted through it, gated or not.
        gates = await anyio.to_thread.run_sync(aiperf.phase_gates, work / "gates", held + gated)
        cmd = await anyio.to_thread.run_sync(aiperf.phased_command, cmd, phases, work, gates)
        self.commands.append(cmd.shell)
        watches = self._watches(loads, baseline)
        async with anyio.create_task_group() as tg:
            for load, watch in zip(loads, watches, strict=True):
                await tg.start(watch.run)
                if cfg.sweep.stop_early and not load.base:
                    tg.start_soon(self._halt_when_broken, watch, gates, phase_name(load.window))
            if hold is not None:
                tg.start_soon(hold.keep, gates, held)
            if decide is not None and gated:
                tg.start_soon(self._gatekeep, gates, loads, watches, decide, match_timeout_s + _GATE_WAIT_S, hold)
            try:
                outcome, accounts = await run_phased(self.run, self.toolkit, self.correlator, cmd, phases=names,
                                                     deadline_s=deadline_s, install=self.install, gates=gates)
            finally:
                if hold is not None:
                    hold.ended()
            collected = {w.window: await w.wait_accounted(_COLLECT_TIMEOUT_S) for w in watches
                         if w.window in accounts}
            tg.cancel_scope.cancel()
        for load, watch in zip(loads, watches, strict=True):
            if (load.gated or hold is not None) and not gates.ran(phase_name(load.window)):
                continue  # skipped at its gate: nothing sent, not a run of its point
            into, one, acc = load.into, outcome.windows.get(load.window), accounts.get(load.window)
            into.windows.append(load.window)
            # A load AIPerf never started (it ended before) issued nothing: its point has no new requests.
            into.aiperf.append(one.classification if one is not None else outcome.classification)
            into.balanced = into.balanced and (acc is None or acc.balanced) and collected.get(load.window, True)
            into.requests += watch.requests
            into.span_s += watch.span_s
            into.stopped_early = into.stopped_early or bool(watch.broken)
            into.saturation = saturation_signs(watch.requests, offered_rps=load.rate,
                                               share=cfg.sweep.saturation_share,
                                               queueing_ratio=cfg.sweep.queueing_ratio)

    def _watches(self, loads: list[_Load], baseline: Baseline | None) -> list[PointWatch]:
        """A watch per load. With stop_early, each load's looks pool its point's earlier runs (earlier batches',
        and this batch's before it) and take the reference answers once known; the baseline window is never
        stopped."""
        cfg = self.run.config
        rpp = cfg.sweep.requests_per_point
        watches: list[PointWatch] = []
        found: list[Baseline] = []

        def reference() -> Baseline | None:
            if baseline is not None or found:
                return baseline or found[0]
            # The baseline window, or concurrency 1 itself where it is the sweep's first point.
            mine = [w for ld, w in zip(loads, watches, strict=False)
                    if ld.base or (cfg.sweep.mode == "concurrency" and ld.value == 1 and not ld.gated)]
            if mine and len(mine[0].requests) >= rpp:  # this batch's baseline window is in
                found.append(Baseline.of(mine[0].requests))
                return found[0]
            return None

        for i, load in enumerate(loads):
            def earlier(load: _Load = load, i: int = i) -> list[PointRequest]:
                return load.into.requests + [r for ld, w in zip(loads[:i], watches, strict=False) if ld.into is load.into
                                             for r in w.requests]

            early = cfg.sweep.stop_early and not load.base
            watches.append(PointWatch(self.run.bus, load.window, fact=self._fact, slo=cfg.slo,
                                      baseline=reference if early else None, criteria=self.model.correctness,
                                      earlier=earlier if early else None, stop=anyio.Event(), planned=rpp))
        return watches

    async def _halt_when_broken(self, watch: PointWatch, gates: PhaseGates, name: str) -> None:
        """Once the load's requests clearly break an SLO, end its phase: no more requests, the open ones recorded."""
        await watch.stop.wait()
        gates.halt(name)
        say(f"sweep: {watch.window.split('/', 1)[1]} clearly broke {', '.join(c.slo for c in watch.broken)} after "
            f"{watch.stopped_at} requests: its run ends early")

    async def _gatekeep(self, gates: PhaseGates, loads: list[_Load], watches: list[PointWatch],
                        decide: Callable[[_Load, dict[str, list[PointRequest]]], bool], wait_s: float,
                        hold: FirstHold | None = None) -> None:
        """Decide the gated loads one after another, each once the loads before it that ran have all their
        profiling requests in (the run or the skip said on stderr for those that run); if they are not in `wait_s`
        after AIPerf reached its gate, skip every gated load left. Held planned loads are decided first."""
        rpp = self.run.config.sweep.requests_per_point
        if hold is not None:  # a held load skipped at release sends nothing: never wait for its requests
            await hold.decided()
        pairs = list(zip(loads, watches, strict=True))
        skipped: list[str] = []
        for i, (load, _) in enumerate(pairs):
            if not load.gated:
                continue
            name = phase_name(load.window)
            before = [(ld, w) for ld, w in pairs[:i] if gates.ran(phase_name(ld.window)) is not False]
            limit: float | None = None
            # A halted load is in once the requests it sent are (AIPerf says how many when it halts).
            while not all(len(w.requests) >= _sent(gates, ld, rpp) for ld, w in before):
                if limit is None and gates.reached(name):
                    limit = anyio.current_time() + wait_s
                if limit is not None and anyio.current_time() > limit:
                    gates.close()
                    await self.run.bus.publish(Warned(source="sweep", code="sweep_gate_timed_out", message=(
                        f"the requests before {load.window} were not all in {wait_s:g} s after AIPerf reached its "
                        "gate; it and the gated loads after it are skipped, and a run the verdicts call for runs in "
                        "an AIPerf process of its own")))
                    return
                await anyio.sleep(0.01)
            run = decide(load, {ld.window: list(w.requests) for ld, w in before})
            gates.decide(name, run=run)
            if run:
                say(f"sweep: at its gate, from the verdicts so far: {load.window.split('/', 1)[1]} runs")
            else:
                skipped.append(load.window.split("/", 1)[1])
        if skipped:
            say(f"sweep: skipped at their gates: {', '.join(skipped)}")

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


def _sent(gates: PhaseGates, load: _Load, planned: int) -> int:
    """The profiling requests a load sent: as planned, or fewer where a halt ended it."""
    halted = gates.halted(phase_name(load.window))
    return planned if halted is None else halted


def _since(hold: FirstHold | None, t0: float) -> float:
    """When a batch's loads began: at the hold's release for a held batch (its probe and sample not counted)."""
    return hold.released_at if hold is not None and hold.released_at is not None else t0


def _window(model: str, mode: str, value: float, run: int) -> str:
    return f"{model}/{'rate' if mode == 'rate' else 'c'}{value:g}-{run}"


async def _sweep(run: RunScope, opts: SweepOptions, toolkit: Toolkit, model: ModelConfig, install: AiperfFacts,
                 tokenizer: Path, dataset_path: Path) -> int:
    cfg = run.config
    sw, slo = cfg.sweep, cfg.slo
    started = time.monotonic()
    facts = model.identity_fields()
    served = await serve_correlated(run, toolkit, model, dataset_path, list(cfg.workload.arms), source="sweep",
                                    match_timeout_s=opts.match_timeout_s, key_parser=parse_batch_key)
    handle, correlator, rows, input_file = served.handle, served.correlator, served.rows, served.input_file
    dataset = served.dataset
    sweeper = _Sweeper(run, toolkit, model, install, tokenizer, dataset, rows, input_file, handle, correlator)
    # The answers at concurrency 1 are the reference under load: the first point when it is concurrency 1,
    # else a window of its own at concurrency 1 (`<model>/baseline`), the first of the first batch.
    need_base = not (sw.mode == "concurrency" and sw.points[0] == 1)
    # What a point can decide at its planned requests (a pass may need more than it has), said before any load.
    detects = plan(slo, sw.requests_per_point)
    # A point whose one run cannot pass (the plan says a pass needs more requests) is rerun unless it fails:
    # its runs go into its first batch together (next_batch's `runs`).
    runs = min(1 + sw.repeats, max(-(-d.pass_needs // sw.requests_per_point) for d in detects))
    walk = _Walk(run, sweeper, model, started)
    walk.match_timeout_s = opts.match_timeout_s
    points, judged, base = walk.points, walk.judged, walk.base
    # qualify's capability probe first: a server that cannot do audio QA (text-only) has no capacity to find.
    # Then, before any load, a sample of the baseline window's own rows, to plan that window by. The first
    # batch's AIPerf process starts beside them, held at its gates until the plan is stated (start.py).
    per = sw.requests_per_point + cfg.workload.warmup_requests
    sample = [rows[i % len(rows)] for i in baseline_sample(per)] if need_base and rows else []
    # Held at spawn without the baseline's time: not known yet (the sample is not taken), and the release fits
    # the held loads again with it (fit_held), so a bound here would only drop loads the time would allow.
    first = walk.budget.fit(next_batch(sw.points, {}, mode=sw.mode, repeats=sw.repeats, refine=sw.refine, runs=runs,
                                extend=sw.extend), base=False)
    hold = FirstHold() if first else None
    ran_first: list[float] = []
    async with anyio.create_task_group() as tg:
        if hold is not None:
            async def first_batch(hold: FirstHold = hold) -> None:
                ran_first.extend(await walk.batch(first, base=need_base, hold=hold))

            tg.start_soon(first_batch)
        probed = await probe_and_sample(run, toolkit, model, dataset, rows, correlator, handle, sample, hold)
        if isinstance(probed, int):
            if hold is not None:
                hold.release(0)  # AIPerf exits having sent nothing, no window started
        else:
            base_s = planned_durations(sw.mode, [], requests=sw.requests_per_point, warmup=cfg.workload.warmup_requests,
                                       base=need_base, probe_s=probed[0], sample_s=probed[1])[0]
            said = _precision_plan(cfg, walk.budget.after_grid_s(base_s))
            baseline_s = await state_plan(run, model, list(opts.argv), detects, base=need_base, probe_s=probed[0],
                                          sample_s=probed[1], precision_plan=said)
            walk.budget.base_s = baseline_s
            if hold is not None:  # what still fits in --max-duration's time left now runs, in order
                hold.release(walk.budget.fit_held(first, base=need_base, base_s=baseline_s))
    if isinstance(probed, int):
        return probed
    if hold is not None:
        need_base = need_base and not base.windows  # a baseline the release skipped (no time) is still to run
        for value in ran_first:
            await walk.judge(value)
    unreached: list[float] = []  # doublings asked for that the sweep's time did not fit
    while wanted := next_batch(sw.points, judged, mode=sw.mode, repeats=sw.repeats, refine=sw.refine, runs=runs,
                               extend=sw.extend):
        # A point cut short by the sweep's time loses its requests in flight: one that cannot finish is not started.
        if not (values := walk.budget.fit(wanted, base=need_base)):
            unreached = [v for v in wanted if v in extensions(sw.points, sw.extend) and v not in judged]
            break
        ran = await walk.batch(values, base=need_base)
        need_base = False
        for value in ran:
            await walk.judge(value)
    # Then the time left narrows the capacity's interval, where it narrows most, until the precision asked.
    need_base = await walk.narrow(need_base)
    not_run = [v for v in sw.points if v not in judged and not any(j.outcome == "fail" and u <= v
                                                                    for u, j in judged.items())]
    concluded = conclude(judged, mode=sw.mode, not_run=not_run, points=list(sw.points), unreached=unreached)
    concluded = msgspec.structs.replace(concluded, estimate=estimate_capacity(
        list(walk.evidence.values()), allowed_shares(slo), unit=concluded.unit, precision=sw.precision,
        level=slo.confidence))
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
    say(_summary(concluded, judged))
    if not balanced:
        run.finish(status="error", exit_code=3, reason="accounting breach at a sweep point")
        return 3
    ok = concluded.outcome in ("bracketed", "all_passed")
    run.finish(status="ok" if ok else "failed", exit_code=0 if ok else 1, reason=concluded.summary,
               counts={"points": len(judged)})
    return 0 if ok else 1


def _precision_plan(cfg: Config, left: float | None) -> list[str]:
    """Whether [sweep] precision is reachable in --max-duration, said before any load: the requests near the
    boundary it needs against `left`, what the sweep's time leaves after the baseline and the grid (None: no
    --max-duration)."""
    sw = cfg.sweep
    said = precision_plan(allowed_shares(cfg.slo), precision=sw.precision, unit=unit_of(sw.mode), time_left_s=left,
                          level=cfg.slo.confidence)
    say("sweep: the capacity's interval to ±" + f"{sw.precision:.0%}:\n  " + "\n  ".join(said))
    return said


def _summary(concluded: SweepConcluded, judged: dict[float, Judged]) -> str:
    lines = [f"sweep: {concluded.summary}"]
    if concluded.estimate is not None:
        lines.append(f"sweep: {concluded.estimate.summary}")
    for value, j in sorted(judged.items()):
        # The checks that gave the verdict: a failed point's failures (not its undecided checks beside them).
        failed = ", ".join(c.slo for c in j.checks if c.outcome == j.outcome != "pass")
        lines.append(f"  {value:g} {concluded.unit}: {j.outcome}" + (f" ({failed})" if failed else "")
                     + (f" after {j.runs} runs" if j.runs > 1 else ""))
    return "\n".join(lines)


class _Walk:
    """The search's state between batches: the points run, their verdicts, the reference answers, and the sweep's
    time (`budget`: what fits in --max-duration)."""

    def __init__(self, run: RunScope, sweeper: _Sweeper, model: ModelConfig, started: float) -> None:
        self.scope, self.sweeper, self.model = run, sweeper, model
        self.points: dict[float, _Point] = {}
        self.judged: dict[float, Judged] = {}
        self.base = _Point()
        self.baseline: Baseline | None = None
        self.evidence: dict[float, PointEvidence] = {}  # each judged point's, for the capacity's fit
        cfg = run.config
        self.budget = Budget(mode=cfg.sweep.mode, points=cfg.sweep.points, max_duration_s=cfg.sweep.max_duration_s,
                             per=cfg.sweep.requests_per_point + cfg.workload.warmup_requests, started=started)
        self.match_timeout_s = 5.0

    async def batch(self, values: list[float], *, base: bool, hold: FirstHold | None = None) -> list[float]:
        """One batch: the baseline window first when asked, then each value's next run, then the gated loads
        (`gated_tail`); the values that ran, ascending. `hold`: the planned loads wait until it is released."""
        cfg = self.scope.config
        sw = cfg.sweep
        loads = ([_Load(window=f"{self.model.name}/baseline", concurrency=1, rate=None, into=self.base, base=True)]
                 if base else [])
        for value in values:
            loads.append(self._load(value, loads, gated=False))
        # A point first tried in this batch's gated loads joins the sweep's points only if it ran.
        pending: dict[float, _Point] = {}
        # The runs only a verdict can call for (reruns, the midpoint, its rerun), each behind a gate after the
        # planned loads, so that none needs an AIPerf process of its own. Written in whatever --max-duration
        # leaves: each gate lets its load run only where it still fits in the time left.
        runs = {v: len(p.windows) for v, p in self.points.items()}
        tail = gated_tail(values, runs, self.judged, mode=sw.mode, repeats=sw.repeats, refine=sw.refine,
                          points=sw.points, extend=sw.extend)
        for value in tail:
            if value not in self.points:
                pending.setdefault(value, _Point())
            loads.append(self._load(value, loads, gated=True, pending=pending))
        t0, spans = time.monotonic(), sum(load.into.span_s for load in loads)
        deadline = max(1.0, min(cfg.workload.deadline_s * len(loads), self.budget.left_s()))
        await self.sweeper.load_batch(loads, deadline_s=deadline, match_timeout_s=self.match_timeout_s, hold=hold,
                                      baseline=self.baseline,
                                      decide=lambda load, seen: self._gate(load, loads, seen, pending, _since(hold, t0)))
        self.baseline = self._reference() if base else self.baseline
        for value, point in sorted(pending.items()):
            if point.windows:
                self.points[value] = point
        for value in [v for v, p in self.points.items() if not p.windows]:
            del self.points[value]  # held, and skipped at release (no longer fit in the time left)
        ran = [load for load in loads if load.window in load.into.windows]
        elapsed = time.monotonic() - _since(hold, t0)
        spent = sum(load.into.span_s for load in loads) - spans
        self.budget.spent(elapsed, spent, len(ran))
        return sorted({load.value for load in ran if load.into is not self.base})

    def _load(self, value: float, loads: list[_Load], *, gated: bool,
              pending: dict[float, _Point] | None = None) -> _Load:
        """The point's next run after `loads` (its runs in this same batch counted)."""
        sw = self.scope.config.sweep
        point = pending[value] if pending and value in pending else self.points.setdefault(value, _Point())
        queued = sum(1 for load in loads if load.into is point)
        return _Load(window=_window(self.model.name, sw.mode, value, len(point.windows) + queued + 1),
                     concurrency=int(value) if sw.mode == "concurrency" else None,
                     rate=value if sw.mode == "rate" else None, into=point, value=value, gated=gated)

    def _gate(self, load: _Load, loads: list[_Load], seen: dict[str, list[PointRequest]],
              pending: dict[float, _Point], t0: float) -> bool:
        """Whether the gated `load` runs: every point judged on its runs so far and this batch's that ran (`seen`,
        by window), as `judge` will, and run where the search would run that point next (`next_batch`) with each
        earlier run of the point in this batch run too, and its planned time fitting in the time left. Decides no
        verdict by itself: the journaled verdicts come after the batch, from every request."""
        cfg = self.scope.config
        sw = cfg.sweep
        ran = [ld for ld in loads if ld.window in seen]
        mine_before = [ld for ld in loads[:loads.index(load)] if ld.into is load.into]
        baseline = self.baseline
        if any(ld.into is self.base for ld in ran):
            base = [r for ld in ran if ld.into is self.base for r in seen[ld.window]]
            baseline = Baseline.of(base) if self.base.balanced and base else None
        judged = dict(self.judged)
        for value, point in sorted({**self.points, **pending}.items()):
            mine = [ld for ld in ran if ld.into is point]
            if not mine:
                continue
            requests = point.requests + [r for ld in mine for r in seen[ld.window]]
            if baseline is None and sw.mode == "concurrency" and value == 1 and point.balanced:
                baseline = Baseline.of(requests)
            checks = judge_point(requests, cfg.slo, baseline, self.model.correctness)
            outcome = worst([c.outcome for c in checks]) if point.balanced else "inconclusive"
            judged[value] = Judged(outcome=outcome, runs=len(point.windows) + len(mine), checks=checks)
        # Closed loop has no planned time: the batch's own pace so far (or the last batch's) stands for it.
        need_s = self.budget.need_s(load.value, (time.monotonic() - t0) / max(1, len(ran)))
        return gate_runs(sw.points, judged, load.value, mode=sw.mode, repeats=sw.repeats, refine=sw.refine,
                         earlier_skipped=any(ld.window not in seen for ld in mine_before), need_s=need_s,
                         left_s=self.budget.left_s(), extend=sw.extend)

    async def narrow(self, need_base: bool) -> bool:
        """Spend the time left where the capacity's interval narrows most (next_load), a few runs to a batch, until
        the precision asked is reached, nothing narrows it, or nothing more fits; whether the baseline is still
        to run."""
        cfg = self.scope.config
        sw, slo = cfg.sweep, cfg.slo
        allowed, unit = allowed_shares(slo), unit_of(sw.mode)
        # The time to spend is what --max-duration leaves: without it the sweep ends where its search ends.
        for _ in range(_NARROW_BATCHES if sw.max_duration_s else 0):
            est = estimate_capacity(list(self.evidence.values()), allowed, unit=unit, precision=sw.precision,
                                    level=slo.confidence, draws=_STEER_DRAWS)
            bracket = conclude(self.judged, mode=sw.mode)
            target = next_load(est, list(self.judged), mode=sw.mode, floor=bracket.highest_passing,
                               ceiling=bracket.lowest_failing)
            # A second start-up's worth of slack: a narrowing run is the sweep's last, and one cut by --max-duration
            # loses its requests in flight (on a loaded machine AIPerf's start-up outran the last one's estimate).
            slack = self.budget.overhead_s
            if target is None or not (values := self.budget.fit([target] * _NARROW_RUNS, base=need_base)) \
                    or self.budget.left_s() < slack + sum(self.budget.need_s(v, 0.0) for v in values) \
                    + self.budget.overhead_s:
                break
            say(f"sweep: narrowing the capacity's interval ({est.summary}): {target:g} {unit} next")
            ran = await self.batch(values, base=need_base)
            need_base = False
            for value in ran:
                await self.judge(value)
        return need_base

    def _reference(self) -> Baseline | None:
        return Baseline.of(self.base.requests) if self.base.balanced and self.base.requests else None

    async def judge(self, value: float) -> None:
        """The point's verdict on all its runs' requests so far, journaled."""
        cfg = self.scope.config
        sw, slo, point = cfg.sweep, cfg.slo, self.points[value]
        if self.baseline is None and sw.mode == "concurrency" and value == 1 and point.balanced:
            self.baseline = Baseline.of(point.requests)
        checks = judge_point(point.requests, slo, self.baseline, self.model.correctness)
        if not point.balanced:
            checks.append(SloCheck(slo="evidence", outcome="inconclusive",
                                   reason="the point's accounting did not balance: its requests are not all known"))
        outcome = worst([c.outcome for c in checks])
        self.judged[value] = Judged(outcome=outcome, runs=len(point.windows), checks=checks)
        self.evidence[value] = evidence_of(value, point.requests, checks, slo)
        await self.scope.bus.publish(SweepPointJudged(
            source="sweep", index=list(self.points).index(value), mode=sw.mode, offered=value,
            windows=list(point.windows), outcome=outcome, checks=checks,  # type: ignore[arg-type]
            stats=point_stats(point.requests, checks, point.span_s or None, self.baseline), accounting_balanced=point.balanced,
            aiperf=list(point.aiperf), stopped_early=point.stopped_early, saturation=list(point.saturation)))

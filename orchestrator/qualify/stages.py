"""`aqbench qualify`: every configured model through server, capability, correctness, identity and AIPerf.
The adapters come in through a Toolkit from the composition root; result rows and statistics are folded from
the journal by orchestrator.reports, never from this module's memory."""

from __future__ import annotations

import functools
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from orchestrator.base.errors import ConfigError, ServerError, UsageError
from orchestrator.config import Config, ModelConfig
from orchestrator.dataset import (
    Dataset,
    load_dataset,
    prepare_arms,
    resolve_dataset_path,
)
from orchestrator.dataset.clip_cache import clip_cache_dir, facts_dir
from orchestrator.events import (
    AnswerMismatch,
    CorrectnessPhase,
    DatasetPhase,
    IdentityPhase,
    IncompleteAnswer,
    ItemRef,
    ModelPhase,
    ModelResult,
    PhaseFinished,
    ResultRow,
    ServerPhase,
)
from orchestrator.judge.gates import ScoredAnswer, evaluate_gates, not_applicable
from orchestrator.judge.paired import Judged, capacity_rejection
from orchestrator.live.start import start_live_page
from orchestrator.qualify.aiperf_stage import aiperf_stage, publish_gates
from orchestrator.qualify.answers import (
    Answered,
    answered_http,
    incomplete_entry,
    incomplete_reason,
)
from orchestrator.qualify.baseline_side import describe, judge_against_baseline, resolve_gate
from orchestrator.qualify.context import ModelRun, QualifyOptions, StageFailed
from orchestrator.qualify.keyed import result_key
from orchestrator.qualify.plan import describe_plan
from orchestrator.qualify.probe import capability_probe
from orchestrator.qualify.serving import supervise_to_the_end
from orchestrator.qualify.shared import SharedBaselines
from orchestrator.reports import write_reports
from orchestrator.run import Interrupt, open_run
from orchestrator.run.provenance import sha256_path
from orchestrator.spine.logs import get_logger, say
from orchestrator.spine.ports import Toolkit
from orchestrator.supervision.server_spec import ServerSpec
from orchestrator.supervision.supervisor import ServerHandle
from orchestrator.view.console import ConsoleView

__all__ = ["QualifyOptions", "qualify", "STATUSES"]

log = get_logger("aqbench.qualify")

STATUSES = ("unsupported", "blocked", "planned", "implemented", "family-validated", "aiperf-qualified", "failed")
_STAGE_ORDER = ("server", "capability", "correctness", "identity", "aiperf")


# Each stage's outcome is journaled as it happens; a failed stage stops that model with its evidence, and the
# next model starts.
async def qualify(cfg: Config, opts: QualifyOptions, interrupt: Interrupt, toolkit: Toolkit) -> int:
    """Qualify every selected model; returns the exit code (0 all aiperf-qualified, 1 otherwise)."""
    models = _select_models(cfg, opts.models)
    dataset = load_dataset(resolve_dataset_path(cfg.dataset), facts=facts_dir(cfg.run))
    _check_gate_kinds(cfg, models, dataset)
    statuses: dict[str, str] = {}
    async with open_run(cfg, command="qualify", argv=opts.argv or sys.argv, interrupt=interrupt) as run:
        await run.tg.start(ConsoleView(run.bus).run)
        await start_live_page(run, opts.serve, sample_processes=True)
        await run.bus.publish(PhaseFinished(
            source="qualify", phase="dataset", outcome="passed",
            detail=DatasetPhase(name=dataset.name, identity=dataset.identity, path=str(dataset.root),
                                items=len(dataset.items), arms=list(cfg.dataset.arms))))
        requests = await anyio.to_thread.run_sync(functools.partial(
            prepare_arms, dataset, cfg.dataset.arms, run.run_dir / "wire", cache=clip_cache_dir(cfg.run),
            conditioning_items=cfg.dataset.conditioning_items))
        plans: dict[str, str] = {}
        references = SharedBaselines()
        for model in models:
            gate = resolve_gate(model, cfg, dataset, opts.owners)
            state = ModelRun(run, model, dataset, requests, opts, toolkit, gate, references)
            statuses[model.name] = await _qualify_model(state)
            plans[model.name] = state.plan
        qualified = sum(s == "aiperf-qualified" for s in statuses.values())
        exit_code = 0 if qualified == len(statuses) or opts.plan_only else 1
        status = "planned" if opts.plan_only else "ok" if exit_code == 0 else "failed"
        run.finish(status=status, exit_code=exit_code,
                   reason=", ".join(f"{m}: {s}" for m, s in statuses.items()),
                   counts={s: sum(v == s for v in statuses.values()) for s in set(statuses.values())})
    paths = await anyio.to_thread.run_sync(write_reports, run.journal_path, run.run_dir)
    say(f"\nqualify: {run.run_dir}")
    for model_name, status in statuses.items():
        say(f"  {model_name}: {status}" + (f": {plans[model_name]}" if plans.get(model_name) else ""))
    say(f"  reports: {', '.join(str(p) for p in paths)}")
    return exit_code


def _check_gate_kinds(cfg: Config, models: Sequence[ModelConfig], dataset: Dataset) -> None:
    """A per-kind gate over a kind the dataset lacks would judge zero items: refuse it up front."""
    kinds = sorted({it.kind for it in dataset.items})
    for i, model in enumerate(cfg.models):
        if model not in models:
            continue
        ni = model.correctness.noninferiority
        for arm in ni.arms if ni is not None else []:
            if arm not in cfg.dataset.arms:
                raise ConfigError(f"{cfg.source}: models[{i}].correctness.noninferiority.arms: {arm!r} is not "
                                  f"among [dataset] arms ({', '.join(cfg.dataset.arms)}); add it there or drop it")
        for kind in model.correctness.min_pass_rate_by_kind:
            if kind not in kinds:
                raise ConfigError(f"{cfg.source}: models[{i}].correctness.min_pass_rate_by_kind.{kind}: dataset "
                                  f"{dataset.name} has no items of kind {kind!r}; its kinds: {', '.join(kinds)}")


def _select_models(cfg: Config, names: Sequence[str]) -> list[ModelConfig]:
    if not names:
        return list(cfg.models)
    known = {m.name: m for m in cfg.models}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"--model {', '.join(unknown)}: not configured in {cfg.source}; "
                         f"configured models: {', '.join(known)}")
    return [known[n] for n in names]


async def _qualify_model(m: ModelRun) -> str:
    model = m.model
    await m.phase_start("model", ModelPhase(**model.identity_fields(), bundle=model.bundle or m.cfg.server.bundle))
    status, failed_stage, reason = "planned", "", ""
    if m.opts.plan_only:
        spec = ServerSpec.from_config(m.cfg, model, m.run.run_dir, parts=m.toolkit.server_parts(m.cfg.server.kind))
        reason = m.plan = describe_plan(m.cfg, model, m.dataset, m.requests, spec.argv(1),
                                        skip_aiperf=m.opts.skip_aiperf)
    else:
        try:
            status = await _stages(m)
            reason = ""
            if m.gate is not None:
                status = await _against_reference(m, status)
        except StageFailed as stop:
            # The stage where the model stopped, also for unsupported/blocked (always "capability").
            status, failed_stage, reason = stop.status, stop.stage, stop.reason
    await m.bus.publish(ModelResult(
        source="qualify", model=model.name, status=status, failed_stage=failed_stage,
        row=ResultRow(**model.identity_fields(), bundle_sha256=m.bundle_sha256,
                      qualify_command=_qualify_command(m.cfg, model), aiperf_command=m.aiperf_shell, reason=reason,
                      noninferiority=m.noninferiority, keyed_by=await result_key(m))))
    await m.phase_end("model", status, reason)
    return status


async def _against_reference(m: ModelRun, status: str) -> str:
    """The model's status once judged against its reference: kept on `pass`, `failed` on `fail`, and
    `implemented` otherwise (inconclusive, not comparable, or no gate applied), with the reason."""
    assert m.gate is not None
    m.noninferiority = result = await judge_against_baseline(m, m.gate)
    if result.outcome == "pass":
        return status
    raise StageFailed("noninferiority", "failed" if result.outcome == "fail" else "implemented", describe(result))


def _qualify_command(cfg: Config, model: ModelConfig) -> str:
    return shlex.join(["aqbench", "qualify", "--config", cfg.source or "bench.toml", "--model", model.name])


async def _stages(m: ModelRun) -> str:
    await m.phase_start("server")
    bundle = m.model.bundle or m.cfg.server.bundle
    if bundle:
        try:
            m.bundle_sha256 = await anyio.to_thread.run_sync(sha256_path, Path(bundle))
        except ServerError as exc:
            raise StageFailed("server", "failed", str(exc)) from None
    spec = ServerSpec.from_config(m.cfg, m.model, m.run.run_dir, parts=m.toolkit.server_parts(m.cfg.server.kind))
    # Stage failures are caught inside the task group and re-raised outside it, so that they reach
    # the caller as themselves rather than wrapped in an exception group.
    stopped: StageFailed | None = None
    status = ""
    async with anyio.create_task_group() as tg:
        # Records tailer and correlator first: they must see the first ServerSpawned and every record.
        await tg.start(m.toolkit.records_tailer(m.bus).run)
        await tg.start(m.correlator.run)
        try:
            handle = await tg.start(supervise_to_the_end, spec, m.bus)
        except ServerError as exc:
            await m.phase_end("server", "failed", str(exc), ServerPhase(argv=spec.argv(1)))
            stopped = StageFailed("server", "failed", f"server did not start: {exc}")
            tg.cancel_scope.cancel()
        else:
            try:
                status = await _run_stages(m, handle, spec)
            except StageFailed as exc:
                stopped = exc
            finally:
                with anyio.CancelScope(shield=True):
                    await handle.stop()
                tg.cancel_scope.cancel()
    if stopped is not None:
        raise stopped
    return status


async def _run_stages(m: ModelRun, handle: ServerHandle, spec: ServerSpec) -> str:
    await m.phase_end("server", "passed", "", ServerPhase(argv=spec.argv(1), base_url=handle.base_url,
                                                         bundle_sha256=m.bundle_sha256))
    await _capability(m, handle.base_url)
    m.status = "implemented"
    await _correctness(m, handle.base_url)
    m.status = "family-validated"
    await _identity(m)
    if m.opts.skip_aiperf:
        await m.phase_start("aiperf")
        await m.phase_end("aiperf", "skipped", "--skip-aiperf")
        return m.status
    await aiperf_stage(m, handle)
    return "aiperf-qualified"


# ---------------------------------------------------------------------------------------- capability


async def _capability(m: ModelRun, base_url: str) -> None:
    await capability_probe(m, base_url, m.run.run_dir / "wire", cache=clip_cache_dir(m.run.config.run))


# --------------------------------------------------------------------------------------- correctness


async def _correctness(m: ModelRun, base_url: str) -> None:
    await m.phase_start("correctness", CorrectnessPhase(requests=len(m.requests), native=bool(m.model.native_argv)))
    criteria = m.model.correctness
    scored: list[ScoredAnswer] = []
    incomplete: list[IncompleteAnswer] = []
    seeds = m.gate.seeds if m.gate is not None and not isinstance(m.gate, str) else 1
    native_argv = _render_native(m) if m.model.native_argv else None

    async def over_http() -> None:
        async with m.client(base_url) as client:
            for req in (r for r in m.requests for _ in range(seeds)):  # a sampling model: seeds answers each
                reply = await m.ask(client, req, "correctness")
                m.http_answers[(req.item_id, req.arm)] = reply.text
                verdict, completeness = await m.answers.verdict(req, answered_http(reply), "http")
                m.candidate_judged.setdefault((req.item_id, req.arm), []).append(
                    Judged(verdict=verdict, capacity=capacity_rejection(reply.status, reply.body)))
                if completeness is not None and not completeness.complete:
                    incomplete.append(incomplete_entry(req, "http", reply.request_id, verdict, completeness))
                scored.append(ScoredAnswer(item_id=req.item_id, arm=req.arm, kind=m.dataset.item(req.item_id).kind,
                                           verdict=verdict))
        await m.close_window("correctness")

    async def natively(argv: list[str]) -> None:
        config = {"max_new_tokens": m.max_tokens} if m.max_tokens else None
        async with m.toolkit.native_worker(argv, log_path=m.run.run_dir / "native" / f"{m.model.name}.log",
                                           startup_timeout_s=m.cfg.server.startup_timeout_s,
                                           request_timeout_s=m.cfg.workload.request_timeout_s) as worker:
            for req in m.requests:
                native = await worker.generate(req.text, req.audio_path, config=config,
                                               request_id=m.request_id("native"))
                m.native_answers[(req.item_id, req.arm)] = native.text
                got = Answered(request_id=native.request_id, answered=native.ok, text=native.text,
                               completion_tokens=native.completion_tokens, error=native.error)
                verdict, completeness = await m.answers.verdict(req, got, "native")
                if completeness is not None and not completeness.complete:
                    incomplete.append(incomplete_entry(req, "native", native.request_id, verdict, completeness))

    # The HTTP path and the native worker answer side by side: two processes, one request each at a time,
    # so each path's answers are unaffected and the stage takes about the longer path's time, not the sum.
    failures: list[Exception] = []

    async def guarded(path: Callable[[], Awaitable[None]], scope: anyio.CancelScope) -> None:
        try:
            await path()
        except Exception as exc:  # re-raised below, outside the group, as itself; the other path stops
            failures.append(exc)
            scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(guarded, over_http, tg.cancel_scope)
        if native_argv is not None:
            tg.start_soon(guarded, functools.partial(natively, native_argv), tg.cancel_scope)
    if failures:
        raise failures[0]
    gates = evaluate_gates(criteria, scored)
    await publish_gates(m, gates)
    failing = [g for g in gates if g.failed]
    reasons = [f"{g.scope} pass rate {g.correct}/{g.total} = {g.observed:.4f} below the required "
               f"{g.required} (failing items: {', '.join(g.failing_items[:12])}"
               f"{' ...' if len(g.failing_items) > 12 else ''})" for g in failing]
    # An incomplete answer is a wrong answer (its verdict is `incomplete`), counted by every gate and by the
    # reference's decision, and listed; on its own it fails nothing, so one defect never ends a model here.
    listed_incomplete = [incomplete_reason(incomplete, note=", counted wrong")] if incomplete else []
    if reasons:
        listed: list[str | ItemRef] = [*sorted({i for g in failing for i in g.failing_items})]
        await m.phase_end("correctness", "failed", "; ".join(reasons + listed_incomplete),
                          CorrectnessPhase(failing_items=listed, incomplete=incomplete))
        raise StageFailed("correctness", "failed", "; ".join(reasons + listed_incomplete))
    judged = "; ".join(f"{g.scope} {g.correct}/{g.total}" for g in gates if g.applicable)
    await m.phase_end("correctness", "passed", "; ".join(x for x in [
        judged or f"{len(scored)} answers scored; the gate is the reference's (noninferiority)",
        not_applicable(gates), *listed_incomplete] if x), CorrectnessPhase(incomplete=incomplete))


def _render_native(m: ModelRun) -> list[str]:
    values = {"python": sys.executable, "model": m.model.name, "bundle": m.model.bundle or m.cfg.server.bundle,
              "run_dir": str(m.run.run_dir)}
    try:
        return [arg.format(**values) for arg in m.model.native_argv]
    except KeyError as exc:
        raise StageFailed("correctness", "failed", f"native_argv of {m.model.name}: unknown placeholder {exc}; "
                                                    f"allowed: {', '.join('{' + k + '}' for k in values)}") from None


# ------------------------------------------------------------------------------------------ identity


async def _identity(m: ModelRun) -> None:
    await m.phase_start("identity")
    if not m.model.native_argv:
        await m.phase_end("identity", "skipped", "no native runner configured", IdentityPhase(compared=0))
        return
    mismatches = [
        AnswerMismatch(item_id=item_id, arm=arm, answers={"http": m.http_answers.get((item_id, arm)),
                                                          "native": m.native_answers.get((item_id, arm))})
        for (item_id, arm) in m.http_answers
        if m.http_answers.get((item_id, arm)) != m.native_answers.get((item_id, arm))
    ]
    if mismatches:
        reason = f"{len(mismatches)}/{len(m.http_answers)} answers differ between native and HTTP"
        await m.phase_end("identity", "failed", reason, IdentityPhase(mismatches=mismatches, compared=len(m.http_answers)))
        raise StageFailed("identity", "failed", reason)
    await m.phase_end("identity", "passed", f"{len(m.http_answers)} answers identical",
                      IdentityPhase(compared=len(m.http_answers)))

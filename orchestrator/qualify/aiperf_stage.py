"""qualify's AIPerf stage: one real AIPerf run against the model's server, judged by its accounting and its
answers (scored, checked whole and against the correctness stage). Journals its verdicts and gates, and says
before AIPerf starts which gates its plan cannot reach."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from orchestrator.base.errors import AqbenchError
from orchestrator.dataset import ArmRequest, write_aiperf_input
from orchestrator.events import (
    AccountingChecked,
    AiperfPhase,
    AiperfSettings,
    AnswerMismatch,
    CompletenessChange,
    GateCounts,
    GateEvaluated,
    GateResult,
    IncompleteAnswer,
    NoticeContext,
    RequestCorrelated,
    Warned,
)
from orchestrator.judge.gates import ScoredAnswer, evaluate_gates, not_applicable
from orchestrator.qualify.answers import answered_load, incomplete_entry, incomplete_reason
from orchestrator.qualify.collect import WindowCollector
from orchestrator.qualify.context import ModelRun, StageFailed
from orchestrator.qualify.plan import aiperf_rows, unreachable_gates
from orchestrator.spine.ports import AiperfResult
from orchestrator.supervision.supervisor import ServerHandle

__all__ = ["aiperf_stage", "publish_gates"]

# The correlator's accounting of a window follows its close within milliseconds; this only bounds a
# stuck bus, which is then said in a warning and makes the stage fail.
_COLLECT_TIMEOUT_S = 30.0


async def aiperf_stage(m: ModelRun, handle: ServerHandle) -> None:
    """AIPerf under load on the model's server: the window accounted against what AIPerf says it issued, every
    answer scored, whole, and (deterministic models) identical to the correctness stage's. Raises StageFailed
    with every problem found."""
    w = m.cfg.workload
    window = f"{m.model.name}/aiperf"
    settings = AiperfSettings(warmup_requests=w.warmup_requests, requests=w.requests, concurrency=w.concurrency,
                              request_rate=w.request_rate, streaming=w.streaming, arms=list(w.arms),
                              request_timeout_s=w.request_timeout_s)
    await m.phase_start("aiperf", AiperfPhase(settings=settings))
    aiperf = m.toolkit.aiperf
    try:
        install = await anyio.to_thread.run_sync(aiperf.check_install)
        tokenizer = await anyio.to_thread.run_sync(aiperf.ensure_tokenizer, m.model.tokenizer)
    except AqbenchError as exc:
        await m.phase_end("aiperf", "failed", str(exc), AiperfPhase(settings=settings))
        raise
    work = m.run.run_dir / "aiperf" / m.model.name
    rows = aiperf_rows(m.requests, m.dataset, w)
    unreached = unreachable_gates(rows, m.dataset, w, m.model.correctness)
    if unreached:  # said before AIPerf starts; those gates then judge nothing under load (not applicable)
        await m.bus.publish(Warned(source="qualify", code="gates_unreachable", message=(
            f"the AIPerf stage's plan ({w.warmup_requests} warmup + {w.requests} profiling requests over "
            f"{len(rows)} rows, sent in order) never asks the gated {', '.join(unreached)}: under load "
            f"{'that gate is' if len(unreached) == 1 else 'those gates are'} not applicable"),
            detail=NoticeContext(model=m.model.name)))
    input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows, work / "inputs.jsonl")
    cmd = aiperf.build_command(w, base_url=handle.base_url, model=m.model.name, input_file=input_file,
                               artifact_dir=work / "artifacts", tokenizer=tokenizer, executable=install.executable)
    m.aiperf_shell = cmd.shell
    collector = WindowCollector(m.bus, window)
    async with anyio.create_task_group() as tg:
        await tg.start(collector.run)
        outcome = await aiperf.run_aiperf(cmd, m.bus, window=window, deadline_s=w.deadline_s,
                                          stop_grace_s=w.stop_grace_s, install=install)
        # Checked against what AIPerf says it issued: a request it sent and lost is a breach, never silence.
        accounting = await m.correlator.close_window(window, expected=outcome.issued,
                                                     expected_from=outcome.issued_from)
        # The collector has every request of the window once it has seen the window's accounting.
        collected_all = await collector.wait_accounted(_COLLECT_TIMEOUT_S)
        tg.cancel_scope.cancel()
    profiling = [c for c in collector.events if c.phase == "profiling"]
    problems = _run_problems(collected_all, handle, outcome, accounting, profiling)
    answers = await _check_answers(m, rows, profiling, problems)
    scored, mismatches, incomplete, changed = (answers.scored, answers.mismatches, answers.incomplete,
                                               answers.changed)
    if mismatches:
        problems.append(f"{len(mismatches)} answers under load differ from the correctness stage")
    problems += [f"{len(changed)} answers under load changed completeness from the correctness stage"] if changed else []
    gates = evaluate_gates(m.model.correctness, scored) if scored else []
    await publish_gates(m, gates, prefix="aiperf:")
    problems += [f"under load, {g.scope} pass rate {g.correct}/{g.total} below {g.required}" for g in gates if g.failed]
    # Incomplete answers are wrong answers (counted by the gates above) and listed, never a failure on their own.
    notes = [x for x in (not_applicable(gates), incomplete_reason(incomplete, note=", counted wrong") if incomplete
                         else "") if x]
    if not profiling:
        problems.append("no profiling request was recorded")
    if problems:
        reason = "; ".join(problems + notes)
        await m.phase_end("aiperf", "failed", reason, AiperfPhase(
            settings=settings, identity_mismatches=mismatches, incomplete=incomplete, completeness_changes=changed))
        raise StageFailed("aiperf", "failed", reason)
    await m.phase_end("aiperf", "passed", "; ".join([f"{len(profiling)} profiling requests, all correlated and "
                                                     "answered", *notes]),
                      AiperfPhase(settings=settings, incomplete=incomplete))


def _run_problems(collected_all: bool, handle: ServerHandle, outcome: AiperfResult, accounting: AccountingChecked,
                  profiling: list[RequestCorrelated]) -> list[str]:
    """What went wrong with the run itself: the collection, the server, AIPerf, the accounting, failed requests."""
    problems: list[str] = []
    if not collected_all:
        problems.append(f"the window's accounting did not reach the stage within {_COLLECT_TIMEOUT_S:g} s")
    if handle.failure:
        problems.append(f"server failed during the AIPerf stage: {handle.failure}")
    if outcome.classification != "complete":
        problems.append(f"AIPerf run {outcome.classification}: {outcome.reason}")
    if not accounting.balanced:
        problems.append("accounting not balanced: " + "; ".join(accounting.problems))
    failures = [c for c in profiling if not c.ok]
    if failures:
        causes: dict[str, int] = {}
        for c in failures:
            causes[c.cause] = causes.get(c.cause, 0) + 1
        problems.append(f"{len(failures)} failed requests ({', '.join(f'{k}: {v}' for k, v in sorted(causes.items()))})")
    return problems


@dataclass
class _Answers:
    """The answers under load: scored, those that differ from the correctness stage's, incomplete ones, and
    those whose completeness changed from the correctness stage."""

    scored: list[ScoredAnswer] = field(default_factory=list)
    mismatches: list[AnswerMismatch] = field(default_factory=list)
    incomplete: list[IncompleteAnswer] = field(default_factory=list)
    changed: list[CompletenessChange] = field(default_factory=list)


async def _check_answers(m: ModelRun, rows: list[ArmRequest], profiling: list[RequestCorrelated],
                         problems: list[str]) -> _Answers:
    """Score every answered profiling request; a request that maps to no dataset row is added to `problems`."""
    out = _Answers()
    for c in profiling:
        if not c.ok:
            continue
        req = next((r for r in rows if r.item_id == c.item_id and r.arm == c.arm), None)
        if req is None:
            problems.append(f"request {c.request_id}: conversation {c.conversation_id!r} maps to no dataset row")
            continue
        verdict, completeness = await m.answers.verdict(req, answered_load(c), "aiperf")
        if completeness is not None and not completeness.complete:
            out.incomplete.append(incomplete_entry(req, "aiperf", c.request_id, verdict, completeness))
        out.changed.extend(x for x in [m.answers.change("http", req, c.request_id, completeness)] if x)
        out.scored.append(ScoredAnswer(item_id=c.item_id, arm=c.arm, kind=m.dataset.item(c.item_id).kind,
                                       verdict=verdict))
        expected = m.http_answers.get((c.item_id, c.arm))
        if m.model.correctness.deterministic and c.answer != expected:
            out.mismatches.append(AnswerMismatch(request_id=c.request_id, item_id=c.item_id, arm=c.arm,
                                                 answers={"under_load": c.answer, "correctness_stage": expected}))
    return out


async def publish_gates(m: ModelRun, gates: list[GateResult], prefix: str = "") -> None:
    """One GateEvaluated per gate, `prefix` before its scope (`aiperf:` under load); a gate over no answers is
    journaled not applicable."""
    for g in gates:
        await m.bus.publish(GateEvaluated(source="qualify", model=m.model.name, gate=g.gate, required=g.required,
                                          observed=g.observed, passed=g.passed, scope=f"{prefix}{g.scope}",
                                          detail=GateCounts(correct=g.correct, total=g.total,
                                                            failing_items=g.failing_items),
                                          applicable=g.applicable))


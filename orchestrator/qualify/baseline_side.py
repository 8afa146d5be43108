"""A model's baseline side (bench.toml's [models.reference]): its gate resolved, its run alone, the paired
decision journaled. The decision is judge/paired.py's; this module only gathers answers and publishes it.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping

import anyio
import msgspec

from orchestrator.base.errors import AqbenchError
from orchestrator.config import BaselineSide, Config, ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import ArmRequest, Dataset, parse_session_key
from orchestrator.events import (
    GateCitation,
    NoninferiorityJudged,
    NoninferiorityPhase,
    NoninferiorityResult,
    ReferencePhase,
)
from orchestrator.judge.owners import owners_gate
from orchestrator.judge.paired import ChosenGate, Judged, choose_gate, decide_paired, is_quantized
from orchestrator.qualify.answers import Answered, answered_http
from orchestrator.qualify.context import ModelRun
from orchestrator.qualify.serving import supervise_to_the_end
from orchestrator.qualify.shared import AskedBaseline
from orchestrator.spine.ports import ChatAnswer, ChatSession, OwnerFiles
from orchestrator.supervision.server_spec import ServerSpec

__all__ = ["NOT_JUDGED", "describe", "gate_arms", "judge_against_baseline", "resolve_gate"]

NOT_JUDGED = "not-judged"  # no gate applied, or the reference gave no answers: the model stays implemented
Key = tuple[str, str]


# The baseline runs after the model's own server has stopped (each side alone on the machine), one request at a
# time per replica, on the same (item, arm) requests; its verdicts are journaled on path `reference`. Models whose
# baseline is the same (this key) share its answers, each journaling them as its own verdicts, judged afresh.
def _baseline_key(m: ModelRun, ref: BaselineSide, arms: list[str], seeds: int) -> str:
    """Everything that makes two models' references give the same answers: the reference section, the arms
    and requests asked, the seeds and the token limit."""
    blob = msgspec.json.encode([ref, arms, seeds, m.max_tokens, [(r.key, r.text, r.audio_path) for r in m.requests]])
    return hashlib.sha256(blob).hexdigest()


def gate_arms(m: ModelRun) -> list[str]:
    """The arms whose problems are paired: the gate's `arms`, else every configured dataset arm."""
    ni = m.model.correctness.noninferiority
    return list(ni.arms) if ni is not None and ni.arms else list(m.cfg.dataset.arms)


def resolve_gate(model: ModelConfig, cfg: Config, dataset: Dataset,
                 owners: Mapping[str, OwnerFiles]) -> ChosenGate | str | None:
    """The gate for `model`: from the owners' files when qualify was given them (`owners`, by model name),
    else from bench.toml; a sentence when the owners' files give none; None without a reference."""
    ni = model.correctness.noninferiority
    if model.reference is None:
        return None
    quantized, sampled = is_quantized(model.precision), not model.correctness.deterministic
    files = owners.get(model.name)
    if files is not None:
        benchmark = (ni.benchmark if ni is not None else "") or dataset.name
        return owners_gate(files, task=model.native_task, benchmark=benchmark, quantized=quantized, sampled=sampled)
    if ni is None:
        return None
    index = [x.name for x in cfg.models].index(model.name)
    where = f"models[{index}].correctness.noninferiority"
    return choose_gate(ni, quantized=quantized, sampled=sampled, where=f"{cfg.source or 'bench.toml'} {where}",
                       citation=GateCitation(file=cfg.source or "bench.toml", revision=f"sha256:{cfg.sha256}"
                                             if cfg.sha256 else "", entry=where))


async def judge_against_baseline(m: ModelRun, gate: ChosenGate | str) -> NoninferiorityResult:
    """Run the reference (unless no gate applies), pair its answers with the model's and publish the
    decision (phase `noninferiority`, NoninferiorityJudged). Blocks for the reference's whole run."""
    model = m.model
    ref = model.reference
    assert ref is not None  # a gate is resolved only for a model with a reference
    quantized, sampled = is_quantized(model.precision), not model.correctness.deterministic
    arms = gate_arms(m)
    # What every result states, decided or not.
    base = NoninferiorityResult(outcome=NOT_JUDGED, arms=arms, quantized=quantized, sampled=sampled,
                                candidate_precision=model.precision, reference_precision=ref.precision)
    if isinstance(gate, str):
        result = msgspec.structs.replace(base, reason=gate)
    else:
        cited = msgspec.structs.replace(base, gate_used=gate.key, margin_source=gate.source,
                                        citations=list(gate.citations))
        answers, failure = await _baseline_answers(m, ref, [r for r in m.requests if r.arm in arms], gate.seeds)
        try:
            result = (msgspec.structs.replace(cited, reason=failure) if failure
                      else decide_paired(answers, m.candidate_judged, gate, arms=arms, quantized=quantized,
                                         sampled=sampled, candidate_precision=model.precision,
                                         reference_precision=ref.precision))
        except ValueError as exc:  # a margin of 100 points or more: the gate as written cannot decide
            result = msgspec.structs.replace(cited, reason=str(exc))
    await m.phase_start("noninferiority", NoninferiorityPhase(arms=arms))
    await m.bus.publish(NoninferiorityJudged(source="qualify", model=model.name, result=result))
    await m.phase_end("noninferiority", result.outcome, describe(result), NoninferiorityPhase(arms=arms))
    return result


def describe(r: NoninferiorityResult) -> str:
    """One sentence: the outcome, R with its bounds against the margin, the counts, the reason."""
    if r.outcome == NOT_JUDGED:
        return r.reason
    bounds = (f"R = {r.estimate:.2f} points, 95% bounds [{r.lower:.2f}, {r.upper:.2f}]"
              if r.estimate is not None and r.lower is not None and r.upper is not None else
              f"R = {r.estimate:.2f} points" if r.estimate is not None else "R undefined")
    counts = f"b = {r.b}, c = {r.c}, n = {r.n}" if r.b is not None else f"n = {r.n}"
    text = (f"{r.outcome} against the reference: {bounds}, margin {r.margin if r.margin is not None else '-'} "
            f"({r.gate_used}, {r.margin_source}); {counts}; reference {r.reference_score:.2f}, model "
            f"{r.candidate_score:.2f}")
    extra = [f"{r.out_of_capacity} out of capacity"] if r.out_of_capacity else []
    extra += [f"{r.candidate_failures} unanswered counted wrong"] if r.candidate_failures else []
    extra += [f"{r.candidate_incomplete} incomplete counted wrong"] if r.candidate_incomplete else []
    if r.detectable_regression is not None and r.detectable_power_regression is not None:
        extra.append(f"at n = {r.n} it fails a regression from {r.detectable_regression:.2f} points observed "
                     f"(b >= {r.fail_from_b}), and a true one of {r.detectable_power_regression:.2f} points with "
                     f"probability 0.8")
    if r.outcome == "inconclusive" and r.items_needed is not None:
        extra.append(f"about {r.items_needed} paired problems would decide at the observed discordance")
    return "; ".join([text, *extra, *([r.reason] if r.reason else [])])


async def _baseline_answers(m: ModelRun, ref: BaselineSide, rows: list[ArmRequest],
                             seeds: int) -> tuple[dict[Key, list[Judged]], str]:
    """Every row asked `seeds` times of the reference, or the answers another model of this run got from the
    same reference; (answers, "") or ({}, why not)."""
    await m.phase_start("reference", ReferencePhase(argv=list(ref.argv or ref.native_argv), precision=ref.precision,
                                                    requests=len(rows) * seeds))
    out: dict[Key, list[Judged]] = {}
    key = _baseline_key(m, ref, sorted({r.arm for r in rows}), seeds)
    shared = m.shared_baselines.get(key)
    if shared is not None:
        source, earlier = shared
        for asked in earlier:
            await _judge(m, asked.request, asked.got, out, [])
        answered = sum(any(j.verdict != "error" for j in js) for js in out.values())
        await m.phase_end("reference", "passed", f"{answered}/{len(out)} problems answered by the reference, "
                          f"reused from {source}'s run of the same reference (same requests, seeds and limit)",
                          ReferencePhase(answers_checked=m.answers.checked["reference"]))
        return out, ""
    asked_now: list[AskedBaseline] = []
    try:
        failure = await (_from_server(m, ref, rows, seeds, out, asked_now) if ref.argv
                         else _from_worker(m, ref, rows, seeds, out, asked_now))
    except AqbenchError as exc:
        failure = str(exc)
    if failure:
        await m.phase_end("reference", "failed", f"the reference gave no answers: {failure}")
        return {}, f"the reference gave no answers: {failure}"
    m.shared_baselines.put(key, m.model.name, asked_now)
    answered = sum(any(j.verdict != "error" for j in js) for js in out.values())
    await m.phase_end("reference", "passed", f"{answered}/{len(out)} problems answered by the reference",
                      ReferencePhase(answers_checked=m.answers.checked["reference"]))
    return out, ""


async def _judge(m: ModelRun, req: ArmRequest, got: Answered, out: dict[Key, list[Judged]],
                 asked: list[AskedBaseline]) -> None:
    verdict, _c = await m.answers.verdict(req, got, "reference")
    out.setdefault((req.item_id, req.arm), []).append(Judged(verdict=verdict))
    asked.append(AskedBaseline(req, got))


async def _from_server(m: ModelRun, ref: BaselineSide, rows: list[ArmRequest], seeds: int,
                       out: dict[Key, list[Judged]], asked: list[AskedBaseline]) -> str:
    # Its own name (records file, served model id), and one replica per request in flight ([models.reference]
    # concurrency, one by default): the reference answers one request at a time per replica.
    cfg = msgspec.structs.replace(m.cfg, server=msgspec.structs.replace(m.cfg.server, argv=list(ref.argv),
                                                                        replicas=ref.concurrency))
    served = msgspec.structs.replace(m.model, name=f"{m.model.name}.reference", server_args=[])
    spec = ServerSpec.from_config(cfg, served, m.run.run_dir, parts=m.toolkit.server_parts(cfg.server.kind))
    async with anyio.create_task_group() as tg:
        await tg.start(m.toolkit.records_tailer(m.bus).run)
        correlator = Correlator(m.bus, key_parser=parse_session_key, answer_grace_s=2.0)
        await tg.start(correlator.run)
        try:
            handle = await tg.start(supervise_to_the_end, spec, m.bus)
        except AqbenchError as exc:  # caught inside the group, so it leaves as itself, not in a group
            tg.cancel_scope.cancel()
            return f"its server did not start: {exc}"
        try:
            async with m.toolkit.chat_client(handle.base_url, served.name, timeout_s=_timeout_s(m, ref),
                                             max_tokens=m.max_tokens) as client:
                todo = iter([req for req in rows for _ in range(seeds)])
                failures: list[Exception] = []

                async def asker(scope: anyio.CancelScope) -> None:
                    try:
                        for req in todo:  # one shared iterator: each request is asked once, by one asker
                            reply = await _ask_when_free(m, ref, client, req)
                            await _judge(m, req, answered_http(reply), out, asked)
                    except Exception as exc:  # re-raised below, outside the group, as itself
                        failures.append(exc)
                        scope.cancel()

                async with anyio.create_task_group() as askers:
                    for _ in range(ref.concurrency):
                        askers.start_soon(asker, askers.cancel_scope)
                if failures:
                    raise failures[0]
            await correlator.close_window(f"{m.model.name}/reference")
        finally:
            with anyio.CancelScope(shield=True):
                await handle.stop()
            tg.cancel_scope.cancel()
    return ""


def _timeout_s(m: ModelRun, ref: BaselineSide) -> float:
    return float(ref.request_timeout_s or m.cfg.workload.request_timeout_s)


async def _ask_when_free(m: ModelRun, ref: BaselineSide, client: ChatSession, req: ArmRequest) -> ChatAnswer:
    """Ask; while the server answers 429 (its one replica still busy, e.g. with a request this side gave up
    on), ask again after a growing pause, within one request timeout. Each try is journaled and accounted."""
    pause_s, waited_s = 0.25, 0.0
    while True:
        reply = await m.ask(client, req, "reference")
        if reply.status != 429 or waited_s >= _timeout_s(m, ref):
            return reply
        await anyio.sleep(pause_s)
        waited_s += pause_s
        pause_s = min(2 * pause_s, 4.0)


async def _from_worker(m: ModelRun, ref: BaselineSide, rows: list[ArmRequest], seeds: int,
                       out: dict[Key, list[Judged]], asked: list[AskedBaseline]) -> str:
    values = {"python": sys.executable, "model": m.model.name, "bundle": m.model.bundle or m.cfg.server.bundle,
              "run_dir": str(m.run.run_dir)}
    argv = [arg.format(**values) for arg in ref.native_argv]
    config = {"max_new_tokens": m.max_tokens} if m.max_tokens else None
    async with m.toolkit.native_worker(argv, log_path=m.run.run_dir / "native" / f"{m.model.name}.reference.log",
                                       startup_timeout_s=m.cfg.server.startup_timeout_s,
                                       request_timeout_s=_timeout_s(m, ref)) as worker:
        for req in rows:
            for _ in range(seeds):
                got = await worker.generate(req.text, req.audio_path, config=config,
                                            request_id=m.request_id("reference"))
                answered = Answered(request_id=got.request_id, answered=got.ok, text=got.text,
                                    completion_tokens=got.completion_tokens, error=got.error)
                await _judge(m, req, answered, out, asked)
    return ""

"""One load point judged against [slo]: pure, over the point's requests as plain facts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import msgspec

from orchestrator.base.figures import figure
from orchestrator.config import CorrectnessCriteria, SloConfig
from orchestrator.events import PointStats, SloCheck
from orchestrator.judge.gates import ScoredAnswer, evaluate_gates
from orchestrator.sweep.power import decide, failure_design_effect, latency_design_effect, needed

__all__ = ["PointRequest", "Baseline", "judge_point", "point_stats", "quantile_check", "rate_check", "worst",
           "saturation_signs"]


class PointRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One profiling request of a point, as the judge needs it (from a RequestCorrelated and its item)."""

    ok: bool
    cause: str = "ok"
    latency_ms: float | None = None
    model_call_ms: float | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    audio_s: float | None = None
    item_id: str = ""
    arm: str = ""
    kind: str = ""
    answer: str | None = None
    complete: bool | None = None  # None: not answered, or not checked
    verdict: str = ""  # the scorer's verdict (correct, wrong, ...), for the sampling models' gates


class Baseline(msgspec.Struct, frozen=True, kw_only=True):
    """The answers at concurrency 1 by (item_id, arm): the first answer text, and whether every one was whole."""

    answers: dict[tuple[str, str], str | None] = {}
    complete: dict[tuple[str, str], bool] = {}

    @classmethod
    def of(cls, requests: Sequence[PointRequest]) -> Baseline:
        answers: dict[tuple[str, str], str | None] = {}
        complete: dict[tuple[str, str], bool] = {}
        for r in requests:
            if not r.ok:
                continue
            key = (r.item_id, r.arm)
            answers.setdefault(key, r.answer)
            complete[key] = complete.get(key, True) and r.complete is not False
        return cls(answers=answers, complete=complete)


def _nearest_rank(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _worth(n: int, deff: float, r: float, what: str) -> str:
    """Said when correlation shrank the evidence: how many independent requests the n were worth."""
    return f"; {what} correlated in sequence (lag-1 {r:.2f}): worth {n / deff:.0f} independent" if deff > 1.05 else ""


def quantile_check(slo: str, values: Sequence[float], q: float, limit_ms: float, confidence: float) -> SloCheck:
    """The q-quantile of `values` (in start order) against `limit_ms` (see the module's method)."""
    n, alpha, share = len(values), 1.0 - confidence, 1.0 - q
    k = sum(v > limit_ms for v in values)
    deff, r = latency_design_effect(values, share)
    outcome = decide(k, n, share, alpha, deff)
    observed = _nearest_rank(values, q)
    label = f"p{round(q * 100):d}"
    seen = f"{label} {observed:.0f} ms" if observed is not None else f"no {label}"
    worth = _worth(n, deff, r, "latencies")
    if outcome == "inconclusive":
        reason = (f"{seen} on {n} requests, {k} beyond {limit_ms:g} ms: too few to decide at {confidence:.0%} "
                  f"confidence (a pass needs at least {needed(share, alpha, deff)} with none beyond{worth})")
    else:
        rel = ">" if outcome == "fail" else "<="
        reason = f"{seen} {rel} {limit_ms:g} ms ({k} of {n} beyond; {confidence:.0%} confidence{worth})"
    return SloCheck(slo=slo, outcome=outcome, observed=observed, limit=limit_ms, n=n, beyond=k,  # type: ignore[arg-type]
                    reason=reason, effective_n=round(n / deff, 1) if deff > 1.0 else None)


def rate_check(failed: int, n: int, max_rate: float, confidence: float, *,
               failures_in_order: Sequence[bool] = (), causes: Mapping[str, int] | None = None) -> SloCheck:
    """The share of failed requests against `max_rate`, by the same test; `failures_in_order` (each
    request failed or not, in start order) lets bursts of failures count as the less evidence they are."""
    deff, r = failure_design_effect(failures_in_order)
    outcome = decide(failed, n, max_rate, 1.0 - confidence, deff)
    observed = failed / n if n else None
    # By cause, so an overloaded server's refusals (server_busy: HTTP 429) read as what they are.
    by_cause = ", ".join(f"{c} {k}" for c, k in sorted((causes or {}).items(), key=lambda x: -x[1]))
    seen = f"{failed} of {n} failed" + (f" ({observed:.1%}{': ' + by_cause if by_cause else ''})"
                                        if observed is not None else "")
    worth = _worth(n, deff, r, "failures")
    if outcome == "inconclusive":
        reason = (f"{seen}: too few requests to decide against {max_rate:.1%} at {confidence:.0%} confidence "
                  f"(a pass needs at least {needed(max_rate, 1.0 - confidence, deff)} with none failed{worth})")
    else:
        reason = f"{seen}, {'above' if outcome == 'fail' else 'within'} {max_rate:.1%}{worth and ' (' + worth[2:] + ')'}"
    return SloCheck(slo="error_rate", outcome=outcome, observed=observed, limit=max_rate, n=n, beyond=failed,  # type: ignore[arg-type]
                    reason=reason, effective_n=round(n / deff, 1) if deff > 1.0 else None)


def _answers_check(answered: Sequence[PointRequest], baseline: Baseline, min_answers: int,
                   criteria: CorrectnessCriteria) -> SloCheck:
    if not criteria.deterministic:
        # A sampling model answers differently by design: its gates must hold under load instead.
        gates = evaluate_gates(criteria, [ScoredAnswer(item_id=r.item_id, arm=r.arm, kind=r.kind, verdict=r.verdict)
                                          for r in answered])
        judged = [g for g in gates if g.applicable]
        failed = [g for g in judged if g.failed]
        if failed:
            return SloCheck(slo="answers", outcome="fail", n=len(answered), beyond=len(failed), reason="; ".join(
                f"{g.scope} pass rate {g.correct}/{g.total} below {g.required}" for g in failed))
        if not judged:
            return SloCheck(slo="answers", outcome="inconclusive", n=len(answered),
                            reason="a sampling model without a min_pass_rate gate: nothing to hold under load")
        return SloCheck(slo="answers", outcome="pass", n=len(answered), reason="every gate held under load")
    compared = [r for r in answered if (r.item_id, r.arm) in baseline.answers]
    differing = [r for r in compared if r.answer != baseline.answers[(r.item_id, r.arm)]]
    n, k = len(compared), len(differing)
    if k:
        first = differing[0]
        return SloCheck(slo="answers", outcome="fail", observed=float(k), limit=0.0, n=n, beyond=k, reason=(
            f"{k} of {n} answers differ from concurrency 1, e.g. {first.item_id}|{first.arm}: "
            f"{_clip(first.answer)!r} instead of {_clip(baseline.answers[(first.item_id, first.arm)])!r}"))
    if n < min_answers:
        return SloCheck(slo="answers", outcome="inconclusive", observed=0.0, limit=0.0, n=n,
                        reason=f"{n} answers compared with concurrency 1; a pass needs {min_answers}")
    return SloCheck(slo="answers", outcome="pass", observed=0.0, limit=0.0, n=n,
                    reason=f"all {n} answers equal the concurrency-1 answers")


def _complete_check(answered: Sequence[PointRequest], baseline: Baseline, min_answers: int) -> SloCheck:
    checked = [r for r in answered if baseline.complete.get((r.item_id, r.arm)) and r.complete is not None]
    cut = [r for r in checked if not r.complete]
    n, k = len(checked), len(cut)
    if k:
        items = ", ".join(f"{r.item_id}|{r.arm}" for r in cut[:5])
        return SloCheck(slo="complete_outputs", outcome="fail", observed=float(k), limit=0.0, n=n, beyond=k,
                        reason=f"{k} of {n} answers incomplete under load, whole at concurrency 1 ({items})")
    if n < min_answers:
        return SloCheck(slo="complete_outputs", outcome="inconclusive", observed=0.0, limit=0.0, n=n,
                        reason=f"{n} answers checked whose concurrency-1 answer was whole; a pass needs {min_answers}")
    return SloCheck(slo="complete_outputs", outcome="pass", observed=0.0, limit=0.0, n=n,
                    reason=f"all {n} answers whole")


def _clip(text: str | None, limit: int = 60) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit - 1] + "…"


def worst(outcomes: Sequence[str]) -> str:
    """fail if any failed, else inconclusive if any could not decide, else pass."""
    return "fail" if "fail" in outcomes else "inconclusive" if "inconclusive" in outcomes else "pass"


def judge_point(requests: Sequence[PointRequest], slo: SloConfig, baseline: Baseline | None,
                criteria: CorrectnessCriteria) -> list[SloCheck]:
    """Every SLO [slo] sets, checked on one point's pooled profiling requests. The answers and completeness
    checks need the concurrency-1 baseline: without one (its own run failed) they are inconclusive.

    Method: a limit on a quantile q is a claim that at most a share 1-q of requests lies beyond it. With n requests of
    which k lie beyond, the point fails when k is too many for that share (binomial upper tail <= 1-confidence) and
    passes when k is too few to hide a larger share (lower tail <= 1-confidence); in between it is inconclusive and
    says how many requests a decision needs. Distribution-free (no shape of the latency distribution is assumed).
    Requests correlated in start order (a slow stretch, a burst of failures, drift) are worth fewer independent ones:
    both counts are shrunk by their design effect first (orchestrator/sweep/power.py). The error rate is the same test
    on failed requests. Answers are exact evidence: one answer under load differing from the concurrency-1 answer
    fails a deterministic model.
    """
    checks: list[SloCheck] = []
    # In start order: the correlation between neighbouring requests is what the tests discount.
    requests = sorted(requests, key=lambda r: r.start_ns if r.start_ns is not None else -1)
    latencies = [r.latency_ms for r in requests if r.ok and r.latency_ms is not None]
    model_calls = [r.model_call_ms for r in requests if r.ok and r.model_call_ms is not None]
    if slo.p99_latency_ms is not None:
        checks.append(quantile_check("p99_latency", latencies, 0.99, slo.p99_latency_ms, slo.confidence))
    if slo.p90_latency_ms is not None:
        checks.append(quantile_check("p90_latency", latencies, 0.90, slo.p90_latency_ms, slo.confidence))
    if slo.p99_model_call_ms is not None:
        checks.append(quantile_check("p99_model_call", model_calls, 0.99, slo.p99_model_call_ms, slo.confidence))
    # Requests cancelled by the client (a point stopped early) say nothing about the server.
    judged = [r for r in requests if r.cause != "cancelled"]
    causes: dict[str, int] = {}
    for r in judged:
        if not r.ok:
            causes[r.cause] = causes.get(r.cause, 0) + 1
    checks.append(rate_check(sum(not r.ok for r in judged), len(judged), slo.max_error_rate, slo.confidence,
                             failures_in_order=[not r.ok for r in judged], causes=causes))
    answered = [r for r in requests if r.ok]
    for wanted, name in ((slo.answers, "answers"), (slo.complete_outputs, "complete_outputs")):
        if not wanted:
            continue
        if baseline is None:
            checks.append(SloCheck(slo=name, outcome="inconclusive",  # type: ignore[arg-type]
                                   reason="no concurrency-1 answers to compare with (the baseline run failed)"))
        elif name == "answers":
            checks.append(_answers_check(answered, baseline, slo.min_answers, criteria))
        else:
            checks.append(_complete_check(answered, baseline, slo.min_answers))
    return checks


def _good(r: PointRequest, checks: Sequence[SloCheck], baseline: Baseline | None) -> bool:
    """A request that met every per-request SLO: answered, within each latency limit set (client and the
    model's own), its answer the concurrency-1 answer where one is known, and whole where that one was."""
    by = {c.slo: c.limit for c in checks if c.limit is not None}
    for slo, value in (("p99_latency", r.latency_ms), ("p90_latency", r.latency_ms),
                       ("p99_model_call", r.model_call_ms)):
        if slo in by and (value is None or value > by[slo]):
            return False
    if baseline is not None and "answers" in by and (r.item_id, r.arm) in baseline.answers \
            and r.answer != baseline.answers[(r.item_id, r.arm)]:
        return False
    return not ("complete_outputs" in by and baseline is not None
                and baseline.complete.get((r.item_id, r.arm)) and r.complete is False)


def point_stats(requests: Sequence[PointRequest], checks: Sequence[SloCheck], span_s: float | None,
                baseline: Baseline | None = None) -> PointStats:
    """A point's numbers: throughput over `span_s` (the profiling requests' first start to last end, summed
    over its runs), latency percentiles client and server apart, errors by cause, answers compared. Goodput
    counts only the requests that met every SLO and were answered correctly (`baseline`: the concurrency-1
    answers; without it, answers are not checked)."""
    ok = [r for r in requests if r.ok]
    causes: dict[str, int] = {}
    for r in requests:
        if not r.ok:
            causes[r.cause] = causes.get(r.cause, 0) + 1
    lat = [r.latency_ms for r in ok if r.latency_ms is not None]
    mc = [r.model_call_ms for r in ok if r.model_call_ms is not None]
    audio = sum(r.audio_s or 0.0 for r in ok)
    by = {c.slo: c for c in checks}
    good = [r for r in ok if _good(r, checks, baseline)]
    per_s = (lambda x: x / span_s) if span_s else (lambda x: None)
    return PointStats(
        requests=len(requests), ok=len(ok), errors_by_cause=causes,
        error_rate=(len(requests) - len(ok)) / len(requests) if requests else None,
        goodput_rps=per_s(len(good)), achieved_rps=per_s(len(requests)), audio_s_per_s=per_s(audio),
        real_time_factor=sum(mc) / 1000.0 / audio if audio and mc else None,
        latency_p50_ms=_nearest_rank(lat, 0.50), latency_p90_ms=_nearest_rank(lat, 0.90),
        latency_p99_ms=_nearest_rank(lat, 0.99), model_call_p50_ms=_nearest_rank(mc, 0.50),
        model_call_p99_ms=_nearest_rank(mc, 0.99),
        answers_compared=by["answers"].n if "answers" in by else 0,
        answers_differing=by["answers"].beyond if "answers" in by else 0,
        newly_incomplete=by["complete_outputs"].beyond if "complete_outputs" in by else 0,
        span_s=span_s)


def saturation_signs(requests: Sequence[PointRequest], *, offered_rps: float | None, share: float,
                     queueing_ratio: float) -> list[str]:
    """Signs that one run of a point saturated the server, said in words ([] when none):

    - open loop (`offered_rps` given): answers completed at a rate below the offered rate by more than
      `share` (completions from the first to the last end: a server that keeps up completes as fast as
      it is asked);
    - either loop: latency growing within the run, the median of its last third at least `queueing_ratio`
      times its first third's (by start time) and above that third's p90, the mark of a queue that builds.
    Needs at least 9 answered requests; fewer say nothing."""
    ok = sorted((r for r in requests if r.ok and r.start_ns is not None and r.end_ns is not None
                 and r.latency_ms is not None), key=lambda r: r.start_ns or 0)
    if len(ok) < 9:
        return []
    signs = []
    ends = sorted(r.end_ns or 0 for r in ok)
    if offered_rps is not None and ends[-1] > ends[0]:
        completed = (len(ends) - 1) / ((ends[-1] - ends[0]) / 1e9)
        if completed < offered_rps * (1.0 - share):
            signs.append(f"completed {figure(completed)} req/s of {offered_rps:g} offered "
                         f"({1 - completed / offered_rps:.0%} short, more than {share:.0%})")
    third = len(ok) // 3
    early = [r.latency_ms or 0.0 for r in ok[:third]]
    first = _nearest_rank(early, 0.5) or 0.0
    spread = _nearest_rank(early, 0.9) or 0.0
    last = _nearest_rank([r.latency_ms or 0.0 for r in ok[-third:]], 0.5) or 0.0
    # Beyond the first third's own spread too: a mix of fast and slow kinds of request is not a queue.
    if first > 0 and last >= queueing_ratio * first and last > spread:
        signs.append(f"latency grew within the run: median {first:.0f} ms in its first third, {last:.0f} ms "
                     f"in its last (queueing)")
    return signs

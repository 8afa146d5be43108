"""`aqbench ab`'s verdict from its journal: block-paired changes with paired intervals; pure fold, no writes."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np

from orchestrator.ab.blocks import SERIES, BlockSamples, Session, load_session
from orchestrator.ab.plan import MIN_PAIRS, pairs_of, t_quantile
from orchestrator.ab.power import noise_of
from orchestrator.ab.sequential import look_confidence
from orchestrator.compare.schema import Figure
from orchestrator.config import CompareConfig
from orchestrator.events import AbPhase
from orchestrator.judge.intervals import MIN_TAIL, RateChange, classify_change, rate_change, tail_share_change
from orchestrator.supervision.host_summary import HostCondition, summarize_host

__all__ = ["AbResult", "PairRow", "decide", "decide_session", "stop_reason"]

QUANTILES = (0.5, 0.9, 0.99)
TOO_FEW_REQUESTS = "too few requests a block"


class PairRow(msgspec.Struct, frozen=True, kw_only=True):
    """One pair of blocks: their indices and the model-call p90 of each (ms), for the report."""

    baseline_block: int
    candidate_block: int
    baseline_p90_ms: float | None
    candidate_p90_ms: float | None
    baseline_outside_cpus: float | None = None  # CPU other processes took while the block ran (HostSampled)
    candidate_outside_cpus: float | None = None


class AbResult(msgspec.Struct, frozen=True, kw_only=True):
    """ab.json: the verdict first, then the figures, the plan and the pairs."""

    outcome: Literal["no-regression", "regressed", "inconclusive"]
    exit_code: int
    reason: str
    journal: str
    run_id: str = ""
    status: str = ""
    plan: AbPhase | None = None
    stop_reason: str = ""
    pairs: list[PairRow] = []
    figures: list[Figure] = []
    strict: bool = False
    # The host while each side's blocks ran: a side that ran on a busier machine is named beside the figures.
    host_baseline: HostCondition | None = None
    host_candidate: HostCondition | None = None
    # Each p50 figure's own pair noise on the plan's scale (sd of pair log changes x sqrt(block requests)),
    # beside the noise the plan's power statement assumed (plan.power.noise).
    observed_noise: dict[str, float] = {}


def _by_item(block: BlockSamples, short: str) -> Mapping[Hashable, Sequence[float]]:
    out: dict[Hashable, list[float]] = {}
    for item, value in zip(block.items[short], block.values[short], strict=True):
        out.setdefault(item, []).append(value)
    return out


def _q(values: list[float], q: float) -> float | None:
    return float(np.quantile(np.asarray(values), q, method="inverted_cdf")) if values else None


def _block_q(session: Session, block: BlockSamples, short: str, q: float) -> float | None:
    """A block's quantile (memoised on the session, keyed by its length as _pair_share is: every look
    recomputes every earlier block's quantiles, most of a look's cost)."""
    key = (short, block.index, len(block.values[short]), q)
    if key not in session.quantiles:
        session.quantiles[key] = _q(block.values[short], q)
    return session.quantiles[key]


def _critical_t(plan: AbPhase | None, pairs: int, confidence: float) -> float | None:
    """The look's critical t from the journaled plan; a plan without looks (older journals) gets the
    fixed-size t, which is right only when nobody peeked."""
    if pairs < MIN_PAIRS:
        return None
    if plan is not None and plan.critical_t:
        return plan.critical_t[min(pairs, len(plan.critical_t) + MIN_PAIRS - 1) - MIN_PAIRS]
    return t_quantile(pairs, confidence)


def _paired_figure(key: str, name: str, changes: list[float], baseline: float | None, candidate: float | None,
                   cfg: CompareConfig, *, tolerance: float, relative: bool, unit: str, n: tuple[int, int],
                   plan: AbPhase | None) -> Figure:
    pairs = len(changes)
    t = _critical_t(plan, pairs, cfg.confidence)
    if t is None:
        return Figure(key=key, name=name, unit=unit, baseline=baseline, candidate=candidate, change="inconclusive",
                      relative=relative, tolerance=tolerance, confidence=cfg.confidence, n_baseline=n[0],
                      n_candidate=n[1], method="block-paired t", note=f"{pairs} pair(s): at least {MIN_PAIRS} needed")
    mean = float(np.mean(changes))
    se = float(np.std(changes, ddof=1)) / math.sqrt(pairs)
    # Both servers running for the whole session: every pair compares the same two server processes, so a
    # difference between them is in every pair alike and the pairing cannot cancel it. The interval widens by
    # the plan's instance allowance (in quadrature, as compare's drift floor), stated before the first block.
    allowance = _instance_allowance(plan, relative)
    half = math.hypot(t * se, allowance)
    lower, upper = mean - half, mean + half
    if relative:  # log ratios -> relative changes
        lower, upper = math.expm1(lower), math.expm1(upper)
    change = classify_change(lower, upper, tolerance)
    unit_word = "%" if relative else "pt"
    resolves = (math.expm1(half) if relative else half) + tolerance
    note = f"smallest change this session resolves: {resolves * 100:.1f} {unit_word}"
    if allowance:
        bare = classify_change(*((math.expm1(mean - t * se), math.expm1(mean + t * se)) if relative else
                                 (mean - t * se, mean + t * se)), tolerance)
        shown = math.expm1(allowance) if relative else allowance
        note += f"; instance allowance ±{shown * 100:.0f} {unit_word} (one server process a side all session)"
        if bare != change and bare in ("regressed", "improved"):
            note = (f"differs, not attributable: {bare} only within what two identically configured server "
                    f"processes differ by on this host (without --keep-servers every pair has fresh servers); ") + note
    return Figure(key=key, name=name, unit=unit, baseline=baseline, candidate=candidate, change=change, lower=lower,
                  upper=upper, relative=relative, tolerance=tolerance, confidence=cfg.confidence, n_baseline=n[0],
                  n_candidate=n[1], method=f"block-paired t over {pairs} pairs, t = {t:.2f}"
                  + (" (log ratio)" if relative else "") + (" + instance allowance" if allowance else ""),
                  note=note)


def _instance_allowance(plan: AbPhase | None, relative: bool) -> float:
    """The plan's instance allowance on the figure's scale (log ratio for latency quantiles, points for tail
    shares); 0 without one (--sequential, older journals)."""
    if plan is None:
        return 0.0
    return math.log1p(plan.instance_allowance) if relative else plan.instance_tail_allowance


def _pair_share(session: Session, a: BlockSamples, b: BlockSamples, short: str, seed: int) -> RateChange | None:
    """The pair's tail share change (memoised on the session: every look recomputes the earlier pairs)."""
    key = (short, a.index, b.index, len(a.values[short]), len(b.values[short]))
    if key not in session.memo:
        try:
            session.memo[key] = tail_share_change(_by_item(a, short), _by_item(b, short), resamples=200,
                                                  seed=seed)
        except ValueError:
            session.memo[key] = None  # no item in both blocks of this pair
    return session.memo[key]


def _series_figures(session: Session, pairs: list[tuple[BlockSamples, BlockSamples]], cfg: CompareConfig,
                    noise: dict[str, float]) -> list[Figure]:
    """The latency figures; fills `noise` with each p50 figure's pair noise on the plan's scale."""
    out: list[Figure] = []
    n = (sum(a.ok for a, _b in pairs), sum(b.ok for _a, b in pairs))
    for short, label, _attr in SERIES:
        usable = [(a, b) for a, b in pairs if a.values[short] and b.values[short]]
        for q in QUANTILES:
            key, name = f"latency.{short}.p{round(q * 100)}", f"{label} p{round(q * 100)} (block-paired)"
            # A block quantile needs MIN_TAIL requests beyond it (p90: 50 a block, p99: 500), as in compare.
            tail = round(min(q, 1.0 - q), 9)  # 1 - 0.9 is 0.0999...: 50 requests must hold 5 beyond p90
            short_blocks = [x for pair in usable for x in pair if len(x.values[short]) * tail < MIN_TAIL]
            if short_blocks:
                out.append(Figure(key=key, name=name, unit="ms", baseline=None, candidate=None, change="inconclusive",
                                  relative=True, tolerance=cfg.latency_tolerance, confidence=cfg.confidence,
                                  n_baseline=n[0], n_candidate=n[1], method="block-paired t",
                                  note=f"{TOO_FEW_REQUESTS} for p{round(q * 100)} (at least "
                                       f"{math.ceil(MIN_TAIL / tail)}: --block-requests)"))
                continue
            a_q = [_block_q(session, a, short, q) or 0.0 for a, _b in usable]
            b_q = [_block_q(session, b, short, q) or 0.0 for _a, b in usable]
            changes = [math.log(y / x) for x, y in zip(a_q, b_q, strict=True)]
            if q == 0.5 and session.plan is not None and (c := noise_of(changes, session.plan.block_requests)):
                noise[key] = round(c, 4)
            out.append(_paired_figure(key, name, changes, float(np.median(a_q)) if a_q else None,
                                      float(np.median(b_q)) if b_q else None, cfg, tolerance=cfg.latency_tolerance,
                                      relative=True, unit="ms", n=n, plan=session.plan))
        shares = [x for a, b in usable if (x := _pair_share(session, a, b, short, cfg.seed)) is not None]
        out.append(_paired_figure(f"latency.{short}.tail_share",
                                  f"{label}, share beyond the item's baseline p90 (block- and item-paired)",
                                  [x.difference for x in shares],
                                  float(np.mean([x.baseline or 0.0 for x in shares])) if shares else None,
                                  float(np.mean([x.candidate or 0.0 for x in shares])) if shares else None, cfg,
                                  tolerance=cfg.tail_tolerance, relative=False, unit="fraction", n=n,
                                  plan=session.plan))
    return out


def _errors(blocks: list[BlockSamples], cfg: CompareConfig, plan: AbPhase | None, pairs: int) -> Figure:
    """Pooled error rates, at the look's share of the error when the plan looks (else at [compare] confidence)."""
    a = [b for b in blocks if b.side == "A"]
    c = [b for b in blocks if b.side == "B"]
    issued_a, issued_b = sum(b.issued for b in a), sum(b.issued for b in c)
    t = _critical_t(plan, pairs, cfg.confidence) if plan is not None and plan.critical_t else None
    confidence = max(cfg.confidence, look_confidence(t, pairs)) if t is not None else cfg.confidence
    rc = rate_change(issued_a - sum(b.ok for b in a), issued_a, issued_b - sum(b.ok for b in c), issued_b,
                     confidence=confidence)
    change = classify_change(rc.lower, rc.upper, cfg.error_rate_tolerance, enough_samples=rc.enough_samples)
    return Figure(key="errors.all", name="error rate, all causes (pooled blocks)", unit="fraction",
                  baseline=rc.baseline, candidate=rc.candidate, change=change, lower=rc.lower, upper=rc.upper,
                  tolerance=cfg.error_rate_tolerance, confidence=confidence, n_baseline=issued_a,
                  n_candidate=issued_b, method=rc.method, note="" if rc.enough_samples else "too few samples")


def _correctness(blocks: list[BlockSamples], cfg: CompareConfig, plan: AbPhase | None, pairs: int) -> list[Figure]:
    """Per arm, the share of answers correct (checked against the dataset as qualify checks them), pooled over
    each side's blocks, at the look's share of the error; lower is worse. None when no answer was judged."""
    t = _critical_t(plan, pairs, cfg.confidence) if plan is not None and plan.critical_t else None
    confidence = max(cfg.confidence, look_confidence(t, pairs)) if t is not None else cfg.confidence
    out: list[Figure] = []
    for arm in sorted({arm for b in blocks for arm in b.verdicts}):
        counts = {side: [sum(b.verdicts.get(arm, {}).get("correct", 0) for b in blocks if b.side == side),
                         sum(sum(b.verdicts.get(arm, {}).values()) for b in blocks if b.side == side)]
                  for side in "AB"}
        if not counts["A"][1] or not counts["B"][1]:
            continue
        rc = rate_change(counts["A"][0], counts["A"][1], counts["B"][0], counts["B"][1], confidence=confidence)
        change = classify_change(rc.lower, rc.upper, cfg.correctness_tolerance, higher_is_worse=False,
                                 enough_samples=rc.enough_samples)
        out.append(Figure(key=f"correctness.{arm}", name=f"answers correct, {arm} arm (pooled blocks)",
                          unit="fraction", baseline=rc.baseline, candidate=rc.candidate, change=change,
                          lower=rc.lower, upper=rc.upper, tolerance=cfg.correctness_tolerance, confidence=confidence,
                          n_baseline=counts["A"][1], n_candidate=counts["B"][1], method=rc.method,
                          note="" if rc.enough_samples else "too few samples"))
    return out


def _outside(block: BlockSamples) -> float | None:
    c = summarize_host(block.host)
    return c.outside_cpus if c is not None else None


def decidable(f: Figure) -> bool:
    """Whether more pairs of this plan could decide the figure (a p99 of 40-request blocks never can)."""
    return not f.note.startswith(TOO_FEW_REQUESTS) and f.note != "too few samples"


def stop_reason(result: AbResult) -> str | None:
    """Why the session may stop after this look, or None: a figure regressed (the exit code is decided; a
    real session's pooled error and answer rates, with no error at all, need more requests than a short
    session sends to read `unchanged`), or every figure that more pairs could decide is decided. The
    repeated intervals keep the error rates at any stop."""
    looked = [f for f in result.figures if decidable(f)]
    if not result.pairs or len(result.pairs) < MIN_PAIRS or not looked:
        return None
    if regressed := [f.name for f in looked if f.change == "regressed"]:
        return f"{len(regressed)} figure(s) regressed after {len(result.pairs)} pairs"
    if any(f.change == "inconclusive" for f in looked):
        return None
    return f"every figure decided after {len(result.pairs)} pairs"


def decide(journal: Path, cfg: CompareConfig | None = None, *, strict: bool | None = None) -> AbResult:
    """Fold an `ab` journal into its verdict (blocks: reads the journal; CPU light). By default with the
    journaled [compare] and --strict, so that `aqbench report` rebuilds what the session wrote."""
    session = load_session(journal)
    if strict is None:
        strict = session.plan.strict if session.plan is not None else False
    return decide_session(session, cfg or session.compare or CompareConfig(), strict=strict)


def decide_session(session: Session, cfg: CompareConfig, *, strict: bool = False,
                   upto_pairs: int | None = None) -> AbResult:
    """The verdict over the session's complete pairs (the first `upto_pairs` of them, when given: a look).

    Method: blocks are paired (one A, one B, back to back; plan.py). Per pair and latency series the change is
    log(candidate block quantile / baseline block quantile) for p50, p90 and p99, and the tail share (candidate
    requests beyond their item's p90 in the baseline block, less the share an unchanged server leaves there: the same
    statistic as `compare`, judge/intervals.py), so items pair within the pair. The pairs' mean gets a Student t
    interval (pairs - 1 degrees of freedom) at [compare] confidence: a drift slower than a pair moves both blocks of a
    pair alike and leaves the pair's change, and the balanced order cancels linear drift in the mean. Assumes pair
    changes independent across pairs (blocks a pair apart in time share no more than drift). Classified against the
    [compare] tolerances; errors pooled over all blocks (Newcombe: drift touches both sides alike).
    """
    journal = session.journal
    order = session.plan.order if session.plan else ""
    pairs = [(session.blocks[i], session.blocks[j]) for i, j in pairs_of(order)
             if i in session.blocks and j in session.blocks][:upto_pairs]
    blocks = [x for pair in pairs for x in pair]
    noise: dict[str, float] = {}
    figures = _series_figures(session, pairs, cfg, noise) + [_errors(blocks, cfg, session.plan, len(pairs))] + \
        _correctness(blocks, cfg, session.plan, len(pairs))
    rows = [PairRow(baseline_block=a.index, candidate_block=b.index, baseline_p90_ms=_block_q(session, a, "model_call", 0.9),
                    candidate_p90_ms=_block_q(session, b, "model_call", 0.9), baseline_outside_cpus=_outside(a),
                    candidate_outside_cpus=_outside(b)) for a, b in pairs]
    regressed = [f.name for f in figures if f.change == "regressed"]
    inconclusive = [f.name for f in figures if f.change == "inconclusive"]
    stop = session.finished.stop_reason if session.finished else "the session did not finish"

    def result(outcome: Literal["no-regression", "regressed", "inconclusive"], code: int, reason: str) -> AbResult:
        return AbResult(outcome=outcome, exit_code=code, reason=reason, journal=str(journal), run_id=session.run_id,
                        status=session.status, plan=session.plan, stop_reason=stop, pairs=rows, figures=figures,
                        strict=strict, host_baseline=summarize_host([s for a, _b in pairs for s in a.host]),
                        host_candidate=summarize_host([s for _a, b in pairs for s in b.host]), observed_noise=noise)

    if regressed:
        return result("regressed", 1, f"{len(regressed)} figure(s) worse beyond tolerance: " + "; ".join(regressed))
    if inconclusive:
        return result("inconclusive", 1 if strict else 0, f"no regression; {len(inconclusive)} figure(s) inconclusive"
                      + (" (--strict: exit 1)" if strict else ""))
    return result("no-regression", 0, "no regression; every figure unchanged or improved")

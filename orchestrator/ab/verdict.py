"""`aqbench ab`'s verdict from its journal: block-paired changes with paired intervals; pure fold, no writes.

Method: blocks are paired (one A, one B, back to back; plan.py). Per pair and latency series the change
is log(candidate block quantile / baseline block quantile) for p50, p90 and p99, and the tail share
(candidate requests beyond their item's p90 in the baseline block, less the share an unchanged server
leaves there: the same statistic as `compare`, judge/intervals.py), so items pair within the pair. The
pairs' mean gets a Student t interval (pairs - 1 degrees of freedom) at [compare] confidence: a drift
slower than a pair moves both blocks of a pair alike and leaves the pair's change, and the balanced
order cancels linear drift in the mean. Assumes pair changes independent across pairs (blocks a pair
apart in time share no more than drift). Classified against the [compare] tolerances; errors pooled
over all blocks (Newcombe: drift touches both sides alike).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np

from orchestrator.ab.blocks import SERIES, BlockSamples, Session, load_session
from orchestrator.ab.plan import MIN_PAIRS, pairs_of, t_quantile
from orchestrator.compare.schema import Figure
from orchestrator.config import CompareConfig
from orchestrator.events import AbPhase
from orchestrator.judge.intervals import MIN_TAIL, classify_change, rate_change, tail_share_change

__all__ = ["AbResult", "PairRow", "decide"]

QUANTILES = (0.5, 0.9, 0.99)


class PairRow(msgspec.Struct, frozen=True, kw_only=True):
    """One pair of blocks: their indices and the model-call p90 of each (ms), for the report."""

    baseline_block: int
    candidate_block: int
    baseline_p90_ms: float | None
    candidate_p90_ms: float | None


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


def _by_item(block: BlockSamples, short: str) -> Mapping[Hashable, Sequence[float]]:
    out: dict[Hashable, list[float]] = {}
    for item, value in zip(block.items[short], block.values[short], strict=True):
        out.setdefault(item, []).append(value)
    return out


def _q(values: list[float], q: float) -> float | None:
    return float(np.quantile(np.asarray(values), q, method="inverted_cdf")) if values else None


def _paired_figure(key: str, name: str, changes: list[float], baseline: float | None, candidate: float | None,
                   cfg: CompareConfig, *, tolerance: float, relative: bool, unit: str, n: tuple[int, int]) -> Figure:
    pairs = len(changes)
    t = t_quantile(pairs, cfg.confidence)
    if t is None:
        return Figure(key=key, name=name, unit=unit, baseline=baseline, candidate=candidate, change="inconclusive",
                      relative=relative, tolerance=tolerance, confidence=cfg.confidence, n_baseline=n[0],
                      n_candidate=n[1], method="block-paired t", note=f"{pairs} pair(s): at least {MIN_PAIRS} needed")
    mean = float(np.mean(changes))
    se = float(np.std(changes, ddof=1)) / math.sqrt(pairs)
    lower, upper = mean - t * se, mean + t * se
    if relative:  # log ratios -> relative changes
        lower, upper = math.expm1(lower), math.expm1(upper)
    change = classify_change(lower, upper, tolerance)
    resolves = (math.expm1(t * se) if relative else t * se) + tolerance
    return Figure(key=key, name=name, unit=unit, baseline=baseline, candidate=candidate, change=change, lower=lower,
                  upper=upper, relative=relative, tolerance=tolerance, confidence=cfg.confidence, n_baseline=n[0],
                  n_candidate=n[1], method=f"block-paired t over {pairs} pairs" + (" (log ratio)" if relative else ""),
                  note=f"smallest change this session resolves: {resolves * 100:.1f} {'%' if relative else 'pt'}")


def _series_figures(session: Session, pairs: list[tuple[BlockSamples, BlockSamples]], cfg: CompareConfig) -> list[Figure]:
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
                                  note=f"too few requests a block for p{round(q * 100)} (at least "
                                       f"{math.ceil(MIN_TAIL / tail)}: --block-requests)"))
                continue
            a_q = [_q(a.values[short], q) or 0.0 for a, _b in usable]
            b_q = [_q(b.values[short], q) or 0.0 for _a, b in usable]
            changes = [math.log(y / x) for x, y in zip(a_q, b_q, strict=True)]
            out.append(_paired_figure(key, name, changes, float(np.median(a_q)) if a_q else None,
                                      float(np.median(b_q)) if b_q else None, cfg, tolerance=cfg.latency_tolerance,
                                      relative=True, unit="ms", n=n))
        shares = []
        for a, b in usable:
            try:
                shares.append(tail_share_change(_by_item(a, short), _by_item(b, short), resamples=200, seed=cfg.seed))
            except ValueError:
                continue  # no item in both blocks of this pair
        out.append(_paired_figure(f"latency.{short}.tail_share",
                                  f"{label}, share beyond the item's baseline p90 (block- and item-paired)",
                                  [s.difference for s in shares],
                                  float(np.mean([s.baseline or 0.0 for s in shares])) if shares else None,
                                  float(np.mean([s.candidate or 0.0 for s in shares])) if shares else None, cfg,
                                  tolerance=cfg.tail_tolerance, relative=False, unit="fraction", n=n))
    return out


def _errors(blocks: list[BlockSamples], cfg: CompareConfig) -> Figure:
    a = [b for b in blocks if b.side == "A"]
    c = [b for b in blocks if b.side == "B"]
    issued_a, issued_b = sum(b.issued for b in a), sum(b.issued for b in c)
    rc = rate_change(issued_a - sum(b.ok for b in a), issued_a, issued_b - sum(b.ok for b in c), issued_b,
                     confidence=cfg.confidence)
    change = classify_change(rc.lower, rc.upper, cfg.error_rate_tolerance, enough_samples=rc.enough_samples)
    return Figure(key="errors.all", name="error rate, all causes (pooled blocks)", unit="fraction",
                  baseline=rc.baseline, candidate=rc.candidate, change=change, lower=rc.lower, upper=rc.upper,
                  tolerance=cfg.error_rate_tolerance, confidence=cfg.confidence, n_baseline=issued_a,
                  n_candidate=issued_b, method=rc.method, note="" if rc.enough_samples else "too few samples")


def decide(journal: Path, cfg: CompareConfig, *, strict: bool = False) -> AbResult:
    """Fold an `ab` journal into its verdict (blocks: reads the journal; CPU light)."""
    session = load_session(journal)
    order = session.plan.order if session.plan else ""
    pairs = [(session.blocks[i], session.blocks[j]) for i, j in pairs_of(order)
             if i in session.blocks and j in session.blocks]
    figures = _series_figures(session, pairs, cfg) + [_errors(list(session.blocks.values()), cfg)]
    rows = [PairRow(baseline_block=a.index, candidate_block=b.index, baseline_p90_ms=_q(a.values["model_call"], 0.9),
                    candidate_p90_ms=_q(b.values["model_call"], 0.9)) for a, b in pairs]
    regressed = [f.name for f in figures if f.change == "regressed"]
    inconclusive = [f.name for f in figures if f.change == "inconclusive"]
    stop = session.finished.stop_reason if session.finished else "the session did not finish"

    def result(outcome: Literal["no-regression", "regressed", "inconclusive"], code: int, reason: str) -> AbResult:
        return AbResult(outcome=outcome, exit_code=code, reason=reason, journal=str(journal), run_id=session.run_id,
                        status=session.status, plan=session.plan, stop_reason=stop, pairs=rows, figures=figures,
                        strict=strict)

    if regressed:
        return result("regressed", 1, f"{len(regressed)} figure(s) worse beyond tolerance: " + "; ".join(regressed))
    if inconclusive:
        return result("inconclusive", 1 if strict else 0, f"no regression; {len(inconclusive)} figure(s) inconclusive"
                      + (" (--strict: exit 1)" if strict else ""))
    return result("no-regression", 0, "no regression; every figure unchanged or improved")

"""A model against its reference on paired answers: which gate applies, how answers pair, the decision.
Pure: no I/O. Pairs by (item, arm); the statistics are judge/noninferiority.py's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from orchestrator.config import NoninferiorityCriteria
from orchestrator.events import GateCitation, NoninferiorityResult
from orchestrator.judge.noninferiority import (
    NOT_COMPARABLE,
    Decision,
    Margin,
    decide_binary,
    decide_sampled,
    pair_counts,
)

__all__ = ["ChosenGate", "Judged", "choose_gate", "capacity_rejection", "decide_paired", "is_quantized"]

# Precisions a checkpoint is trained and shipped at; anything else (int8, fp8, nvfp4, int4, w4a16...) is
# a quantization, held to `quantized_gate` where one is given.
_FULL_PRECISIONS = {"", "fp32", "float32", "fp16", "float16", "half", "bf16", "bfloat16", "auto"}
# trtmc-server's wording when an input exceeds the bundle's shipped capacity (our reading of TRTMC
# apps/aiperf_qual/DESIGN.md 2).
_CAPACITY_RE = re.compile(r"exceeds? (the )?(prefill profile|model's fixed kv cache|.*capacity|.*max(imum)? "
                          r"(input|prompt|sequence|audio))|too long for the (bundle|engine)|max-audio-seconds",
                          re.IGNORECASE)
_MAX_MESSAGES = 5


class Judged(msgspec.Struct, frozen=True, kw_only=True):
    """One answer's verdict (VerdictReached's); `capacity` holds the model's message when it rejected the
    input as beyond its capacity (then the verdict is `error`)."""

    verdict: str
    capacity: str = ""


class ChosenGate(msgspec.Struct, frozen=True, kw_only=True):
    """The margin that applies to this model, with the key it was chosen by and where it was read."""

    margin: float
    relative_margin: float = 0.0
    min_native: float | None = None
    key: str = "gate"
    source: str = ""
    citations: list[GateCitation] = []
    seeds: int = 1


def is_quantized(precision: str) -> bool:
    """True for a quantized precision (int8, fp8, nvfp4, ...), False for fp32/fp16/bf16 or none stated."""
    return precision.strip().lower() not in _FULL_PRECISIONS


def capacity_rejection(status: int, body: str) -> str:
    """The model's message when an HTTP reply rejects the input as beyond capacity (422
    `backend_rejected_request`, or a 400/413 naming a length or capacity limit); "" otherwise."""
    if status not in (400, 413, 422) or not body:
        return ""
    if status == 422 and "backend_rejected_request" in body:
        return body[:300]
    return body[:300] if _CAPACITY_RE.search(body) else ""


def choose_gate(ni: NoninferiorityCriteria, *, quantized: bool, sampled: bool, where: str,
                citation: GateCitation) -> ChosenGate:
    """bench.toml's gate for this candidate: `sampled_gate` for a sampling one, else `quantized_gate` for a
    quantized one, else the plain margin (a missing special gate falls back to it, as the owners do)."""
    key, gate = "gate", (ni.margin, ni.relative_margin)
    if sampled and ni.sampled_gate is not None:
        key, gate = "sampled_gate", (ni.sampled_gate.margin, ni.sampled_gate.relative_margin)
    elif not sampled and quantized and ni.quantized_gate is not None:
        key, gate = "quantized_gate", (ni.quantized_gate.margin, ni.quantized_gate.relative_margin)
    suffix = "" if key == "gate" else f".{key}"
    return ChosenGate(margin=gate[0], relative_margin=gate[1], min_native=ni.min_native, key=key,
                      source=f"{where}{suffix}", citations=[msgspec.structs.replace(citation, entry=citation.entry + suffix)],
                      seeds=ni.seeds if sampled else 1)


def decide_paired(reference: Mapping[tuple[str, str], Sequence[Judged]],
                  candidate: Mapping[tuple[str, str], Sequence[Judged]], gate: ChosenGate, *, arms: Sequence[str],
                  sampled: bool, quantized: bool, candidate_precision: str = "",
                  reference_precision: str = "") -> NoninferiorityResult:
    """Pair every (item, arm) of `arms` the reference answered with the model's answers and decide.

    Right/wrong pairs (one answer a side) use Tango's score test; a sampling model's seeds use per-problem
    means and Student-t bounds. Raises ValueError for a margin outside (0, 100) points.

    Mirrors the owners' rules (TRTMC apps/aiperf_qual/DESIGN.md 2 and 4): an input the model rejects as beyond its
    capacity leaves the comparison on both sides and is counted; any other problem the reference answered and the
    model did not is the model's wrong answer; an incomplete answer is wrong.
    """
    ref_scores: list[list[float]] = []
    cand_scores: list[list[float]] = []
    out_of_capacity, failures, incomplete, unanswered = 0, 0, 0, 0
    messages: list[str] = []
    for key, ref in reference.items():
        if key[1] not in arms:
            continue
        answered = [j for j in ref if j.verdict != "error"]
        if not answered:
            unanswered += 1
            continue
        cand = list(candidate.get(key, ()))
        rejected = next((j.capacity for j in cand if j.capacity), "")
        if rejected:
            out_of_capacity += 1
            if rejected not in messages and len(messages) < _MAX_MESSAGES:
                messages.append(rejected)
            continue
        if not cand:
            cand = [Judged(verdict="error")]
        failures += sum(j.verdict == "error" for j in cand)
        incomplete += sum(j.verdict == "incomplete" for j in cand)
        ref_scores.append([100.0 * (j.verdict == "correct") for j in answered])
        cand_scores.append([100.0 * (j.verdict == "correct") for j in cand])
    margin = Margin(margin=gate.margin, relative_margin=gate.relative_margin)
    if sampled:
        decision = decide_sampled(ref_scores, cand_scores, margin)
    else:
        decision = decide_binary(pair_counts((r[0] > 0 for r in ref_scores), (c[0] > 0 for c in cand_scores)), margin)
    if gate.min_native is not None and decision.reference_score < gate.min_native:
        decision = msgspec.structs.replace(decision, outcome=NOT_COMPARABLE, reason=(
            f"the reference scores {decision.reference_score:.2f} points, below min_native {gate.min_native:g}: "
            f"the benchmark does not discriminate for this model"))
    return _result(decision, gate, ref_scores, cand_scores, arms=arms, sampled=sampled, quantized=quantized,
                   out_of_capacity=out_of_capacity, messages=messages, failures=failures, incomplete=incomplete,
                   unanswered=unanswered, candidate_precision=candidate_precision,
                   reference_precision=reference_precision)


def _result(d: Decision, gate: ChosenGate, ref: list[list[float]], cand: list[list[float]], *, arms: Sequence[str],
            sampled: bool, quantized: bool, out_of_capacity: int, messages: list[str], failures: int, incomplete: int,
            unanswered: int, candidate_precision: str, reference_precision: str) -> NoninferiorityResult:
    both_right = sum(r[0] > 0 and c[0] > 0 for r, c in zip(ref, cand, strict=True)) if not sampled else 0
    both_wrong = sum(r[0] == 0 and c[0] == 0 for r, c in zip(ref, cand, strict=True)) if not sampled else 0
    reason = d.reason
    if out_of_capacity:
        reason = "; ".join(x for x in (reason, f"{out_of_capacity} problems the model rejected as beyond its "
                                       f"capacity left the comparison on both sides") if x)
    if unanswered:
        reason = "; ".join(x for x in (reason, f"{unanswered} problems the reference did not answer left the "
                                       f"comparison") if x)
    return NoninferiorityResult(
        outcome=d.outcome, method=d.method, reference_score=d.reference_score, candidate_score=d.candidate_score,
        estimate=d.estimate, lower=d.lower, upper=d.upper, margin=d.margin or None, gate_used=gate.key,
        margin_source=gate.source, citations=list(gate.citations), b=d.b, c=d.c, n=d.n, both_right=both_right,
        both_wrong=both_wrong, out_of_capacity=out_of_capacity, capacity_messages=messages,
        candidate_failures=failures, candidate_incomplete=incomplete, reference_unanswered=unanswered,
        items_needed=d.items_needed, cutoff=d.cutoff, arms=list(arms), quantized=quantized, sampled=sampled,
        seeds=max((len(c) for c in cand), default=1), candidate_precision=candidate_precision,
        reference_precision=reference_precision, reason=reason,
        fail_from_b=d.detectable.fail_from_b if d.detectable else None,
        detectable_regression=d.detectable.observed if d.detectable else None,
        detectable_power_regression=d.detectable.power_regression if d.detectable else None)

"""Correctness gates from bench.toml, applied exactly as stated: never lowered, never rounded. A gate over
no answers (a kind a stage never asked) is not applicable: it neither passes nor fails, and says so."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import msgspec

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import GateResult

__all__ = ["GateResult", "evaluate_gates", "not_applicable", "ScoredAnswer"]


class ScoredAnswer(msgspec.Struct, frozen=True, kw_only=True):
    item_id: str
    arm: str
    kind: str
    verdict: str


# correct / total >= required, compared in exact rational arithmetic on the decimal the user wrote (0.9
# means nine tenths, not the nearest binary float).
def _passes(correct: int, total: int, required: float) -> bool:
    if total == 0:
        return False
    return Fraction(correct, total) >= Fraction(repr(required))


def evaluate_gates(criteria: CorrectnessCriteria, answers: Sequence[ScoredAnswer]) -> list[GateResult]:
    """The overall gate on the criteria's arm, then one gate per kind named in min_pass_rate_by_kind;
    none where no min_pass_rate is set (a model judged only against its reference)."""
    if criteria.min_pass_rate is None:
        return []
    on_arm = [a for a in answers if a.arm == criteria.arm]
    results = [_gate("min_pass_rate", f"arm:{criteria.arm}", criteria.min_pass_rate, on_arm)]
    for kind, required in sorted(criteria.min_pass_rate_by_kind.items()):
        results.append(_gate("min_pass_rate_by_kind", f"kind:{kind}", required, [a for a in on_arm if a.kind == kind]))
    return results


def _gate(gate: str, scope: str, required: float, answers: Sequence[ScoredAnswer]) -> GateResult:
    correct = sum(a.verdict == "correct" for a in answers)
    total = len(answers)
    return GateResult(gate=gate, scope=scope, required=required, observed=correct / total if total else 0.0,
                      correct=correct, total=total, passed=_passes(correct, total, required),
                      failing_items=list(dict.fromkeys(a.item_id for a in answers if a.verdict != "correct")),
                      applicable=total > 0)


def not_applicable(gates: Sequence[GateResult]) -> str:
    """`not applicable (no answers): kind:count, kind:pitch`, or "" when every gate judged something."""
    scopes = [g.scope for g in gates if not g.applicable]
    return f"not applicable (no answers): {', '.join(scopes)}" if scopes else ""

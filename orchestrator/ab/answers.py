"""`aqbench ab`'s answers: every profiling answer of a block checked against the dataset through qualify's
AnswerBook (the same judging, the same VerdictReached and AnswerIncomplete events, source `ab`)."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.dataset import ArmRequest
from orchestrator.events import RequestCorrelated
from orchestrator.qualify.answers import AnswerBook, answered_load

__all__ = ["judge_answers"]


async def judge_answers(book: AnswerBook, rows: Sequence[ArmRequest], requests: Sequence[RequestCorrelated]) -> str:
    """Judge the block's answered profiling requests; returns `N correct of M` (or what could not be judged)."""
    by_key: dict[tuple[str, str], ArmRequest] = {(r.item_id, r.arm): r for r in rows}
    counts: dict[str, int] = {}
    unmapped = 0
    for c in requests:
        if c.phase != "profiling" or not c.ok:
            continue
        req = by_key.get((c.item_id or "", c.arm or ""))
        if req is None:
            unmapped += 1  # a conversation that maps to no dataset row: named, never judged
            continue
        verdict, _completeness = await book.verdict(req, answered_load(c), "aiperf")
        counts[verdict] = counts.get(verdict, 0) + 1
    total = sum(counts.values())
    extra = "".join(f", {n} {v}" for v, n in sorted(counts.items()) if v != "correct")
    return f"{counts.get('correct', 0)} of {total} answers correct{extra}" + (
        f", {unmapped} unmapped to the dataset" if unmapped else "")

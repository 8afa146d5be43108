"""The verdict of one answered request: its completeness first, then its score against the item. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from orchestrator.judge.completeness import Completeness, check_completeness
from orchestrator.judge.scoring import score

if TYPE_CHECKING:
    from orchestrator.dataset import Item

__all__ = ["AnswerJudgement", "judge_answer"]


class AnswerJudgement(msgspec.Struct, frozen=True, kw_only=True):
    """`verdict` is correct / wrong / unparsed, or incomplete when `completeness` names a defect."""

    verdict: str
    detail: str
    completeness: Completeness


# An incomplete answer is never counted right: its verdict is `incomplete`, whatever the scorer would have
# said (a lenient scorer reads the first number or option it finds, even in a truncated or echoed answer);
# what the scorer said is kept in the detail.
def judge_answer(answer: str | None, item: Item, *, question: str, finish_reason: str | None = None,
                 completion_tokens: int | None = None, max_tokens: int | None = None) -> AnswerJudgement:
    """Judge the answer of a request that was answered (HTTP 200 / native ok); None is a null message."""
    completeness = check_completeness(answer, question, finish_reason=finish_reason,
                                      completion_tokens=completion_tokens, max_tokens=max_tokens)
    if answer is None:
        return AnswerJudgement(verdict="incomplete", detail=f"incomplete: {completeness.describe()}",
                               completeness=completeness)
    result = score(answer, item)
    if completeness.complete:
        return AnswerJudgement(verdict=result.verdict, detail=result.detail, completeness=completeness)
    return AnswerJudgement(verdict="incomplete",
                           detail=f"incomplete: {completeness.describe()}; the scorer alone would say "
                                  f"{result.verdict} ({result.detail})",
                           completeness=completeness)

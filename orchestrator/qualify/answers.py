"""Qualify's answers into the journal: each answered request's completeness, then its verdict.
Every path goes through here (capability probe, HTTP and native correctness arms, AIPerf under load), so
a defect is named and journaled the same way wherever the answer came from."""

from __future__ import annotations

import msgspec

from orchestrator.config import ModelConfig
from orchestrator.dataset import ArmRequest, Dataset
from orchestrator.events import (
    AnswerIncomplete,
    CompletenessChange,
    IncompleteAnswer,
    RequestCorrelated,
    VerdictReached,
)
from orchestrator.judge.answers import judge_answer
from orchestrator.judge.completeness import Completeness, check_completeness
from orchestrator.spine.ports import ChatAnswer, EventSink

__all__ = ["Answered", "AnswerBook", "ANSWER_EXCERPT_CHARS", "answered_http", "answered_load", "incomplete_entry", "incomplete_reason"]

_PATHS = ("capability", "http", "native", "aiperf", "reference")
ANSWER_EXCERPT_CHARS = 500  # of a defective answer in AnswerIncomplete (a degenerate one can be huge)


class Answered(msgspec.Struct, frozen=True, kw_only=True):
    """What one request got back, whatever the path: `answered` is HTTP 200 / native ok / load ok."""

    request_id: str
    answered: bool
    text: str | None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    error: str = ""


def answered_http(reply: ChatAnswer) -> Answered:
    """An HTTP reply (ports.ChatAnswer) as the book takes it; 200 is answered."""
    ok = reply.status == 200
    return Answered(request_id=reply.request_id, answered=ok, text=reply.text, finish_reason=reply.finish_reason,
                    completion_tokens=reply.completion_tokens,
                    error="" if ok else f"HTTP {reply.status or reply.error}: {reply.body[:300]}")


def answered_load(c: RequestCorrelated) -> Answered:
    """A correlated load request (ok) as the book takes it. The text comes from the live tap and the
    count from the server record; AIPerf keeps no finish_reason, so truncation is told by the count
    against the limit AIPerf sent. No text with a count of 0 is an empty answer (the tap records no
    text for an empty message); no text otherwise was not observed, which is an error, not a defect."""
    text = c.answer if c.answer is not None or c.completion_tokens != 0 else ""
    return Answered(request_id=c.request_id, answered=text is not None, text=text,
                    completion_tokens=c.completion_tokens, error="the answer text was not observed (live tap)")


def incomplete_entry(req: ArmRequest, path: str, request_id: str, verdict: str,
                     completeness: Completeness) -> IncompleteAnswer:
    """One incomplete answer as a stage lists it in its PhaseFinished detail, beside its verdict."""
    return IncompleteAnswer(item_id=req.item_id, arm=req.arm, path=path, request_id=request_id, verdict=verdict,
                            defects=list(completeness.defects))


def incomplete_reason(entries: list[IncompleteAnswer], shown: int = 12, note: str = "") -> str:
    """`N incomplete answers<note> (defect: count, ...): item|arm via path (defects), ...`."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.defects[0]] = counts.get(e.defects[0], 0) + 1
    items = ", ".join(f"{e.item_id}|{e.arm} via {e.path} ({', '.join(e.defects)})" for e in entries[:shown])
    more = f" and {len(entries) - shown} more" if len(entries) > shown else ""
    return (f"{len(entries)} incomplete answers{note} ({', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))}): "
            f"{items}{more}")


class AnswerBook:
    """Judges and journals one model's answers; `max_tokens` is the limit its requests asked for."""

    def __init__(self, bus: EventSink, model: ModelConfig, dataset: Dataset, max_tokens: int | None,
                 *, source: str = "qualify") -> None:
        self.bus = bus
        self.source = source  # the command journaling the answers (ab judges its blocks' answers here too)
        self.model = model
        self.dataset = dataset
        self.max_tokens = max_tokens
        # path -> (item_id, arm) -> defects of its latest answered request ([] = complete).
        self.defects: dict[str, dict[tuple[str, str], list[str]]] = {p: {} for p in _PATHS}
        self.checked: dict[str, int] = dict.fromkeys(_PATHS, 0)  # answered requests checked, per path

    async def probe(self, req: ArmRequest, got: Answered) -> Completeness | None:
        """The completeness of a capability probe's answer (None when it was not answered)."""
        if not got.answered:
            return None
        # The item's question, not the arm's prompt: the transcript arm's prompt quotes the transcript,
        # which a what-was-said answer rightly repeats.
        question = self.dataset.item(req.item_id).question
        completeness = check_completeness(got.text, question, finish_reason=got.finish_reason,
                                          completion_tokens=got.completion_tokens, max_tokens=self.max_tokens)
        self.defects["capability"][(req.item_id, req.arm)] = list(completeness.defects)
        self.checked["capability"] += 1
        await self._incomplete("capability", req, got, completeness)
        return completeness

    async def verdict(self, req: ArmRequest, got: Answered, path: str) -> tuple[str, Completeness | None]:
        """Score one correctness or load answer and journal it: AnswerIncomplete when it has a defect,
        then its VerdictReached. Returns the verdict and the completeness (None when not answered)."""
        item = self.dataset.item(req.item_id)
        criteria = self.model.correctness
        if criteria.scorer != "dataset":
            item = msgspec.structs.replace(item, scoring=criteria.scorer)
        completeness: Completeness | None = None
        if not got.answered:
            verdict, detail = "error", got.error or "no answer"
        else:
            judged = judge_answer(got.text, item, question=item.question, finish_reason=got.finish_reason,
                                  completion_tokens=got.completion_tokens, max_tokens=self.max_tokens)
            verdict, detail, completeness = judged.verdict, judged.detail, judged.completeness
            self.defects[path][(req.item_id, req.arm)] = list(completeness.defects)
            self.checked[path] += 1
            await self._incomplete(path, req, got, completeness)
        await self.bus.publish(VerdictReached(
            source=self.source, model=self.model.name, item_id=req.item_id, arm=req.arm, path=path,  # type: ignore[arg-type]
            verdict=verdict, answer=got.text, gold=item.answer, item_kind=item.kind,  # type: ignore[arg-type]
            scoring=item.scoring, request_id=got.request_id, detail=detail))
        return verdict, completeness

    def change(self, before: str, req: ArmRequest, request_id: str,
               now: Completeness | None) -> CompletenessChange | None:
        """Where an answer under load (`now`) is whole differently from the same item's answer on path
        `before`: the request and both defect lists; None when they agree or either was not answered."""
        old = self.defects[before].get((req.item_id, req.arm))
        if old is None or now is None or old == list(now.defects):
            return None
        return CompletenessChange(request_id=request_id, item_id=req.item_id, arm=req.arm,
                                  under_load=list(now.defects), correctness_stage=list(old))

    async def _incomplete(self, path: str, req: ArmRequest, got: Answered, completeness: Completeness) -> None:
        if completeness.complete:
            return
        text = got.text
        if text is not None and len(text) > ANSWER_EXCERPT_CHARS:
            text = text[:ANSWER_EXCERPT_CHARS - 1] + "…"
        await self.bus.publish(AnswerIncomplete(
            source=self.source, model=self.model.name, path=path, defects=list(completeness.defects),  # type: ignore[arg-type]
            details=list(completeness.details), item_id=req.item_id, arm=req.arm, request_id=got.request_id,
            answer=text, finish_reason=got.finish_reason, completion_tokens=got.completion_tokens,
            max_tokens=self.max_tokens))

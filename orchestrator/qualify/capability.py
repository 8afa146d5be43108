"""Capability decisions from probe answers: transport, audio conditioning, text-only, transcription-only.
Pure functions over what was asked and answered; the asking is qualify's job. Each returns a
CapabilityProbed-shaped verdict with the evidence that decided it."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from orchestrator.dataset import ConditioningPair, Dataset, Item
from orchestrator.events import (
    CapabilityEvidence,
    ConditioningEvidence,
    HttpExchange,
    PairAnswers,
    TextOnlyEvidence,
    TranscriptionEvidence,
    TransportEvidence,
)
from orchestrator.judge.scoring import normalize, score

__all__ = [
    "ProbeAnswer",
    "CheckResult",
    "judge_transport",
    "judge_conditioning",
    "judge_text_only",
    "judge_transcription_only",
    "select_probe_pairs",
    "AUDIO_QA_TASKS",
]

# Native Task ids that take ordered text and audio parts and give text (TRTMC's Task SDK names).
AUDIO_QA_TASKS = frozenset({"audio_text_to_text", "image_audio_text_to_text", "audio_video_text_to_text"})

# Below this share of items whose answer changes when the clip becomes silence, the audio is ignored.
MIN_CHANGED_SHARE = 0.5
# From this share of speech items answered with their transcript, the path only transcribes.
MAX_TRANSCRIPT_SHARE = 0.5


class ProbeAnswer(msgspec.Struct, frozen=True, kw_only=True):
    item_id: str
    arm: str
    answer: str | None
    status: int = 200
    request_id: str = ""


class CheckResult(msgspec.Struct, frozen=True, kw_only=True):
    check: str
    passed: bool
    reason: str
    evidence: CapabilityEvidence | None = None


def judge_transport(with_audio_status: int, with_audio_body: str, text_status: int, text_body: str,
                    *, request_ids: tuple[str, str] = ("", "")) -> CheckResult:
    """Audio accepted when the request with `input_audio` is answered 200. A 400 with audio while the same
    request without the audio part gets 200 means the server does not accept audio in chat (never decided
    by matching the error text)."""
    evidence = TransportEvidence(
        with_audio=HttpExchange(status=with_audio_status, body=with_audio_body[:2000], request_id=request_ids[0]),
        without_audio=HttpExchange(status=text_status, body=text_body[:2000], request_id=request_ids[1]))
    if with_audio_status == 200:
        return CheckResult(check="transport", passed=True, reason="input_audio accepted (200)", evidence=evidence)
    if with_audio_status == 400 and text_status == 200:
        return CheckResult(check="transport", passed=False,
                           reason="server rejects input_audio in chat: 400 with the audio part, 200 for the "
                                  "same request without it", evidence=evidence)
    if with_audio_status == 413 and text_status == 200:
        # trtmc-server's --max-body-bytes (1 MiB by default) counts the base64 audio: a setup limit, which
        # says nothing about whether the server takes audio.
        return CheckResult(check="transport", passed=False,
                           reason="server refused the request with audio as too large (413) and answered the same "
                                  "request without it: raise its body limit (trtmc-server --max-body-bytes) and "
                                  "run again", evidence=evidence)
    return CheckResult(check="transport", passed=False,
                       reason=f"request with audio got {with_audio_status or 'no response'}, without audio "
                              f"{text_status or 'no response'}: the server does not answer chat requests",
                       evidence=evidence)


def select_probe_pairs(dataset: Dataset, per_relation: int = 4) -> list[ConditioningPair]:
    """Up to `per_relation` same-clip and same-question pairs, in manifest order, items not reused."""
    chosen: list[ConditioningPair] = []
    every = dataset.conditioning_pairs()
    for relation in ("same_clip", "same_question"):
        used: set[str] = set()
        for pair in every:
            if pair.relation != relation or pair.first in used or pair.second in used:
                continue
            chosen.append(pair)
            used.update((pair.first, pair.second))
            if sum(p.relation == relation for p in chosen) >= per_relation:
                break
    return chosen


def _answers(answers: Sequence[ProbeAnswer], arm: str) -> dict[str, ProbeAnswer]:
    return {a.item_id: a for a in answers if a.arm == arm}


def judge_conditioning(dataset: Dataset, pairs: Sequence[ConditioningPair], answers: Sequence[ProbeAnswer]) -> CheckResult:
    """For each relation, a majority of pairs must get two different answers that are both right."""
    audio = _answers(answers, "audio")
    rows: list[PairAnswers] = []
    ok_by_rel: dict[str, list[bool]] = {}
    for pair in pairs:
        a, b = audio.get(pair.first), audio.get(pair.second)
        va = score(a.answer if a else None, dataset.item(pair.first)).verdict
        vb = score(b.answer if b else None, dataset.item(pair.second)).verdict
        differ = bool(a and b and normalize(a.answer or "") != normalize(b.answer or ""))
        good = va == "correct" and vb == "correct" and differ
        ok_by_rel.setdefault(pair.relation, []).append(good)
        rows.append(PairAnswers(relation=pair.relation, first=pair.first, second=pair.second,
                                first_answer=a.answer if a else None, second_answer=b.answer if b else None,
                                first_verdict=va, second_verdict=vb, answers_differ=differ, passed=good))
    failing = [rel for rel, oks in ok_by_rel.items() if sum(oks) * 2 <= len(oks)]
    missing = [rel for rel in ("same_clip", "same_question") if rel not in ok_by_rel]
    evidence = ConditioningEvidence(pairs=rows)
    if missing:
        return CheckResult(check="conditioning", passed=False, evidence=evidence,
                           reason=f"the dataset has no {' or '.join(missing)} conditioning pairs to probe with")
    if failing:
        detail = "; ".join(f"{rel}: {sum(ok_by_rel[rel])}/{len(ok_by_rel[rel])} pairs right and different"
                           for rel in failing)
        return CheckResult(check="conditioning", passed=False, evidence=evidence,
                           reason=f"answers do not follow the audio and the question ({detail})")
    return CheckResult(check="conditioning", passed=True, evidence=evidence,
                       reason=", ".join(f"{rel}: {sum(v)}/{len(v)} pairs right and different" for rel, v in ok_by_rel.items()))


def judge_text_only(answers: Sequence[ProbeAnswer]) -> CheckResult:
    """Text-only when answers barely change when the clip is replaced by silence of the same length."""
    audio, silence = _answers(answers, "audio"), _answers(answers, "silence")
    common = sorted(set(audio) & set(silence))
    changed = [i for i in common if normalize(audio[i].answer or "") != normalize(silence[i].answer or "")]
    share = len(changed) / len(common) if common else 0.0
    evidence = TextOnlyEvidence(compared=len(common), changed=len(changed), changed_share=share,
                                unchanged_items=[i for i in common if i not in changed][:50])
    if not common:
        return CheckResult(check="text_only", passed=False, reason="no audio/silence answers to compare", evidence=evidence)
    if share < MIN_CHANGED_SHARE:
        return CheckResult(check="text_only", passed=False, evidence=evidence,
                           reason=f"text-only: {len(common) - len(changed)}/{len(common)} answers are the same "
                                  f"with the clip replaced by silence")
    return CheckResult(check="text_only", passed=True, evidence=evidence,
                       reason=f"{len(changed)}/{len(common)} answers change when the clip is silence")


def judge_transcription_only(items: Sequence[Item], answers: Sequence[ProbeAnswer]) -> CheckResult:
    """Transcription-only when speech clips are answered with their transcript whatever the question,
    or when one clip asked different questions gets one identical answer."""
    audio = _answers(answers, "audio")
    speech = [it for it in items if it.transcript and it.id in audio]
    echoed = []
    for it in speech:
        ans = normalize(audio[it.id].answer or "")
        tr = normalize(it.transcript or "")
        if ans and tr and (ans == tr or (len(tr.split()) >= 3 and tr in ans)):
            echoed.append(it.id)
    by_clip: dict[str, list[Item]] = {}
    for it in items:
        if it.id in audio:
            by_clip.setdefault(it.audio, []).append(it)
    same_answer_clips = []
    for clip, group in by_clip.items():
        if len(group) >= 2 and len({normalize(it.question) for it in group}) >= 2:
            normalized = {normalize(audio[it.id].answer or "") for it in group}
            if len(normalized) == 1 and next(iter(normalized)):
                same_answer_clips.append(clip)
    share = len(echoed) / len(speech) if speech else 0.0
    evidence = TranscriptionEvidence(speech_items=len(speech), answered_with_transcript=echoed,
                                     clips_with_one_answer_to_different_questions=same_answer_clips)
    if speech and share >= MAX_TRANSCRIPT_SHARE:
        return CheckResult(check="transcription_only", passed=False, evidence=evidence,
                           reason=f"transcription-only: {len(echoed)}/{len(speech)} speech clips answered with "
                                  f"their transcript instead of an answer")
    if same_answer_clips:
        return CheckResult(check="transcription_only", passed=False, evidence=evidence,
                           reason=f"transcription-only: {len(same_answer_clips)} clip(s) got one identical answer "
                                  f"to different questions")
    return CheckResult(check="transcription_only", passed=True, evidence=evidence,
                       reason=f"{len(echoed)}/{len(speech)} speech clips answered with their transcript")

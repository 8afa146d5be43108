"""What decided each capability check (CapabilityProbed.evidence): one frozen Struct per check, tagged by
`kind` with the check's name. A new check appends its own variant to `CapabilityEvidence`; journals
already written keep decoding, so no schema version is needed for it.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

__all__ = ["CapabilityEvidence", "CAPABILITY_EVIDENCE", "HttpExchange", "TransportEvidence", "PairAnswers", "ConditioningEvidence",
           "TextOnlyEvidence", "TranscriptionEvidence"]


class _Evidence(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of every capability evidence (not itself a member of the union)."""


class HttpExchange(msgspec.Struct, frozen=True, kw_only=True):
    """One probe request as the server answered it: status (0: no answer) and the body as text (the
    server's own words, kept as evidence; cut at 2000 characters)."""

    status: int = 0
    body: str = ""
    request_id: str = ""


class TransportEvidence(_Evidence, frozen=True, kw_only=True, tag="transport"):
    """The same question with and without its `input_audio` part."""

    with_audio: HttpExchange = HttpExchange()
    without_audio: HttpExchange = HttpExchange()


class PairAnswers(msgspec.Struct, frozen=True, kw_only=True):
    """One conditioning pair (same clip or same question): both answers, their verdicts, and whether they
    were right and different."""

    relation: str
    first: str
    second: str
    first_answer: str | None = None
    second_answer: str | None = None
    first_verdict: str = ""
    second_verdict: str = ""
    answers_differ: bool = False
    passed: bool = False


class ConditioningEvidence(_Evidence, frozen=True, kw_only=True, tag="conditioning"):
    """Every probed pair."""

    pairs: list[PairAnswers] = []


class TextOnlyEvidence(_Evidence, frozen=True, kw_only=True, tag="text_only"):
    """Answers with the clip against answers with silence of the same length."""

    compared: int = 0
    changed: int = 0
    changed_share: float = 0.0
    unchanged_items: list[str] = []


class TranscriptionEvidence(_Evidence, frozen=True, kw_only=True, tag="transcription_only"):
    """Speech clips answered with their transcript, and clips with one answer to different questions."""

    speech_items: int = 0
    answered_with_transcript: list[str] = []
    clips_with_one_answer_to_different_questions: list[str] = []


CAPABILITY_EVIDENCE: tuple[type[_Evidence], ...] = (TransportEvidence, ConditioningEvidence, TextOnlyEvidence,
                                                     TranscriptionEvidence)
CapabilityEvidence: TypeAlias = TransportEvidence | ConditioningEvidence | TextOnlyEvidence | TranscriptionEvidence

"""Capability decisions and gates on real dataset items: transport, conditioning, text-only, transcription-only."""

from __future__ import annotations

import pytest

from orchestrator.config import CorrectnessCriteria, DatasetConfig
from orchestrator.dataset import Dataset, load_dataset, resolve_dataset_path
from orchestrator.events import TranscriptionEvidence, TransportEvidence
from orchestrator.judge.gates import ScoredAnswer, evaluate_gates, not_applicable
from orchestrator.qualify.capability import (
    ProbeAnswer,
    judge_conditioning,
    judge_text_only,
    judge_transcription_only,
    judge_transport,
    select_probe_pairs,
)


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_dataset(resolve_dataset_path(DatasetConfig(name="audioqa-v1")))


def answers_for(dataset: Dataset, items: list[str], how: str) -> list[ProbeAnswer]:
    out = []
    for item_id in items:
        item = dataset.item(item_id)
        gold = {"right": item.answer, "constant": "I am not sure.", "transcript": item.transcript or "beep"}[how]
        silence = {"right": "There is only silence.", "constant": "I am not sure.",
                   "transcript": item.transcript or "beep"}[how]
        out.append(ProbeAnswer(item_id=item_id, arm="audio", answer=gold))
        out.append(ProbeAnswer(item_id=item_id, arm="silence", answer=silence))
    return out


class TestTransport:
    def test_400_with_audio_and_200_without_is_unsupported_evidence(self) -> None:
        """A 400 on input_audio beside a 200 on the same text request fails transport, keeping both bodies."""
        body = '{"error":{"message":"Input should be a valid string","code":"invalid_request"}}'
        r = judge_transport(400, body, 200, '{"choices":[]}', request_ids=("a", "b"))
        assert not r.passed and "rejects input_audio" in r.reason
        assert isinstance(r.evidence, TransportEvidence)
        assert r.evidence.with_audio.body == body and r.evidence.with_audio.request_id == "a"

    def test_200_with_audio_passes_and_dead_server_is_named(self) -> None:
        """Audio answered 200 passes; no response at all says the server does not answer."""
        assert judge_transport(200, "{}", 200, "{}").passed
        r = judge_transport(0, "ConnectionRefused", 0, "ConnectionRefused")
        assert not r.passed and "no response" in r.reason


    def test_413_with_audio_names_the_body_limit_not_audio_support(self) -> None:
        """trtmc-server's 1 MiB body limit answers a large clip 413: the reason says which limit to raise."""
        body = '{"error":{"message":"request body exceeds 1048576 bytes","code":"content_too_large"}}'
        r = judge_transport(413, body, 200, '{"choices":[]}')
        assert not r.passed and "too large (413)" in r.reason and "--max-body-bytes" in r.reason
        assert "rejects input_audio" not in r.reason


class TestConditioning:
    def test_probe_pairs_cover_both_relations(self, dataset: Dataset) -> None:
        """The dataset yields at least 4 same-clip and 4 same-question pairs with different answers."""
        pairs = select_probe_pairs(dataset)
        assert sum(p.relation == "same_clip" for p in pairs) == 4
        assert sum(p.relation == "same_question" for p in pairs) == 4

    def test_right_and_different_answers_pass(self, dataset: Dataset) -> None:
        """Gold answers on every probed item pass conditioning, text-only and transcription-only."""
        pairs = select_probe_pairs(dataset)
        items = sorted({i for p in pairs for i in (p.first, p.second)})
        ans = answers_for(dataset, items, "right")
        assert judge_conditioning(dataset, pairs, ans).passed
        assert judge_text_only(ans).passed
        assert judge_transcription_only([dataset.item(i) for i in items], ans).passed

    def test_constant_answers_are_text_only_and_unconditioned(self, dataset: Dataset) -> None:
        """A server answering the same thing whatever the audio fails conditioning and text-only."""
        pairs = select_probe_pairs(dataset)
        items = sorted({i for p in pairs for i in (p.first, p.second)})
        ans = answers_for(dataset, items, "constant")
        cond = judge_conditioning(dataset, pairs, ans)
        assert not cond.passed and "do not follow the audio" in cond.reason
        text = judge_text_only(ans)
        assert not text.passed and text.reason.startswith(f"text-only: {len(items)}/{len(items)}")

    def test_transcript_answers_are_transcription_only(self, dataset: Dataset) -> None:
        """A server returning the transcript whatever the question is named transcription-only."""
        pairs = select_probe_pairs(dataset)
        items = sorted({i for p in pairs for i in (p.first, p.second)})
        ans = answers_for(dataset, items, "transcript")
        r = judge_transcription_only([dataset.item(i) for i in items], ans)
        assert not r.passed and r.reason.startswith("transcription-only")
        assert isinstance(r.evidence, TranscriptionEvidence)
        assert "content-meeting-day" in r.evidence.answered_with_transcript


class TestGates:
    def crit(self, rate: float, by_kind: dict[str, float] | None = None) -> CorrectnessCriteria:
        return CorrectnessCriteria(min_pass_rate=rate, min_pass_rate_by_kind=by_kind or {})

    def answers(self, correct: int, total: int, kind: str = "count") -> list[ScoredAnswer]:
        return [ScoredAnswer(item_id=f"i{n}", arm="audio", kind=kind, verdict="correct" if n < correct else "wrong")
                for n in range(total)]

    def test_exact_threshold_is_not_rounded(self) -> None:
        """9/10 meets 0.9 exactly; 0.9001 is not met by 9/10 (no rounding either way)."""
        assert evaluate_gates(self.crit(0.9), self.answers(9, 10))[0].passed
        assert not evaluate_gates(self.crit(0.9001), self.answers(9, 10))[0].passed
        assert evaluate_gates(self.crit(0.7), self.answers(7, 10))[0].passed

    def test_per_kind_gate_lists_failing_items_and_ignores_other_arms(self) -> None:
        """A per-kind minimum is its own gate over that kind on the criteria's arm, naming failing items."""
        ans = self.answers(3, 4, "count") + [ScoredAnswer(item_id="s", arm="silence", kind="count", verdict="wrong")]
        overall, per_kind = evaluate_gates(self.crit(0.5, {"count": 1.0}), ans)
        assert overall.passed and overall.total == 4
        assert not per_kind.passed and per_kind.scope == "kind:count" and per_kind.failing_items == ["i3"]

    def test_repeated_answers_list_each_failing_item_once(self) -> None:
        """A soak window answers each item many times: the gate names each failing item once, in the order
        of its first failure, and its counts keep every answer (issue 23: one entry per failed answer grew
        each window's summary with its requests)."""
        ans = [ScoredAnswer(item_id=item, arm="audio", kind="count", verdict=verdict)
               for _ in range(500) for item, verdict in (("b", "wrong"), ("a", "correct"), ("c", "empty"))]
        gate = evaluate_gates(self.crit(0.1), ans)[0]
        assert gate.failing_items == ["b", "c"]
        assert (gate.correct, gate.total) == (500, 1500)

    def test_a_gate_over_no_answers_is_not_applicable(self) -> None:
        """A gate over zero answers judges nothing: it neither passes vacuously nor fails, it is not applicable
        (a stage that asked no item of a kind), and is named as such."""
        overall, per_kind = evaluate_gates(self.crit(0.5, {"count": 1.0}), self.answers(3, 4, "pitch"))
        assert overall.applicable and overall.passed and not overall.failed
        assert not per_kind.applicable and not per_kind.passed and not per_kind.failed and per_kind.total == 0
        assert not_applicable([overall, per_kind]) == "not applicable (no answers): kind:count"
        assert not_applicable([overall]) == ""
        (empty,) = evaluate_gates(self.crit(0.1), [])
        assert not empty.applicable and not empty.failed

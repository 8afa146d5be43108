"""The completeness classifier: each defect named, several at once, and no gold answer flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.dataset import load_dataset
from orchestrator.judge.completeness import check_completeness

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "audioqa-v1"
Q = "What colour is the folder?"


@pytest.mark.parametrize(("answer", "defect"), [
    (None, "empty"),
    ("", "empty"),
    (" \n\t ", "empty"),
    ("blue\x00", "invalid_text"),
    ("bl\ufffdue", "invalid_text"),
    ("blue\x1b[0m", "invalid_text"),
    (b"\xffblue", "invalid_text"),
    ("What colour is the folder?", "echo"),
    ("what colour is the folder? It is blue.", "echo"),
    ("colour is the folder", "echo"),
    ("blue blue blue blue", "repetition"),
    ("it is the blue one the blue one the blue one the blue one", "repetition"),
    ("the folder is blue and the folder is blue and the folder is blue", "repetition"),
    ("hahahahahahahahaha", "repetition"),
    ("blue!!!!!!!!!!!!!!!!!!!!", "repetition"),
])
def test_each_defect_is_named(answer: str | bytes | None, defect: str) -> None:
    result = check_completeness(answer, Q)
    assert result.primary == defect, result.describe()
    assert not result.complete


@pytest.mark.parametrize("answer", ["blue", "yes", "3", "440 Hz", "the first one", "1000000000000000000",
                                    "the blue folder", "It is blue.\nDefinitely blue.", "ha ha", "the folder"])
def test_short_and_ordinary_answers_are_complete(answer: str) -> None:
    assert check_completeness(answer, Q).complete


def test_length_limit_from_finish_reason_or_from_the_token_count() -> None:
    assert check_completeness("blue", Q, finish_reason="length").defects == ["length_limit"]
    # No finish_reason (trtmc-server): the count reaching the request's limit says it.
    counted = check_completeness("the folder is", Q, completion_tokens=3, max_tokens=3)
    assert counted.defects == ["length_limit"] and "limit of 3" in counted.details[0]
    assert check_completeness("the folder", Q, completion_tokens=2, max_tokens=3).complete
    # A finish_reason the server gave is believed over the count.
    assert check_completeness("the folder is", Q, finish_reason="stop", completion_tokens=3, max_tokens=3).complete
    # No limit asked, no finish_reason: truncation is not claimed.
    assert check_completeness("the folder is", Q, completion_tokens=3).complete


def test_several_defects_are_all_reported_first_is_primary() -> None:
    result = check_completeness("yes yes yes yes", Q, finish_reason="length")
    assert result.defects == ["length_limit", "repetition"]
    assert result.primary == "length_limit"
    assert "repeated 4 times" in result.describe()
    empty = check_completeness("", Q, completion_tokens=0, max_tokens=0)
    assert empty.defects == ["empty", "length_limit"]


def test_no_gold_answer_variant_choice_or_transcript_of_the_dataset_is_flagged() -> None:
    """False-positive check on the real dataset: every gold answer, variant, choice, alias and transcript
    (answers may quote it) is complete as an answer to its own question."""
    ds = load_dataset(DATASET)
    checked = 0
    flagged = []
    for item in ds.items:
        aliases = [a for values in item.choice_aliases.values() for a in values]
        for answer in (item.answer, *item.variants, *item.choices, *aliases, *([item.transcript] if item.transcript else [])):
            checked += 1
            result = check_completeness(answer, item.question)
            if not result.complete:
                flagged.append((item.id, answer, result.describe()))
    assert checked >= len(ds.items) * 2
    assert flagged == []

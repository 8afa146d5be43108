"""The completeness classifier: each defect named, several at once, no gold answer flagged, and a corpus of
plausible whole answers and degenerate ones judged with at most 1 % false flags and 1 % misses."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from orchestrator.dataset import load_dataset
from orchestrator.judge.completeness import check_completeness

DATASETS = Path(__file__).resolve().parents[3] / "datasets"
DATASET = DATASETS / "audioqa-v1"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "completeness" / "answers.jsonl"
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
    ("what colour is the folder? what colour is the folder?", "echo"),
    ("What colour is the folder? What colour", "echo"),
    ("colour is the folder", "echo"),
    ("blue blue blue blue", "repetition"),
    ("it is the blue one the blue one the blue one the blue one", "repetition"),
    ("the folder is blue and the folder is blue and the folder is blue", "repetition"),
    ("hahahahahahahahaha", "repetition"),
    ("blue!!!!!!!!!!!!!!!!!!!!", "repetition"),
    ("It is blâ€™ue", "invalid_text"),
    ("It is \ue000blue", "invalid_text"),
    ("The folder is", "cut_off"),
    ("The folder is the", "cut_off"),
    ("The folder is bl,", "cut_off"),
    ("The colour of the fol", "cut_off"),
])
def test_each_defect_is_named(answer: str | bytes | None, defect: str) -> None:
    result = check_completeness(answer, Q)
    assert result.primary == defect, result.describe()
    assert not result.complete


@pytest.mark.parametrize("answer", ["blue", "yes", "3", "440 Hz", "the first one", "1000000000000000000",
                                    "the blue folder", "It is blue.\nDefinitely blue.", "ha ha", "the folder",
                                    "what colour is the folder? It is blue.", "Yes, it is", "It is blue 🔵",
                                    "Blue, in Zürich and Lisbón alike"])
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
    # No limit asked, no finish_reason: the count claims nothing (only the text can say it stopped short).
    assert check_completeness("the folder is blue", Q, completion_tokens=4).complete
    assert check_completeness("the folder is", Q, completion_tokens=3).defects == ["cut_off"]


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


def test_counting_aloud_is_a_count_not_a_loop() -> None:
    """Saying the counted thing once per count is whole when the count is stated, or when the question counts
    it and the answer states no other number; a run that disagrees with the stated count is a loop."""
    q = "How many beeps do you hear?"
    assert check_completeness("There are four beeps: beep, beep, beep, beep.", q).complete
    assert check_completeness("beep beep beep beep beep", q).complete
    assert check_completeness("There are 3 beeps: beep beep beep beep beep beep", q).primary == "repetition"
    assert check_completeness("four four four four", q).primary == "repetition"
    assert check_completeness("beep " * 13, q).primary == "repetition"  # more than MAX_COUNTED, no number
    assert check_completeness("blue blue blue blue", "What colour is the folder?").primary == "repetition"


def test_a_finish_reason_of_stop_is_believed_over_the_cut_off_rule() -> None:
    """A server that says it stopped on its own is not second-guessed from the text."""
    assert check_completeness("The folder is", Q, finish_reason="stop").complete
    assert check_completeness("The folder is", Q).defects == ["cut_off"]


class _Case(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    question: str
    answer: str | None
    expect: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None


def test_the_corpus_is_judged_with_at_most_one_percent_false_flags_and_misses() -> None:
    """At least 200 plausible whole answers (verbose, restating the question, counting aloud, lists, "Question?
    answer") and at least 100 degenerate ones (loops, cut mid-word or at the token limit, empty, pure echo,
    mojibake): at most 1 % of the whole ones are flagged, at most 1 % of the degenerate ones pass or are
    flagged for another defect than their own."""
    cases = [msgspec.json.decode(line, type=_Case) for line in CORPUS.read_bytes().splitlines() if line.strip()]
    whole = [c for c in cases if c.expect == "complete"]
    broken = [c for c in cases if c.expect != "complete"]
    assert len(whole) >= 200 and len(broken) >= 100
    assert {c.expect for c in broken} == {"repetition", "length_limit", "cut_off", "empty", "echo", "invalid_text"}

    def judge(c: _Case) -> list[str]:
        return list(check_completeness(c.answer, c.question, finish_reason=c.finish_reason,
                                       completion_tokens=c.completion_tokens, max_tokens=c.max_tokens).defects)

    false_flags = [(c.answer, judge(c)) for c in whole if judge(c)]
    misses = [(c.answer, c.expect, judge(c)) for c in broken if c.expect not in judge(c)]
    assert len(false_flags) <= 0.01 * len(whole), false_flags
    assert len(misses) <= 0.01 * len(broken), misses


@pytest.mark.parametrize("name", ["audioqa-v1", "audioqa-v2"])
def test_no_gold_answer_of_either_shipped_set_is_flagged(name: str) -> None:
    """Every gold answer, variant, choice, alias and transcript of both shipped sets is whole as an answer
    to its own question."""
    ds = load_dataset(DATASETS / name)
    flagged = []
    for item in ds.items:
        aliases = [a for values in item.choice_aliases.values() for a in values]
        for answer in (item.answer, *item.variants, *item.choices, *aliases, *([item.transcript] if item.transcript else [])):
            result = check_completeness(answer, item.question)
            if not result.complete:
                flagged.append((item.id, answer, result.describe()))
    assert flagged == []

"""Scorers: normalisation and the exact, choice and numeric rules on tricky answers."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.dataset import Item
from orchestrator.judge.scoring import first_number, normalize, score


def _item(**over: Any) -> Item:
    base: dict[str, Any] = dict(
        id="x", audio="a.wav", question="q?", answer="thursday", scoring="exact", kind="content",
        transcript_answerable=False, recipe="r", container="wav", codec="pcm_s16le", sample_rate_hz=16000,
        channels=1, frames=16000, duration_s=1.0, bytes=32044, sha256="0" * 64, pcm_sha256="0" * 64)
    base.update(over)
    return Item(**base)


FIRST_SECOND = _item(answer="second", scoring="choice", choices=["first", "second"],
                     choice_aliases={"first": ["1st"], "second": ["2nd"]})
SEX = _item(answer="female", scoring="choice", choices=["male", "female"],
            choice_aliases={"female": ["woman"], "male": ["man"]})


class TestNormalize:
    @pytest.mark.parametrize(("text", "want"), [
        ("The Meeting is on THURSDAY!", "meeting is on thursday"),
        ("twenty-one", "21"),
        ("one hundred", "100"),
        ("two hundred and five apples", "205 apples"),
        ("one point five seconds", "1.5 seconds"),
        ("one and a half seconds", "1.5 seconds"),
        ("1,000 Hz.", "1000 hz"),
        ("It's 2.5 s", "it s 2.5 s"),
        ("one two three", "1 2 3"),
        ("Zürich, Café", "zurich cafe"),
        ("ＦＵＬＬ　ｗｉｄｔｈ ５", "full width 5"),  # NFKC folds full-width forms
        ("“Left” — channel…", "left channel"),
        ("an apple", "apple"),
        ("", ""),
    ])
    def test_cases(self, text: str, want: str) -> None:
        """Case, punctuation, accents, width, number words and articles normalise as documented."""
        assert normalize(text) == want

    def test_first_number_units(self) -> None:
        """kHz and milliseconds convert to the manifest's hertz and seconds."""
        assert first_number(normalize("about 1 kHz")) == 1000.0
        assert first_number(normalize("roughly 800 milliseconds")) == pytest.approx(0.8)
        assert first_number(normalize("800ms")) == pytest.approx(0.8)
        assert first_number(normalize("no numbers here")) is None


class TestExact:
    @pytest.mark.parametrize(("answer", "verdict"), [
        ("Thursday", "correct"),
        ("The meeting is on Thursday.", "correct"),  # extra words around a one-word gold
        ("thursday!!!", "correct"),
        ("THURSDAY", "correct"),
        ("Thursdays", "wrong"),  # whole words only
        ("Tuesday", "wrong"),
        ("", "unparsed"),
        ("   ...  ", "unparsed"),
        (None, "unparsed"),
    ])
    def test_cases(self, answer: str | None, verdict: str) -> None:
        """Equality or whole-word containment of a short gold answer is correct."""
        assert score(answer, _item()).verdict == verdict

    def test_variants_and_long_gold(self) -> None:
        """Variants count; a gold of three or more words must match exactly, not be contained."""
        item = _item(answer="carl", variants=["karl"])
        assert score("Karl is the youngest", item).verdict == "correct"
        long = _item(answer="the blue folder please")
        assert score("blue folder please", long).verdict == "correct"  # articles dropped on both sides
        assert score("bring the blue folder please now", long).verdict == "wrong"

    def test_unicode_answer(self) -> None:
        """Accented and full-width forms of the gold answer are accepted."""
        item = _item(answer="lisbon")
        assert score("Lisbón", item).verdict == "correct"
        assert score("ＬＩＳＢＯＮ", item).verdict == "correct"


class TestChoice:
    @pytest.mark.parametrize(("answer", "verdict", "parsed"), [
        ("second", "correct", "second"),
        ("The second one.", "correct", "second"),
        ("It's the 2nd tone", "correct", "second"),
        ("first", "wrong", "first"),
        ("The first one is higher than the second", "wrong", "first, second"),  # two choices named
        ("first or second, hard to say", "wrong", "first, second"),
        ("neither", "unparsed", None),
        ("", "unparsed", None),
    ])
    def test_first_second(self, answer: str, verdict: str, parsed: str | None) -> None:
        """Exactly one named choice decides; two named choices are wrong; none is unparsed."""
        result = score(answer, FIRST_SECOND)
        assert (result.verdict, result.parsed) == (verdict, parsed)

    def test_whole_words_and_aliases(self) -> None:
        """'female' does not also name 'male', and aliases name their choice."""
        assert score("Female.", SEX).verdict == "correct"
        assert score("It sounds like a woman", SEX).verdict == "correct"
        assert score("a man", SEX).verdict == "wrong"
        assert score("a woman, not a man", SEX).verdict == "wrong"

    def test_longer_alias_claims_its_words(self) -> None:
        """'no sound' names 'silent' only, and 'does not' names 'no' without 'yes' matching inside it."""
        silent = _item(answer="silent", scoring="choice", choices=["silent", "sound"],
                       choice_aliases={"silent": ["no sound"], "sound": ["a sound"]})
        assert score("It is silent, there is no sound.", silent).verdict == "correct"
        assert score("I hear a sound", silent).verdict == "wrong"
        speech = _item(answer="no", scoring="choice", choices=["yes", "no"],
                       choice_aliases={"yes": ["contains speech"], "no": ["does not", "no speech"]})
        assert score("No, it does not contain speech.", speech).verdict == "correct"
        assert score("Yes, it contains speech.", speech).verdict == "wrong"
        assert score("No speech, yes.", speech).verdict == "wrong"


class TestNumeric:
    @pytest.mark.parametrize(("answer", "verdict"), [
        ("5", "correct"),
        ("five", "correct"),
        ("There are five beeps.", "correct"),
        ("I counted 5 beeps in total, maybe 6", "correct"),  # the first number decides
        ("Five!", "correct"),
        ("four", "wrong"),
        ("5.5", "wrong"),  # tolerance 0 for counts
        ("many beeps", "unparsed"),
        ("", "unparsed"),
    ])
    def test_counts(self, answer: str, verdict: str) -> None:
        """Counts need the exact number, written as digits or words."""
        assert score(answer, _item(answer="5", scoring="numeric")).verdict == verdict

    @pytest.mark.parametrize(("answer", "verdict"), [
        ("1000 Hz", "correct"),
        ("about 1 kHz", "correct"),
        ("one thousand hertz", "correct"),
        ("1,040 Hz", "correct"),
        ("1060", "wrong"),
        ("roughly 950", "correct"),
    ])
    def test_tolerance(self, answer: str, verdict: str) -> None:
        """A frequency within the tolerance (50 Hz) is correct, with units and number words."""
        assert score(answer, _item(answer="1000", scoring="numeric", tolerance=50)).verdict == verdict

    def test_seconds(self) -> None:
        """Decimal seconds, 'and a half' and milliseconds are read in seconds."""
        item = _item(answer="1.5", scoring="numeric", tolerance=0.3)
        for answer in ("1.5 seconds", "one and a half seconds", "one point five", "After 1500 ms", "1.7s"):
            assert score(answer, item).verdict == "correct", answer
        assert score("2 seconds", item).verdict == "wrong"

"""Whether an answer is whole: `complete`, or the named defects that make it not (pure, no I/O).

Rules, checked in this order (the first defect found is the primary one; every defect found is kept):

- `empty`: no answer, or only whitespace.
- `invalid_text`: bytes that are not UTF-8, U+FFFD replacement characters, lone surrogates, or control
  characters other than newline and tab.
- `length_limit`: the server said `finish_reason == "length"`; or, where it says nothing (trtmc-server's
  `finish_reason` is always null), its completion tokens reached the request's `max_tokens` /
  `max_completion_tokens`. A `finish_reason` the server did give is believed over the count. Without a
  request limit and without a finish reason, truncation cannot be told and is not claimed.
- `echo`: on words (lowercased `\\w+` runs), the answer equals the question; or contains the whole
  question (of at least `ECHO_MIN_WORDS` words) verbatim; or is a contiguous run of the question's words,
  at least `ECHO_MIN_WORDS` long, covering at least `ECHO_COVER` of the question. A short answer that
  quotes an option from the question ("the first one") covers too little of it to count.
- `repetition`: on words, one n-gram (n = 1..`MAX_NGRAM`) repeated back to back at least `REPEAT_RUN`
  times ("yes yes yes yes"); or, in an answer of at least `COVER_MIN_WORDS` words, one n-gram occurring
  at least `COVER_MIN_COUNT` times (not overlapping) and covering more than `REPEAT_COVER` of its words
  (a sentence said twice, as a transcript may quote it, is not enough); or, on characters, one unit of 1..8
  characters (not only digits, not only whitespace) repeated back to back at least `CHAR_RUN` times
  over at least `CHAR_RUN_MIN_CHARS` characters ("hahahahahahahaha", "!!!!!!!!!!!!!!!!"). Single words
  and numbers ("yes", "1000000") are never repetitions.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Literal

import msgspec

__all__ = [
    "Defect",
    "DEFECTS",
    "Completeness",
    "check_completeness",
    "ECHO_MIN_WORDS",
    "ECHO_COVER",
    "MAX_NGRAM",
    "REPEAT_RUN",
    "REPEAT_COVER",
    "COVER_MIN_WORDS",
    "COVER_MIN_COUNT",
    "CHAR_RUN",
    "CHAR_RUN_MIN_CHARS",
]

Defect = Literal["empty", "length_limit", "echo", "repetition", "invalid_text"]
DEFECTS: tuple[Defect, ...] = ("empty", "invalid_text", "length_limit", "echo", "repetition")

ECHO_MIN_WORDS = 3
ECHO_COVER = 0.6
MAX_NGRAM = 4
REPEAT_RUN = 4
REPEAT_COVER = 0.5
COVER_MIN_WORDS = 8
COVER_MIN_COUNT = 3
CHAR_RUN = 8
CHAR_RUN_MIN_CHARS = 16

_WORD = re.compile(r"\w+")
_CHAR_RUN = re.compile(r"(.{1,8}?)\1{" + str(CHAR_RUN - 1) + ",}", re.DOTALL)
_ALLOWED_CONTROLS = frozenset("\n\t")


class Completeness(msgspec.Struct, frozen=True, kw_only=True):
    """The defects of one answer (empty when complete), each with a one-line reason in `details`."""

    defects: list[Defect] = []
    details: list[str] = []

    @property
    def complete(self) -> bool:
        return not self.defects

    @property
    def primary(self) -> Defect | None:
        return self.defects[0] if self.defects else None

    def describe(self) -> str:
        """`complete`, or `defect (reason); defect (reason)` in order."""
        if not self.defects:
            return "complete"
        return "; ".join(f"{d} ({why})" for d, why in zip(self.defects, self.details, strict=True))


def check_completeness(answer: str | bytes | None, question: str, *, finish_reason: str | None = None,
                       completion_tokens: int | None = None, max_tokens: int | None = None) -> Completeness:
    """Classify one answer; `max_tokens` is the limit the request asked for (None when it set none)."""
    found: list[tuple[Defect, str]] = []
    text: str | None
    if isinstance(answer, bytes):
        try:
            text = answer.decode("utf-8")
        except UnicodeDecodeError as exc:
            found.append(("invalid_text", f"not UTF-8 at byte {exc.start}"))
            text = answer.decode("utf-8", "replace")
    else:
        text = answer
    if text is None or not text.strip():
        found.insert(0, ("empty", "no answer" if text is None else f"only whitespace ({len(text)} characters)"))
    elif not found and (bad := _invalid(text)):
        found.append(("invalid_text", bad))
    if (why := _length(finish_reason, completion_tokens, max_tokens)) is not None:
        found.append(("length_limit", why))
    if text is not None and text.strip():
        words = _WORD.findall(text.lower())
        if (why := _echo(words, _WORD.findall(question.lower()))) is not None:
            found.append(("echo", why))
        if (why := _repetition(words, text)) is not None:
            found.append(("repetition", why))
    return Completeness(defects=[d for d, _ in found], details=[w for _, w in found])


def _invalid(text: str) -> str | None:
    for i, ch in enumerate(text):
        if ch == "\ufffd":
            return f"replacement character U+FFFD at {i}"
        cat = unicodedata.category(ch)
        if cat == "Cs":
            return f"lone surrogate U+{ord(ch):04X} at {i}"
        if cat == "Cc" and ch not in _ALLOWED_CONTROLS:
            return f"control character U+{ord(ch):04X} at {i}"
    return None


def _length(finish_reason: str | None, completion_tokens: int | None, max_tokens: int | None) -> str | None:
    if finish_reason:
        return "finish_reason is length" if finish_reason == "length" else None
    if completion_tokens is not None and max_tokens is not None and completion_tokens >= max_tokens:
        return f"no finish_reason; {completion_tokens} completion tokens reached the request's limit of {max_tokens}"
    return None


def _find(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def _echo(answer: list[str], question: list[str]) -> str | None:
    if not answer or not question:
        return None
    if answer == question:
        return "the answer is the question"
    if len(question) >= ECHO_MIN_WORDS and len(answer) > len(question) and _find(answer, question):
        return f"the answer contains the whole question ({len(question)} words)"
    if (len(answer) >= ECHO_MIN_WORDS and len(answer) < len(question)
            and len(answer) >= ECHO_COVER * len(question) and _find(question, answer)):
        return f"the answer is {len(answer)} of the question's {len(question)} words, verbatim"
    return None


def _repetition(words: list[str], text: str) -> str | None:
    for n in range(1, MAX_NGRAM + 1):
        run, gram = _longest_run(words, n)
        if run >= REPEAT_RUN:
            return f"{' '.join(gram)!r} repeated {run} times in a row"
    if len(words) >= COVER_MIN_WORDS:
        for n in range(1, MAX_NGRAM + 1):
            grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
            gram, _count = grams.most_common(1)[0]
            covered = _covered(words, gram)
            if covered >= COVER_MIN_COUNT * n and covered > REPEAT_COVER * len(words):
                return f"{' '.join(gram)!r} covers {covered} of {len(words)} words"
    for m in _CHAR_RUN.finditer(text):
        unit = m.group(1)
        if len(m.group(0)) >= CHAR_RUN_MIN_CHARS and not unit.isdigit() and unit.strip():
            return f"{unit!r} repeated {len(m.group(0)) // len(unit)} times in a row"
    return None


def _longest_run(words: list[str], n: int) -> tuple[int, tuple[str, ...]]:
    """The most back-to-back repeats of one n-gram, and that n-gram."""
    best = 0
    best_gram: tuple[str, ...] = ()
    for start in range(n):
        run, prev = 0, None
        for i in range(start, len(words) - n + 1, n):
            gram = tuple(words[i:i + n])
            run = run + 1 if gram == prev else 1
            prev = gram
            if run > best:
                best, best_gram = run, gram
    return best, best_gram


def _covered(words: list[str], gram: tuple[str, ...]) -> int:
    """Words covered by non-overlapping occurrences of `gram`."""
    n, i, covered = len(gram), 0, 0
    while i <= len(words) - n:
        if tuple(words[i:i + n]) == gram:
            covered += n
            i += n
        else:
            i += 1
    return covered

"""Whether an answer is whole: `complete`, or the named defects that make it not (pure, no I/O)."""

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
    "CUT_MIN_WORDS",
    "CUT_WORDS",
    "MAX_COUNTED",
]

Defect = Literal["empty", "length_limit", "echo", "repetition", "invalid_text", "cut_off"]
DEFECTS: tuple[Defect, ...] = ("empty", "invalid_text", "length_limit", "cut_off", "echo", "repetition")

ECHO_MIN_WORDS = 3
ECHO_COVER = 0.6
MAX_NGRAM = 4
REPEAT_RUN = 4
REPEAT_COVER = 0.5
COVER_MIN_WORDS = 8
COVER_MIN_COUNT = 3
CHAR_RUN = 8
CHAR_RUN_MIN_CHARS = 16
CUT_MIN_WORDS = 3
MAX_COUNTED = 12
# Words that cannot end an English sentence: articles, possessives, prepositions that need their object,
# conjunctions. Particles that can ("in", "on", "up", "out", "so", "that") are left out on purpose.
CUT_WORDS = frozenset(
    "the a an my your our their its of to from with by at for into onto than and or but nor because whose "
    "whether if".split())

_WORD = re.compile(r"\w+")
_CHAR_RUN = re.compile(r"(.{1,8}?)\1{" + str(CHAR_RUN - 1) + ",}", re.DOTALL)
_ALLOWED_CONTROLS = frozenset("\n\t")
# Characters a UTF-8 byte becomes when the bytes are read as Windows-1252 or Latin-1: a lead byte
# (0xC2-0xF4) and then its continuation bytes (0x80-0xBF, or their Windows-1252 letters).
_CP1252_CONTINUATIONS = "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"
_MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf" + re.escape(_CP1252_CONTINUATIONS) + "]{1,3}")
_CLOSERS = ".!?…)]}\"'»”’*`"
_COUNT_CUES = ("how many", "count the", "count how many", "number of")
_SUFFIXES = frozenset("s es er est ers ed ing ly y ish ness".split())
# Short words that are stems of longer ones ("low" of "lower"); other stems of under four letters are
# taken for a cut word ("tim" of "times").
_SHORT_STEMS = frozenset("low big old new few hot far sad fat".split())
# "The folder is" stops mid-sentence; "yes, it is" and "there is" are whole.
_COPULAS = frozenset("is are was were".split())
_PRONOUNS = frozenset("it there that this they he she i we you which what who so".split())
# Words around a quoted question that answer nothing ("Question: ...?").
_FILLER = frozenset("question q a answer um uh er well so ok okay sure hmm the is".split())
# Number words an answer states a count with (a count spelled out: "seven beeps: beep, beep, ...").
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
# Words any answer may end a truncated word against, besides the question's and its own.
_KNOWN = frozenset([*_NUMBER_WORDS, "first", "second", "third", "fourth", "fifth", "seconds", "hertz",
                    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                    "january", "february", "march", "april", "june", "july", "august", "september",
                    "october", "november", "december", "recording", "speaker", "female", "male", "hundred",
                    "thousand", "milliseconds", "kilohertz"])


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
    """Classify one answer; `max_tokens` is the limit the request asked for (None when it set none).

    Rules, checked in this order (the first defect found is the primary one; every defect found is kept):

    - `empty`: no answer, or only whitespace.
    - `invalid_text`: bytes that are not UTF-8, U+FFFD replacement characters, lone surrogates, control characters
      other than newline and tab, private-use or unassigned code points, or mojibake: a run of characters that is
      UTF-8 read as Windows-1252 or Latin-1 ("â€™" for "’", "Ã©" for "é"), told by encoding the run back and decoding
      it as UTF-8.
    - `length_limit`: the server said `finish_reason == "length"`; or, where it says nothing (trtmc-server's
      `finish_reason` is always null), its completion tokens reached the request's `max_tokens` /
      `max_completion_tokens`. A `finish_reason` the server did give is believed over the count. Without a request
      limit and without a finish reason, truncation cannot be told from the count.
    - `cut_off`: where the server did not say it stopped (`finish_reason` is not "stop") and no length limit explains
      the end, an answer that ends without closing punctuation in a hyphen, comma or colon; or, from two words on, in
      a word no English sentence ends with (an article, a preposition that needs its object, a conjunction: CUT_WORDS)
      or in a copula after a noun ("the folder is"; "yes, it is" is whole); or, from `CUT_MIN_WORDS` words on, in the
      first letters of a word of the question or of the answer itself ("... the speaker is fem"), a word's stem
      ("loud" of "louder") excepted.
    - `echo`: on words (lowercased `\\w+` runs), the answer equals the question; or contains the whole question (of at
      least `ECHO_MIN_WORDS` words) and nothing else but more of the question (a "Question? answer" form, whose answer
      follows the question, is complete); or is a contiguous run of the question's words, at least `ECHO_MIN_WORDS`
      long, covering at least `ECHO_COVER` of the question. Filler around a quoted question ("Question: ...") answers
      nothing. A short answer that quotes an option from the question ("the first one") covers too little of it to
      count.
    - `repetition`: on words, one n-gram (n = 1..`MAX_NGRAM`) repeated back to back at least `REPEAT_RUN` times ("yes
      yes yes yes"); or, in an answer of at least `COVER_MIN_WORDS` words, one n-gram occurring at least
      `COVER_MIN_COUNT` times (not overlapping) and covering more than `REPEAT_COVER` of its words (a sentence said
      twice, as a transcript may quote it, is not enough); or, on characters, one unit of 1..8 characters (not only
      digits, not only whitespace) repeated back to back at least `CHAR_RUN` times over at least `CHAR_RUN_MIN_CHARS`
      characters ("hahahahahahahaha", "!!!!!!!!!!!!!!!!"). Single words and numbers ("yes", "1000000") are never
      repetitions. Counting aloud is not a loop: a single word (not a number) repeated as many times as a number the
      answer states ("four beeps: beep, beep, beep, beep"), or, in an answer stating no number, the very thing a "how
      many" question counts, at most `MAX_COUNTED` times.
    """
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
        asked = _WORD.findall(question.lower())
        stopped = finish_reason == "stop" or any(d == "length_limit" for d, _ in found)  # its own end, or the limit's
        if not stopped and (why := _cut(text, words, asked)) is not None:
            found.append(("cut_off", why))
        if (why := _echo(words, asked)) is not None:
            found.append(("echo", why))
        if (why := _repetition(words, text, question.lower())) is not None:
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
        if cat in ("Co", "Cn"):
            return f"{'private-use' if cat == 'Co' else 'unassigned'} code point U+{ord(ch):04X} at {i}"
    for m in _MOJIBAKE.finditer(text):
        if (fixed := _unmangle(m.group(0))) is not None:
            return f"mojibake {m.group(0)!r} at {m.start()} (UTF-8 read as Windows-1252: {fixed!r})"
    return None


def _unmangle(run: str) -> str | None:
    """The text `run` was before UTF-8 bytes were read as Windows-1252 or Latin-1, or None if it was not."""
    for codec in ("cp1252", "latin-1"):
        try:
            fixed = run.encode(codec).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        if fixed != run:
            return fixed
    return None


def _length(finish_reason: str | None, completion_tokens: int | None, max_tokens: int | None) -> str | None:
    if finish_reason:
        return "finish_reason is length" if finish_reason == "length" else None
    if completion_tokens is not None and max_tokens is not None and completion_tokens >= max_tokens:
        return f"no finish_reason; {completion_tokens} completion tokens reached the request's limit of {max_tokens}"
    return None


def _cut(text: str, words: list[str], question: list[str]) -> str | None:
    """Where the answer stops mid-sentence (check_completeness gives the rule), why; else None."""
    tail = text.rstrip()
    if not words or not tail:
        return None
    if tail[-1] in "'’" and len(tail) >= 2 and tail[-2].isalpha() and tail.count(tail[-1]) == 1 \
            and "‘" not in tail:
        return "it ends in a word cut at its apostrophe"
    if tail[-1] in _CLOSERS:
        return None
    if tail[-1] in "-,:;–—":
        return f"it ends in {tail[-1]!r}"
    last = words[-1]
    if not tail.lower().endswith(last):  # ends in a symbol (%, °, a unit sign): not a cut word
        return None
    if len(words) >= 2 and last in CUT_WORDS:
        return f"it ends in {last!r}, which no sentence ends with"
    if len(words) >= 2 and last in _COPULAS and words[-2] not in _PRONOUNS:
        return f"it ends in {' '.join(words[-2:])!r}, a sentence without its end"
    known = set(question) | set(words[:-1]) | _KNOWN
    if len(words) >= CUT_MIN_WORDS and len(last) >= 2 and last.isalpha() and last not in known:
        # A word that is the stem of a known one ("loud" of "louder", "beep" of "beeps") is a word itself.
        stem = len(last) >= 4 or last in _SHORT_STEMS
        whole = sorted(w for w in known if len(w) >= len(last) + 2 and w.startswith(last)
                       and not (stem and w[len(last):] in _SUFFIXES))
        if whole:
            return f"it ends in {last!r}, the start of {whole[0]!r}"
    return None


def _find(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def _without(haystack: list[str], needle: list[str]) -> list[str]:
    """`haystack` with every occurrence of `needle` taken out."""
    out: list[str] = []
    i, n = 0, len(needle)
    while i < len(haystack):
        if haystack[i:i + n] == needle:
            i += n
        else:
            out.append(haystack[i])
            i += 1
    return out


def _echo(answer: list[str], question: list[str]) -> str | None:
    if not answer or not question:
        return None
    if answer == question:
        return "the answer is the question"
    if len(question) >= ECHO_MIN_WORDS and len(answer) > len(question) and _find(answer, question):
        rest = _without(answer, question)
        # What follows a quoted question is its answer (it may quote an option: "... The right channel."); only
        # the question starting over, most of it again, or filler is an echo.
        restarted = len(rest) >= 2 and rest == question[:len(rest)]
        most = len(rest) >= ECHO_COVER * len(question) and _find(question, rest)
        if not rest or set(rest) <= _FILLER or restarted or most:
            return f"the answer repeats the whole question ({len(question)} words) and adds no answer"
    if (len(answer) >= ECHO_MIN_WORDS and len(answer) < len(question)
            and len(answer) >= ECHO_COVER * len(question) and _find(question, answer)):
        return f"the answer is {len(answer)} of the question's {len(question)} words, verbatim"
    return None


def _stated_numbers(words: list[str]) -> set[int]:
    out = {int(w) for w in words if w.isdigit() and len(w) <= 3}
    return out | {_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS}


def _counted(question: str) -> set[str]:
    """The words a "how many X" / "count the X" question counts, in singular and plural."""
    out: set[str] = set()
    for cue in _COUNT_CUES:
        for m in re.finditer(re.escape(cue) + r"((?:\s+\w+){1,3})", question):
            for word in m.group(1).split():  # "how many short tones": the thing may follow an adjective
                out |= {word, word.rstrip("s"), word + "s"}
    return out


def _counting_aloud(word: str, words: list[str], question: str) -> bool:
    """`word` said over and over as a count: its longest run in the answer is a number the answer states,
    or, where it states none, the very thing a "how many" question counts, at most MAX_COUNTED times."""
    if word in _NUMBER_WORDS or word.isdigit():
        return False
    times, _gram = _longest_run([w if w == word else "" for w in words], 1)
    stated = _stated_numbers(words)
    if stated:
        return times <= 20 and times in stated
    return times <= MAX_COUNTED and word in _counted(question)


def _one_word(gram: tuple[str, ...]) -> str | None:
    return gram[0] if len(set(gram)) == 1 else None


def _repetition(words: list[str], text: str, question: str) -> str | None:
    for n in range(1, MAX_NGRAM + 1):
        run, gram = _longest_run(words, n)
        if run >= REPEAT_RUN and not ((w := _one_word(gram)) and _counting_aloud(w, words, question)):
            return f"{' '.join(gram)!r} repeated {run} times in a row"
    if len(words) >= COVER_MIN_WORDS:
        for n in range(1, MAX_NGRAM + 1):
            grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
            gram, _count = grams.most_common(1)[0]
            covered = _covered(words, gram)
            if (covered >= COVER_MIN_COUNT * n and covered > REPEAT_COVER * len(words)
                    and not ((w := _one_word(gram)) and _counting_aloud(w, words, question))):
                return f"{' '.join(gram)!r} covers {covered} of {len(words)} words"
    for m in _CHAR_RUN.finditer(text):
        unit = m.group(1)
        spoken = _WORD.findall(unit.lower())
        if len(spoken) == 1 and _counting_aloud(spoken[0], words, question):
            continue  # "beep beep beep ..." counted aloud, seen as characters
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

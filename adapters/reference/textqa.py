"""Answer from a transcript alone: spoken numbers, one arithmetic step, and extractive content answers.

Text in, text out; no audio here. The rules are keyword heuristics, documented where they decide.
"""

from __future__ import annotations

import re

__all__ = ["answer_comparison", "answer_content", "answer_number", "parse_numbers"]

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_COLOURS = ("red", "blue", "green", "yellow", "black", "white", "orange", "purple", "pink", "brown",
            "grey", "gray", "silver", "gold")
_STOP = {"the", "a", "an", "is", "are", "was", "were", "what", "which", "who", "where", "when", "how",
         "does", "do", "did", "of", "to", "in", "on", "at", "for", "it", "this", "that", "speaker",
         "say", "says", "said", "mention", "mentioned", "audio", "clip", "recording", "and", "you", "i"}
_SUBTRACT = ("spent", "spend", "gave", "give", "lost", "lose", "ate", "eat", "sold", "used", "took",
             "paid", "broke", "dropped", "minus", "fewer", "less", "removed", "left with", "away")
_ADD = ("bought", "got", "received", "found", "more", "another", "plus", "added", "earned", "gained",
        "joined", "arrived", "came")
_MULTIPLY = ("each", "times", "every", "per")


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:[.:][0-9]+)?", text.lower().replace("-", " "))


def parse_numbers(text: str) -> list[float]:
    """Numbers in order of appearance, written as digits or English words (up to thousands)."""
    out: list[float] = []
    current: float | None = None
    for tok in _tokens(text) + ["."]:
        if re.fullmatch(r"\d+(?:\.\d+)?", tok):
            if current is not None:
                out.append(current)
            out.append(float(tok))
            current = None
        elif tok in _UNITS or tok in _TENS:
            value = _UNITS.get(tok, _TENS.get(tok, 0))
            if current is not None and tok in _UNITS and current % 100 >= 20 and current % 10 == 0:
                current += value  # "twenty five"
            elif current is not None and current % 100 == 0 and current >= 100:
                current += value  # "two hundred five"
            else:
                if current is not None:
                    out.append(current)
                current = float(value)
        elif tok in _SCALES and current is not None:
            current *= _SCALES[tok]
        elif tok == "and" and current is not None and current >= 100:
            continue
        else:
            if current is not None:
                out.append(current)
            current = None
    return out


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _has(text: str, cues: tuple[str, ...]) -> bool:
    padded = f" {' '.join(_tokens(text))} "
    return any(f" {c} " in padded for c in cues)


_LONG_SENTENCE_WORDS = 20  # a recogniser may run a passage's sentences together with commas


def _focus(transcript: str, question: str) -> str:
    """In a passage, the sentence with numbers that shares most content words with the question; in a long
    run-on sentence, its clause (between commas) that does. A short sentence stays whole: its clauses carry
    one arithmetic step together ("four boxes, and each box holds three")."""
    q = set(_tokens(question)) - _STOP
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", transcript.strip()) if parse_numbers(x)]
    if not sentences:
        return transcript
    best = max(sentences, key=lambda x: len(set(_tokens(x)) & q))
    if len(best.split()) > _LONG_SENTENCE_WORDS:
        clauses = [c for c in re.split(r"(?<!\d),|,(?!\d)", best) if parse_numbers(c)]
        if clauses:
            best = max(clauses, key=lambda x: len(set(_tokens(x)) & q))
    return best


def answer_number(transcript: str, question: str) -> str | None:
    """A number the question asks for: one said outright, or one arithmetic step over the said numbers.

    In a passage only the sentence closest to the question is used.

    Rule order: several numbers with "each/times/per" multiply; with a taking-away verb the later ones
    are subtracted from the first; "more than / difference" subtracts; otherwise they add up.
    """
    transcript = _focus(transcript, question)
    nums = parse_numbers(transcript)
    if not nums:
        return None
    if len(nums) == 1:
        return _fmt(nums[0])
    q = question.lower()
    if _has(transcript, _MULTIPLY) and len(nums) == 2:
        return _fmt(nums[0] * nums[1])
    if _has(q, ("how many more", "how much more", "difference", "how much older", "how much longer")):
        return _fmt(abs(nums[0] - nums[1]))
    if _has(transcript, _SUBTRACT) or (_has(q, ("left", "remain", "remaining", "still have")) \
            and not _has(transcript, _ADD)):
        return _fmt(nums[0] - sum(nums[1:]))
    if _has(transcript, _ADD) or _has(q, ("total", "altogether", "in all", "together", "sum")):
        return _fmt(sum(nums))
    return _fmt(nums[0])


def answer_content(transcript: str, question: str, choices: tuple[str, ...] = ()) -> str:
    """An extractive answer: the offered choice that was said, a day/time/colour/name the question asks
    for, or else the sentence of the transcript that shares most words with the question."""
    t_low = " ".join(_tokens(transcript))
    said = [c for c in choices if f" {c} " in f" {t_low} "]
    if len(said) == 1:
        return said[0]
    q = set(_tokens(question))
    words = _tokens(transcript)
    for trigger, vocab in ((("day", "weekday"), _WEEKDAYS), (("month",), _MONTHS),
                           (("colour", "color"), _COLOURS)):
        if q & set(trigger):
            found = [w for w in words if w in vocab]
            if found:
                return found[0]
    if q & {"time", "o'clock", "hour"} or ("when" in q and "day" not in q):
        m = re.search(r"\bat (\d{1,2}(?::\d\d)?(?:\s*[ap]\.?m\.?)?|[a-z]+(?: [a-z]+)?(?= o'clock)|"
                      r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|"
                      r"midnight)\b)", transcript.lower())
        if m:
            return m.group(1)
    if q & {"how", "many", "much", "number", "price", "cost", "old", "age"} and parse_numbers(transcript):
        return _fmt(parse_numbers(transcript)[0])
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", transcript) if s.strip()]
    if not sentences:
        return transcript.strip()
    best = max(sentences, key=lambda s: len((set(_tokens(s)) - _STOP) & (q - _STOP)))
    return best


# comparative said in the transcript -> the superlatives a question may use for its top and bottom
_COMPARATIVES = {
    "older": ("oldest", "youngest"), "younger": ("youngest", "oldest"),
    "taller": ("tallest", "shortest"), "shorter": ("shortest", "tallest"),
    "bigger": ("biggest", "smallest"), "smaller": ("smallest", "biggest"),
    "larger": ("largest", "smallest"), "faster": ("fastest", "slowest"),
    "slower": ("slowest", "fastest"), "heavier": ("heaviest", "lightest"),
    "lighter": ("lightest", "heaviest"), "richer": ("richest", "poorest"),
}


def answer_comparison(transcript: str, question: str) -> str | None:
    """Who is the -est, from "A is older than B, and B is older than C" (a chain of comparatives)."""
    pairs = re.findall(r"([A-Za-z]+) is (\w+) than ([A-Za-z]+)", transcript)
    q = set(_tokens(question))
    for comp, (top, bottom) in _COMPARATIVES.items():
        edges = [(a.lower(), b.lower()) for a, c, b in pairs if c.lower() == comp]
        if not edges or not q & {top, bottom}:
            continue
        names = {n for e in edges for n in e}
        beaten = {b for _, b in edges}
        winners = {a for a, _ in edges}
        pick = names - beaten if top in q else names - winners
        if len(pick) == 1:
            return str(pick.pop())
    return None

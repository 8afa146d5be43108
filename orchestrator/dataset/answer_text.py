"""The normal form of answer text that a dataset's answers are checked in and that scoring compares in: NFKC,
accents and case folded, punctuation stripped, number words as digits, articles dropped."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalize"]

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000}
_ORDINAL_DIGITS = {"1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth", "5th": "fifth"}
_ARTICLES = {"a", "an", "the"}


def _strip_punctuation(text: str) -> str:
    # Keep decimal points and drop thousands separators inside numbers before removing punctuation.
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<=\d)\.(?=\d)", "\x00", text)
    out = [" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text]
    return "".join(out).replace("\x00", ".")


def _number_words(words: list[str]) -> list[str]:
    """Replace runs of number words ('twenty one', 'one hundred', 'one point five') with digits."""
    out: list[str] = []
    i = 0
    while i < len(words):
        value, j = _read_number(words, i)
        if j == i:
            out.append(words[i])
            i += 1
            continue
        text = str(value)
        if j + 1 < len(words) and words[j] == "point" and _UNITS.get(words[j + 1], 10) < 10:
            digits = []
            j += 1
            while j < len(words) and _UNITS.get(words[j], 10) < 10:
                digits.append(str(_UNITS[words[j]]))
                j += 1
            text = f"{value}.{''.join(digits)}"
        elif words[j:j + 3] == ["and", "a", "half"]:
            text = f"{value}.5"
            j += 3
        out.append(text)
        i = j
    return out


def _read_number(words: list[str], i: int) -> tuple[int, int]:
    """Parse number words from words[i]; return (value, index after them), or (0, i) if none.

    'one two' stays two numbers; 'twenty one' is 21; 'two hundred and five' is 205.
    """
    total = current = 0
    last = ""  # kind of the previous word: "", unit, tens, hundred, thousand, and
    j = i
    while j < len(words):
        w = words[j]
        if w in ("a", "an") and last == "" and j + 1 < len(words) and words[j + 1] in ("hundred", "thousand"):
            current, last = 1, "unit"  # "a hundred" is 100
        elif w in _UNITS and (last in ("", "hundred", "thousand", "and") or (last == "tens" and 0 < _UNITS[w] < 10)):
            current += _UNITS[w]
            last = "unit"
        elif w in _TENS and last in ("", "hundred", "thousand", "and"):
            current += _TENS[w]
            last = "tens"
        elif w == "hundred" and last == "unit" and 0 < current % 100 < 10:
            current = current // 100 * 100 + current % 100 * 100
            last = "hundred"
        elif w == "thousand" and last in ("unit", "tens", "hundred") and current:
            total += current * 1000
            current = 0
            last = "thousand"
        elif w == "and" and last in ("hundred", "thousand") and j + 1 < len(words) and (
            words[j + 1] in _UNITS or words[j + 1] in _TENS
        ):
            last = "and"
        else:
            break
        j += 1
    if j == i:
        return 0, i
    return total + current, j


def normalize(text: str) -> str:
    """NFKC, accents and case folded, punctuation stripped, number words as digits, articles dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    # Fold accents so "Lisbón" and "Lisbon" compare equal (NFKD splits off the combining marks).
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    words = _strip_punctuation(text).split()
    words = [_ORDINAL_DIGITS.get(w, w) for w in words]
    words = _number_words(words)
    return " ".join(w for w in words if w not in _ARTICLES)

"""Pure scorers for dataset answers: normalisation and the exact / choice / numeric rules.
No I/O and no state: `score(answer, item)` depends only on its arguments (each item's rule and tolerance
come from its manifest line)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

import msgspec

from orchestrator.dataset.answer_text import normalize

if TYPE_CHECKING:
    from orchestrator.dataset import Item

__all__ = ["Verdict", "ScoreResult", "normalize", "first_number", "score", "VERDICTS"]

# `normalize` is the dataset's answer normal form (orchestrator/dataset/answer_text.py); scoring compares in it.

Verdict = Literal["correct", "wrong", "unparsed"]
VERDICTS: tuple[Verdict, ...] = ("correct", "wrong", "unparsed")


class ScoreResult(msgspec.Struct, frozen=True, kw_only=True):
    """One scored answer: the verdict, what was parsed from the answer, and why."""

    verdict: Verdict
    # The normalised answer (exact), the choice(s) named (choice) or the number read (numeric).
    parsed: str | None
    detail: str


_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
# Scale words after a number convert to the manifest's units (hertz and seconds).
_UNIT_SCALE = {"khz": 1000.0, "kilohertz": 1000.0, "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001}


def first_number(normalized: str) -> float | None:
    """The first number in a normalised answer, scaled by a following kHz or ms unit; None if none."""
    words = normalized.split()
    for k, w in enumerate(words):
        if _NUMBER_RE.fullmatch(w):
            value = float(w)
            if k + 1 < len(words) and words[k + 1] in _UNIT_SCALE:
                value *= _UNIT_SCALE[words[k + 1]]
            return value
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(khz|ms|hz|s)", w)  # "1khz", "800ms", "2.5s"
        if match:
            return float(match.group(1)) * _UNIT_SCALE.get(match.group(2), 1.0)
    return None


def _contains(haystack: str, needle: str) -> bool:
    return bool(needle) and f" {needle} " in f" {haystack} "


def _score_exact(norm: str, item: Item) -> ScoreResult:
    golds = [normalize(item.answer), *(normalize(v) for v in item.variants)]
    golds = [g for g in golds if g]
    if norm in golds:
        return ScoreResult(verdict="correct", parsed=norm, detail="equals the gold answer")
    for gold in golds:
        if len(gold.split()) <= 2 and _contains(norm, gold):
            return ScoreResult(verdict="correct", parsed=norm, detail=f"contains {gold!r} as whole words")
    return ScoreResult(verdict="wrong", parsed=norm, detail=f"neither equals nor contains {golds[0]!r}")


def _named_choices(norm: str, item: Item) -> list[str]:
    """Choices named in the answer; longer forms claim their words first, so 'no sound' is not 'sound'."""
    words = norm.split()
    forms = sorted(
        ((tuple(normalize(f).split()), choice) for choice in item.choices
         for f in (choice, *item.choice_aliases.get(choice, []))),
        key=lambda fc: -len(fc[0]),
    )
    claimed = [False] * len(words)
    named: list[str] = []
    for form, choice in forms:
        n = len(form)
        for i in range(len(words) - n + 1) if n else ():
            if tuple(words[i:i + n]) == form and not any(claimed[i:i + n]):
                claimed[i:i + n] = [True] * n
                if choice not in named:
                    named.append(choice)
    return [c for c in item.choices if c in named]


def _score_choice(norm: str, item: Item) -> ScoreResult:
    named = _named_choices(norm, item)
    if not named:
        return ScoreResult(verdict="unparsed", parsed=None,
                           detail="names none of the choices " + ", ".join(item.choices))
    if len(named) > 1:
        return ScoreResult(verdict="wrong", parsed=", ".join(named),
                           detail="names more than one choice: " + ", ".join(named))
    if normalize(named[0]) == normalize(item.answer):
        return ScoreResult(verdict="correct", parsed=named[0], detail="names the gold choice only")
    return ScoreResult(verdict="wrong", parsed=named[0], detail=f"names {named[0]!r}, gold is {item.answer!r}")


def _score_numeric(norm: str, item: Item) -> ScoreResult:
    value = first_number(norm)
    if value is None:
        return ScoreResult(verdict="unparsed", parsed=None, detail="contains no number")
    gold = float(item.answer)
    parsed = f"{value:g}"
    # A small epsilon keeps "0.8 within 0.15 of 0.65" from failing on float rounding.
    if abs(value - gold) <= item.tolerance + 1e-9:
        return ScoreResult(verdict="correct", parsed=parsed, detail=f"within {item.tolerance:g} of {gold:g}")
    return ScoreResult(verdict="wrong", parsed=parsed,
                       detail=f"{value:g} is {abs(value - gold):g} from {gold:g} (tolerance {item.tolerance:g})")


def score(answer: str | None, item: Item) -> ScoreResult:
    """Score one answer by the item's rule; None or an empty answer is `unparsed`."""
    norm = normalize(answer or "")
    if not norm:
        return ScoreResult(verdict="unparsed", parsed=None, detail="empty answer")
    if item.scoring == "exact":
        return _score_exact(norm, item)
    if item.scoring == "choice":
        return _score_choice(norm, item)
    return _score_numeric(norm, item)

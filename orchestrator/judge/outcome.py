"""The three outcomes of every verdict aqbench reaches, and how they combine.

`inconclusive` means the evidence cannot decide; it never turns into pass or fail by default.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

__all__ = ["Outcome", "PASS", "FAIL", "INCONCLUSIVE", "worst"]

Outcome = Literal["pass", "fail", "inconclusive"]
PASS: Outcome = "pass"
FAIL: Outcome = "fail"
INCONCLUSIVE: Outcome = "inconclusive"

_RANK: dict[str, int] = {PASS: 0, INCONCLUSIVE: 1, FAIL: 2}


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    """fail over inconclusive over pass; pass for an empty iterable (nothing was judged to fail)."""
    result: Outcome = PASS
    for outcome in outcomes:
        if _RANK[outcome] > _RANK[result]:
            result = outcome
    return result

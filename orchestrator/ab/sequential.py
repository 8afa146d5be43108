"""`aqbench ab`'s group-sequential rule: look after every pair, stop once every figure is decided, and keep
the error rates despite the peeking; pure.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from orchestrator.ab.plan import MIN_PAIRS

__all__ = ["BOUNDARIES", "Boundary", "critical_values", "describe", "look_confidence"]

Boundary = Literal["obrien-fleming", "pocock"]
BOUNDARIES: tuple[Boundary, ...] = ("obrien-fleming", "pocock")
_SIMULATIONS = 40_000
_SEED = 20_260_101


def _shape(boundary: Boundary, looks: np.ndarray, max_pairs: int) -> np.ndarray:
    return np.sqrt(max_pairs / looks) if boundary == "obrien-fleming" else np.ones(looks.size)


@functools.lru_cache(maxsize=64)
def _constant(max_pairs: int, confidence: float, boundary: Boundary) -> float:
    """c such that P(|T_k| beyond its boundary at some look) = 1 - confidence, T_k the t statistic of the
    first k of `max_pairs` normal pair changes (seeded simulation; CPU: about 0.1 s for 20 pairs)."""
    looks = np.arange(MIN_PAIRS, max_pairs + 1)
    x = np.random.default_rng(_SEED).standard_normal((_SIMULATIONS, max_pairs))
    n = np.arange(1, max_pairs + 1)
    mean = np.cumsum(x, axis=1) / n
    var = (np.cumsum(x * x, axis=1) - n * mean * mean) / np.maximum(n - 1, 1)
    cols = looks - 1
    t_stat = np.abs(mean[:, cols]) / np.sqrt(var[:, cols] / looks)
    # Each look's |t| as the normal deviate of the same tail probability, over the boundary's shape.
    z = norm.isf(np.maximum(student_t.sf(t_stat, looks - 1), 1e-300)) / _shape(boundary, looks, max_pairs)
    return float(np.quantile(z.max(axis=1), confidence))


def critical_values(max_pairs: int, confidence: float, boundary: Boundary) -> list[float]:
    """The critical t of each look, for 3, 4, ..., `max_pairs` pairs (empty below MIN_PAIRS pairs).

    Method: the intervals are repeated confidence intervals (Jennison and Turnbull): the critical t at look k (k
    pairs) is set so that, for normal pair changes, the intervals of all looks 3..K cover the true change together
    with the planned confidence. Any stopping rule read from them (here: stop when every decidable figure is
    unchanged, improved or regressed) then errs at most as often as one fixed-size interval would. Without the
    widening, checking 10 looks at 90 % calls a null change real about twice as often (tests show it).

    The boundary's shape says where the error is spent: O'Brien-Fleming-like (z_k = c sqrt(K / k), the default) spends
    almost nothing early, so the last look is nearly as sharp as a fixed plan and an early stop needs a large, clear
    change; Pocock (z_k = c) stops sooner on moderate changes and pays with a wider last look. The constant c comes
    from a seeded simulation of the t statistics themselves (small pairs' degrees of freedom included), so a plan's
    critical values are the same on every machine and are journaled before the first block.
    """
    if max_pairs < MIN_PAIRS:
        return []
    looks = np.arange(MIN_PAIRS, max_pairs + 1)
    z = _constant(max_pairs, round(confidence, 9), boundary) * _shape(boundary, looks, max_pairs)
    return [round(float(v), 4) for v in student_t.isf(norm.sf(z), looks - 1)]


def look_confidence(critical_t: float, pairs: int) -> float:
    """The two-sided confidence of one look's interval (its share of the error), for figures that are not
    t intervals over pairs (the pooled error rate)."""
    return 1.0 - 2.0 * float(student_t.sf(critical_t, pairs - 1)) if pairs >= 2 else 0.0


def describe(boundary: str, critical_t: list[float], confidence: float) -> str:
    """One sentence for the plan: the boundary, the first and last looks' t and how sharp the last is."""
    if not critical_t:
        return "too few pairs to decide"
    last = len(critical_t) + MIN_PAIRS - 1
    fixed = float(student_t.isf((1.0 - confidence) / 2.0, last - 1))
    return (f"{boundary} boundary over looks after pairs {MIN_PAIRS}..{last}: t = {critical_t[0]:.2f} at the first "
            f"look, {critical_t[-1]:.2f} at the last ({fixed:.2f} without looks; the last interval "
            f"{(critical_t[-1] / fixed - 1.0) * 100:.0f} % wider)" if math.isfinite(critical_t[0]) else
            f"{boundary} boundary, last look t = {critical_t[-1]:.2f}")

"""`aqbench ab`'s group-sequential boundaries: looking after every pair with them keeps the planned error
rate, where looking with the fixed-size t does not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t as student_t

from orchestrator.ab.plan import MIN_PAIRS
from orchestrator.ab.sequential import BOUNDARIES, Boundary, critical_values


def _peeking_error(critical: list[float], max_pairs: int, seed: int, sims: int = 6000) -> float:
    """Share of simulated null sessions (normal pair changes, mean 0) where some look's t interval
    excludes 0: the repeated intervals' joint error."""
    x = np.random.default_rng(seed).standard_normal((sims, max_pairs))
    hit = np.zeros(sims, dtype=bool)
    for k, t in zip(range(MIN_PAIRS, max_pairs + 1), critical, strict=True):
        head = x[:, :k]
        tstat = np.abs(head.mean(axis=1)) / (head.std(axis=1, ddof=1) / np.sqrt(k))
        hit |= tstat > t
    return float(hit.mean())


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_looks_keep_the_error_rate_where_fixed_t_does_not(boundary: Boundary) -> None:
    """12 pairs, a look after each from the third, 90 % intervals: with the boundary at most about 10 % of
    null sessions see a change at some look (fresh seeds, not the plan's); the fixed-size t sees one in far more."""
    critical = critical_values(12, 0.9, boundary)
    fixed = [float(student_t.isf(0.05, k - 1)) for k in range(MIN_PAIRS, 13)]
    assert 0.07 <= _peeking_error(critical, 12, seed=1) <= 0.125
    assert _peeking_error(fixed, 12, seed=1) >= 0.2


def test_boundary_shapes() -> None:
    """O'Brien-Fleming spends little early (a very wide first look) and ends near the fixed t; Pocock is flatter;
    both are wider than the fixed t at the last look, and the plan is the same on every call (seeded)."""
    obf, pocock = critical_values(12, 0.9, "obrien-fleming"), critical_values(12, 0.9, "pocock")
    fixed_last = float(student_t.isf(0.05, 11))
    assert len(obf) == len(pocock) == 10
    assert obf == sorted(obf, reverse=True) and obf[0] > 3 * obf[-1]
    assert fixed_last < obf[-1] < pocock[-1] < pocock[0] < obf[0]
    assert critical_values(12, 0.9, "obrien-fleming") == obf
    assert critical_values(2, 0.9, "pocock") == []

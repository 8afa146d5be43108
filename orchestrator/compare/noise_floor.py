"""How far two runs of an unchanged server drift apart, from each run's own block-to-block variance; pure.
Does not decide anything: figures.py widens intervals with it.
"""

from __future__ import annotations

import math
from array import array

import msgspec
import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

from orchestrator.compare.load import ModelSamples

__all__ = ["BLOCKS", "MIN_PER_BLOCK", "NoiseFloor", "noise_floor"]

BLOCKS = 10
MIN_PER_BLOCK = 5


class NoiseFloor(msgspec.Struct, frozen=True, kw_only=True):
    """Half-widths, at the comparison's confidence, of what drift alone moves between two runs."""

    level: float  # relative (0.05: a whole-run level shift of up to 5 % is within drift)
    tail: float  # absolute share of requests beyond the item's p90
    blocks: int


def _side(m: ModelSamples, attr: str) -> tuple[NDArray[np.float64], list[tuple[str, str]], NDArray[np.int64]]:
    values = np.frombuffer(getattr(m, attr), dtype=np.float64) if m.ok else np.empty(0)
    ends = np.frombuffer(m.end_ns, dtype=np.int64) if m.ok else np.empty(0, dtype=np.int64)
    items = np.frombuffer(m.item, dtype=np.int64) if m.ok else np.empty(0, dtype=np.int64)
    keep = np.isfinite(values) & (values > 0.0)
    order = np.argsort(ends[keep], kind="stable")
    names = m.item_names()
    return values[keep][order], [names[int(i)] for i in items[keep][order]], ends[keep][order]


def _blocks(logs: NDArray[np.float64], beyond: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    cuts = np.array_split(np.arange(logs.size), BLOCKS)
    return (np.array([np.median(logs[c]) for c in cuts]), np.array([beyond[c].mean() for c in cuts]))


def noise_floor(base: ModelSamples, cand: ModelSamples, attr: str, confidence: float) -> NoiseFloor | None:
    """The floor of one latency series (``client_ms``...); None when a run has too few requests.

    Runs taken apart in time share no clock: a busier host moves every request of one run. Requests resampled within a
    run cannot see that (they all share the run's one path through time), so each run is cut into BLOCKS contiguous
    blocks of requests; each block's level is the median over its requests of log(latency / the item's median over
    both runs), and its tail the share of its requests beyond the item's p90 over both runs. The pooled within-run
    variance of those block values (t quantile, 2 B - 2 degrees of freedom) bounds how far the whole-run level and
    tail share move by drift alone. Assumes blocks far apart enough in time to be nearly independent; with fewer than
    MIN_PER_BLOCK requests a block there is no floor (None).
    """
    sides = [_side(m, attr) for m in (base, cand)]
    if min(v.size for v, _n, _e in sides) < BLOCKS * MIN_PER_BLOCK:
        return None
    pooled: dict[tuple[str, str], array[float]] = {}
    for values, names, _ends in sides:
        for v, name in zip(values.tolist(), names, strict=True):
            pooled.setdefault(name, array("d")).append(v)
    centre = {k: float(np.median(np.log(np.frombuffer(v)))) for k, v in pooled.items()}
    p90 = {k: float(np.quantile(np.frombuffer(v), 0.9, method="inverted_cdf")) for k, v in pooled.items()}
    levels, tails = [], []
    for values, names, _ends in sides:
        logs = np.log(values) - np.array([centre[n] for n in names])
        level, tail = _blocks(logs, values > np.array([p90[n] for n in names]))
        levels.append(level)
        tails.append(tail)
    dof = 2 * BLOCKS - 2
    quantile = float(student_t.ppf(1.0 - (1.0 - confidence) / 2.0, dof))
    scale = math.sqrt(2.0 / BLOCKS)

    def half(per_run: list[NDArray[np.float64]]) -> float:
        pooled_var = sum(float(np.var(x, ddof=1)) for x in per_run) / 2.0
        return quantile * math.sqrt(pooled_var) * scale

    return NoiseFloor(level=math.expm1(half(levels)), tail=half(tails), blocks=BLOCKS)

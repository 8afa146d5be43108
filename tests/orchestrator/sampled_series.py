"""Seeded synthetic 1 Hz memory series for the sampled trend rule (tests and bench/soak_verdicts.py).

Noise model (MiB): a level of 400; a GC sawtooth of 0-20 MiB with a period of 20-40 s; 2 % of samples
spiked by 20-80 MiB; slow wander, a level shift every 5 minutes (random phase) following AR(1) across
shifts with coefficient `phi` and stationary sd `wander` (3 MiB: the clean 2-hour soak's scatter after its
first 10 minutes); and AR(1) sample noise at 1 Hz with the same `phi`, stationary sd 2 MiB. A leak adds
`slope_per_h` MiB per hour.
"""

from __future__ import annotations

import numpy as np

WANDER_S = 300
BLOCK_S = 10


def memory_series(rng: np.random.Generator, seconds: int, *, phi: float, slope_per_h: float = 0.0,
                  wander: float = 3.0, noise: float = 2.0, heavy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(times in s, RSS in MiB) of `seconds` 1 Hz samples; `heavy`: spikes of 20 x (1 + Pareto(1.5)) MiB,
    a heavy tail with no variance, instead of 20-80 MiB."""
    t = np.arange(seconds, dtype=float)
    period = rng.uniform(20, 40)
    sawtooth = 20 * ((t + rng.uniform(0, period)) % period) / period
    size = 20 * (1 + rng.pareto(1.5, seconds)) if heavy else rng.uniform(20, 80, seconds)
    spikes = np.where(rng.random(seconds) < 0.02, size, 0.0)
    shifts = _ar1(rng, seconds // WANDER_S + 2, phi, wander)
    phase = rng.uniform(0, WANDER_S)
    level = shifts[((t + phase) // WANDER_S).astype(int)]
    sample_noise = _ar1(rng, seconds, phi, noise)
    return t, 400 + sawtooth + spikes + level + sample_noise + slope_per_h * t / 3600


def _ar1(rng: np.random.Generator, n: int, phi: float, sd: float) -> np.ndarray:
    """A stationary AR(1) series of n values with marginal sd `sd`."""
    eps = rng.normal(0, sd * np.sqrt(1 - phi**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0, sd)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + eps[i]
    return out


def block_medians(t: np.ndarray, y: np.ndarray, block_s: int = BLOCK_S) -> tuple[np.ndarray, np.ndarray]:
    """Medians of consecutive `block_s`-second blocks at their mean times (what the soak keeps)."""
    n = t.size // block_s * block_s
    return t[:n].reshape(-1, block_s).mean(axis=1), np.median(y[:n].reshape(-1, block_s), axis=1)


def generation_series(rng: np.random.Generator, seconds: int, *, phi: float = 0.8, every_s: float = 180.0,
                      scatter: float = 20.0, step: float = 0.0, runaway: float = 0.0,
                      outliers: float = 0.0, blocks: bool = True) -> list[tuple[int, float, np.ndarray, np.ndarray]]:
    """AIPerf generations over `seconds` (1 Hz noise of `memory_series`, as 10 s block medians with `blocks`):
    a handover every `every_s` +-20 %; each process climbs 40 MiB over its first 45 s (start-up), the
    first process settles 30-80 MiB below the others, whose levels scatter by `scatter` MiB (sd) and step
    up by `step` MiB per generation (a leak carried across). `runaway` MiB: the middle generation lasts 2.5
    x `every_s` and ramps up by that much over the minute after its level minute, then holds. `outliers`: the
    chance that a successor settles 100-250 MiB higher still (as two of six did in a real 36-minute soak).
    Returns (pid, first request s, times s, MiB) per generation."""
    t, y = memory_series(rng, seconds, phi=phi)
    starts = [0.0]
    while True:
        length = every_s * rng.uniform(0.8, 1.2) * (2.5 if runaway and len(starts) - 1 == 6 else 1.0)
        if starts[-1] + length >= seconds:
            break
        starts.append(starts[-1] + length)
    out = []
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else float(seconds)
        m = (t >= s) & (t < e)
        tt, yy = t[m], y[m].copy()
        offset = -rng.uniform(30, 80) if k == 0 else rng.normal(0, scatter) + step * k
        if outliers and k > 0 and rng.random() < outliers:
            offset += rng.uniform(100, 250)
        climb = -40 * np.clip(1 - (tt - s) / 45, 0, 1)
        yy += offset + climb
        if runaway and k == 6:
            yy += runaway * np.clip((tt - s - 120) / 60, 0, 1)
        if blocks:
            bt, by = block_medians(tt - s, yy)
            tt, yy = bt + s, by
        out.append((1000 + k, s, tt, yy))
    return out

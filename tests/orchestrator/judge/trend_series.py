"""Seeded synthetic soak series for the drift rules: a two-mode latency workload and a memory series.

Latency: 40 signal items (~50 ms) and 20 speech items (1-3 s), 100 requests per 5-minute window drawn
at random; each request has lognormal jitter (sigma 0.2), 3 % of them a heavy Pareto tail (alpha 1.5,
mean x3), and every window a shared load factor (lognormal sigma 0.02). Memory: RSS sampled each second,
a GC sawtooth of 0-20 MiB, 2 % spikes of 20-80 MiB, and a per-window offset of sigma 3 MiB.
"""

from __future__ import annotations

import numpy as np

WINDOW_H = 300 / 3600
SIGNAL_ITEMS = 40
SPEECH_ITEMS = 20
ITEM_IDS = [f"signal-{k:02d}" for k in range(SIGNAL_ITEMS)] + [f"speech-{k:02d}" for k in range(SPEECH_ITEMS)]


def window_times_h(n: int) -> list[float]:
    """Mid-points of n consecutive 5-minute windows, in hours."""
    return [(k + 0.5) * WINDOW_H for k in range(n)]


def latency_windows(seed: int, n: int, slope_pct_per_h: float, *, per_window: int = 100,
                    window_sigma: float = 0.02) -> list[list[tuple[str, float]]]:
    """n windows of (item_id, latency_ms); latencies grow by `slope_pct_per_h` % of the start per hour."""
    rng = np.random.default_rng(seed)
    base = np.concatenate([50 * np.exp(rng.normal(0, 0.3, SIGNAL_ITEMS)), rng.uniform(1000, 3000, SPEECH_ITEMS)])
    items = rng.integers(0, base.size, (n, per_window))
    jitter = np.exp(rng.normal(0, 0.2, (n, per_window)))
    tail = np.where(rng.random((n, per_window)) < 0.03, 1 + rng.pareto(1.5, (n, per_window)), 1.0)
    load = np.exp(rng.normal(0, window_sigma, (n, 1)))
    drift = 1 + slope_pct_per_h / 100 * np.asarray(window_times_h(n))[:, None]
    latency = base[items] * jitter * tail * load * drift
    return [list(zip([ITEM_IDS[k] for k in items[w]], latency[w].tolist(), strict=True)) for w in range(n)]


def memory_windows(seed: int, n: int, slope_mib_per_h: float, *, window_sigma_mib: float = 3.0,
                   samples: int = 300) -> list[list[float]]:
    """n windows of RSS samples (MiB), one a second, growing by `slope_mib_per_h`."""
    rng = np.random.default_rng(seed)
    offset = rng.normal(0, window_sigma_mib, (n, 1))
    period = rng.uniform(20, 40)
    second = np.arange(n * samples).reshape(n, samples)
    sawtooth = 20 * ((second + rng.uniform(0, period)) % period) / period
    spikes = np.where(rng.random((n, samples)) < 0.02, rng.uniform(20, 80, (n, samples)), 0.0)
    drift = slope_mib_per_h * second / 3600
    rows: list[list[float]] = (480 + offset + sawtooth + spikes + drift).tolist()
    return rows

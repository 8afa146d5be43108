"""Seeded soaks seen through the early stop's looks (orchestrator/soak/early_stop.py), for its tests and
bench/soak_early_stop.py: memory on the sampled series of sampled_series.py, and error counts per window from a
bursty, drifting error process. Each returns the window at whose close the soak would stop (None: it ran on)."""

from __future__ import annotations

import msgspec
import numpy as np
from sampled_series import block_medians, memory_series

from orchestrator.events import SoakLimits, WindowStats
from orchestrator.judge.sampled_trend import judge_sampled_trend
from orchestrator.soak.early_stop import error_rate_stop, look_confidence, look_limits, planned_looks
from orchestrator.soak.verdicts import sampled_rule

T0 = 1_700_000_000 * 10**9


def memory_stop(seed: int, *, duration_s: float, window_s: float = 300.0, phi: float = 0.5, slope_per_h: float = 0.0,
                heavy: bool = False, wander: float = 3.0, limits: SoakLimits = SoakLimits(),
                looks_s: float | None = None, confidence: float | None = None) -> int | None:
    """The look at which a memory series stops the soak: at each window's close the judged span runs from
    `warmup_s` to that close (the first pass taken as over by then), judged at the look's level. `looks_s`: judge
    only the windows closed by then (a long soak's first looks). `confidence`: each look's level instead of the
    rule's (a benchmark's comparison)."""
    rule = sampled_rule(look_limits(limits) if confidence is None
                        else msgspec.structs.replace(limits, trend_confidence=confidence))
    horizon = min(duration_s, looks_s or duration_s)
    t, y = memory_series(np.random.default_rng(seed), int(horizon) + 1, phi=phi, slope_per_h=slope_per_h,
                         heavy=heavy, wander=wander)
    bt, by = block_medians(t, y)
    for k in range(1, int(horizon // window_s) + 1):
        keep = (bt >= limits.warmup_s) & (bt < k * window_s)
        if keep.sum() < 2:
            continue
        if judge_sampled_trend(bt[keep], by[keep], rule).outcome == "fail":
            return k
    return None


def error_windows(rng: np.random.Generator, windows: int, *, per_window: int, rate: float, phi: float = 0.8,
                  sigma: float = 1.0, burst_chance: float = 0.05, burst: float = 5.0) -> list[WindowStats]:
    """`windows` windows of `per_window` requests whose long-run error rate is `rate`: each window's rate drifts
    (lognormal, AR(1) `phi` across windows, log-sd `sigma`), and with `burst_chance` a window also holds a burst
    of consecutive errors, `burst` x (1 + Pareto(1.5)) long (heavy-tailed); the bursts' mean is taken out of the
    drifting part so that the whole averages `rate`."""
    x = np.empty(windows)
    x[0] = rng.normal()
    for i in range(1, windows):
        x[i] = phi * x[i - 1] + rng.normal(0, np.sqrt(1 - phi**2))
    mean_burst = burst_chance * burst * 3.0  # Pareto(1.5) has mean 2: 1 + 2
    base = max(0.0, rate - mean_burst / per_window)
    p = np.clip(base * np.exp(sigma * x - sigma**2 / 2), 0, 1)
    out = []
    for i in range(windows):
        errors = int(rng.binomial(per_window, p[i]))
        if rng.random() < burst_chance:
            errors += int(burst * (1 + rng.pareto(1.5)))
        errors = min(errors, per_window)
        out.append(WindowStats(window=f"soak/w{i + 1:04d}", index=i + 1, start_unix_ns=T0 + i * 300 * 10**9,
                               end_unix_ns=T0 + (i + 1) * 300 * 10**9, issued=per_window, ok=per_window - errors,
                               errors=errors))
    return out


def error_stop(seed: int, *, duration_s: float, window_s: float = 300.0, per_window: int, rate: float,
               limits: SoakLimits = SoakLimits(), **noise: float) -> int | None:
    """The look at which an error series stops the soak (error_rate_stop at each window's close)."""
    looks = planned_looks(duration_s, window_s)
    level = look_confidence(limits.trend_confidence)
    ws = error_windows(np.random.default_rng(seed), looks, per_window=per_window, rate=rate, **noise)
    for k in range(1, looks + 1):
        if error_rate_stop(ws[:k], limits.max_error_rate, level, limits.warmup_windows) is not None:
            return k
    return None

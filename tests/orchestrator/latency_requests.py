"""Seeded synthetic soak requests for the same-item latency drift rule (tests and bench/soak_verdicts.py).

Noise model, per request (latency in ms): Poisson arrivals at `rate` requests/s over `seconds`; 416 items
(audioqa-v2's count), 30 % of them signal items answered in ~50 ms and 70 % speech items in 1-3 s. Items
come in a fixed cycle, as AIPerf replays its input (`order="cycle"`), so an item comes round again every
416 requests, or at random (`"random"`). The item mix changes: the first half of the cycle puts 70 % of
its requests on speech items and the second half 20 % (at random: the first and second half of the soak).
A shared load level, AR(1) at 1 Hz on the log scale with coefficient `phi` and sd 0.15 (queueing: seconds
to a minute of correlation at phi 0.95); per-request noise Student t with 3 degrees of freedom x 0.1 on
the log scale (heavy-tailed); 1 % of requests 3-10 x slower (a stall). A drift multiplies every latency
by 1 + `drift_pct_per_h` / 100 x hours. Optional: minutes-long host-load bumps and each item's first request
slower (see `latency_requests`).
"""

from __future__ import annotations

import numpy as np

from orchestrator.soak.ratios import ItemRatioSeries

ITEMS = 416
# Item ids by index, formatted once (formatting one per request cost more than the rest of the model).
_ITEM_IDS = [f"item{i:03d}" for i in range(ITEMS)]


def latency_requests(rng: np.random.Generator, seconds: int, *, phi: float, drift_pct_per_h: float = 0.0,
                     rate: float = 1.0, mix_change: bool = True, speech_share: tuple[float, float] = (0.7, 0.2),
                     order: str = "cycle", bumps: bool = False,
                     cold_first: bool = False) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(starts in s, item ids, latencies in ms) of each request, in start order; `speech_share`: the share of
    requests on speech items in the first and second half of the cycle (or soak; `mix_change` False: the
    first throughout). `bumps`: host-load bumps (a shared machine), one every 15 minutes on average (Poisson),
    each 2-8 minutes long and 1.3-2.5 x slower. `cold_first`: each item's first request 1.5-3 x slower
    (a cold first pass, seen on the reference server)."""
    speech = rng.random(ITEMS) < 0.7
    base = np.where(speech, rng.uniform(1000, 3000, ITEMS), rng.uniform(30, 70, ITEMS))
    n = rng.poisson(rate * seconds)
    starts = np.sort(rng.uniform(0, seconds, n))
    shares = (speech_share[0], speech_share[1] if mix_change else speech_share[0])
    pools = [list(rng.permutation(np.flatnonzero(~speech))), list(rng.permutation(np.flatnonzero(speech)))]
    if order == "cycle":
        cycle = []
        # One draw per position, taken together: the same stream as a scalar draw each, in order.
        for position, draw in enumerate(rng.random(ITEMS).tolist()):
            want = int(draw < shares[position >= ITEMS // 2])
            cycle.append((pools[want] or pools[1 - want]).pop())
        items = np.array(cycle)[(np.arange(n) + rng.integers(ITEMS)) % ITEMS]
    else:
        share = np.where(starts < seconds / 2, shares[0], shares[1])
        items = np.where(rng.random(n) < share, rng.choice(pools[1], n), rng.choice(pools[0], n))
    level = _ar1(rng, seconds + 1, phi, 0.15)[starts.astype(int)]
    noise = 0.1 * rng.standard_t(3, n)
    stall = np.where(rng.random(n) < 0.01, rng.uniform(3, 10, n), 1.0)
    drift = 1 + drift_pct_per_h / 100 * starts / 3600
    latency = base[items] * np.exp(level + noise) * stall * drift
    if bumps:
        for _ in range(rng.poisson(seconds / 900)):
            at, length = rng.uniform(-300, seconds), rng.uniform(120, 480)
            latency = np.where((starts >= at) & (starts < at + length), latency * rng.uniform(1.3, 2.5), latency)
    if cold_first:
        _, first = np.unique(items, return_index=True)
        latency[first] *= rng.uniform(1.5, 3.0, first.size)
    return starts, [_ITEM_IDS[i] for i in items.tolist()], latency


def ratio_series(starts: np.ndarray, items: list[str], latency_ms: np.ndarray, *, warmup_s: float = 60.0,
                 baseline_s: float = 120.0, drift_pct_per_h: float = 0.0) -> ItemRatioSeries:
    """The soak's ratio series of these requests (load starting at 0 s), with a drift applied on top."""
    series = ItemRatioSeries(warmup_s=warmup_s, baseline_s=baseline_s)
    series.start(0)
    scaled = latency_ms * (1 + drift_pct_per_h / 100 * starts / 3600)
    for start, item, value in zip((starts * 1e9).astype(np.int64).tolist(), items, scaled.tolist(), strict=True):
        series.add(start, item, value)
    return series


def _ar1(rng: np.random.Generator, n: int, phi: float, sd: float) -> np.ndarray:
    eps = rng.normal(0, sd * np.sqrt(1 - phi**2), n)
    # The recursion on Python floats (the same IEEE double arithmetic as numpy scalars, a tenth of the cost).
    out = [float(rng.normal(0, sd))]
    for e in eps[1:].tolist():
        out.append(phi * out[-1] + e)
    return np.array(out)

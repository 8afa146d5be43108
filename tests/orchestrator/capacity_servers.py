"""Seeded simulated servers of known capacity, searched as the sweep searches, for the capacity's 90 % interval
(tests/orchestrator/sweep/test_sweep_capacity.py and bench/sweep_narrowing.py: one noise model).

A server's share of failed requests and of latencies beyond a p90 limit rise with load, smoothly (logit linear in
log load) or, for the errors, as a cliff; with noise outside the fit's assumptions: failures in bursts, AR(1)
latencies, drift within each run, heavy stragglers. The search runs a grid, doubles it while nothing crossed,
then runs where `place` says (next_load's target by default).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr, ndtri

from orchestrator.config import SloConfig
from orchestrator.events import CapacityEstimate
from orchestrator.sweep.capacity import PointEvidence, allowed_shares, estimate_capacity, evidence_of, next_load
from orchestrator.sweep.judge import PointRequest

__all__ = ["ALLOWED", "GRID", "RPP", "SLO", "SimServer", "Place", "at_estimate", "coverage", "search"]

SLO = SloConfig(p90_latency_ms=1000.0, max_error_rate=0.05, answers=False, complete_outputs=False)
ALLOWED = allowed_shares(SLO)
GRID = [1.0, 2.0, 4.0, 8.0, 16.0]
RPP = 60
DRIFT = 0.3  # the threshold moves this much (in normal scores) across each point's run
STRAGGLERS = 0.004  # requests far beyond any limit, at every load (heavy tail)
STEER = 500  # draws of a search step's estimate, as the sweep takes (the final one takes the default)


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class SimServer:
    """A simulated server: the share of failed requests and of latencies beyond the p90 limit at each load, each
    rising smoothly (logit linear in log load, steepness `slope`) or, for the errors, jumping at its capacity (a
    cliff); failures in bursts (a two-state Markov chain), latencies AR(1) (lag-1 0.7), both drifting within a
    point, stragglers at every load."""

    def __init__(self, rng: np.random.Generator, *, cliff: bool) -> None:
        self.rng, self.cliff = rng, cliff
        self.c_err = float(np.exp(rng.uniform(math.log(3.0), math.log(12.0))))
        self.c_lat = self.c_err * float(rng.uniform(0.6, 1.6))
        self.slope_err, self.slope_lat = float(rng.uniform(1.5, 4.0)), float(rng.uniform(1.5, 4.0))
        self.sent = 0  # requests so far: their start order across runs

    def err_share(self, x: float) -> float:
        if self.cliff:
            return 0.004 if x < self.c_err else 0.35
        return _logistic(math.log(0.05 / 0.95) + self.slope_err * math.log(x / self.c_err))

    def lat_share(self, x: float) -> float:
        """Beyond the limit among answered requests, before drift: stragglers plus the smooth curve's excess."""
        q = _logistic(math.log(0.1 / 0.9) + self.slope_lat * math.log(x / self.c_lat))
        return max(q, STRAGGLERS)

    def true_capacity(self) -> float:
        """Where either marginal share (drift averaged over a run) crosses what its SLO allows."""
        def crossing(share: object, allowed: float) -> float:
            lo, hi = 0.05, 500.0
            for _ in range(60):
                mid = math.sqrt(lo * hi)
                if self._marginal(share, mid) > allowed:  # type: ignore[arg-type]
                    hi = mid
                else:
                    lo = mid
            return hi
        return min(crossing(self.err_share, 0.05), crossing(self.lat_share, 0.1))

    @staticmethod
    def _marginal(share: object, x: float) -> float:
        p = share(x)  # type: ignore[operator]
        t = np.linspace(-0.5, 0.5, 201)
        return float(np.mean(ndtr(ndtri(p) + DRIFT * t))) if 0.0 < p < 1.0 else p

    def run(self, x: float, n: int) -> list[PointRequest]:
        rng, t = self.rng, np.linspace(-0.5, 0.5, n)
        # Failures: a Markov chain whose stationary share drifts, lag-1 correlation 0.5.
        pf = ndtr(ndtri(self.err_share(x)) + DRIFT * t)
        fails, prev, r = [], False, 0.5
        for p in pf:
            prob = p + r * (1.0 - p) if prev else p * (1.0 - r)
            prev = bool(rng.random() < prob)
            fails.append(prev)
        # Latencies: AR(1) normal scores against a drifting threshold; stragglers 20x.
        z = np.empty(n)
        z[0] = rng.standard_normal()
        for i in range(1, n):
            z[i] = 0.7 * z[i - 1] + math.sqrt(1 - 0.49) * rng.standard_normal()
        base = self.lat_share(x)
        core = (base - STRAGGLERS) / (1 - STRAGGLERS) if base > STRAGGLERS else 1e-9
        thresh = ndtri(1.0 - core) - DRIFT * t
        lat = 1000.0 * np.exp(0.4 * (z - thresh))
        lat = np.where(rng.random(n) < STRAGGLERS, 20_000.0, lat)
        self.sent += n
        return [PointRequest(ok=not f, cause="server_busy" if f else "ok", latency_ms=None if f else float(v),
                             start_ns=self.sent + i) for i, (f, v) in enumerate(zip(fails, lat, strict=True))]


# Where a batch of narrowing runs goes: (the estimate so far, the loads run) -> (load, requests) per run, pooled
# where loads repeat; [] when nothing narrows it.
Place = Callable[[CapacityEstimate, list[float]], list[tuple[float, int]]]


def at_estimate(est: CapacityEstimate, loads: list[float]) -> list[tuple[float, int]]:
    """The sweep's placement: both of a batch's runs where next_load says."""
    x = next_load(est, loads, mode="rate")
    return [] if x is None else [(x, 2 * RPP)]


def search(server: SimServer, *, extra_runs: int = 12, place: Place = at_estimate) -> tuple[float | None, float | None,
                                                                                             float | None]:
    """The grid (doubled while nothing crossed), then `extra_runs` runs of RPP requests where `place` says, two
    to a batch as the sweep does; the final estimate's (value, low, high)."""
    runs: dict[float, list[PointRequest]] = {}
    seen: dict[float, PointEvidence] = {}

    def add(x: float, n: int) -> None:
        runs[x] = runs.get(x, []) + server.run(x, n)
        seen[x] = evidence_of(x, runs[x], [], SLO)

    def evidence() -> list[PointEvidence]:
        return [seen[x] for x in sorted(seen)]

    grid = list(GRID)
    for x in grid:
        add(x, RPP)
    while estimate_capacity(evidence(), ALLOWED, draws=STEER).value is None and grid[-1] < 512:
        grid.append(grid[-1] * 2)
        add(grid[-1], RPP)
    for _ in range(extra_runs // 2):
        batch = place(estimate_capacity(evidence(), ALLOWED, draws=STEER), list(runs))
        if not batch:
            break
        for x, n in batch:
            add(x, n)
    est = estimate_capacity(evidence(), ALLOWED)
    return est.value, est.low, est.high


def coverage(cliff: bool, seeds: int = 200, *, extra_runs: int = 12, place: Place = at_estimate
             ) -> tuple[float, float, float]:
    """(share of seeds whose interval covers the truth, median relative half-width, share reaching ±10 %)."""
    covered, widths, reached = 0, [], 0
    for seed in range(seeds):
        server = SimServer(np.random.default_rng(seed), cliff=cliff)
        truth = server.true_capacity()
        value, low, high = search(server, extra_runs=extra_runs, place=place)
        lo, hi = low or 0.0, high or math.inf
        covered += lo <= truth <= hi
        half = (hi - lo) / 2.0 / value if value and math.isfinite(hi) else math.inf
        widths.append(half)
        reached += half <= 0.10
    return covered / seeds, statistics.median(widths), reached / seeds

"""The capacity as a figure with a 90 % interval, fitted from the judged points' requests near the boundary, and
where the next run narrows that interval most: pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import msgspec
import numpy as np
from scipy.special import ndtri

from orchestrator.config import SloConfig
from orchestrator.events import CapacityEstimate, SloCapacity, SloCheck
from orchestrator.sweep.judge import PointRequest
from orchestrator.sweep.power import failure_design_effect, latency_design_effect

__all__ = ["SloCounts", "PointEvidence", "evidence_of", "estimate_capacity", "next_load", "requests_for",
           "precision_plan", "allowed_shares", "BAND", "ELASTICITY"]

# Interpolation is trusted between two loads whose shares both lie within this factor of the allowed share.
BAND = 4.0
# The plan's assumed steepness of a smooth boundary (d logit share / d log load): an M/M/c queue's loss share is
# about 2 near 5 %; the reference server's 429s (2 replicas, no queue) are an Erlang loss system.
ELASTICITY = 2.0
_DRAWS = 2000
_SHARE_SLOS = {"p99_latency": 0.01, "p90_latency": 0.10, "p99_model_call": 0.01}


class SloCounts(msgspec.Struct, frozen=True, kw_only=True):
    """One share SLO at one point: n requests, k beyond the limit, and both shrunk by their design effect."""

    n: int
    k: int
    n_eff: float
    k_eff: float


class PointEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What one judged point gives the fit: its load, the counts of each share SLO, and each exact SLO's outcome."""

    load: float
    shares: dict[str, SloCounts] = {}
    steps: dict[str, str] = {}


def _counts(flags: Sequence[bool], deff: float) -> SloCounts:
    n, k = len(flags), sum(flags)
    return SloCounts(n=n, k=k, n_eff=n / max(deff, 1.0), k_eff=k / max(deff, 1.0))


def allowed_shares(slo: SloConfig) -> dict[str, float]:
    """The share beyond its limit each SLO [slo] sets allows (0: an exact SLO, one beyond fails)."""
    out = {name: share for name, share in _SHARE_SLOS.items() if getattr(slo, f"{name}_ms") is not None}
    out["error_rate"] = slo.max_error_rate
    for name in ("answers", "complete_outputs"):
        if getattr(slo, name):
            out[name] = 0.0
    return out


def evidence_of(load: float, requests: Sequence[PointRequest], checks: Sequence[SloCheck],
                slo: SloConfig) -> PointEvidence:
    """A point's evidence for the fit, from its pooled requests (as judge_point takes them) and its checks."""
    ordered = sorted(requests, key=lambda r: r.start_ns if r.start_ns is not None else -1)
    shares: dict[str, SloCounts] = {}
    for name, share in _SHARE_SLOS.items():
        limit = getattr(slo, f"{name}_ms")
        if limit is None:
            continue
        pick = [r.model_call_ms if name == "p99_model_call" else r.latency_ms for r in ordered if r.ok]
        values = [v for v in pick if v is not None]
        shares[name] = _counts([v > limit for v in values], latency_design_effect(values, share)[0])
    judged = [not r.ok for r in ordered if r.cause != "cancelled"]
    steps: dict[str, str] = {c.slo: c.outcome for c in checks if c.slo in ("answers", "complete_outputs", "evidence")}
    if slo.max_error_rate > 0:
        shares["error_rate"] = _counts(judged, failure_design_effect(judged)[0])
    else:
        steps["error_rate"] = "fail" if any(judged) else "pass" if judged else "inconclusive"
    return PointEvidence(load=load, shares=shares, steps=steps)


def _logit(p: np.ndarray | float) -> np.ndarray:
    q = np.clip(p, 1e-9, 1.0 - 1e-9)
    return np.asarray(np.log(q) - np.log1p(-q))


def _isotonic(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least-squares non-decreasing fit along the last axis (rows fitted apart): at i, the max over
    s <= i of the min over t >= i of the weighted mean of s..t (the pool-adjacent-violators answer, vectorized:
    a sweep has a few dozen loads at most)."""
    m = p.shape[-1]
    cw = np.concatenate([np.zeros(1), np.cumsum(w)])
    cpw = np.concatenate([np.zeros(p.shape[:-1] + (1,)), np.cumsum(p * w, axis=-1)], axis=-1)
    s_idx, t_idx = np.triu_indices(m)
    means = np.full(p.shape[:-1] + (m, m), np.inf)  # [s, t]: the mean of s..t (t < s: none)
    means[..., s_idx, t_idx] = (cpw[..., t_idx + 1] - cpw[..., s_idx]) / (cw[t_idx + 1] - cw[s_idx])
    tail_min = np.minimum.accumulate(means[..., ::-1], axis=-1)[..., ::-1]  # [s, i]: min over t >= i
    tail_min = np.where(np.tril(np.ones((m, m), dtype=bool), -1), -np.inf, tail_min)  # only s <= i
    return np.asarray(np.max(tail_min, axis=-2))


class _Crossing(msgspec.Struct, kw_only=True):
    value: np.ndarray  # per draw: the interpolated crossing (0: below every load, inf: above)
    low: np.ndarray  # per draw: its interval's lower end (the gap's where interpolation is not trusted)
    high: np.ndarray
    trusted: np.ndarray  # per draw: interpolation trusted (both neighbours in the band)


def _cross(fitted: np.ndarray, loads: np.ndarray, allowed: float) -> _Crossing:
    """Where each row of fitted shares (rows: draws; columns: ascending loads) crosses `allowed`."""
    rows, cols = fitted.shape
    above = fitted > allowed
    any_above = above.any(axis=1)
    j = np.where(any_above, above.argmax(axis=1), cols)
    i = np.clip(j - 1, 0, cols - 1)
    jj = np.clip(j, 0, cols - 1)
    lx = np.log(loads)
    fi, fj = fitted[np.arange(rows), i], fitted[np.arange(rows), jj]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (_logit(allowed) - _logit(fi)) / (_logit(fj) - _logit(fi))
    t = np.clip(np.nan_to_num(t, nan=0.5), 0.0, 1.0)
    value = np.exp(lx[i] + t * (lx[jj] - lx[i]))
    trusted = (fi >= allowed / BAND) & (fj <= allowed * BAND)
    low, high = np.where(trusted, value, loads[i]), np.where(trusted, value, loads[jj])
    first, none = j == 0, ~any_above
    value = np.where(first, 0.0, np.where(none, np.inf, value))
    low = np.where(first, 0.0, np.where(none, loads[-1], low))
    high = np.where(first, loads[0], np.where(none, np.inf, high))
    return _Crossing(value=value, low=low, high=high, trusted=trusted & ~first & ~none)


def _local_fit(loads: np.ndarray, k: np.ndarray, n: np.ndarray, band: np.ndarray, shares: np.ndarray,
               allowed: float, bounds: _Crossing) -> _Crossing:
    """The crossing of a line in log load and logit share, weighted least squares over the points in the band
    (weights: the effective requests times the share's variance), for each row of `shares`; kept inside the
    bounds monotonicity alone gives (`bounds`), and those bounds where a row's line does not rise."""
    x = np.log(loads[band])
    p0 = np.clip((k[band] + 0.5) / (n[band] + 1.0), 1e-6, 1 - 1e-6)
    w = n[band] * p0 * (1.0 - p0)
    y = _logit(shares[:, band])
    xm = float(np.sum(w * x) / np.sum(w))
    ym = np.sum(w * y, axis=1) / np.sum(w)
    sxx = float(np.sum(w * (x - xm) ** 2))
    beta = np.sum(w * (x - xm) * (y - ym[:, None]), axis=1) / sxx
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = np.exp(xm + (_logit(allowed) - ym) / beta)
    # Outside the loads next to the band the line is an extrapolation: monotonicity's bounds instead.
    floor = np.where(np.isfinite(bounds.low), bounds.low, 0.0)
    lo_edge = np.full(len(c), loads[band][0] / 2 if not band[0] else 0.0)
    hi_edge = np.full(len(c), loads[band][-1] * 2 if band[-1] else np.inf)
    idx = np.flatnonzero(band)
    if idx[0] > 0:
        lo_edge[:] = loads[idx[0] - 1]
    if idx[-1] < len(loads) - 1:
        hi_edge[:] = loads[idx[-1] + 1]
    ok = (beta > 0) & np.isfinite(c)
    c = np.where(ok, np.clip(c, lo_edge, hi_edge), np.sqrt(np.maximum(floor, 1e-9) * np.minimum(bounds.high, 1e9)))
    low = np.where(ok, c, np.minimum(bounds.low, lo_edge))
    high = np.where(ok, c, np.maximum(bounds.high, hi_edge))
    # A line crossing below the lowest load run or above the highest is not measured there: open at that end.
    under, over = ok & (c < loads[0]), ok & (c > loads[-1])
    low, high = np.where(under, 0.0, np.where(over, loads[-1], low)), np.where(under, loads[0], np.where(over, np.inf, high))
    return _Crossing(value=c, low=low, high=high, trusted=ok & ~under & ~over)


def _finite(v: float) -> float | None:
    return None if not math.isfinite(v) or v <= 0.0 else round(v, 4)


def _share_fit(name: str, allowed: float, points: Sequence[PointEvidence], rng: np.random.Generator,
               level: float, draws_n: int) -> tuple[SloCapacity, _Crossing, np.ndarray] | None:
    have = [p for p in points if name in p.shares and p.shares[name].n > 0]
    if not have:
        return None
    loads = np.array([p.load for p in have])
    raw_n = np.array([p.shares[name].n for p in have], dtype=float)
    raw_k = np.array([p.shares[name].k for p in have], dtype=float)
    # Correlation in start order is the server's (its batching, its queue), not one point's: a short run's own
    # estimate of it is noisy and mostly low, so each point counts at least the median design effect of all.
    deff = np.maximum(raw_n / np.array([max(p.shares[name].n_eff, 1e-9) for p in have]), 1.0)
    deff = np.maximum(deff, float(np.median(deff)))
    k, n = raw_k / deff, raw_n / deff
    point = _isotonic(k / n, n)
    est = _cross(point[None, :], loads, allowed)
    draws = rng.beta(k + 0.5, np.maximum(n - k, 0.0) + 0.5, size=(draws_n, len(have)))
    cross = _cross(_isotonic(draws, n), loads, allowed)
    band = (point >= allowed / BAND) & (point <= allowed * BAND)
    smooth = bool(band.sum() >= 2 and (point[band] <= allowed).any() and (point[band] > allowed).any())
    if smooth:  # the curve seen near the limit on both sides: a local fit across every point in the band
        cross = _local_fit(loads, k, n, band, draws, allowed, cross)
        est = _local_fit(loads, k, n, band, ((k + 0.5) / (n + 1.0))[None, :], allowed, est)
    tail = (1.0 - level) / 2.0
    low, high = float(np.quantile(cross.low, tail, method="inverted_cdf")), float(np.quantile(cross.high, 1.0 - tail, method="inverted_cdf"))
    value = float(est.value[0])
    below_i = [i for i in range(len(have)) if point[i] <= allowed]
    above_i = [i for i in range(len(have)) if point[i] > allowed]
    below = float(loads[below_i[-1]]) if below_i else None
    above = float(loads[above_i[0]]) if above_i else None
    if above is None:
        shape = "not_reached"
    elif smooth:
        shape = "smooth"
    elif below is not None and point[below_i[-1]] < allowed / BAND and point[above_i[0]] > allowed * BAND:
        shape = "cliff"
    else:
        shape = "undetermined"
    fit = SloCapacity(slo=name, allowed=allowed, value=_finite(value), low=_finite(low) if low > 0 else None,
                      high=_finite(high), below=below, above=above, shape=shape)
    return fit, cross, point


def _step_fit(name: str, points: Sequence[PointEvidence]) -> SloCapacity | None:
    have = sorted((p.load, p.steps[name]) for p in points if name in p.steps)
    if not have:
        return None
    failed = [x for x, o in have if o == "fail"]
    above = failed[0] if failed else None
    passed = [x for x, o in have if o == "pass" and (above is None or x < above)]
    below = passed[-1] if passed else None
    if above is None:
        return SloCapacity(slo=name, allowed=0.0, below=below, shape="not_reached", low=below)
    value = math.sqrt(below * above) if below is not None else None
    return SloCapacity(slo=name, allowed=0.0, value=_finite(value) if value else None, low=below, high=above,
                       below=below, above=above, shape="undetermined")


def _share_at(point: np.ndarray, loads: np.ndarray, x: float) -> float:
    """The fitted share at load x, interpolated as the crossing is (log load, logit share); clamped at the ends."""
    if x <= loads[0]:
        return float(point[0])
    if x >= loads[-1]:
        return float(point[-1])
    lg = np.interp(math.log(x), np.log(loads), _logit(point))
    return float(1.0 / (1.0 + math.exp(-lg)))


def _seed(points: Sequence[PointEvidence]) -> int:
    """A seed from the evidence itself, so that the same journal always folds to the same interval."""
    return int(sum((i + 1) * (p.load * 1000 + sum(c.k * 7 + c.n for c in p.shares.values()))
                   for i, p in enumerate(points))) % (2**32)


def estimate_capacity(points: Sequence[PointEvidence], allowed: Mapping[str, float], *, unit: str = "req/s",
                      precision: float = 0.10, level: float = 0.90, seed: int | None = None,
                      draws: int = _DRAWS) -> CapacityEstimate:
    """The capacity fitted from the points (method below), its interval, the binding SLO and how the others
    stand at it, whether `precision` (relative half-width) is reached, and if not what it would need. `draws`:
    fewer steer a search step faster; the reported interval takes the default.

    Method. Every SLO with a share (p99: 1 % of requests beyond its limit; an error rate: itself) gives, at each
    point, k of n requests beyond, shrunk to effective counts by their design effect in start order (power.py:
    autocorrelation, bursts and drift cost evidence). The share's curve against load is fitted monotone (the mean of
    the running maximum from below and the running minimum from above), and its crossing of the allowed share is
    interpolated between the two adjacent loads around it, linear in log load and logit share. Its uncertainty comes
    from 2000 draws of every point's share from its Jeffreys posterior on the effective counts, each draw fitted and
    crossed the same way. Interpolation is trusted only where the curve was seen near the limit: both neighbours'
    shares within a factor of 4 of what it allows. Otherwise the crossing may lie anywhere between them (a cliff, or
    too few requests to tell), and that draw's interval is the whole gap. An exact SLO (answers, complete outputs, an
    error rate of 0) is a step between the highest load that passed it and the lowest that failed it. The capacity is
    the least of the SLOs' crossings in each draw; its 90 % interval the 5th percentile of the draws' lower ends to
    the 95th of their upper ends. A crossing below the lowest load or above the highest leaves the interval open
    there.
    """
    ordered = sorted(points, key=lambda p: p.load)
    if not ordered:
        return CapacityEstimate(precision=precision, level=level, summary="no load point judged: nothing to fit")
    rng = np.random.default_rng(_seed(ordered) if seed is None else seed)
    fits: list[SloCapacity] = []
    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    near: dict[str, int] = {}
    for name, share in allowed.items():
        if share > 0.0:
            got = _share_fit(name, share, ordered, rng, level, draws)
            if got is None:
                continue
            fit, cross, point = got
            have = [p for p in ordered if name in p.shares and p.shares[name].n > 0]
            curves[name] = (point, np.array([p.load for p in have]))
            near[name] = sum(p.shares[name].n for p in have if fit.below is not None and fit.above is not None
                             and fit.below <= p.load <= fit.above)
            lows.append(cross.low)
            highs.append(cross.high)
        else:
            step = _step_fit(name, ordered)
            if step is None:
                continue
            fit = step
            lows.append(np.full(draws, step.low if step.low is not None else 0.0))
            highs.append(np.full(draws, step.high if step.high is not None else np.inf))
        fits.append(fit)
    evidence = _step_fit("evidence", ordered)
    if evidence is not None and evidence.above is not None:  # a point whose accounting broke is no evidence
        fits.append(evidence)
    if not fits:
        return CapacityEstimate(precision=precision, level=level, summary="no SLO had evidence to fit")
    tail = (1.0 - level) / 2.0
    low = float(np.quantile(np.min(lows, axis=0), tail, method="inverted_cdf"))
    high = float(np.quantile(np.min(highs, axis=0), 1.0 - tail, method="inverted_cdf"))

    def key(f: SloCapacity) -> float:
        return f.value if f.value is not None else (f.high if f.high is not None else math.inf)

    binding = min(fits, key=key)
    value = key(binding)
    fits = [msgspec.structs.replace(
        f, share_at_capacity=round(_share_at(*curves[f.slo], value), 5) if f.slo in curves and math.isfinite(value)
        else None, summary=_slo_summary(f, unit)) for f in fits]
    if not math.isfinite(value):
        return CapacityEstimate(value=None, low=_finite(low), high=None, level=level, binding="",
                                shape="not_reached", precision=precision, slos=fits,
                                summary=f"capacity not reached: no SLO's fitted figure crossed its limit up to "
                                        f"{_fmt(ordered[-1].load)} {unit}; its {level:.0%} interval is "
                                        f"[{_fmt(_finite(low)) if _finite(low) else 'open'}, open]")
    if binding.value is None and binding.below is None and binding.above is not None:
        # Crossed below the lowest load run: no figure was measured, only that it lies below that load.
        return CapacityEstimate(value=None, low=None, high=_finite(high), level=level, binding=binding.slo,
                                shape="not_reached", precision=precision, slos=fits,
                                summary=f"capacity below {_fmt(ordered[0].load)} {unit}, the lowest load run: "
                                        f"{_NAMES.get(binding.slo, binding.slo)} was already beyond its limit "
                                        f"there; its {level:.0%} interval is [open, {_fmt(_finite(high))}] (run "
                                        "lower loads to find it)")
    value = min(max(value, low), high) if math.isfinite(high) else max(value, low)
    lo_f, hi_f = _finite(low), _finite(high)
    half = (high - low) / 2.0 / value if lo_f is not None and hi_f is not None and value > 0 else None
    reached = half is not None and half <= precision
    shape = next(f.shape for f in fits if f.slo == binding.slo)
    needed = None
    if not reached and half is not None and shape == "smooth" and near.get(binding.slo):
        needed = math.ceil(near[binding.slo] * (half / precision) ** 2)
    est = CapacityEstimate(value=round(value, 4), low=lo_f, high=hi_f, level=level, binding=binding.slo,
                           shape=shape, half_width=round(half, 4) if half is not None else None,
                           precision=precision, reached=reached, requests_needed=needed, slos=fits)
    return msgspec.structs.replace(est, summary=_summary(est, unit))


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


_NAMES = {"p99_latency": "p99 client latency", "p90_latency": "p90 client latency",
          "p99_model_call": "p99 model_call_ms", "error_rate": "error rate", "answers": "answers",
          "complete_outputs": "complete outputs", "evidence": "evidence (accounting)"}


def _slo_summary(f: SloCapacity, unit: str) -> str:
    name = _NAMES.get(f.slo, f.slo)
    if f.shape == "not_reached":
        return f"{name}: held at every load run (up to {_fmt(f.below)} {unit} and beyond)" if f.below else \
            f"{name}: not crossed among the loads run"
    at = f"; {f.share_at_capacity:.2%} beyond at the capacity (allows {f.allowed:.2%})" \
        if f.share_at_capacity is not None else ""
    interval = f"[{_fmt(f.low) if f.low else 'open'}, {_fmt(f.high) if f.high else 'open'}]"
    return f"{name}: crosses at {_fmt(f.value)} {unit} {interval}, {f.shape} between {_fmt(f.below)} and " \
           f"{_fmt(f.above)}{at}"


def _summary(est: CapacityEstimate, unit: str) -> str:
    low = _fmt(est.low) if est.low is not None else "open"
    high = _fmt(est.high) if est.high is not None else "open"
    head = (f"capacity {_fmt(est.value)} {unit}, {est.level:.0%} interval [{low}, {high}], bound by "
            f"{_NAMES.get(est.binding, est.binding)} ({est.shape} boundary)")
    if est.reached:
        return f"{head}; ±{est.half_width:.1%} meets the ±{est.precision:.0%} asked"
    if est.half_width is None:
        return f"{head}; the interval is open: the precision ±{est.precision:.0%} is not reached"
    need = (f"; about {est.requests_needed} requests near the boundary would reach it"
            if est.requests_needed is not None else
            "; more points inside the bracket, not more requests at the same loads, would narrow it")
    return f"{head}; ±{est.half_width:.1%} reached, not the ±{est.precision:.0%} asked{need}"


def next_load(est: CapacityEstimate, loads: Sequence[float], *, mode: str, floor: float | None = None,
              ceiling: float | None = None) -> float | None:
    """Where the next run narrows the interval most (None: the precision is reached, or nothing can narrow it
    here): inside a gap the fit cannot interpolate across (a cliff, or shares far from the limit), its geometric
    midpoint; on a smooth boundary, the estimate itself (a load already run within 3 % of it is run again). Kept
    strictly inside (`floor`, `ceiling`): the bracket the points decided, so that no run can undo it."""
    if est.reached or est.value is None:
        return None
    bind = next((f for f in est.slos if f.slo == est.binding), None)
    if bind is None:
        return None
    if est.shape == "smooth":
        target = est.value
        close = [x for x in loads if abs(x - target) <= 0.03 * target]
        target = close[0] if close else float(f"{target:.3g}")
    elif bind.below is not None and bind.above is not None:
        target = float(f"{math.sqrt(bind.below * bind.above):.3g}")
    else:
        return None
    if mode == "concurrency":
        target = float(round(target))
    if (floor is not None and target <= floor) or (ceiling is not None and target >= ceiling) or target <= 0:
        return None
    if est.shape != "smooth" and target in loads:
        return None
    return target


def requests_for(precision: float, allowed: float, *, level: float = 0.90, elasticity: float = ELASTICITY) -> int:
    """Independent requests near a smooth boundary that a relative half-width `precision` needs, for a share
    `allowed` whose logit rises by `elasticity` per unit of log load: the crossing's log-load variance is that of
    the logit share, 1 / (n allowed (1 - allowed)), over elasticity squared."""
    z = float(ndtri(1.0 - (1.0 - level) / 2.0))
    return math.ceil((z / (elasticity * math.log1p(precision))) ** 2 / (allowed * (1.0 - allowed)))


def precision_plan(allowed: Mapping[str, float], *, precision: float, unit: str, time_left_s: float | None,
                   level: float = 0.90) -> list[str]:
    """Before any load: for each SLO with a share, the requests near the boundary ±`precision` needs (a smooth
    boundary assumed) and, in rate mode, the least capacity at which they fit in `time_left_s`, what the sweep's
    time leaves after the baseline window and the grid (None: no --max-duration)."""
    out = []
    for name, share in allowed.items():
        if share <= 0.0:
            out.append(f"{_NAMES.get(name, name)}: exact (one bad answer fails): its boundary is a step between "
                       "two loads, narrowed only by loads between them")
            continue
        n = requests_for(precision, share, level=level)
        where = f"about {n} requests near the boundary (a smooth boundary, logit share rising {ELASTICITY:g}x " \
                f"log load; correlated requests need more)"
        if time_left_s is None:
            fits = ("no --max-duration: no time is set aside to narrow the interval; it is what the search's "
                    "points give (set --max-duration to spend what it leaves on narrowing)")
        elif time_left_s <= 0:
            fits = ("not reachable: the baseline window and the grid's planned points fill what --max-duration "
                    "leaves, with nothing left to narrow the interval")
        elif unit == "req/s":
            fits = (f"reachable within --max-duration only if the capacity is at least {n / time_left_s:.3g} req/s "
                    f"({time_left_s:.0f} s left after the baseline window and the grid's planned points)")
        else:
            fits = f"{time_left_s:.0f} s left after the baseline window and the grid's planned points"
        out.append(f"{_NAMES.get(name, name)} ±{precision:.0%}: {where}; {fits}")
    return out

"""Soak verdicts: pure rules over closed windows, each verdict with the numbers behind it.

Drift rule (peers.md "Soak verdicts"): after discarding the warmup windows, a metric fails only when
BOTH its first-versus-last median growth and its least-squares slope exceed the limit, so one spike
(moves neither median) or noise around a flat line (small slope) does not fail it. No I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from statistics import median
from typing import Any

import msgspec

from orchestrator.config import SoakConfig
from orchestrator.soak.window import WindowStats

__all__ = [
    "MIN_TREND_WINDOWS",
    "GAP_SLACK_S",
    "SoakLimits",
    "Trend",
    "MetricVerdict",
    "ServerExitFact",
    "ProcessCheck",
    "fit_trend",
    "judge_soak",
]

MIN_TREND_WINDOWS = 2
# Seconds a gap between windows may exceed AIPerf's own exit and start-up (the soak's own share).
GAP_SLACK_S = 2.0
_MIB = 2.0**20
_NS_PER_H = 3600e9


class SoakLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The limits of `[soak]` that the verdicts apply, exactly as configured."""

    rss_limit_mib_per_h: float = 8.0
    p99_latency_limit_pct_per_h: float = 10.0
    max_error_rate: float = 0.001
    warmup_windows: int = 1

    @classmethod
    def from_config(cls, soak: SoakConfig) -> SoakLimits:
        return cls(rss_limit_mib_per_h=soak.rss_limit_mib_per_h,
                   p99_latency_limit_pct_per_h=soak.p99_latency_limit_pct_per_h,
                   max_error_rate=soak.max_error_rate, warmup_windows=soak.warmup_windows)


class Trend(msgspec.Struct, frozen=True, kw_only=True):
    """A series' drift per hour two ways: least-squares slope, and growth between the medians of its
    first and last `k` points (k = n // 3, at least 1) divided by the time between them."""

    n: int
    k: int
    slope_per_h: float
    growth_per_h: float
    first_median: float
    last_median: float
    span_h: float


class MetricVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One verdict. `judged` false: too little data to apply the rule (it then passes, and says so)."""

    metric: str
    passed: bool
    judged: bool
    reason: str
    detail: dict[str, Any] = {}


class ServerExitFact(msgspec.Struct, frozen=True, kw_only=True):
    """An unexpected server exit (the supervisor restarted or gave up), as journaled."""

    incarnation: int
    returncode: int | None = None
    signal: str = ""
    unix_ns: int = 0
    restarted: bool = False
    output_tail: list[str] = []


class ProcessCheck(msgspec.Struct, frozen=True, kw_only=True):
    """What was left at the end: orphans the supervisor had to kill, processes still alive, zombies."""

    orphans_killed: int = 0
    leftover: list[str] = []
    zombies: list[str] = []


def fit_trend(times_h: Sequence[float], values: Sequence[float]) -> Trend:
    """Slope and median growth of `values` over `times_h` (hours). Needs at least two distinct times."""
    n = len(values)
    if n != len(times_h) or n < 2:
        raise ValueError(f"fit_trend needs two or more (time, value) pairs, got {n}")
    mt = math.fsum(times_h) / n
    mv = math.fsum(values) / n
    sxx = math.fsum((t - mt) ** 2 for t in times_h)
    if sxx <= 0:
        raise ValueError("fit_trend needs at least two distinct times")
    slope = math.fsum((t - mt) * (v - mv) for t, v in zip(times_h, values, strict=True)) / sxx
    k = max(1, n // 3)
    first_t, last_t = median(times_h[:k]), median(times_h[-k:])
    first_v, last_v = median(values[:k]), median(values[-k:])
    span = last_t - first_t
    growth = (last_v - first_v) / span if span > 0 else 0.0
    return Trend(n=n, k=k, slope_per_h=slope, growth_per_h=growth, first_median=first_v, last_median=last_v,
                 span_h=times_h[-1] - times_h[0])


def _mid_h(w: WindowStats, origin_ns: int) -> float:
    return ((w.start_unix_ns + w.end_unix_ns) / 2 - origin_ns) / _NS_PER_H


def _drift(metric: str, windows: Sequence[WindowStats], values: Sequence[float | None], limit: float, unit: str,
           *, relative: bool, skipped: int, source: str) -> MetricVerdict:
    """Apply the both-must-exceed rule to one per-window series (None values are left out)."""
    pairs = [(w, v) for w, v in zip(windows, values, strict=True) if v is not None]
    base: dict[str, Any] = {"limit": limit, "unit": unit, "source": source, "warmup_windows_discarded": skipped,
                            "windows": [w.window for w, _ in pairs],
                            "series": [round(v, 6) for _, v in pairs]}
    if len(pairs) < MIN_TREND_WINDOWS:
        return MetricVerdict(metric=metric, passed=True, judged=False, detail=base,
                             reason=f"not judged: {len(pairs)} window(s) with data after discarding {skipped} "
                                    f"warmup window(s); the rule needs {MIN_TREND_WINDOWS}")
    origin = pairs[0][0].start_unix_ns
    times = [_mid_h(w, origin) for w, _ in pairs]
    trend = fit_trend(times, [v for _, v in pairs])
    slope, growth = trend.slope_per_h, trend.growth_per_h
    if relative:
        if trend.first_median <= 0:
            return MetricVerdict(metric=metric, passed=True, judged=False, detail=base,
                                 reason="not judged: the first windows' median is zero")
        slope, growth = slope / trend.first_median * 100, growth / trend.first_median * 100
    detail = {**base, "slope": slope, "growth": growth, "first_median": trend.first_median,
              "last_median": trend.last_median, "k": trend.k, "n": trend.n, "span_h": trend.span_h,
              "times_h": [round(t, 6) for t in times]}
    failed = slope > limit and growth > limit
    how = (f"slope {slope:+.3g} {unit}, first-vs-last median growth {growth:+.3g} {unit} "
           f"(median {trend.first_median:.4g} -> {trend.last_median:.4g} over {trend.n} windows); limit {limit:g} {unit}")
    if failed:
        return MetricVerdict(metric=metric, passed=False, judged=True, detail=detail, reason=f"drifts: {how}")
    which = "neither exceeds" if slope <= limit and growth <= limit else "only one exceeds"
    return MetricVerdict(metric=metric, passed=True, judged=True, detail=detail, reason=f"flat ({which}): {how}")


def _error_rate(windows: Sequence[WindowStats], limit: float, skipped: int,
                cut_short: Collection[str] = ()) -> MetricVerdict:
    # A window the user's stop cut short is reported as such and never judged: the signal may have
    # ended it before its first request, or mid-request.
    cut = [w.window for w in windows if w.window in cut_short]
    windows = [w for w in windows if w.window not in cut_short]
    issued = sum(w.issued for w in windows)
    errors = sum(w.errors for w in windows)
    by_cause: dict[str, int] = {}
    for w in windows:
        for cause, n in w.by_cause.items():
            by_cause[cause] = by_cause.get(cause, 0) + n
    worst = max(windows, key=lambda w: w.error_rate or 0.0, default=None)
    detail = {"limit": limit, "issued": issued, "errors": errors, "by_cause": dict(sorted(by_cause.items())),
              "warmup_windows_discarded": skipped, "rate": errors / issued if issued else None,
              "worst_window": worst.window if worst else "", "worst_rate": worst.error_rate if worst else None,
              "series": [w.error_rate for w in windows], "cut_short": cut}
    cut_text = f"; cut short by the stop, not judged: {', '.join(cut)}" if cut else ""
    if not windows:
        return MetricVerdict(metric="error_rate", passed=True, judged=False, detail=detail,
                             reason=f"not judged: no window after discarding {skipped} warmup window(s)"
                                    + cut_text)
    if not issued:
        # Windows ran but nothing was sent: the load never reached the server, which is no pass.
        return MetricVerdict(metric="error_rate", passed=False, judged=True, detail=detail,
                             reason=f"no profiling request was recorded in {len(windows)} window(s) after warmup")
    rate = errors / issued
    causes = ", ".join(f"{k}: {v}" for k, v in sorted(by_cause.items()))
    text = (f"{errors}/{issued} = {rate:.4%} (limit {limit:.4%}) over {len(windows)} window(s)"
            + (f" after {skipped} warmup window(s)" if skipped else "") + (f"; by cause: {causes}" if causes else "")
            + cut_text)
    if rate > limit:
        return MetricVerdict(metric="error_rate", passed=False, judged=True, detail=detail, reason=f"too high: {text}")
    return MetricVerdict(metric="error_rate", passed=True, judged=True, detail=detail, reason=text)


def _correctness(windows: Sequence[WindowStats]) -> MetricVerdict:
    failing = [w for w in windows if w.correctness_passed is False]
    unscored = [w.window for w in windows if w.correctness_passed is None]
    per_window = [{"window": w.window, "correct": w.correct, "scored": w.scored, "passed": w.correctness_passed,
                   "gates": [msgspec.to_builtins(g) for g in w.gates if g.total and not g.passed]} for w in windows]
    detail = {"windows": per_window, "unscored": unscored, "failing": [w.window for w in failing]}
    if len(unscored) == len(windows):
        return MetricVerdict(metric="correctness", passed=True, judged=False, detail=detail,
                             reason="not judged: no window had a scored answer")
    if failing:
        parts = [f"{w.window} " + ", ".join(f"{g.scope} {g.correct}/{g.total} < {g.required:g}"
                                             for g in w.gates if g.total and not g.passed) for w in failing]
        return MetricVerdict(metric="correctness", passed=False, judged=True, detail=detail,
                             reason=f"below the gate in {len(failing)} window(s): {'; '.join(parts)}")
    scored = sum(w.scored for w in windows)
    correct = sum(w.correct for w in windows)
    return MetricVerdict(metric="correctness", passed=True, judged=True, detail=detail,
                         reason=f"every scored window meets the gate ({correct}/{scored} correct overall"
                                + (f"; unscored: {', '.join(unscored)}" if unscored else "") + ")")


def _restarts(exits: Sequence[ServerExitFact]) -> MetricVerdict:
    detail = {"unexpected_exits": [msgspec.to_builtins(e) for e in exits],
              "restarts": sum(e.restarted for e in exits)}
    if not exits:
        return MetricVerdict(metric="restarts", passed=True, judged=True, detail=detail,
                             reason="no unexpected server exit")
    parts = [f"incarnation {e.incarnation} exited (code {e.returncode}{', ' + e.signal if e.signal else ''})"
             + (", restarted" if e.restarted else ", not restarted") for e in exits]
    return MetricVerdict(metric="restarts", passed=False, judged=True, detail=detail,
                         reason=f"{len(exits)} unexplained server exit(s): {'; '.join(parts)}")


def _processes(check: ProcessCheck) -> MetricVerdict:
    detail = msgspec.to_builtins(check)
    problems = []
    if check.orphans_killed:
        problems.append(f"{check.orphans_killed} orphaned server process(es) had to be killed")
    if check.leftover:
        problems.append(f"{len(check.leftover)} process(es) still alive: {'; '.join(check.leftover[:5])}")
    if check.zombies:
        problems.append(f"{len(check.zombies)} zombie(s): {'; '.join(check.zombies[:5])}")
    if problems:
        return MetricVerdict(metric="processes", passed=False, judged=True, detail=detail, reason="; ".join(problems))
    return MetricVerdict(metric="processes", passed=True, judged=True, detail=detail,
                         reason="no orphaned, leftover or zombie process")


def _window_gaps(windows: Sequence[WindowStats], slack_s: float) -> MetricVerdict:
    """Each gap against what AIPerf itself needs: the previous window's exit plus this one's start-up."""
    rows: list[dict[str, Any]] = []
    over: list[str] = []
    for prev, w in zip(windows, windows[1:]):
        startup, exit_s = w.startup_s, prev.exit_s
        if w.gap_before_s is None or startup is None or exit_s is None:
            continue
        launch_after_exit = (w.aiperf_launch_unix_ns - prev.aiperf_exit_unix_ns) / 1e9 \
            if w.aiperf_launch_unix_ns is not None and prev.aiperf_exit_unix_ns is not None else None
        allowed = exit_s + startup + slack_s
        rows.append({"window": w.window, "gap_s": round(w.gap_before_s, 3), "startup_s": round(startup, 3),
                     "previous_exit_s": round(exit_s, 3), "allowed_s": round(allowed, 3),
                     "launch_after_exit_s": None if launch_after_exit is None else round(launch_after_exit, 3)})
        if w.gap_before_s > allowed:
            over.append(f"{w.window} {w.gap_before_s:.1f} s > {allowed:.1f} s")
    detail: dict[str, Any] = {"limit": slack_s, "unit": "s beyond AIPerf's exit + start-up", "windows": rows}
    if not rows:
        return MetricVerdict(metric="window_gap", passed=True, judged=False, detail=detail,
                             reason="not judged: fewer than two windows with a measured AIPerf timeline")
    worst = max(rows, key=lambda r: r["gap_s"])
    how = (f"largest gap {worst['gap_s']:.1f} s before {worst['window']} = previous AIPerf exit "
           f"{worst['previous_exit_s']:.1f} s + start-up {worst['startup_s']:.1f} s + "
           f"{worst['gap_s'] - worst['previous_exit_s'] - worst['startup_s']:.1f} s of the soak's own; "
           f"limit: exit + start-up + {slack_s:g} s")
    if over:
        return MetricVerdict(metric="window_gap", passed=False, judged=True, detail=detail,
                             reason=f"windows not consecutive ({'; '.join(over)}): {how}")
    return MetricVerdict(metric="window_gap", passed=True, judged=True, detail=detail, reason=how)


def judge_soak(windows: Sequence[WindowStats], limits: SoakLimits, *, exits: Sequence[ServerExitFact] = (),
               processes: ProcessCheck | None = None, cut_short: Collection[str] = ()) -> list[MetricVerdict]:
    """Every verdict over the closed windows so far (in index order). `processes` is given only at the
    end (the process check is a final verdict); checkpoints leave it None. `cut_short` names the windows
    a stop (SIGINT/SIGTERM) cut short: the error rate reports them and does not judge them."""
    ordered = sorted(windows, key=lambda w: w.index)
    skipped = min(limits.warmup_windows, len(ordered))
    judged = ordered[skipped:]
    # Server-side latency (handler_ms) when the server reports it; client latency otherwise, said so.
    server_p99 = [w.server_latency_ms.p99 for w in judged]
    if any(v is not None for v in server_p99):
        p99, p99_source = server_p99, "p99 of the server's handler_ms per window (ms)"
    else:
        p99 = [w.client_latency_ms.p99 for w in judged]
        p99_source = "p99 of the client's request latency per window (ms; the server reported no timing)"
    verdicts = [
        _drift("server_rss", judged, [w.rss.median_bytes / _MIB if w.rss.median_bytes is not None else None
                                      for w in judged],
               limits.rss_limit_mib_per_h, "MiB/h", relative=False, skipped=skipped,
               source="median resident memory of the server's process tree per window (MiB)"),
        _drift("server_p99_latency", judged, p99, limits.p99_latency_limit_pct_per_h, "%/h", relative=True,
               skipped=skipped, source=p99_source),
        _error_rate(judged, limits.max_error_rate, skipped, cut_short),
        _correctness(ordered),
        _restarts(exits),
        _window_gaps(ordered, GAP_SLACK_S),
    ]
    if processes is not None:
        verdicts.append(_processes(processes))
    return verdicts
